package fleettest

import (
	"errors"
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

// testPauseTellsTheRoundBefore: the refused acquire that records its
// round tells the round recorded before it and when the pause was set, so
// that the occurrences between them that ran nowhere while the key was not
// paused are reported missed; no other refusal does.
func testPauseTellsTheRoundBefore(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:paused-after-a-gap"
	l, err := env.Store.Acquire(ctx, key, ttl, lease.WithPauseCheck(), lease.WithRound(100))
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	require.NoError(t, env.Store.SetPause(ctx, key, fleet.Pause{By: "ops"}))
	p, _, err := env.Store.PauseOf(ctx, key)
	require.NoError(t, err)

	_, err = env.Store.Acquire(ctx, key, ttl, lease.WithPauseCheck(), lease.WithRound(300))
	require.ErrorIs(t, err, lease.ErrPaused)
	assert.Equal(t, "paused", lease.Class(err))
	var pe *lease.PausedError
	require.ErrorAs(t, err, &pe, "the refusal that recorded round 300")
	assert.Equal(t, int64(100), pe.PrevRound)
	assert.Equal(t, p.At.UnixMilli(), pe.PausedAt.UnixMilli(), "the pause's time, as PauseOf reads it")

	for _, round := range []int64{300, 200} {
		_, err = env.Store.Acquire(ctx, key, ttl, lease.WithPauseCheck(), lease.WithRound(round))
		require.ErrorIs(t, err, lease.ErrPaused)
		assert.False(t, errors.As(err, &pe), "round %d recorded nothing: no round before it to tell", round)
	}

	const fresh = "job:paused-first"
	require.NoError(t, env.Store.SetPause(ctx, fresh, fleet.Pause{By: "ops"}))
	_, err = env.Store.Acquire(ctx, fresh, ttl, lease.WithPauseCheck(), lease.WithRound(100))
	require.ErrorAs(t, err, &pe)
	assert.Zero(t, pe.PrevRound, "no round before the first")
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
