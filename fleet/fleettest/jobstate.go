package fleettest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

func testJobState(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:state"
	st, err := env.Store.JobState(ctx, key)
	require.NoError(t, err)
	assert.False(t, st.Now.IsZero(), "the store's time")
	assert.Nil(t, st.Holder)
	assert.Zero(t, st.LastRound)
	assert.Nil(t, st.Status)
	assert.Nil(t, st.Pause)
	assert.Zero(t, st.Triggers)

	l, err := env.Store.Acquire(ctx, key, ttl, lease.WithRound(1_700_000_000_000), lease.WithOwner("r1/state"))
	require.NoError(t, err)
	_, err = env.Store.ReleaseWithStatus(ctx, l, fleet.Status{Occurrence: time.UnixMilli(1_700_000_000_000), Outcome: "succeeded", Fence: l.Fence})
	require.NoError(t, err)
	holder, err := env.Store.Acquire(ctx, key, ttl, lease.WithRound(1_700_000_060_000), lease.WithOwner("r2/state"))
	require.NoError(t, err)
	require.NoError(t, env.Store.SetPause(ctx, key, fleet.Pause{By: "ops", Note: "n"}))
	_, err = env.Store.AddTrigger(ctx, key, "ops", time.Minute)
	require.NoError(t, err)

	st, err = env.Store.JobState(ctx, key)
	require.NoError(t, err)
	require.NotNil(t, st.Holder)
	assert.Equal(t, "r2/state", st.Holder.Owner)
	assert.Equal(t, holder.Fence, st.Holder.Fence)
	assert.True(t, st.Holder.ExpiresAt.After(st.Now), "compare the expiry with the store's time")
	assert.Equal(t, int64(1_700_000_060_000), st.LastRound)
	require.NotNil(t, st.Status)
	assert.Equal(t, "succeeded", st.Status.Outcome)
	assert.Equal(t, l.Fence, st.Status.Fence)
	require.NotNil(t, st.Pause)
	assert.Equal(t, "n", st.Pause.Note)
	assert.Equal(t, 1, st.Triggers)
	require.NoError(t, holder.Release(ctx))
}

func testForceRelease(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:stuck"
	_, err := env.Store.ForceRelease(ctx, key)
	require.ErrorIs(t, err, lease.ErrNotFound)
	holder, err := env.Store.Acquire(ctx, key, ttl, lease.WithOwner("r1/stuck"))
	require.NoError(t, err)
	info, err := env.Store.ForceRelease(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, "r1/stuck", info.Owner)
	assert.Equal(t, holder.Fence, info.Fence)
	locked, err := env.Store.IsLocked(ctx, key)
	require.NoError(t, err)
	assert.False(t, locked)
	_, err = env.Store.Extend(ctx, holder.ID, ttl)
	require.ErrorIs(t, err, lease.ErrNotHeld, "the holder learns at its next renewal")
	next, err := env.Store.Acquire(ctx, key, ttl)
	require.NoError(t, err)
	assert.Greater(t, next.Fence, holder.Fence, "fencing still tells the two apart")
	require.NoError(t, next.Release(ctx))
}
