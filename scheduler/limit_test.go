package scheduler

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/testutil"
)

// concurrency counts runs in progress as the observers see them (started,
// not yet ended) and as the jobs see themselves, and keeps the highest
// counts.
type concurrency struct {
	observed, observedMax atomic.Int64
	inside, insideMax     atomic.Int64
	limitSkips            atomic.Int64

	mu   sync.Mutex
	runs map[string]bool // "job@occurrence" that ran
	dup  []string
}

func raise(n int64, most *atomic.Int64) {
	for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
	}
}

func (c *concurrency) observe(e Event) {
	switch e.Kind {
	case EventStarted:
		raise(c.observed.Add(1), &c.observedMax)
	case EventSucceeded, EventFailed, EventPanicked, EventTimedOut:
		c.observed.Add(-1)
	case EventSkipped:
		if e.Reason == SkipConcurrencyLimit {
			c.limitSkips.Add(1)
		}
	}
}

// job returns a job function that takes d and counts itself.
func (c *concurrency) job(d time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		raise(c.inside.Add(1), &c.insideMax)
		defer c.inside.Add(-1)
		r, _ := RunFromContext(ctx)
		id := fmt.Sprintf("%s@%d", r.Job, r.Occurrence.UnixMilli())
		c.mu.Lock()
		if c.runs[id] {
			c.dup = append(c.dup, id)
		}
		c.runs[id] = true
		c.mu.Unlock()
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
		return nil
	}
}

// limitFleet registers six jobs sharing WithConcurrencyLimit("heavy", 2)
// on one replica per store, each due every interval and taking run, starts
// them, lets them run for span (sleep: the bubble's clock in synctest, the
// real one against Redis) and shuts them down.
func limitFleet(t *testing.T, stores []lease.Store, interval, run, span time.Duration) (*concurrency, []*Scheduler) {
	t.Helper()
	c := &concurrency{runs: make(map[string]bool)}
	var replicas []*Scheduler
	for i, store := range stores {
		s := newScheduler(t, store, WithInstanceID(fmt.Sprintf("replica-%d", i)), WithObserver(c.observe))
		for j := range 6 {
			require.NoError(t, s.Register(fmt.Sprintf("heavy-%d", j), Every(interval), c.job(run),
				WithConcurrencyLimit("heavy", 2), WithTTL(2*time.Second)))
		}
		replicas = append(replicas, s)
	}
	for _, s := range replicas {
		require.NoError(t, s.Start())
	}
	time.Sleep(span)
	for _, s := range replicas {
		shutdown(t, s)
	}
	return c, replicas
}

// checkLimit asserts what every limitFleet run must show.
func checkLimit(t *testing.T, c *concurrency, replicas []*Scheduler) {
	t.Helper()
	assert.LessOrEqual(t, c.observedMax.Load(), int64(2), "never more than two runs at once, as the observers see them")
	assert.LessOrEqual(t, c.insideMax.Load(), int64(2), "never more than two runs at once, as the jobs see themselves")
	assert.Equal(t, int64(2), c.insideMax.Load(), "the limit was reached")
	assert.Empty(t, c.dup, "no occurrence ran twice")
	var started, skips uint64
	for _, s := range replicas {
		st := s.Stats()
		started += st.Started
		skips += st.SkipConcurrencyLimit
	}
	assert.Positive(t, started)
	assert.Positive(t, skips, "occurrences that found no slot in time are skipped, with their own reason")
	assert.Equal(t, uint64(c.limitSkips.Load()), skips, "each such skip is an EventSkipped with SkipConcurrencyLimit")
}

// Six 1s jobs whose runs take 1.5s share a limit of two, on three
// replicas over one in-process store, for 20 simulated seconds.
func TestScheduler_ConcurrencyLimit_SixJobsThreeReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		c, replicas := limitFleet(t, []lease.Store{store, store, store}, time.Second, 1500*time.Millisecond, 20*time.Second)
		checkLimit(t, c, replicas)
		assert.GreaterOrEqual(t, len(c.runs), 20, "two at a time, 1.5s each, for 20s")
	})
}

// The same on a real redis-server, each replica on its own client: the
// slots are a Redis semaphore, and waiters are woken by its releases.
func TestScheduler_ConcurrencyLimit_RealRedis(t *testing.T) {
	t.Parallel()
	srv := testutil.StartRedis(t)
	var stores []lease.Store
	for range 3 {
		st, err := redislease.New(srv.Client(t), redislease.WithLogger(discardLogger()))
		require.NoError(t, err)
		stores = append(stores, st)
	}
	c, replicas := limitFleet(t, stores, 500*time.Millisecond, 400*time.Millisecond, 3*time.Second)
	checkLimit(t, c, replicas)
}

func TestWithConcurrencyLimit_Invalid(t *testing.T) {
	noop := func(context.Context) error { return nil }
	s := newScheduler(t, newMemoryStore(t, nil))
	tests := []struct {
		name string
		opt  JobOption
	}{
		{"empty name", WithConcurrencyLimit("", 2)},
		{"zero", WithConcurrencyLimit("heavy", 0)},
		{"negative", WithConcurrencyLimit("heavy", -1)},
		{"too many", WithConcurrencyLimit("heavy", lease.MaxSemaphoreLimit+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorIs(t, s.Register("job-"+tt.name, Every(time.Minute), noop, tt.opt), ErrInvalidArgument)
		})
	}
	require.NoError(t, s.Register("a", Every(time.Minute), noop, WithConcurrencyLimit("heavy", 2)))
	err := s.Register("b", Every(time.Minute), noop, WithConcurrencyLimit("heavy", 3))
	require.ErrorIs(t, err, ErrInvalidArgument, "one limit, one n")
	assert.ErrorContains(t, err, "n = 2")

	plain := newScheduler(t, struct{ lease.Store }{newMemoryStore(t, nil)})
	err = plain.Register("a", Every(time.Minute), noop, WithConcurrencyLimit("heavy", 2))
	require.ErrorIs(t, err, ErrInvalidArgument, "a store without semaphores")
	assert.ErrorContains(t, err, "semaphores")
}
