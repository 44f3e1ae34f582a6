package completion

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/scheduler"
	"github.com/cronguard/cronguard/testutil"
)

// childEnv names the environment variable that makes the test binary run
// one replica (runChild) instead of the tests; its value is the replica's
// childConfig, in JSON.
const childEnv = "CRONGUARD_TEST_CHILD"

// Bounds for a child replica.
const (
	// childReadyBound bounds the time from starting the test binary again
	// (built with -race, on a loaded machine) to its first attempt.
	childReadyBound = 30 * time.Second
	// childStopBound bounds a child's Shutdown after SIGTERM.
	childStopBound = 10 * time.Second
)

// What a child replica's job does.
const (
	// holdUntilStopped: the job works until its context is cancelled and
	// returns the cause, committing nothing.
	holdUntilStopped = "hold"
	// commitThenHold: the job commits its effect at once, notes
	// kindCommitted, and then works until its context is cancelled.
	commitThenHold = "commit_then_hold"
)

// childConfig configures a child replica.
type childConfig struct {
	Replica string  `json:"replica"`
	Redis   string  `json:"redis"` // host:port
	DSN     string  `json:"dsn"`   // PostgreSQL, for the job's effect
	Job     jobSpec `json:"job"`
	Does    string  `json:"does"` // holdUntilStopped or commitThenHold
	// AlignToStart, with Job.Every, sets Job.Offset so that an occurrence
	// falls when the replica starts, which it then catches up: its
	// deadline, the next occurrence, is a whole period away however long
	// the process took to start. The notes of its runs tell the parent
	// which occurrence it is.
	AlignToStart bool `json:"align_to_start,omitempty"`
}

// jobSpec is a job as every replica of a test registers it: the same
// schedule and options, so that the replicas agree on its occurrences and
// on its fingerprint.
type jobSpec struct {
	Name   string        `json:"name"`
	TTL    time.Duration `json:"ttl"`
	Every  time.Duration `json:"every"`  // 0: nightly, at 02:00 UTC
	Offset time.Duration `json:"offset"` // with Every: EveryWithOffset
}

// key is the job's lease key, under which the store keeps its history.
func (j jobSpec) key() string { return scheduler.JobKeyPrefix + j.Name }

// register registers the job on s with fn and extra options. Its latest
// occurrence is caught up when the scheduler starts, so that the first
// replica runs it at once.
func (j jobSpec) register(s *scheduler.Scheduler, fn func(context.Context) error, extra ...scheduler.JobOption) error {
	sch, window := scheduler.Cron("0 2 * * *"), 24*time.Hour
	if j.Every > 0 {
		sch, window = scheduler.EveryWithOffset(j.Every, j.Offset), j.Every
	}
	opts := append([]scheduler.JobOption{scheduler.WithTTL(j.TTL), scheduler.WithCatchUp(window)}, extra...)
	return s.Register(j.Name, sch, fn, opts...)
}

// runChild runs one replica as childConfig raw says, writes each note to
// standard output, one JSON line each, and shuts the replica down at
// SIGTERM. It returns the process's exit code.
func runChild(raw string) int {
	// First, so that a SIGTERM from now on shuts the replica down.
	sigctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := child(sigctx, raw); err != nil {
		fmt.Fprintln(os.Stderr, "child replica:", err)
		return 1
	}
	return 0
}

func child(sigctx context.Context, raw string) error {
	var cfg childConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return fmt.Errorf("%s: %w", childEnv, err)
	}
	var mu sync.Mutex
	enc := json.NewEncoder(os.Stdout)
	emit := func(n note) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(n)
	}

	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{cfg.Redis}, DisableCache: true})
	if err != nil {
		return err
	}
	defer client.Close()
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	store, err := redislease.New(client, redislease.WithLogger(logger))
	if err != nil {
		return err
	}
	db, err := sql.Open("pgx", cfg.DSN)
	if err != nil {
		return err
	}
	defer db.Close()

	s, err := scheduler.New(store, scheduler.WithInstanceID(cfg.Replica), scheduler.WithLogger(logger),
		scheduler.WithObserver(func(e scheduler.Event) { emit(noteOf(e)) }))
	if err != nil {
		return err
	}
	job := func(ctx context.Context) error {
		if cfg.Does == commitThenHold {
			if err := commitEffect(ctx, db); err != nil {
				return err
			}
			r, _ := scheduler.RunFromContext(ctx)
			emit(note{Kind: kindCommitted, Replica: r.Replica, Attempt: r.Attempt, Fence: int64(r.Fence), Occurrence: r.Occurrence, At: time.Now()})
		}
		<-ctx.Done() // the work goes on until Shutdown, or the process dies
		return context.Cause(ctx)
	}
	if cfg.AlignToStart && cfg.Job.Every > 0 {
		cfg.Job.Offset = time.Duration(time.Now().UnixMilli()%cfg.Job.Every.Milliseconds()) * time.Millisecond
	}
	if err := cfg.Job.register(s, job); err != nil {
		return err
	}
	if err := s.Start(); err != nil {
		return err
	}

	<-sigctx.Done()
	ctx, cancel := context.WithTimeout(context.Background(), childStopBound)
	defer cancel()
	last := note{Kind: kindExit, Replica: cfg.Replica}
	if err := s.Shutdown(ctx); err != nil {
		last.Err = err.Error()
	}
	st := s.Stats()
	last.Stats, last.At = &st, time.Now()
	emit(last)
	return nil
}

// childReplica is a replica running in a process of its own.
type childReplica struct {
	name   string
	cmd    *exec.Cmd
	done   chan struct{} // closed once the process has exited and its output is read
	stderr *lockedBuffer // its log: warnings and errors, JSON
}

// startChild starts the test binary again as the replica cfg describes;
// its notes go to j. The process is killed at the end of the test if it
// still runs (and by the kernel if the test process dies).
func startChild(t *testing.T, cfg childConfig, j *journal) *childReplica {
	t.Helper()
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	c := &childReplica{name: cfg.Replica, cmd: cmd, done: make(chan struct{}), stderr: &lockedBuffer{}}
	cmd.Stderr = c.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var n note
			if err := json.Unmarshal(sc.Bytes(), &n); err != nil {
				j.add(note{Kind: "unreadable", Replica: cfg.Replica, Err: sc.Text(), At: time.Now()})
				continue
			}
			j.add(n)
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.done
		if t.Failed() {
			t.Logf("replica %s's log:\n%s", c.name, c.stderr)
		}
	})
	return c
}

// signal sends sig to the replica's process and returns when it was sent,
// on the wall clock.
func (c *childReplica) signal(t *testing.T, sig syscall.Signal) time.Time {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(sig), "signal %s to replica %s", sig, c.name)
	return time.Now()
}

// wait waits for the process to exit and returns its exit status.
func (c *childReplica) wait(t *testing.T, bound time.Duration) *os.ProcessState {
	t.Helper()
	select {
	case <-c.done:
		return c.cmd.ProcessState
	case <-time.After(bound):
		t.Fatalf("replica %s still runs %s after it was told to stop", c.name, bound)
		return nil
	}
}

// killed reports whether the process ended by SIGKILL.
func killed(ps *os.ProcessState) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// startReplica starts a replica in the test's process, on its own client
// of srv, with spec's job running fn; its events go to j, its log to the
// returned buffer. It is shut down at the end of the test unless the
// test did it.
func startReplica(t *testing.T, srv *testutil.Redis, name string, spec jobSpec, fn func(context.Context) error, j *journal, extra ...scheduler.JobOption) (*scheduler.Scheduler, *lockedBuffer) {
	t.Helper()
	log := &lockedBuffer{}
	logger := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	store, err := redislease.New(srv.Client(t), redislease.WithLogger(logger))
	require.NoError(t, err)
	s, err := scheduler.New(store, scheduler.WithInstanceID(name), scheduler.WithObserver(j.observe), scheduler.WithLogger(logger))
	require.NoError(t, err)
	require.NoError(t, spec.register(s, fn, extra...))
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), childStopBound)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil { // a second Shutdown waits again, for nothing
			t.Errorf("replica %s: shutdown: %v", name, err)
		}
		if t.Failed() {
			t.Logf("replica %s's log:\n%s", name, log)
		}
	})
	return s, log
}

// shutdown shuts s down and fails the test if it does not stop.
func shutdown(t *testing.T, s *scheduler.Scheduler) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), childStopBound)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines returns the JSON log lines of b that decode, as maps.
func (b *lockedBuffer) lines() []map[string]any {
	var out []map[string]any
	for _, l := range bytes.Split([]byte(b.String()), []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(l, &m) == nil {
			out = append(out, m)
		}
	}
	return out
}
