package otelcronguard

import (
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/cronguard/cronguard/scheduler"
)

// A run's span is started by the middleware, which sees the run's context,
// and ended by the observer, which sees the run's outcome; events of the
// run in between (lease lost, timeout, shutdown) come to the observer from
// other goroutines. The run registry ties them together: an entry is made
// when the run starts (EventStarted, emitted just before the job is
// called, on the goroutine that then calls it), the middleware attaches the
// span to it, mid-run events find the span through it, and the run's end
// event removes it. The scheduler emits exactly one end event for every
// EventStarted, after the run's mid-run events, so no entry outlives its
// run.

// runKey identifies a run across the schedulers a Telemetry serves: the
// fence alone is unique per job and store, the end of the lease ID
// (random) separates stores.
type runKey struct {
	job        string
	occurrence int64 // Unix ns
	fence      uint64
	lease      string // the lease ID's last leaseTailLen bytes
}

// leaseTailLen is how much of a lease ID the key keeps: events carry the
// ID in short form (lease.ShortID), which ends with the ID's last bytes,
// and the run's context carries it whole.
const leaseTailLen = 6

func leaseTail(id string) string { return id[max(0, len(id)-leaseTailLen):] }

func eventKey(e scheduler.Event) runKey {
	return runKey{job: e.Job, occurrence: e.Occurrence.UnixNano(), fence: uint64(e.Fence), lease: leaseTail(e.ShortLeaseID)}
}

func runKeyOf(r scheduler.Run) runKey {
	return runKey{job: r.Job, occurrence: r.Occurrence.UnixNano(), fence: uint64(r.Fence), lease: leaseTail(r.LeaseID)}
}

// spanEvent is an event for a run's span.
type spanEvent struct {
	name  string
	attrs []attribute.KeyValue
}

// runEntry is a run between its start and its end event.
type runEntry struct {
	instance string      // the replica, from EventStarted
	span     trace.Span  // set by the middleware; nil before
	pending  []spanEvent // events that came before the span
	panicked bool        // the middleware recorded a panic on the span
}

// runRegistry holds the runs executing now.
type runRegistry struct {
	mu   sync.Mutex
	runs map[runKey]*runEntry
}

func newRunRegistry() *runRegistry { return &runRegistry{runs: make(map[runKey]*runEntry)} }

// start records a run that starts on the replica instance.
func (g *runRegistry) start(k runKey, instance string) {
	g.mu.Lock()
	g.runs[k] = &runEntry{instance: instance}
	g.mu.Unlock()
}

// instance returns the replica of a started run, and whether it is known.
func (g *runRegistry) instance(k runKey) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.runs[k]
	if e == nil {
		return "", false
	}
	return e.instance, true
}

// attach sets the span of a started run and returns the events that came
// before it. It reports false when the run is unknown.
func (g *runRegistry) attach(k runKey, span trace.Span) ([]spanEvent, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.runs[k]
	if e == nil {
		return nil, false
	}
	e.span = span
	pending := e.pending
	e.pending = nil
	return pending, true
}

// event adds ev to the run's span, or keeps it for the span when the
// middleware has not started it yet. Events of unknown runs are dropped.
func (g *runRegistry) event(k runKey, ev spanEvent) {
	g.mu.Lock()
	e := g.runs[k]
	if e == nil {
		g.mu.Unlock()
		return
	}
	span := e.span
	if span == nil {
		e.pending = append(e.pending, ev)
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	span.AddEvent(ev.name, trace.WithAttributes(ev.attrs...))
}

// panicked notes that the middleware recorded a panic on the run's span.
func (g *runRegistry) panicked(k runKey) {
	g.mu.Lock()
	if e := g.runs[k]; e != nil {
		e.panicked = true
	}
	g.mu.Unlock()
}

// end removes a run and returns it; nil when it was not started.
func (g *runRegistry) end(k runKey) *runEntry {
	g.mu.Lock()
	e := g.runs[k]
	delete(g.runs, k)
	g.mu.Unlock()
	return e
}

// len returns the number of runs in the registry.
func (g *runRegistry) len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.runs)
}
