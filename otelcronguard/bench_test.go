package otelcronguard

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
	"github.com/cronguard/cronguard/scheduler"
)

// benchTelemetry is a Telemetry on the SDK with no exporter: a manual
// metric reader that is never collected, and a tracer provider that
// samples every span but has no processor.
func benchTelemetry(b *testing.B) *Telemetry {
	b.Helper()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider()
	b.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	tel, err := New(WithMeterProvider(mp), WithTracerProvider(tp))
	if err != nil {
		b.Fatal(err)
	}
	return tel
}

// stepper drives a scheduler on a fake clock one occurrence at a time.
type stepper struct {
	clock    *clockwork.FakeClock
	released chan struct{}
	sched    *scheduler.Scheduler
}

// newStepper starts a scheduler on a fake clock and the in-process store
// with one job, fn, every second, and the options opts (a Telemetry's).
func newStepper(b *testing.B, fn func(context.Context) error, opts ...scheduler.Option) *stepper {
	b.Helper()
	st := &stepper{
		clock:    clockwork.NewFakeClockAt(time.Date(2026, 11, 22, 10, 0, 0, 500_000_000, time.UTC)),
		released: make(chan struct{}, 1),
	}
	store, err := memory.New(memory.WithClock(st.clock))
	if err != nil {
		b.Fatal(err)
	}
	opts = append(opts, scheduler.WithClock(st.clock), scheduler.WithLogger(discardLogger()),
		scheduler.WithObserver(func(e scheduler.Event) {
			if e.Kind == scheduler.EventReleased {
				st.released <- struct{}{}
			}
		}))
	if st.sched, err = scheduler.New(store, opts...); err != nil {
		b.Fatal(err)
	}
	if err := st.sched.Register("tick", scheduler.Every(time.Second), fn); err != nil {
		b.Fatal(err)
	}
	if err := st.sched.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = st.sched.Shutdown(ctx)
	})
	return st
}

// step moves the clock to the next occurrence and waits for its run to
// end and its lease to be released.
func (st *stepper) step(b *testing.B) {
	// Between runs the scheduler's only timer is its next firing.
	if err := st.clock.BlockUntilContext(context.Background(), 1); err != nil {
		b.Fatal(err)
	}
	st.clock.Advance(time.Second)
	<-st.released
}

// cpuMeter measures the process's CPU time over a benchmark loop. On a
// shared machine wall time per op moves with other tenants' load; the CPU
// the process spent (its goroutines and its garbage collector) moves much
// less, and telemetry costs CPU.
type cpuMeter struct {
	start time.Duration
	ok    bool
}

func startCPU() cpuMeter {
	t, ok := processCPU()
	return cpuMeter{start: t, ok: ok}
}

// report adds cpu-ns/op to the benchmark's result.
func (m cpuMeter) report(b *testing.B) {
	end, ok := processCPU()
	if !m.ok || !ok || b.N == 0 {
		return
	}
	b.ReportMetric(float64(end-m.start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkScheduler_Run measures one whole run of a real scheduler on the
// in-process store, with and without otelcronguard (SDK providers, no
// exporter): the fake clock steps to the next occurrence, and the op ends
// when the run's lease is released (firing, acquire, heartbeat start and
// stop, the job, release, every event). The difference between the two is
// the telemetry's cost per run.
func BenchmarkScheduler_Run(b *testing.B) {
	for _, bc := range []struct {
		name      string
		telemetry bool
	}{{"baseline", false}, {"otelcronguard", true}} {
		b.Run(bc.name, func(b *testing.B) {
			var opts []scheduler.Option
			if bc.telemetry {
				opts = benchTelemetry(b).Options()
			}
			st := newStepper(b, func(context.Context) error { return nil }, opts...)
			st.step(b) // warm up: the first run builds the job's attribute sets
			b.ReportAllocs()
			cpu := startCPU()
			b.ResetTimer()
			for range b.N {
				st.step(b)
			}
			b.StopTimer()
			cpu.report(b)
			if got := st.sched.Stats().Succeeded; got != uint64(b.N)+1 {
				b.Fatalf("%d runs succeeded, want %d", got, b.N+1)
			}
		})
	}
}

// BenchmarkTelemetry_RunPath measures otelcronguard's own work for one
// run, without the scheduler's: the observer for the events a short run
// emits (started, succeeded, released) and the middleware around a job
// that returns nil, on a run context taken from a real run.
func BenchmarkTelemetry_RunPath(b *testing.B) {
	var runCtx context.Context
	st := newStepper(b, func(ctx context.Context) error { runCtx = ctx; return nil })
	st.step(b)
	run, ok := scheduler.RunFromContext(runCtx)
	if !ok {
		b.Fatal("no run in the job's context")
	}
	tel := benchTelemetry(b)
	job := tel.middleware(func(context.Context) error { return nil })
	started := scheduler.Event{Kind: scheduler.EventStarted, Job: run.Job, Instance: "replica-1",
		Occurrence: run.Occurrence, Fence: run.Fence, ShortLeaseID: lease.ShortID(run.LeaseID)}
	succeeded, released := started, started
	succeeded.Kind, succeeded.Duration = scheduler.EventSucceeded, time.Millisecond
	released.Kind = scheduler.EventReleased
	b.ReportAllocs()
	cpu := startCPU()
	b.ResetTimer()
	for range b.N {
		tel.observe(started)
		_ = job(runCtx)
		tel.observe(succeeded)
		tel.observe(released)
	}
	b.StopTimer()
	cpu.report(b)
	if n := tel.runs.len(); n != 0 {
		b.Fatalf("%d runs left in the registry", n)
	}
}
