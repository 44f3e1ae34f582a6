package redis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/testutil"
)

// keysOnEveryNode returns one user key per primary of c, each in a slot
// that node serves, under prefix.
func keysOnEveryNode(t *testing.T, c *testutil.Cluster, prefix string) []string {
	t.Helper()
	byNode := make(map[string]string)
	for i := 0; len(byNode) < len(c.Addrs) && i < 1000; i++ {
		k := fmt.Sprintf("spread-%d", i)
		ks, err := keysFor(prefix, k)
		require.NoError(t, err)
		node := c.NodeOf(t, ks.data)
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
