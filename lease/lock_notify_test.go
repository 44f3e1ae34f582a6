package lease_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// notifyingStore is a memory store (a lease.Notifier) that counts acquire
// attempts. watchErr, when set, makes Watch fail; notLive makes the
// watches it returns report that they are not live.
type notifyingStore struct {
	*memory.Store
	attempts atomic.Int64
	watchErr error
	notLive  atomic.Bool
}

func (s *notifyingStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	s.attempts.Add(1)
	return s.Store.Acquire(ctx, key, ttl, opts...)
}

func (s *notifyingStore) Watch(ctx context.Context, key string) (lease.Watch, error) {
	if s.watchErr != nil {
		return nil, s.watchErr
	}
	w, err := s.Store.Watch(ctx, key)
	if err != nil {
		return nil, err
	}
	return liveness{Watch: w, s: s}, nil
}

type liveness struct {
	lease.Watch
	s *notifyingStore
}

func (l liveness) Live() bool { return !l.s.notLive.Load() && l.Watch.Live() }

func newNotifyingStore(t *testing.T) *notifyingStore {
	t.Helper()
	s, err := memory.New()
	require.NoError(t, err)
	return &notifyingStore{Store: s}
}

func TestLock_Notifier_WakesAtRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := newNotifyingStore(t)
		holder, err := s.Store.Acquire(ctx, "k", time.Hour)
		require.NoError(t, err)
		start := time.Now()
		time.AfterFunc(700*time.Millisecond, func() { assert.NoError(t, holder.Release(context.Background())) })
		l, err := lease.Lock(ctx, s, "k", time.Second, lease.WithMaxWait(time.Minute))
		require.NoError(t, err)
		assert.Greater(t, l.Fence, holder.Fence)
		assert.Equal(t, 700*time.Millisecond, time.Since(start), "acquired at the release, not at a poll")
		assert.EqualValues(t, 3, s.attempts.Load(), "refused, refused once watching, acquired at the wake")
	})
}

func TestLock_Notifier_WakesAtHolderExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := newNotifyingStore(t)
		_, err := s.Store.Acquire(ctx, "k", 3*time.Second)
		require.NoError(t, err)
		start := time.Now()
		_, err = lease.Lock(ctx, s, "k", time.Second, lease.WithMaxWait(time.Minute))
		require.NoError(t, err)
		assert.Equal(t, 3*time.Second+lease.ExpiryTolerance, time.Since(start), "acquired when the holder stopped being live")
		assert.EqualValues(t, 3, s.attempts.Load(), "no polling in between: one wait of LockedError.Remaining")
	})
}

// Twenty waiters, each releasing at once what it got: all get the key
// without time passing (every wake is a release's), and attempts are
// bounded by the wakes a release can cause.
func TestLock_Notifier_TwentyWaitersHandOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := newNotifyingStore(t)
		const waiters = 20
		holder, err := s.Store.Acquire(ctx, "k", time.Hour)
		require.NoError(t, err)
		start := time.Now()
		var (
			wg  sync.WaitGroup
			got atomic.Int64
		)
		for range waiters {
			wg.Go(func() {
				l, err := lease.Lock(ctx, s, "k", time.Second, lease.WithMaxWait(time.Hour))
				if assert.NoError(t, err) {
					got.Add(1)
					assert.NoError(t, l.Release(ctx))
				}
			})
		}
		synctest.Wait() // all are watching
		require.EqualValues(t, 2*waiters, s.attempts.Load())
		require.NoError(t, holder.Release(ctx))
		wg.Wait()
		assert.EqualValues(t, waiters, got.Load())
		assert.Zero(t, time.Since(start), "no waiter waited on a timer")
		assert.LessOrEqual(t, s.attempts.Load(), int64(2*waiters+waiters*(waiters+1)/2))
	})
}

// When Watch fails, Lock polls with backoff, as for a store that cannot
// notify.
func TestLock_Notifier_WatchFails_Polls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := newNotifyingStore(t)
		s.watchErr = errors.New("refused")
		holder, err := s.Store.Acquire(ctx, "k", time.Hour)
		require.NoError(t, err)
		start := time.Now()
		time.AfterFunc(3*time.Second, func() { assert.NoError(t, holder.Release(context.Background())) })
		_, err = lease.Lock(ctx, s, "k", time.Second, lease.WithMaxWait(time.Minute))
		require.NoError(t, err)
		waited := time.Since(start)
		assert.Greater(t, waited, 3*time.Second, "noticed at a poll after the release")
		assert.LessOrEqual(t, waited, 3*time.Second+3*lease.DefaultLockBackoffMax/2)
		assert.Greater(t, s.attempts.Load(), int64(3), "polled")
	})
}

// While a watch is not live (its subscription dropped), Lock polls; a
// release is noticed at the next poll.
func TestLock_Notifier_NotLive_Polls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := newNotifyingStore(t)
		s.notLive.Store(true)
		_, err := s.Store.Acquire(ctx, "k", time.Hour)
		require.NoError(t, err)
		start := time.Now()
		_, err = lease.Lock(ctx, s, "k", time.Second, lease.WithMaxWait(5*time.Second))
		require.ErrorIs(t, err, lease.ErrAcquireTimeout)
		assert.Equal(t, 5*time.Second, time.Since(start))
		assert.Greater(t, s.attempts.Load(), int64(4), "polled with backoff, not one wait of an hour")
	})
}
