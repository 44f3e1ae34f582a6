package fleettest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

func testTrigger(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:triggered"
	_, err := env.Store.Acquire(ctx, key, ttl, lease.WithTrigger())
	require.ErrorIs(t, err, lease.ErrNoTrigger)

	a, err := env.Store.AddTrigger(ctx, key, "ops/bob", time.Minute)
	require.NoError(t, err)
	b, err := env.Store.AddTrigger(ctx, key, "ops/bob", time.Minute)
	require.NoError(t, err)
	assert.NotEqual(t, a.ID, b.ID)
	assert.Equal(t, key, a.Key)
	assert.True(t, a.Expires.After(a.At))
	n, err := env.Store.PendingTriggers(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, 2, n)

	l, err := env.Store.Acquire(ctx, key, ttl, lease.WithTrigger())
	require.NoError(t, err)
	assert.Equal(t, a.ID, l.Trigger, "the oldest trigger first")
	assert.Zero(t, l.Round, "a trigger claims no round")
	n, err = env.Store.PendingTriggers(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "consumed with the acquire")
	require.NoError(t, l.Release(ctx))

	l, err = env.Store.Acquire(ctx, key, ttl, lease.WithTrigger())
	require.NoError(t, err)
	assert.Equal(t, b.ID, l.Trigger)
	require.NoError(t, l.Release(ctx))
	_, err = env.Store.Acquire(ctx, key, ttl, lease.WithTrigger())
	require.ErrorIs(t, err, lease.ErrNoTrigger)
}

func testTriggerLocked(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:busy"
	holder, err := env.Store.Acquire(ctx, key, ttl, lease.WithRound(10))
	require.NoError(t, err)
	_, err = env.Store.AddTrigger(ctx, key, "ops", time.Minute)
	require.NoError(t, err)
	_, err = env.Store.Acquire(ctx, key, ttl, lease.WithTrigger())
	var le *lease.LockedError
	require.ErrorAs(t, err, &le, "a trigger runs under the job's lease")
	n, err := env.Store.PendingTriggers(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the trigger waits")
	require.NoError(t, holder.Release(ctx))
	l, err := env.Store.Acquire(ctx, key, ttl, lease.WithTrigger())
	require.NoError(t, err)
	assert.Greater(t, l.Fence, holder.Fence, "fences keep growing across trigger acquires")
	require.NoError(t, l.Release(ctx))
	next, err := env.Store.Acquire(ctx, key, ttl, lease.WithRound(11))
	require.NoError(t, err, "the trigger took no round")
	assert.Equal(t, int64(10), next.PrevRound)
	require.NoError(t, next.Release(ctx))
}

func testTriggerExpires(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:late"
	_, err := env.Store.AddTrigger(ctx, key, "ops", 200*time.Millisecond)
	require.NoError(t, err)
	env.Wait(500 * time.Millisecond)
	n, err := env.Store.PendingTriggers(ctx, key)
	require.NoError(t, err)
	assert.Zero(t, n)
	_, err = env.Store.Acquire(ctx, key, ttl, lease.WithTrigger())
	require.ErrorIs(t, err, lease.ErrNoTrigger, "an expired trigger is dropped, not run")
}

func testTriggerValidation(t *testing.T, env Env) {
	ctx := t.Context()
	_, err := env.Store.AddTrigger(ctx, "job:v", "ops", 0)
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
	_, err = env.Store.AddTrigger(ctx, "job:v", "a\nb", time.Minute)
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
	_, err = env.Store.AddTrigger(ctx, "", "ops", time.Minute)
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
	_, err = env.Store.Acquire(ctx, "job:v", ttl, lease.WithTrigger(), lease.WithRound(5))
	require.ErrorIs(t, err, lease.ErrInvalidArgument, "a trigger claims no round")
	n, err := env.Store.PendingTriggers(ctx, "job:v")
	require.NoError(t, err)
	assert.Zero(t, n)
}

// testTriggerQueueOutlivesAShortTrigger: a short trigger does not cut the
// life of an older, longer one.
func testTriggerQueueOutlivesAShortTrigger(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:long-and-short"
	long, err := env.Store.AddTrigger(ctx, key, "ops", time.Hour)
	require.NoError(t, err)
	_, err = env.Store.AddTrigger(ctx, key, "ops", 100*time.Millisecond)
	require.NoError(t, err)
	env.Wait(400 * time.Millisecond)
	n, err := env.Store.PendingTriggers(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the hour-long trigger still waits")
	l, err := env.Store.Acquire(ctx, key, ttl, lease.WithTrigger())
	require.NoError(t, err)
	assert.Equal(t, long.ID, l.Trigger)
	require.NoError(t, l.Release(ctx))
}
