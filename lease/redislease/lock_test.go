package redislease

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

// countingStore counts the acquire attempts made through it and keeps
// the Store's other methods, Watch included.
type countingStore struct {
	*Store
	attempts atomic.Int64
}

func (s *countingStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	s.attempts.Add(1)
	return s.Store.Acquire(ctx, key, ttl, opts...)
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// shardSubscribers returns how many connections subscribe to channel
// (PUBSUB SHARDNUMSUB).
func shardSubscribers(t *testing.T, srv server, channel string) int64 {
	t.Helper()
	arr, err := srv.client.Do(t.Context(), srv.client.B().PubsubShardnumsub().Channel(channel).Build()).ToArray()
	require.NoError(t, err)
	require.Len(t, arr, 2)
	n, err := arr[1].AsInt64()
	require.NoError(t, err)
	return n
}

// Twenty Lock callers wait for a key held for a minute. Each one that gets
// the key releases it at once. Their Lock clock is a fake clock that never
// moves, so no wait of theirs can end on a timer: every waiter that gets
// the key was woken by a release notification, and all twenty get it one
// after the other. The waiters share one subscription to the key's
// channel, which ends with the last of them.
func TestLock_Notified_TwentyWaitersWakeOnRelease(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := &countingStore{Store: srv.store(t, WithLogger(quietLogger()))}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a broken build fails, not hangs
	defer cancel()
	const key, waiters = "handoff", 20
	holder, err := st.Store.Acquire(ctx, key, time.Minute)
	require.NoError(t, err)
	ks, err := keysFor(st.prefix, key)
	require.NoError(t, err)

	frozen := clockwork.NewFakeClock()
	var (
		mu     sync.Mutex
		fences = []lease.Lease{*holder}
		wg     sync.WaitGroup
	)
	for range waiters {
		wg.Go(func() {
			l, err := lease.Lock(ctx, st, key, time.Minute, lease.WithLockClock(frozen), lease.WithMaxWait(time.Hour))
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			fences = append(fences, *l)
			mu.Unlock()
			assert.NoError(t, l.Release(ctx))
		})
	}
	// Every waiter sleeps on a timer of the frozen clock: all are watching.
	require.NoError(t, frozen.BlockUntilContext(ctx, waiters))
	assert.EqualValues(t, 1, shardSubscribers(t, srv, ks.data), "one subscription for all waiters of the key")
	require.Equal(t, 2*int64(waiters), st.attempts.Load(), "each waiter: one attempt, a watch, one more attempt")

	require.NoError(t, holder.Release(ctx))
	wg.Wait()
	require.Len(t, fences, waiters+1, "every waiter got the key, woken by releases only")
	for i := 1; i < len(fences); i++ {
		assert.Greater(t, fences[i].Fence, fences[i-1].Fence, "fences grow in the order the key was held")
	}
	// A release wakes the waiters still watching, at most all of them.
	assert.LessOrEqual(t, st.attempts.Load(), int64(2*waiters+waiters*(waiters+1)/2), "attempts")
	assert.Zero(t, shardSubscribers(t, srv, ks.data), "the subscription ended with the last waiter")
}
