package schedscale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"time"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/scheduler"
)

// ProfileDirEnv names an environment variable: when set to a directory,
// every replica writes a CPU profile (cpu-<replica>.pprof) over its whole
// run, block and mutex profiles, and an execution trace of TraceSeconds
// seconds, and reports its firing lateness in its done message.
const ProfileDirEnv = "SCHEDSCALE_PROFILE_DIR"

// ProfileContentionEnv names an environment variable: set to "0", the
// replicas write no block and mutex profiles, whose sampling costs CPU of
// its own (stack walks at every blocking event) and distorts the CPU
// profile.
const ProfileContentionEnv = "SCHEDSCALE_PROFILE_CONTENTION"

// TraceAfter is when the execution trace starts, from the replica's start
// (inside the checked window of a default run), and TraceSeconds how long it
// runs.
const (
	TraceAfter   = 12 * time.Second
	TraceSeconds = 3
)

// profiler writes the profiles a replica was asked for.
type profiler struct {
	dir     string
	replica int
	cpu     *os.File
	tr      *os.File
	stopTr  *time.Timer
}

func startProfiler(replica int) (*profiler, error) {
	dir := os.Getenv(ProfileDirEnv)
	if dir == "" {
		return nil, nil
	}
	// Every 4 KiB allocated is sampled (the default is every 512 KiB), so
	// that the heap profiles can be divided by the job count.
	runtime.MemProfileRate = 4096
	p := &profiler{dir: dir, replica: replica}
	var err error
	if p.cpu, err = os.Create(p.path("cpu", "pprof")); err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(p.cpu); err != nil {
		return nil, err
	}
	if os.Getenv(ProfileContentionEnv) != "0" {
		runtime.SetBlockProfileRate(int(time.Millisecond))
		runtime.SetMutexProfileFraction(100)
	}
	if p.tr, err = os.Create(p.path("trace", "out")); err != nil {
		return nil, err
	}
	p.stopTr = time.AfterFunc(TraceAfter, func() {
		if trace.Start(p.tr) == nil {
			time.AfterFunc(TraceSeconds*time.Second, trace.Stop)
		}
	})
	return p, nil
}

func (p *profiler) path(kind, ext string) string {
	return filepath.Join(p.dir, fmt.Sprintf("%s-%d.%s", kind, p.replica, ext))
}

func (p *profiler) stop() {
	if p == nil {
		return
	}
	p.stopTr.Stop()
	trace.Stop()
	_ = p.tr.Close()
	pprof.StopCPUProfile()
	_ = p.cpu.Close()
	for _, kind := range []string{"block", "mutex"} {
		if f, err := os.Create(p.path(kind, "pprof")); err == nil {
			_ = pprof.Lookup(kind).WriteTo(f, 0)
			_ = f.Close()
		}
	}
}

// lateness records, for every occurrence the replica attempted, how late
// its outcome event came: event time minus occurrence (this includes the
// acquire's round trip).
type lateness struct {
	d       record[time.Duration]
	started record[time.Duration] // of the runs started only
}

func (l *lateness) observe(e scheduler.Event) {
	switch e.Kind {
	case scheduler.EventStarted, scheduler.EventSkipped, scheduler.EventAcquireFailed:
	default:
		return
	}
	late := time.Since(e.Occurrence)
	l.d.add(late)
	if e.Kind == scheduler.EventStarted {
		l.started.add(late)
	}
}

// summary returns "p50 ... p99 ... max" of the recorded lateness.
func (l *lateness) summary() string {
	d, started := slices.Clone(l.d.values()), slices.Clone(l.started.values())
	if len(d) == 0 {
		return "no attempts"
	}
	slices.Sort(d)
	slices.Sort(started)
	q := func(d []time.Duration, f float64) time.Duration {
		return d[int(f*float64(len(d)-1))].Round(time.Millisecond)
	}
	over := 0
	for _, x := range d {
		if x >= time.Second {
			over++
		}
	}
	out := fmt.Sprintf("%d attempts, lateness p50 %s p90 %s p99 %s max %s, >=1s: %d", len(d), q(d, 0.5), q(d, 0.9), q(d, 0.99), d[len(d)-1].Round(time.Millisecond), over)
	if len(started) > 0 {
		out += fmt.Sprintf("; %d started, start lateness p50 %s p99 %s", len(started), q(started, 0.5), q(started, 0.99))
	}
	return out
}

// timedStore measures the store's Acquire round trips. It embeds the
// Redis store itself, not a lease.Store, so that the scheduler still sees
// the store's optional interfaces (fleet.Store: the control plane and the
// preferred replica; lease.BatchAcquirer, lease.RoundReader).
type timedStore struct {
	*redislease.Store
	d    record[time.Duration]
	read fleetRead // the first read of the registry (fleetread.go)
}

// AcquireBatch times a batch of acquires: each took the batch's round trip.
func (t *timedStore) AcquireBatch(ctx context.Context, reqs []lease.AcquireRequest, res []lease.AcquireResult) {
	began := time.Now()
	t.Store.AcquireBatch(ctx, reqs, res)
	d := time.Since(began)
	for range reqs {
		t.d.add(d)
	}
}

func (t *timedStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	began := time.Now()
	l, err := t.Store.Acquire(ctx, key, ttl, opts...)
	t.d.add(time.Since(began))
	return l, err
}

func (t *timedStore) summary() string {
	d := slices.Clone(t.d.values())
	if len(d) == 0 {
		return "no acquires"
	}
	slices.Sort(d)
	q := func(f float64) time.Duration { return d[int(f*float64(len(d)-1))].Round(100 * time.Microsecond) }
	return fmt.Sprintf("acquire round trip p50 %s p90 %s p99 %s max %s", q(0.5), q(0.9), q(0.99), d[len(d)-1].Round(time.Millisecond))
}

// writeHeap writes a heap profile (after a GC) named kind-<replica>.pprof.
func (p *profiler) writeHeap(kind string) {
	if p == nil {
		return
	}
	runtime.GC()
	if f, err := os.Create(p.path(kind, "pprof")); err == nil {
		_ = pprof.Lookup("heap").WriteTo(f, 0)
		_ = f.Close()
	}
}

func (l *lateness) bytes() uint64 {
	return l.d.bytes() + l.started.bytes()
}

func (t *timedStore) bytes() uint64 { return t.d.bytes() }

func (l *lateness) reserve(n int) {
	l.d.reserve(n)
	l.started.reserve(n)
}

func (t *timedStore) reserve(n int) { t.d.reserve(n) }
