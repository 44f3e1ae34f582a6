package redislease

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/testutil"
)

// TestStore_Cluster_EveryOperationRoutesToOneSlot runs every operation on
// a 3-primary Redis Cluster, for keys spread over the nodes and keys with
// braces, and checks that the server's own CLUSTER KEYSLOT agrees with the
// slot the ID encodes. Any cross-slot access would fail the script.
func TestStore_Cluster_EveryOperationRoutesToOneSlot(t *testing.T) {
	t.Parallel()
	cl := testutil.StartCluster(t, 3)
	client := cl.Client(t)
	st, err := New(client, WithPrefix(uniquePrefix()))
	require.NoError(t, err)
	ctx := t.Context()

	keys := []string{"a{b}c", "{}", "日本語"}
	for i := range 12 {
		keys = append(keys, fmt.Sprintf("job:%d", i))
	}
	nodes := map[string]bool{}
	for _, key := range keys {
		l, err := st.Acquire(ctx, key, 5*time.Second, lease.WithRound(7))
		require.NoError(t, err, key)
		ks, _ := keysFor(st.prefix, key)
		ik, _ := indexKey(st.prefix, l.ID)
		for _, k := range []string{ks.data, ks.fence, ks.round, ik} {
			s, err := client.Do(ctx, client.B().ClusterKeyslot().Key(k).Build()).AsInt64()
			require.NoError(t, err)
			assert.EqualValues(t, ks.slot, s, "%s of key %q", k, key)
		}
		nodes[cl.NodeOf(t, ks.data)] = true

		locked, err := st.IsLocked(ctx, key)
		require.NoError(t, err)
		assert.True(t, locked)
		_, err = st.Lookup(ctx, key)
		require.NoError(t, err)
		_, err = st.LookupID(ctx, l.ID)
		require.NoError(t, err)
		_, err = st.Extend(ctx, l.ID, time.Second)
		require.NoError(t, err, "by ID")
		_, err = l.Extend(ctx, time.Second)
		require.NoError(t, err, "keyed")
		require.NoError(t, l.Release(ctx), "keyed")
		require.ErrorIs(t, st.Release(ctx, l.ID), lease.ErrNotHeld, "by ID, after release")
	}
	assert.Len(t, nodes, 3, "the keys reached every primary")
}
