package redislease

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// queuedSignal is a context key: the channel arrivalStore signals on once
// the first attempt of a fair waiter (the one that queued it) returned.
type queuedSignal struct{}

// arrivalStore tells a fair waiter's caller when the waiter is queued: the
// reply to its first attempt came back, so the server has appended its
// ticket.
type arrivalStore struct {
	*Store
	mu   sync.Mutex
	seen map[string]bool // tickets that attempted
}

func (s *arrivalStore) AcquireQueued(ctx context.Context, key string, ttl time.Duration, ticket string, entryTTL time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	l, err := s.Store.AcquireQueued(ctx, key, ttl, ticket, entryTTL, opts...)
	s.mu.Lock()
	first := !s.seen[ticket]
	s.seen[ticket] = true
	s.mu.Unlock()
	if ch, ok := ctx.Value(queuedSignal{}).(chan struct{}); ok && first {
		ch <- struct{}{}
	}
	return l, err
}

// fairLock starts a fair Lock of key on st in its own goroutine and
// returns once the waiter is queued (or has the key); the result comes on
// the returned channel. The Lock's clock is frozen: only a release wakes it.
func fairLock(ctx context.Context, t *testing.T, st *arrivalStore, key string, frozen clockwork.Clock, wg *sync.WaitGroup) <-chan *lease.Lease {
	queued := make(chan struct{}, 1)
	got := make(chan *lease.Lease, 1)
	wg.Go(func() {
		l, err := lease.Lock(context.WithValue(ctx, queuedSignal{}, queued), st, key, time.Minute, lease.WithFairness(),
			lease.WithQueueEntryTTL(time.Minute), lease.WithLockClock(frozen), lease.WithMaxWait(time.Hour))
		assert.NoError(t, err)
		got <- l
	})
	select {
	case <-queued:
	case <-ctx.Done():
	}
	return got
}

// Twenty fair waiters queue one after the other behind a holder; each one
// that gets the key queues again before it releases it, ten times. On a
// real server, the 200 hand-offs follow arrival order exactly, every one
// woken by a release (the waiters' clock is frozen).
func TestLock_Fair_TwoHundredHandOffsInArrivalOrder(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := &arrivalStore{Store: srv.store(t, WithLogger(quietLogger())), seen: make(map[string]bool)}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second) // a broken build fails, not hangs
	defer cancel()
	const key, waiters, rounds = "fair", 20, 10
	holder, err := st.Store.Acquire(ctx, key, time.Minute)
	require.NoError(t, err)
	frozen := clockwork.NewFakeClock()

	var (
		mu    sync.Mutex
		order []int
		locks sync.WaitGroup // the Lock goroutines
		turns sync.WaitGroup // the waiters
	)
	firsts := make([]<-chan *lease.Lease, waiters)
	for i := range waiters {
		firsts[i] = fairLock(ctx, t, st, key, frozen, &locks)
	}
	for i := range waiters {
		turns.Go(func() {
			got := firsts[i]
			for round := range rounds {
				l := <-got
				if l == nil {
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				if round+1 < rounds {
					got = fairLock(ctx, t, st, key, frozen, &locks) // at the back, before the release
				}
				assert.NoError(t, l.Release(ctx))
			}
		})
	}
	require.NoError(t, holder.Release(ctx))
	turns.Wait()
	locks.Wait()

	want := make([]int, 0, waiters*rounds)
	for range rounds {
		for i := range waiters {
			want = append(want, i)
		}
	}
	require.Equal(t, want, order, "200 hand-offs in arrival order")
}

// A queued waiter whose context is cancelled leaves the queue: the waiter
// behind it gets the key after the one ahead, woken by releases only (its
// clock is frozen, and the cancelled waiter's place would last a minute).
func TestLock_Fair_CancelledWaiterLeaves(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := &arrivalStore{Store: srv.store(t, WithLogger(quietLogger())), seen: make(map[string]bool)}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	holder, err := st.Store.Acquire(ctx, "fair", time.Minute)
	require.NoError(t, err)
	frozen := clockwork.NewFakeClock()
	var wg sync.WaitGroup
	first := fairLock(ctx, t, st, "fair", frozen, &wg)
	cancelCtx, cancelWaiter := context.WithCancel(ctx)
	queued := make(chan struct{}, 1)
	gone := make(chan error, 1)
	wg.Go(func() {
		_, err := lease.Lock(context.WithValue(cancelCtx, queuedSignal{}, queued), st, "fair", time.Minute, lease.WithFairness(),
			lease.WithQueueEntryTTL(time.Minute), lease.WithLockClock(frozen), lease.WithMaxWait(time.Hour))
		gone <- err
	})
	<-queued
	last := fairLock(ctx, t, st, "fair", frozen, &wg)
	cancelWaiter()
	require.ErrorIs(t, <-gone, lease.ErrAborted)

	require.NoError(t, holder.Release(ctx))
	l := <-first
	require.NotNil(t, l)
	require.NoError(t, l.Release(ctx))
	l = <-last
	require.NotNil(t, l, "the waiter behind the cancelled one got the key")
	require.NoError(t, l.Release(ctx))
	wg.Wait()
}

// A queued waiter whose client is closed (a process that died after it
// queued) cannot leave the queue; its place expires and the waiter behind
// it gets the key then: not before (the acquire's server time is past the
// place's expiry), without polling in between (a handful of attempts: the
// release's wake, and one at the dead place's expiry), and not much after.
// How much after is bounded by how the waiter waits: woken by the release,
// its attempt is refused with the time the place ahead has left
// (LockedError.Remaining), and no wait outlasts that, notified or polling;
// so it attempts again once the place expired, and an attempt refused even
// then (the server's clock not yet there) is followed by one more wait, of
// at most the backoff max (this waiter's is lease.DefaultLockBackoffMax).
// The key is the waiter's within the dead place's expiry plus one such
// wait (server times both, in ms).
func TestLock_Fair_ClosedClientExpires(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := &arrivalStore{Store: srv.store(t, WithLogger(quietLogger())), seen: make(map[string]bool)}
	dyingClient, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.redis.Addr}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(dyingClient.Close)
	dying, err := New(dyingClient, WithPrefix(st.prefix), WithLogger(quietLogger()))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const place = 600 * time.Millisecond

	holder, err := st.Acquire(ctx, "fair", time.Minute)
	require.NoError(t, err)
	// The dying waiter queues (its first attempt) and its process ends.
	_, err = dying.AcquireQueued(ctx, "fair", time.Minute, leasekit.NewID(), place)
	require.ErrorIs(t, err, lease.ErrLocked)
	behind := &queuedCounter{arrivalStore: st}
	queued := make(chan struct{}, 1)
	got := make(chan *lease.Lease, 1)
	go func() {
		l, err := lease.Lock(context.WithValue(ctx, queuedSignal{}, queued), behind, "fair", time.Minute, lease.WithFairness(),
			lease.WithQueueEntryTTL(time.Minute), lease.WithMaxWait(20*time.Second))
		assert.NoError(t, err)
		got <- l
	}()
	<-queued
	dyingClient.Close()
	ks, err := keysFor(st.prefix, "fair")
	require.NoError(t, err)
	_, expiries := ks.queue(st.prefix)
	places, err := srv.client.Do(ctx, srv.client.B().Hvals().Key(expiries).Build()).AsIntSlice()
	require.NoError(t, err)
	require.Len(t, places, 2, "two places: the dead waiter's and the one behind")
	deadExp := min(places[0], places[1])

	before := behind.attempts.Load()
	require.NoError(t, holder.Release(ctx))
	l := <-got
	require.NotNil(t, l)
	assert.GreaterOrEqual(t, l.AcquiredAt.UnixMilli(), deadExp, "the key went to the next waiter once the dead one's place expired")
	assert.LessOrEqual(t, l.AcquiredAt.UnixMilli(), deadExp+lease.DefaultLockBackoffMax.Milliseconds(),
		"the next waiter took the key within one of its waits after the dead place expired")
	assert.LessOrEqual(t, behind.attempts.Load()-before, int64(4), "woken at the release and at the dead place's expiry, not polling")
	require.NoError(t, l.Release(ctx))
}

// queuedCounter counts the queued attempts made through it; it keeps the
// Store's other methods, Watch included.
type queuedCounter struct {
	*arrivalStore
	attempts atomic.Int64
}

func (s *queuedCounter) AcquireQueued(ctx context.Context, key string, ttl time.Duration, ticket string, entryTTL time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	s.attempts.Add(1)
	return s.arrivalStore.AcquireQueued(ctx, key, ttl, ticket, entryTTL, opts...)
}
