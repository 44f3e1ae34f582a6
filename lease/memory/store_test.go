package memory_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/leasetest"
	"github.com/cronguard/cronguard/lease/memory"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func newStore(t *testing.T) (*memory.Store, *clockwork.FakeClock) {
	t.Helper()
	clock := clockwork.NewFakeClockAt(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	s, err := memory.New(memory.WithClock(clock))
	require.NoError(t, err)
	return s, clock
}

func TestStore_Conformance(t *testing.T) {
	leasetest.Run(t, func(t *testing.T) leasetest.Env {
		s, clock := newStore(t)
		return leasetest.Env{Store: s, Wait: clock.Advance}
	})
}

func TestStore_CompletionConformance(t *testing.T) {
	leasetest.RunCompletion(t, func(t *testing.T) leasetest.Env {
		s, clock := newStore(t)
		return leasetest.Env{Store: s, Wait: clock.Advance}
	})
}

func TestStore_SemaphoreConformance(t *testing.T) {
	leasetest.RunSemaphore(t, func(t *testing.T) leasetest.Env {
		s, clock := newStore(t)
		return leasetest.Env{Store: s, Wait: clock.Advance}
	})
}

func TestStore_BatchConformance(t *testing.T) {
	leasetest.RunBatch(t, func(t *testing.T) leasetest.Env {
		s, clock := newStore(t)
		return leasetest.Env{Store: s, Wait: clock.Advance}
	})
}

func TestStore_FairConformance(t *testing.T) {
	leasetest.RunFair(t, func(t *testing.T) leasetest.Env {
		s, clock := newStore(t)
		return leasetest.Env{Store: s, Wait: clock.Advance}
	})
}

func TestStore_Conformance_RealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps on the real clock for about 3s")
	}
	leasetest.Run(t, func(t *testing.T) leasetest.Env {
		s, err := memory.New()
		require.NoError(t, err)
		return leasetest.Env{Store: s, Wait: time.Sleep}
	})
}

func TestNew_NilClock(t *testing.T) {
	s, err := memory.New(memory.WithClock(nil))
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
	assert.Nil(t, s)
}

// TestStore_Extend_ExactExpiryBoundary pins the liveness rule on the fake
// clock: live while ExpiresAt > now - ExpiryTolerance, retained for
// ExpiredRetention after that, then forgotten.
func TestStore_Extend_ExactExpiryBoundary(t *testing.T) {
	ctx := t.Context()
	s, clock := newStore(t)
	const ttl = 100 * time.Millisecond
	l, err := s.Acquire(ctx, "k", ttl)
	require.NoError(t, err)

	clock.Advance(ttl + lease.ExpiryTolerance - time.Millisecond)
	locked, err := s.IsLocked(ctx, "k")
	require.NoError(t, err)
	assert.True(t, locked, "1ms before ExpiresAt + tolerance the lease is live")
	_, err = s.Acquire(ctx, "k", ttl)
	var le *lease.LockedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, time.Millisecond, le.Remaining, "Remaining counts to ExpiresAt + ExpiryTolerance")

	clock.Advance(time.Millisecond)
	locked, err = s.IsLocked(ctx, "k")
	require.NoError(t, err)
	assert.False(t, locked, "at ExpiresAt + tolerance the lease is no longer live")
	var nh *lease.NotHeldError
	_, err = s.Extend(ctx, l.ID, ttl)
	require.ErrorAs(t, err, &nh)
	assert.Equal(t, lease.ReasonExpired, nh.Reason)

	clock.Advance(lease.ExpiredRetention - time.Millisecond)
	_, err = s.Extend(ctx, l.ID, ttl)
	require.ErrorAs(t, err, &nh)
	assert.Equal(t, lease.ReasonExpired, nh.Reason, "within retention: expired")
	clock.Advance(time.Millisecond)
	_, err = s.Extend(ctx, l.ID, ttl)
	require.ErrorAs(t, err, &nh)
	assert.Equal(t, lease.ReasonNotFound, nh.Reason, "after retention: not found")
}

// TestStore_Acquire_StaleIDReasons documents which reason the memory store
// gives a stale ID: not found after a release, not owner after an expiry
// and re-acquire by another ID (within retention).
func TestStore_Acquire_StaleIDReasons(t *testing.T) {
	ctx := t.Context()
	s, clock := newStore(t)
	released, err := s.Acquire(ctx, "a", time.Second)
	require.NoError(t, err)
	require.NoError(t, s.Release(ctx, released.ID))
	_, err = s.Acquire(ctx, "a", time.Second)
	require.NoError(t, err)
	var nh *lease.NotHeldError
	require.ErrorAs(t, s.Release(ctx, released.ID), &nh)
	assert.Equal(t, lease.ReasonNotFound, nh.Reason)

	expired, err := s.Acquire(ctx, "b", time.Second)
	require.NoError(t, err)
	clock.Advance(time.Second + lease.ExpiryTolerance)
	_, err = s.Acquire(ctx, "b", time.Second)
	require.NoError(t, err)
	require.ErrorAs(t, s.Release(ctx, expired.ID), &nh)
	assert.Equal(t, lease.ReasonNotOwner, nh.Reason)
}

func TestStore_Acquire_DeadlineFromClock(t *testing.T) {
	s, clock := newStore(t)
	l, err := s.Acquire(t.Context(), "k", 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, lease.LocalDeadline(clock.Now(), 10*time.Second), l.Deadline)
	assert.Equal(t, clock.Now().Add(10*time.Second-leasekit.Drift(10*time.Second)), l.Deadline)
}

func TestStore_Acquire_ContextDeadline(t *testing.T) {
	s, _ := newStore(t)
	ctx, cancel := context.WithDeadline(t.Context(), time.Unix(1, 0))
	defer cancel()
	_, err := s.Acquire(ctx, "k", time.Second)
	require.ErrorIs(t, err, lease.ErrTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestStore_Acquire_ManyKeysSweep churns through expired leases on distinct
// keys so that the ID index is swept, and checks that live leases survive
// the sweep and expired ones are forgotten.
func TestStore_Acquire_ManyKeysSweep(t *testing.T) {
	ctx := t.Context()
	s, clock := newStore(t)
	first, err := s.Acquire(ctx, "first", time.Hour)
	require.NoError(t, err)
	old, err := s.Acquire(ctx, "old", time.Millisecond)
	require.NoError(t, err)
	clock.Advance(lease.ExpiryTolerance + lease.ExpiredRetention + time.Second)
	for i := range 5000 {
		_, err := s.Acquire(ctx, "k"+string(rune('a'+i%26))+time.Duration(i).String(), time.Millisecond)
		require.NoError(t, err)
	}
	_, err = s.LookupID(ctx, first.ID)
	require.NoError(t, err, "a live lease must survive sweeps")
	var nh *lease.NotHeldError
	require.ErrorAs(t, s.Release(ctx, old.ID), &nh)
	assert.Equal(t, lease.ReasonNotFound, nh.Reason)
}

func TestStore_ConcurrentUse(t *testing.T) {
	ctx := t.Context()
	s, clock := newStore(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				key := []string{"a", "b", "c"}[(g+i)%3]
				if l, err := s.Acquire(ctx, key, time.Second); err == nil {
					_, _ = s.Lookup(ctx, key)
					_, _ = s.Extend(ctx, l.ID, time.Second)
					_ = s.Release(ctx, l.ID)
				}
				if i%50 == 0 {
					clock.Advance(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	for _, k := range []string{"a", "b", "c"} {
		locked, err := s.IsLocked(ctx, k)
		require.NoError(t, err)
		assert.False(t, locked, "every lease was released")
	}
}
