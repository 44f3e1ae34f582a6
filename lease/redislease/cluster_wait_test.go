package redislease

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/testutil"
)

// keysOnEveryNode returns one user key per primary of c, each in a slot
// that node serves, under prefix.
func keysOnEveryNode(t *testing.T, c *testutil.Cluster, prefix string) []string {
	t.Helper()
	return namesOnEveryNode(t, c, func(k string) string {
		ks, err := keysFor(prefix, k)
		require.NoError(t, err)
		return ks.data
	})
}

// namesOnEveryNode returns one name per primary of c, each in a slot that
// node serves, for the Redis key redisKey derives from the name.
func namesOnEveryNode(t *testing.T, c *testutil.Cluster, redisKey func(name string) string) []string {
	t.Helper()
	byNode := make(map[string]string)
	for i := 0; len(byNode) < len(c.Addrs) && i < 1000; i++ {
		k := fmt.Sprintf("spread-%d", i)
		node := c.NodeOf(t, redisKey(k))
		if _, ok := byNode[node]; !ok {
			byNode[node] = k
		}
	}
	require.Len(t, byNode, len(c.Addrs), "keys on every node")
	keys := make([]string, 0, len(byNode))
	for _, k := range byNode {
		keys = append(keys, k)
	}
	return keys
}

// On Redis Cluster a release publishes in its key's slot, on whichever
// node serves it: a waiter on a key of each node, on a frozen Lock clock
// (so no timer can wake it), gets its key when the holder releases it by
// ID, and the waiters release with the keyed script.
func testClusterNotifications(t *testing.T, c *testutil.Cluster, client rueidis.Client) {
	prefix := uniquePrefix()
	st, err := New(client, WithPrefix(prefix), WithLogger(quietLogger()))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, key := range keysOnEveryNode(t, c, prefix) {
		holder, err := st.Acquire(ctx, key, time.Minute)
		require.NoError(t, err)
		frozen := clockwork.NewFakeClock()
		got := make(chan error, 1)
		go func() {
			l, err := lease.Lock(ctx, st, key, time.Minute, lease.WithLockClock(frozen), lease.WithMaxWait(time.Hour))
			if err == nil {
				err = l.Release(ctx)
			}
			got <- err
		}()
		require.NoError(t, frozen.BlockUntilContext(ctx, 1), "the waiter of %q watches", key)
		require.NoError(t, st.Release(ctx, holder.ID)) // by ID: release.lua finds the key through the index
		require.NoError(t, <-got, "the waiter of %q was woken by the release", key)
	}
}

// On Redis Cluster a semaphore works on whichever node serves its slot: a
// waiter for a full semaphore on each node, on a frozen Lock clock, gets
// the slot a holder releases.
func testClusterSemaphores(t *testing.T, c *testutil.Cluster, client rueidis.Client) {
	st, err := New(client, WithPrefix(uniquePrefix()), WithLogger(quietLogger()))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	names := namesOnEveryNode(t, c, func(name string) string {
		sk, err := st.semaphoreKeysFor("test", name)
		require.NoError(t, err)
		return sk.holders
	})
	for _, name := range names {
		sem, err := lease.NewSemaphore(st, name, 2)
		require.NoError(t, err)
		first, err := sem.TryAcquire(ctx, time.Minute)
		require.NoError(t, err)
		second, err := sem.TryAcquire(ctx, time.Minute)
		require.NoError(t, err)
		frozen := clockwork.NewFakeClock()
		got := make(chan *lease.Lease, 1)
		go func() {
			l, err := sem.Acquire(ctx, time.Minute, lease.WithLockClock(frozen), lease.WithMaxWait(time.Hour))
			assert.NoError(t, err)
			got <- l
		}()
		require.NoError(t, frozen.BlockUntilContext(ctx, 1), "the waiter of %q watches", name)
		require.NoError(t, first.Release(ctx))
		third := <-got
		require.NotNil(t, third, "semaphore %q", name)
		require.Greater(t, third.Fence, second.Fence, "semaphore %q", name)
		for _, l := range []*lease.Lease{second, third} {
			require.NoError(t, l.Release(ctx))
		}
	}
}
