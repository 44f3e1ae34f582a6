package lease_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// Twenty fair waiters queue one after the other behind a holder; each one
// that gets the key queues again (at the back) before it releases, ten
// times. The 200 hand-offs follow arrival order exactly, and no time
// passes: every hand-off is a release's notification.
func TestLock_Fair_TwoHundredHandOffsInArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := newNotifyingStore(t)
		const waiters, rounds = 20, 10
		holder, err := s.Store.Acquire(ctx, "k", time.Hour)
		require.NoError(t, err)
		start := time.Now()
		var (
			mu    sync.Mutex
			order []int
			wg    sync.WaitGroup
			wait  func(i, round int)
		)
		wait = func(i, round int) {
			wg.Go(func() {
				l, err := lease.Lock(ctx, s, "k", time.Hour, lease.WithFairness(),
					lease.WithQueueEntryTTL(time.Hour), lease.WithMaxWait(time.Hour))
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				if round+1 < rounds {
					wait(i, round+1)
					synctest.Wait() // queued at the back before the release
				}
				assert.NoError(t, l.Release(ctx))
			})
		}
		for i := range waiters {
			wait(i, 0)
			synctest.Wait() // queued before the next one arrives
		}
		require.NoError(t, holder.Release(ctx))
		wg.Wait()

		want := make([]int, 0, waiters*rounds)
		for range rounds {
			for i := range waiters {
				want = append(want, i)
			}
		}
		require.Equal(t, want, order, "200 hand-offs in arrival order")
		assert.Zero(t, time.Since(start), "every hand-off was woken by a release")
	})
}

// A waiter that died (it queued and never came back) holds the queue up
// only until its place expires: the waiter behind it gets the key at that
// instant.
func TestLock_Fair_DeadWaiterHoldsUpUntilItsPlaceExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := newNotifyingStore(t)
		holder, err := s.Store.Acquire(ctx, "k", time.Hour)
		require.NoError(t, err)
		const place = 2 * time.Second
		queuedAt := time.Now()
		_, err = s.AcquireQueued(ctx, "k", time.Hour, leasekit.NewID(), place)
		require.ErrorIs(t, err, lease.ErrLocked, "the dead waiter's one attempt")
		time.AfterFunc(500*time.Millisecond, func() { assert.NoError(t, holder.Release(context.Background())) })
		l, err := lease.Lock(ctx, s, "k", time.Hour, lease.WithFairness(), lease.WithMaxWait(time.Minute))
		require.NoError(t, err)
		assert.Equal(t, place, time.Since(queuedAt), "got the key when the dead waiter's place expired")
		assert.Greater(t, l.Fence, holder.Fence)
	})
}

// A waiter whose context is cancelled leaves the queue at once: the waiter
// behind it is not held up by its place (which would last an hour).
func TestLock_Fair_CancelledWaiterLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := newNotifyingStore(t)
		holder, err := s.Store.Acquire(ctx, "k", time.Hour)
		require.NoError(t, err)
		start := time.Now()
		var (
			mu  sync.Mutex
			got []string
			wg  sync.WaitGroup
		)
		waiter := func(name string, ctx context.Context) {
			wg.Go(func() {
				l, err := lease.Lock(ctx, s, "k", time.Hour, lease.WithFairness(),
					lease.WithQueueEntryTTL(time.Hour), lease.WithMaxWait(time.Hour))
				if err != nil {
					assert.ErrorIs(t, err, lease.ErrAborted, name)
					return
				}
				mu.Lock()
				got = append(got, name)
				mu.Unlock()
				assert.NoError(t, l.Release(ctx))
			})
			synctest.Wait()
		}
		cancelCtx, cancel := context.WithCancel(ctx)
		waiter("first", ctx)
		waiter("cancelled", cancelCtx)
		waiter("last", ctx)
		cancel()
		synctest.Wait()
		require.NoError(t, holder.Release(ctx))
		wg.Wait()
		assert.Equal(t, []string{"first", "last"}, got)
		assert.Zero(t, time.Since(start), "the cancelled waiter's place held no one up")
	})
}

func TestLock_Fair_Invalid(t *testing.T) {
	s := newNotifyingStore(t)
	ctx := t.Context()
	tests := []struct {
		name  string
		store lease.Store
		opts  []lease.LockOption
	}{
		{"store without a queue", newLockStore(t), nil},
		{"a round", s, []lease.LockOption{lease.WithAcquireOptions(lease.WithRound(1))}},
		{"a pause check", s, []lease.LockOption{lease.WithAcquireOptions(lease.WithPauseCheck())}},
		{"entry ttl too short", s, []lease.LockOption{lease.WithQueueEntryTTL(time.Millisecond)}},
		{"entry ttl not whole ms", s, []lease.LockOption{lease.WithQueueEntryTTL(100*time.Millisecond + 500*time.Microsecond)}},
		{"entry ttl too long", s, []lease.LockOption{lease.WithQueueEntryTTL(lease.MaxTTL + time.Second)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := lease.Lock(ctx, tt.store, "k", time.Second, append(slices.Clone(tt.opts), lease.WithFairness())...)
			require.ErrorIs(t, err, lease.ErrInvalidArgument)
		})
	}
	sem, err := lease.NewSemaphore(s, "sem", 1)
	require.NoError(t, err)
	_, err = sem.Acquire(ctx, time.Second, lease.WithFairness())
	require.ErrorIs(t, err, lease.ErrInvalidArgument, "a semaphore is not fair")
}
