package heartbeat_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// The tests in this file run the heartbeat against the real in-process
// Store (lease/memory) instead of the test's fakeStore.

func TestStart_MemoryStore_RenewalsKeepLeaseAliveForTenTTLs(t *testing.T) {
	clock := clockwork.NewFakeClock()
	store, err := memory.New(memory.WithClock(clock))
	require.NoError(t, err)
	l := acquire(t, store, "job", ttl)
	ctx, stop, rec := startRecorded(t, t.Context(), store, l, heartbeat.WithClock(clock))

	const step = interval / 4
	for range 10 * ttl / step {
		require.NoError(t, idle(t.Context(), clock, l))
		clock.Advance(step)
		_, err := store.Acquire(t.Context(), "job", ttl)
		require.ErrorIs(t, err, lease.ErrLocked, "at %s", clock.Now())
	}
	require.NoError(t, idle(t.Context(), clock, l))

	require.NoError(t, ctx.Err())
	assert.Len(t, rec.of(heartbeat.EventRenewed), int(10*ttl/interval))
	_, err = store.LookupID(t.Context(), l.ID)
	assert.NoError(t, err, "lease still live after 10 x TTL")
	require.NoError(t, stop())
}

func TestStart_MemoryStore_ReleasedBehindBackCancelsWithLeaseLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, err := memory.New()
		require.NoError(t, err)
		l := acquire(t, store, "job", ttl)
		ctx, stop, err := heartbeat.Start(t.Context(), store, l, heartbeat.WithLogger(discard))
		require.NoError(t, err)
		doneAt := watchDone(ctx)

		time.Sleep(interval / 2)
		require.NoError(t, store.Release(t.Context(), l.ID))
		releasedAt := time.Now()

		assert.LessOrEqual(t, doneAt().Sub(releasedAt), interval)
		assert.ErrorIs(t, context.Cause(ctx), heartbeat.ErrLeaseLost)
		assert.ErrorIs(t, context.Cause(ctx), lease.ErrNotHeld)
		assert.ErrorIs(t, stop(), heartbeat.ErrLeaseLost)
	})
}

// partitionedStore is a Store whose Extend calls fail as if the network to
// the server were down, once cut is set.
type partitionedStore struct {
	lease.Store
	cut atomic.Bool
}

func (s *partitionedStore) Extend(ctx context.Context, id string, ttl time.Duration) (time.Time, error) {
	if s.cut.Load() {
		<-ctx.Done() // a blackholed connection: no answer until the caller gives up
		return time.Time{}, errors.Join(lease.ErrTimeout, ctx.Err())
	}
	return s.Store.Extend(ctx, id, ttl)
}

// TestStart_MemoryStore_PartitionedHolderDoneBeforeOtherAcquires is the
// partition property on simulated time: once the holder cannot reach the
// store, its context is done strictly before anyone else can acquire.
func TestStart_MemoryStore_PartitionedHolderDoneBeforeOtherAcquires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, err := memory.New()
		require.NoError(t, err)
		store := &partitionedStore{Store: mem}
		for i := range 20 {
			l := acquire(t, store, "job", ttl)
			ctx, stop, err := heartbeat.Start(t.Context(), store, l, heartbeat.WithLogger(discard))
			require.NoError(t, err)
			doneAt := watchDone(ctx)

			// Cut at a different phase of the renewal cycle each round.
			time.Sleep(interval + time.Duration(i)*interval/20)
			store.cut.Store(true)
			var acquiredAt time.Time
			for {
				other, err := mem.Acquire(t.Context(), "job", ttl)
				if err == nil {
					acquiredAt = time.Now()
					require.NoError(t, other.Release(t.Context()))
					break
				}
				require.ErrorIs(t, err, lease.ErrLocked)
				time.Sleep(time.Millisecond)
			}
			done := doneAt()
			assert.True(t, done.Before(acquiredAt), "round %d: holder done at %s, other acquired at %s", i, done, acquiredAt)
			assert.ErrorIs(t, stop(), heartbeat.ErrLeaseUnconfirmed)
			store.cut.Store(false)
		}
	})
}

// Without WithClock the heartbeat measures on the store's own clock (a
// lease.ClockedStore), the clock the lease's Deadline was measured on: a
// fake clock that drives the store drives the renewals and the cut-off too.
// Renewals report their latency on that clock; a loss reports how long the
// lease had left.
func TestStart_MemoryStore_DefaultsToTheStoreClock(t *testing.T) {
	clock := clockwork.NewFakeClock()
	store, err := memory.New(memory.WithClock(clock))
	require.NoError(t, err)
	l := acquire(t, store, "job", ttl)
	ctx, stop, rec := startRecorded(t, t.Context(), store, l) // no WithClock

	const step = interval / 4
	for range 3 * ttl / step {
		require.NoError(t, idle(t.Context(), clock, l))
		clock.Advance(step)
	}
	require.NoError(t, idle(t.Context(), clock, l))
	require.NoError(t, ctx.Err())
	ext := rec.of(heartbeat.EventRenewed)
	require.Len(t, ext, int(3*ttl/interval), "renewals follow the store's fake clock")
	for _, e := range ext {
		assert.Zero(t, e.Latency, "the fake clock did not move during the Extend")
	}

	// Released behind its back: the next renewal finds it gone, with the
	// rest of the interval's worth of lease left.
	require.NoError(t, store.Release(t.Context(), l.ID))
	clock.Advance(interval) // the next renewal is due
	select {
	case <-ctx.Done():
	case <-t.Context().Done():
		t.Fatal("the renewal after the release did not end the heartbeat")
	}
	assert.ErrorIs(t, stop(), heartbeat.ErrLeaseLost) // waits for the heartbeat's last event
	lost := rec.of(heartbeat.EventLost)
	require.Len(t, lost, 1)
	assert.ErrorIs(t, lost[0].Err, heartbeat.ErrLeaseLost)
	assert.Equal(t, lost[0].Deadline.Sub(clock.Now()), lost[0].Remaining)
	assert.Positive(t, lost[0].Remaining)
}
