package inspect_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// epoch is the fake clock's start in the in-memory tests: 12:00:01.250 UTC.
var epoch = time.Date(2026, 3, 1, 12, 0, 1, 250_000_000, time.UTC)

// Registrations as a scheduler publishes them (scheduler's default key
// prefix "job:").
var (
	reportJob = fleet.Job{Name: "report", Key: "job:report", Schedule: `cron("*/5 * * * * *")`,
		Spec: "cron:UTC:*/5 * * * * *", Fingerprint: "report-fp"}
	tickJob = fleet.Job{Name: "tick", Key: "job:tick", Schedule: "every(1s)",
		Spec: "every:1000000000+0", Fingerprint: "tick-fp"}
)

// memEnv is an in-memory fleet on a fake clock, with an Inspector whose
// log is kept.
type memEnv struct {
	store *memory.Store
	clock *clockwork.FakeClock
	in    *inspect.Inspector
	logs  *syncBuffer
}

func newMemEnv(t *testing.T) memEnv {
	t.Helper()
	clock := clockwork.NewFakeClockAt(epoch)
	store, err := memory.New(memory.WithClock(clock))
	require.NoError(t, err)
	logs := &syncBuffer{}
	in, err := inspect.New(store, inspect.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	require.NoError(t, err)
	return memEnv{store: store, clock: clock, in: in, logs: logs}
}

// publish registers a replica with jobs, its entry living 15s.
func (e memEnv) publish(t *testing.T, id string, jobs ...fleet.Job) {
	t.Helper()
	_, err := e.store.PublishReplica(t.Context(), fleet.Replica{ID: id, Version: "test", Started: e.clock.Now(),
		Refresh: 5 * time.Second, Jobs: jobs}, 15*time.Second)
	require.NoError(t, err)
}

// run acquires key as replica would for a scheduled occurrence, and
// returns the lease.
func (e memEnv) run(t *testing.T, replica string, j fleet.Job, occ time.Time) *lease.Lease {
	t.Helper()
	l, err := e.store.Acquire(t.Context(), j.Key, 10*time.Second,
		lease.WithOwner(replica+"/"+j.Name), lease.WithRoundTime(occ, time.Second), lease.WithPauseCheck())
	require.NoError(t, err)
	return l
}

// finish releases l with a status, as the scheduler does at a run's end.
func (e memEnv) finish(t *testing.T, l *lease.Lease, occ time.Time, took time.Duration, outcome, errText string) {
	t.Helper()
	_, err := e.store.ReleaseWithStatus(context.Background(), l, fleet.Status{Occurrence: occ, Owner: l.Owner,
		Fence: l.Fence, Started: l.AcquiredAt, Duration: took, Outcome: outcome, Error: errText, Trigger: l.Trigger})
	require.NoError(t, err)
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
