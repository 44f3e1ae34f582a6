package fleettest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

const ttl = 5 * time.Second

func testPause(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:paused"
	_, paused, err := env.Store.PauseOf(ctx, key)
	require.NoError(t, err)
	require.False(t, paused)

	require.NoError(t, env.Store.SetPause(ctx, key, fleet.Pause{By: "ops/alice", Note: "incident 42\nsee the runbook"}))
	p, paused, err := env.Store.PauseOf(ctx, key)
	require.NoError(t, err)
	require.True(t, paused)
	assert.Equal(t, "ops/alice", p.By)
	assert.Equal(t, "incident 42\nsee the runbook", p.Note)
	assert.False(t, p.At.IsZero(), "stamped with the store's time")

	_, err = env.Store.Acquire(ctx, key, ttl, lease.WithPauseCheck(), lease.WithRound(100))
	require.ErrorIs(t, err, lease.ErrPaused)
	assert.Equal(t, "paused", lease.Class(err))
	_, err = env.Store.Acquire(ctx, key, ttl, lease.WithPauseCheck(), lease.WithRound(100))
	require.ErrorIs(t, err, lease.ErrPaused, "every replica hears paused, not claimed")

	was, err := env.Store.ClearPause(ctx, key)
	require.NoError(t, err)
	assert.True(t, was)
	was, err = env.Store.ClearPause(ctx, key)
	require.NoError(t, err)
	assert.False(t, was)

	_, err = env.Store.Acquire(ctx, key, ttl, lease.WithPauseCheck(), lease.WithRound(100))
	require.ErrorIs(t, err, lease.ErrRoundClaimed, "the paused round was recorded as handled: not caught up")
	l, err := env.Store.Acquire(ctx, key, ttl, lease.WithPauseCheck(), lease.WithRound(200))
	require.NoError(t, err)
	assert.Equal(t, int64(100), l.PrevRound, "and not reported missed")
	require.NoError(t, l.Release(ctx))
}

func testPauseOnlyWithCheck(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:paused-but-locked"
	require.NoError(t, env.Store.SetPause(ctx, key, fleet.Pause{By: "ops"}))
	l, err := env.Store.Acquire(ctx, key, ttl)
	require.NoError(t, err, "an acquire without WithPauseCheck ignores the pause")
	require.NoError(t, l.Release(ctx))
	require.NoError(t, env.Store.SetPause(ctx, key, fleet.Pause{By: "ops", Note: "again"}))
	p, _, err := env.Store.PauseOf(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, "again", p.Note, "a second pause replaces the note")
}

func testPauseValidation(t *testing.T, env Env) {
	ctx := t.Context()
	for name, p := range map[string]fleet.Pause{
		"control in by":  {By: "a\tb"},
		"note too long":  {By: "ops", Note: strings.Repeat("n", 5000)},
		"note not UTF-8": {By: "ops", Note: "\xff"},
	} {
		err := env.Store.SetPause(ctx, "job:v", p)
		require.ErrorIs(t, err, lease.ErrInvalidArgument, name)
	}
	require.ErrorIs(t, env.Store.SetPause(ctx, "", fleet.Pause{By: "ops"}), lease.ErrInvalidArgument, "empty key")
	_, paused, err := env.Store.PauseOf(ctx, "job:v")
	require.NoError(t, err)
	assert.False(t, paused, "nothing was written")
}

// testPauseFastClock: a paused acquire records its round only within the
// skew bound, so a replica whose clock runs fast cannot record a future
// round while the job is paused.
func testPauseFastClock(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:paused-fast"
	probe, err := env.Store.Acquire(ctx, key, ttl)
	require.NoError(t, err)
	require.NoError(t, probe.Release(ctx))
	require.NoError(t, env.Store.SetPause(ctx, key, fleet.Pause{By: "ops"}))
	future := probe.AcquiredAt.Add(time.Hour)
	_, err = env.Store.Acquire(ctx, key, ttl, lease.WithPauseCheck(), lease.WithRoundTime(future, 5*time.Second))
	require.ErrorIs(t, err, lease.ErrPaused)
	_, err = env.Store.ClearPause(ctx, key)
	require.NoError(t, err)
	near := probe.AcquiredAt.Add(time.Second)
	l, err := env.Store.Acquire(ctx, key, ttl, lease.WithPauseCheck(), lease.WithRoundTime(near, 5*time.Second))
	require.NoError(t, err, "the future round was not recorded")
	require.NoError(t, l.Release(ctx))
}
