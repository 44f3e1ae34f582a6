package fleettest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// testTriggerBatch: a fleet.TriggerCounter counts each key's live triggers
// as PendingTriggers does, expired ones left out, and refuses an invalid
// key or a short counts slice before any I/O.
func testTriggerBatch(t *testing.T, env Env) {
	tc, ok := env.Store.(fleet.TriggerCounter)
	if !ok {
		t.Skip("the store is not a fleet.TriggerCounter")
	}
	ctx := t.Context()
	keys := []string{"job:batch-none", "job:batch-one", "job:batch-two", "job:batch-expired"}
	_, err := env.Store.AddTrigger(ctx, keys[1], "ops", time.Minute)
	require.NoError(t, err)
	for range 2 {
		_, err = env.Store.AddTrigger(ctx, keys[2], "ops", time.Minute)
		require.NoError(t, err)
	}
	_, err = env.Store.AddTrigger(ctx, keys[3], "ops", 100*time.Millisecond)
	require.NoError(t, err)
	env.Wait(100*time.Millisecond + margin)

	counts := make([]int, len(keys))
	require.NoError(t, tc.PendingTriggersBatch(ctx, keys, counts))
	assert.Equal(t, []int{0, 1, 2, 0}, counts)
	for i, k := range keys {
		n, err := env.Store.PendingTriggers(ctx, k)
		require.NoError(t, err)
		assert.Equal(t, n, counts[i], "%s: as PendingTriggers counts it", k)
	}

	require.NoError(t, tc.PendingTriggersBatch(ctx, nil, nil), "no keys: nothing to read")
	err = tc.PendingTriggersBatch(ctx, []string{keys[0], ""}, make([]int, 2))
	require.ErrorIs(t, err, lease.ErrInvalidArgument, "an empty key fails the call")
	err = tc.PendingTriggersBatch(ctx, keys, make([]int, 1))
	require.ErrorIs(t, err, lease.ErrInvalidArgument, "counts shorter than keys")
}
