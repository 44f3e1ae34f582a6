package fleettest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
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
	assert.Equal(t, l.AcquiredAt.UnixMilli(), l.Round, "a trigger claims the round of its run's occurrence: server time")
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
	assert.Equal(t, int64(10), l.PrevRound, "the trigger's run follows the holder's round")
	_, err = env.Store.Acquire(ctx, key, ttl, lease.WithRound(11))
	require.ErrorIs(t, err, lease.ErrRoundClaimed, "the trigger claimed a round after 10")
	next, err := env.Store.Acquire(ctx, key, ttl, lease.WithRound(l.Round+1))
	require.NoError(t, err)
	assert.Equal(t, l.Round, next.PrevRound)
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

// testTriggerOccurrenceFollowsEveryClaim: a trigger's round (its run's
// occurrence) is server time or, when a round at or after it was claimed
// already (a replica whose clock runs fast, within the skew bound), the
// millisecond after that round; and a round at or before a trigger's is
// refused as claimed. So every run's occurrence is after every occurrence
// claimed before it, whatever started it.
func testTriggerOccurrenceFollowsEveryClaim(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:fast-then-trigger"
	_, err := env.Store.AddTrigger(ctx, key, "ops", time.Minute)
	require.NoError(t, err)
	first, err := env.Store.Acquire(ctx, key, ttl, lease.WithTrigger())
	require.NoError(t, err)
	assert.Equal(t, first.AcquiredAt.UnixMilli(), first.Round, "a trigger's round is server time")
	assert.Zero(t, first.PrevRound, "the first claim of the key")
	require.NoError(t, first.Release(ctx))

	// A fast replica claims an occurrence 800ms ahead of server time.
	fast, err := env.Store.Acquire(ctx, key, ttl, lease.WithRoundTime(first.AcquiredAt.Add(800*time.Millisecond), time.Second))
	require.NoError(t, err)
	assert.Equal(t, first.Round, fast.PrevRound, "the trigger's round is in the ledger")
	require.NoError(t, fast.Release(ctx))

	_, err = env.Store.AddTrigger(ctx, key, "ops", time.Minute)
	require.NoError(t, err)
	trig, err := env.Store.Acquire(ctx, key, ttl, lease.WithTrigger())
	require.NoError(t, err)
	assert.Equal(t, fast.Round+1, trig.Round, "after the claimed round, not at server time before it")
	assert.Equal(t, fast.Round, trig.PrevRound)
	require.NoError(t, trig.Release(ctx))

	// The mirror case: a scheduled occurrence claimed late, at or before
	// the trigger's round, is refused.
	_, err = env.Store.Acquire(ctx, key, ttl, lease.WithRound(trig.Round))
	require.ErrorIs(t, err, lease.ErrRoundClaimed)
	next, err := env.Store.Acquire(ctx, key, ttl, lease.WithRound(trig.Round+1000))
	require.NoError(t, err)
	assert.Equal(t, trig.Round, next.PrevRound)
	require.NoError(t, next.Release(ctx))
}

// testTriggerWaitsWhilePaused: a trigger acquire that honours a pause
// (WithPauseCheck) is refused while the key is paused, and the trigger
// stays queued for after the resume.
func testTriggerWaitsWhilePaused(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:paused-trigger"
	tr, err := env.Store.AddTrigger(ctx, key, "ops", time.Minute)
	require.NoError(t, err)
	require.NoError(t, env.Store.SetPause(ctx, key, fleet.Pause{By: "ops"}))
	_, err = env.Store.Acquire(ctx, key, ttl, lease.WithTrigger(), lease.WithPauseCheck())
	require.ErrorIs(t, err, lease.ErrPaused)
	n, err := env.Store.PendingTriggers(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the trigger stays queued")
	_, err = env.Store.ClearPause(ctx, key)
	require.NoError(t, err)
	l, err := env.Store.Acquire(ctx, key, ttl, lease.WithTrigger(), lease.WithPauseCheck())
	require.NoError(t, err)
	assert.Equal(t, tr.ID, l.Trigger)
	require.NoError(t, l.Release(ctx))
}

// testTriggerLiveBehindManyExpired: a live trigger queued behind more
// expired ones than one call of the store drops is still found.
func testTriggerLiveBehindManyExpired(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:many-expired"
	for range 1100 {
		_, err := env.Store.AddTrigger(ctx, key, "ops", 50*time.Millisecond)
		require.NoError(t, err)
	}
	live, err := env.Store.AddTrigger(ctx, key, "ops", time.Hour)
	require.NoError(t, err)
	env.Wait(200 * time.Millisecond)
	l, err := env.Store.Acquire(ctx, key, ttl, lease.WithTrigger())
	require.NoError(t, err, "the live trigger waits behind 1100 expired ones")
	assert.Equal(t, live.ID, l.Trigger)
	require.NoError(t, l.Release(ctx))
}
