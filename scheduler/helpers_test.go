package scheduler

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// skewedClock is a clock whose Now runs offset ahead of (or, negative,
// behind) the clock it wraps. Timers keep the wrapped clock's pace, so a
// scheduler on it fires when its own Now reaches the scheduled time.
type skewedClock struct {
	clockwork.Clock
	offset time.Duration
}

func (c skewedClock) Now() time.Time                  { return c.Clock.Now().Add(c.offset) }
func (c skewedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c skewedClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newMemoryStore returns an in-process store on clock (nil: the real clock,
// which inside a synctest bubble is the bubble's clock).
func newMemoryStore(t *testing.T, clock clockwork.Clock) *memory.Store {
	t.Helper()
	var opts []memory.Option
	if clock != nil {
		opts = append(opts, memory.WithClock(clock))
	}
	s, err := memory.New(opts...)
	require.NoError(t, err)
	return s
}

// newScheduler builds a scheduler with a quiet logger and shuts it down
// (with a bounded context) when the test ends.
func newScheduler(t *testing.T, store lease.Store, opts ...Option) *Scheduler {
	t.Helper()
	s, err := New(store, append([]Option{WithLogger(discardLogger())}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s
}

// occurrences collects the occurrences each job ran, across replicas.
type occurrences struct {
	mu   sync.Mutex
	runs map[string][]time.Time
}

func newOccurrences() *occurrences { return &occurrences{runs: make(map[string][]time.Time)} }

// record is a job function that records its run.
func (o *occurrences) record(ctx context.Context) error {
	r, ok := RunFromContext(ctx)
	if !ok {
		panic("no Run in the job's context")
	}
	o.mu.Lock()
	o.runs[r.Job] = append(o.runs[r.Job], r.Occurrence)
	o.mu.Unlock()
	return nil
}

// sorted returns job's occurrences in Unix ms, sorted.
func (o *occurrences) sorted(job string) []int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	ms := make([]int64, 0, len(o.runs[job]))
	for _, t := range o.runs[job] {
		ms = append(ms, t.UnixMilli())
	}
	slices.Sort(ms)
	return ms
}

// requireOncePerStep asserts that ms has no duplicate and no gap: each
// element is step after the previous one.
func requireOncePerStep(t *testing.T, job string, ms []int64, step time.Duration) {
	t.Helper()
	for i := 1; i < len(ms); i++ {
		switch d := ms[i] - ms[i-1]; {
		case d == 0:
			t.Fatalf("%s: occurrence %s ran twice", job, time.UnixMilli(ms[i]).UTC().Format(time.RFC3339Nano))
		case d != step.Milliseconds():
			t.Fatalf("%s: gap between %s and %s", job, time.UnixMilli(ms[i-1]).UTC().Format(time.RFC3339Nano), time.UnixMilli(ms[i]).UTC().Format(time.RFC3339Nano))
		}
	}
}

// events collects observer events.
type events struct {
	mu  sync.Mutex
	all []Event
}

func (e *events) observe(ev Event) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
}

// of returns the events of kind k.
func (e *events) of(k EventKind) []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Event
	for _, ev := range e.all {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

func shutdown(t *testing.T, s *Scheduler) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
}

// logRecorder keeps every log line as "LEVEL msg".
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *logRecorder) logger() *slog.Logger { return slog.New(&recordingHandler{r: r}) }

// has reports whether a line of level with msg was logged.
func (r *logRecorder) has(level, msg string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.lines, level+" "+msg)
}

// count returns how many lines of level with msg were logged.
func (r *logRecorder) count(level, msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.lines {
		if l == level+" "+msg {
			n++
		}
	}
	return n
}

type recordingHandler struct{ r *logRecorder }

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) Handle(_ context.Context, rec slog.Record) error {
	h.r.mu.Lock()
	h.r.lines = append(h.r.lines, rec.Level.String()+" "+rec.Message)
	h.r.mu.Unlock()
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

// acquireEach answers a batch of acquires one by one with acquire: the
// AcquireBatch of the test stores that wrap Acquire, so that the batch
// goes through the wrapper.
func acquireEach(ctx context.Context, acquire func(context.Context, string, time.Duration, ...lease.AcquireOption) (*lease.Lease, error),
	reqs []lease.AcquireRequest, res []lease.AcquireResult) {
	for i, r := range reqs {
		res[i].Lease, res[i].Err = acquire(ctx, r.Key, r.TTL, r.Options...)
	}
}
