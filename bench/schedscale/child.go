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
	"sync"
	"syscall"
	"time"

	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/scheduler"
	"github.com/redis/rueidis"
)

// AcquireConcurrencyEnv names an environment variable that, when set,
// passes its value to scheduler.WithAcquireConcurrency in every replica.
const AcquireConcurrencyEnv = "SCHEDSCALE_ACQUIRE_CONCURRENCY"

// ChildConfig configures one replica.
type ChildConfig struct {
	Addr     string        // Redis host:port
	Replica  int           // replica number, for its instance ID
	Jobs     int           // jobs to register, named JobName(0..Jobs-1)
	Interval time.Duration // every job runs on this epoch-aligned grid
	TTL      time.Duration // job lease TTL
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
	HeapBefore uint64 `json:"heapBefore,omitempty"` // HeapAlloc after GC before New+Register
	HeapAfter  uint64 `json:"heapAfter,omitempty"`  // HeapAlloc after GC after Register+Start
	// both: this process's CPU time so far
	CPU time.Duration `json:"cpu"`
	// done
	Runs  [][2]int64      `json:"runs,omitempty"` // {job index, occurrence Unix ms}
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

// Child runs one replica: it registers and starts the jobs, writes a ready
// message to out, runs until a line arrives on in (or in closes), shuts the
// scheduler down and writes a done message with every occurrence it ran.
func Child(cfg ChildConfig, in io.Reader, out io.Writer) error {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{cfg.Addr}, DisableCache: true})
	if err != nil {
		return err
	}
	defer client.Close()
	store, err := redislease.New(client)
	if err != nil {
		return err
	}

	var mu sync.Mutex
	runs := make([][2]int64, 0, cfg.Jobs*70/3)
	record := func(ctx context.Context) error {
		r, ok := scheduler.RunFromContext(ctx)
		if !ok {
			return fmt.Errorf("schedscale: no run in context")
		}
		mu.Lock()
		runs = append(runs, [2]int64{int64(jobIndex(r.Job)), r.Occurrence.UnixMilli()})
		mu.Unlock()
		return nil
	}

	before := heapAfterGC()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts := []scheduler.Option{scheduler.WithInstanceID(fmt.Sprintf("replica-%d", cfg.Replica)), scheduler.WithLogger(logger)}
	if v := os.Getenv(AcquireConcurrencyEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("schedscale: %s: %w", AcquireConcurrencyEnv, err)
		}
		opts = append(opts, scheduler.WithAcquireConcurrency(n))
	}
	prof, err := startProfiler(cfg.Replica)
	if err != nil {
		return err
	}
	late := &lateness{}
	opts = append(opts, scheduler.WithObserver(late.observe))
	timed := &timedStore{Store: store}
	s, err := scheduler.New(timed, opts...)
	if err != nil {
		return err
	}
	for i := range cfg.Jobs {
		if err := s.Register(JobName(i), scheduler.Every(cfg.Interval), record, scheduler.WithTTL(cfg.TTL)); err != nil {
			return err
		}
	}
	if err := s.Start(); err != nil {
		return err
	}
	after := heapAfterGC()
	// Room for the measurements, reserved after the heap was measured.
	late.reserve(cfg.Jobs * 90)
	timed.reserve(cfg.Jobs * 90)
	enc := json.NewEncoder(out)
	if err := enc.Encode(message{Event: "ready", HeapBefore: before, HeapAfter: after, CPU: cpuTime()}); err != nil {
		return err
	}

	_, _ = bufio.NewReader(in).ReadString('\n')
	cpu := cpuTime()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := message{Event: "done", CPU: cpu}
	if err := s.Shutdown(ctx); err != nil {
		done.Err = err.Error()
	}
	done.Stats = s.Stats()
	prof.stop()
	done.Late = late.summary() + "; " + timed.summary()
	mu.Lock()
	done.Runs = runs
	mu.Unlock()
	return enc.Encode(done)
}
