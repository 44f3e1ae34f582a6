package scheduler

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// acquireOutageStore is an in-process store whose acquires fail as
// unavailable while down is set; everything else (the control channel,
// the operator's triggers) still works.
type acquireOutageStore struct {
	*memory.Store
	down atomic.Bool
}

func (s *acquireOutageStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	if s.down.Load() {
		return nil, fmt.Errorf("%w: test outage", lease.ErrUnavailable)
	}
	return s.Store.Acquire(ctx, key, ttl, opts...)
}

// startOutageScheduler starts, 30s into the bubble, a scheduler on a
// store whose acquires can be failed, with one job "report" that records
// its runs, and an observer of its events.
func startOutageScheduler(t *testing.T, every Schedule, ttl JobOption) (*acquireOutageStore, *runStarts, *events) {
	t.Helper()
	store := &acquireOutageStore{Store: newMemoryStore(t, nil)}
	rs, evs := &runStarts{}, &events{}
	job := func(ctx context.Context) error { rs.record(ctx); return nil }
	time.Sleep(30 * time.Second) // off the grid of the schedules used here
	s := newScheduler(t, store, WithObserver(evs.observe))
	require.NoError(t, s.Register("report", every, job, ttl))
	require.NoError(t, s.Start())
	synctest.Wait()
	return store, rs, evs
}

// A trigger whose claim fails for longer than its retries (one TTL) is
// asked for again until the store answers: when the store is back, the
// trigger, still waiting there, runs within its time to live.
func TestScheduler_Trigger_ClaimFailedIsAskedAgainAfterTheOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, rs, evs := startOutageScheduler(t, Every(time.Hour), WithTTL(2*time.Second))

		store.down.Store(true)
		_, err := store.AddTrigger(t.Context(), "job:report", "ops", time.Minute)
		require.NoError(t, err)
		time.Sleep(10 * time.Second) // the claim's retries run out
		require.NotEmpty(t, evs.of(EventAcquireFailed), "the trigger's claim failed")
		store.down.Store(false)
		time.Sleep(30 * time.Second)

		runs := rs.all()
		require.Len(t, runs, 1, "the trigger runs once the store is back")
		assert.True(t, runs[0].trigger)
	})
}

// A trigger whose claim meets a long outage asks the store again at most
// retryMax (1s, randomized by ±50%) apart, also once its claim's retries
// have run out: when the store answers, the trigger runs within 1.5s.
func TestScheduler_Trigger_RunsSoonAfterALongOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, rs, evs := startOutageScheduler(t, Every(time.Hour), WithTTL(time.Minute))

		store.down.Store(true)
		_, err := store.AddTrigger(t.Context(), "job:report", "ops", 5*time.Minute)
		require.NoError(t, err)
		time.Sleep(40 * time.Second) // the claim's backoff reaches its longest wait
		back := endOutageAfterATry(store, evs)
		time.Sleep(2 * time.Second)

		runs := rs.all()
		require.Len(t, runs, 1, "the trigger runs once the store is back")
		assert.True(t, runs[0].trigger)
		assert.LessOrEqual(t, runs[0].at.Sub(back), 1500*time.Millisecond)
	})
}

// An occurrence whose claim meets a long outage runs within retryMax (1s,
// randomized by ±50%) of the store's return, not a long backoff later:
// the store comes back just after a try.
func TestScheduler_Claim_RunsSoonAfterALongOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, rs, evs := startOutageScheduler(t, Every(10*time.Minute), WithTTL(time.Minute))

		store.down.Store(true)
		time.Sleep(10*time.Minute + 40*time.Second) // the claim's backoff reaches its longest wait
		require.NotEmpty(t, evs.of(EventAcquireRetrying), "the occurrence's claim met the outage")
		back := endOutageAfterATry(store, evs)
		time.Sleep(5 * time.Second)

		runs := rs.all()
		require.Len(t, runs, 1, "the occurrence runs once the store is back")
		assert.LessOrEqual(t, runs[0].at.Sub(back), 1500*time.Millisecond)
	})
}

// endOutageAfterATry ends store's outage just after the next failed try
// of a claim (a retry, or a claim that gave up), so that the next try is
// a whole wait away, and returns when it ended it.
func endOutageAfterATry(store *acquireOutageStore, evs *events) time.Time {
	tries := func() int { return len(evs.of(EventAcquireRetrying)) + len(evs.of(EventAcquireFailed)) }
	for n := tries(); tries() == n; {
		time.Sleep(10 * time.Millisecond)
	}
	store.down.Store(false)
	return time.Now()
}
