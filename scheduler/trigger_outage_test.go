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

// A trigger whose claim fails for longer than its retries (one TTL) is
// asked for again until the store answers: when the store is back, the
// trigger, still waiting there, runs within its time to live.
func TestScheduler_Trigger_ClaimFailedIsAskedAgainAfterTheOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &acquireOutageStore{Store: newMemoryStore(t, nil)}
		var rs runStarts
		var evs events
		job := func(ctx context.Context) error { rs.record(ctx); return nil }
		time.Sleep(30 * time.Second) // off the hourly grid: only triggers run
		s := newScheduler(t, store, WithObserver(evs.observe))
		require.NoError(t, s.Register("report", Every(time.Hour), job, WithTTL(2*time.Second)))
		require.NoError(t, s.Start())
		synctest.Wait()

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
