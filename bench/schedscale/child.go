package schedscale

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/scheduler"
	"github.com/jonboulle/clockwork"
	"github.com/redis/rueidis"
)

// AcquireConcurrencyEnv names an environment variable that, when set,
// passes its value to scheduler.WithAcquireConcurrency in every replica.
const AcquireConcurrencyEnv = "SCHEDSCALE_ACQUIRE_CONCURRENCY"

// FlushDelayEnv names an environment variable that, when set to a
// duration, is every replica's rueidis ClientOption.MaxFlushDelay: the
// client waits up to that long after each write to the connection to
// gather more commands into the next one.
const FlushDelayEnv = "SCHEDSCALE_FLUSH_DELAY"

// ChildConfig configures one replica.
type ChildConfig struct {
	Addr     string        // Redis host:port
	Replica  int           // replica number, for its instance ID
	Jobs     int           // jobs to register, named JobName(0..Jobs-1)
	Interval time.Duration // every job runs on this epoch-aligned grid
	TTL      time.Duration // job lease TTL
	// Span is how long the replica runs, about (warm-up + window + stop):
	// the measurement buffers are reserved for it before the heap is
	// measured, so that they do not count as the scheduler's heap.
	Span time.Duration
	// Options are scheduler options by name (see SchedulerOptions), as
	// "name=value".
	Options []string
	// Offset moves the scheduler's clock: its Now is true time plus
	// Offset, its timers keep the real pace. The lateness recorded is on
	// true time.
	Offset time.Duration
}

// JobName returns the name of job i.
func JobName(i int) string { return fmt.Sprintf("job-%05d", i) }

func jobIndex(name string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(name, "job-"))
	if err != nil {
		return -1
	}
	return n
}

// message is one JSON line a replica writes to the parent.
type message struct {
	Event string `json:"event"` // "ready" or "done"
	// ready
	HeapBefore uint64 `json:"heapBefore,omitempty"` // HeapAlloc after GC before New+Register, once the client has opened its connection
	HeapAfter  uint64 `json:"heapAfter,omitempty"`  // the least HeapAlloc after GC over 1 s after Register+Start and the first read of the registry (fleetread.go)
	// done: HeapAlloc after GC when asked to stop (before Shutdown), less
	// any growth of the measurement buffers since HeapBefore.
	HeapSteady uint64 `json:"heapSteady,omitempty"`
	// both: this process's CPU time so far
	CPU time.Duration `json:"cpu"`
	// done
	Runs  [][3]int64      `json:"runs,omitempty"` // {job index, occurrence Unix ms, start lateness µs}
	Late  string          `json:"late,omitempty"` // lateness of the attempts' outcomes
	Stats scheduler.Stats `json:"stats"`
	Err   string          `json:"err,omitempty"`
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapAfterGC() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// leastHeap returns the least heap after a GC of samples taken every 100
// ms for d: the jobs fire meanwhile, and a sample taken while a firing's
// runs are in flight counts them.
func leastHeap(d time.Duration) uint64 {
	least := heapAfterGC()
	for end := time.Now().Add(d); time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
		least = min(least, heapAfterGC())
	}
	return least
}

// warmCommands is how many reads openConnections sends.
const warmCommands = 16

// openConnections sends a few reads, so that the heap baseline is taken
// once the client has opened the connection it pipelines commands over:
// rueidis.NewClient leaves it to the first commands (its read and write
// buffers and ring, some 1.4 MB by default, came after the baseline
// before), and a service's client has it open whatever it runs. What the
// scheduler opens beyond it, such as the control channel's dedicated
// connection, is still counted.
func openConnections(client rueidis.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range warmCommands {
		err := client.Do(ctx, client.B().Get().Key("schedscale:warm").Build()).Error()
		if err != nil && !rueidis.IsRedisNil(err) {
			return fmt.Errorf("schedscale: open the client's connection: %w", err)
		}
	}
	return nil
}

// Child runs one replica: it registers and starts the jobs, writes a ready
// message to out, runs until a line arrives on in (or in closes), shuts the
// scheduler down and writes a done message with every occurrence it ran.
func Child(cfg ChildConfig, in io.Reader, out io.Writer) error {
	copt := rueidis.ClientOption{InitAddress: []string{cfg.Addr}, DisableCache: true}
	if v := os.Getenv(FlushDelayEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%s: %w", FlushDelayEnv, err)
		}
		copt.MaxFlushDelay = d
	}
	client, err := rueidis.NewClient(copt)
	if err != nil {
		return err
	}
	defer client.Close()
	store, err := redislease.New(client)
	if err != nil {
		return err
	}
	if err := openConnections(client); err != nil {
		return err
	}

	// Every measurement buffer is reserved before the heap is measured,
	// for every occurrence of the replica's span (an attempt per job per
	// interval at most).
	perJob := int(max(cfg.Span, 90*cfg.Interval)/cfg.Interval) + 10
	var runs record[[3]int64]
	runs.reserve(cfg.Jobs * perJob)
	job := func(ctx context.Context) error {
		r, ok := scheduler.RunFromContext(ctx)
		if !ok {
			return fmt.Errorf("schedscale: no run in context")
		}
		late := time.Since(r.Occurrence).Microseconds() // true time, whatever the scheduler's clock says
		runs.add([3]int64{int64(jobIndex(r.Job)), r.Occurrence.UnixMilli(), late})
		return nil
	}
	late := &lateness{}
	timed := &timedStore{Store: store, read: fleetRead{done: make(chan struct{})}}
	late.reserve(cfg.Jobs * perJob)
	timed.reserve(cfg.Jobs * perJob)
	buffers := func() uint64 {
		return runs.bytes() + late.bytes() + timed.bytes()
	}

	bufBefore := buffers()
	before := heapAfterGC()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts := []scheduler.Option{scheduler.WithInstanceID(fmt.Sprintf("replica-%d", cfg.Replica)), scheduler.WithLogger(logger)}
	if v := os.Getenv(AcquireConcurrencyEnv); v != "" {
		cfg.Options = append(cfg.Options, "acquire-concurrency="+v)
	}
	named, err := SchedulerOptions(cfg.Options)
	if err != nil {
		return err
	}
	opts = append(opts, named...)
	if cfg.Offset != 0 {
		opts = append(opts, scheduler.WithClock(offsetClock{Clock: clockwork.NewRealClock(), offset: cfg.Offset}))
	}
	prof, err := startProfiler(cfg.Replica)
	if err != nil {
		return err
	}
	opts = append(opts, scheduler.WithObserver(late.observe))
	s, err := scheduler.New(timed, opts...)
	if err != nil {
		return err
	}
	for i := range cfg.Jobs {
		if err := s.Register(JobName(i), scheduler.Every(cfg.Interval), job, scheduler.WithTTL(cfg.TTL)); err != nil {
			return err
		}
	}
	if err := s.Start(); err != nil {
		return err
	}
	timed.awaitFleetRead(cfg.Options)
	after := leastHeap(time.Second)
	prof.writeHeap("heap-ready")
	enc := json.NewEncoder(out)
	if err := enc.Encode(message{Event: "ready", HeapBefore: before, HeapAfter: after, CPU: cpuTime()}); err != nil {
		return err
	}

	_, _ = bufio.NewReader(in).ReadString('\n')
	cpu := cpuTime()
	steady := heapAfterGC() - (buffers() - bufBefore)
	prof.writeHeap("heap-steady")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := message{Event: "done", CPU: cpu, HeapSteady: steady}
	if err := s.Shutdown(ctx); err != nil {
		done.Err = err.Error()
	}
	done.Stats = s.Stats()
	prof.stop()
	done.Late = late.summary() + "; " + timed.summary()
	done.Runs = runs.values()
	return enc.Encode(done)
}
