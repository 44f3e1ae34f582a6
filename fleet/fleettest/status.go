package fleettest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

func testStatus(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:status"
	_, found, err := env.Store.LastStatus(ctx, key)
	require.NoError(t, err)
	require.False(t, found)

	occ := time.UnixMilli(1_700_000_000_000)
	l, err := env.Store.Acquire(ctx, key, ttl, lease.WithRound(occ.UnixMilli()), lease.WithOwner("r1/status"))
	require.NoError(t, err)
	_, err = env.Store.AddTrigger(ctx, key, "ops", time.Minute)
	require.NoError(t, err)
	st := fleet.Status{Occurrence: occ, Owner: l.Owner, Fence: l.Fence, Started: l.AcquiredAt,
		Duration: 1500 * time.Millisecond, Outcome: "failed", Error: "dial postgres://u:pw@db/x:\nrefused", Missed: 3}
	triggers, err := env.Store.ReleaseWithStatus(ctx, l, st)
	require.NoError(t, err)
	assert.Equal(t, 1, triggers, "the release says a trigger waits")
	locked, err := env.Store.IsLocked(ctx, key)
	require.NoError(t, err)
	assert.False(t, locked, "released")

	got, found, err := env.Store.LastStatus(ctx, key)
	require.NoError(t, err)
	require.True(t, found)
	assert.True(t, got.Occurrence.Equal(occ))
	assert.Equal(t, "r1/status", got.Owner)
	assert.Equal(t, l.Fence, got.Fence)
	assert.True(t, got.Started.Equal(l.AcquiredAt))
	assert.Equal(t, 1500*time.Millisecond, got.Duration)
	assert.Equal(t, "failed", got.Outcome)
	assert.Equal(t, "dial postgres://***@db/x: refused", got.Error, "one line, credentials removed")
	assert.Equal(t, 3, got.Missed, "the missed count rides in the status")

	js, err := env.Store.JobState(ctx, key)
	require.NoError(t, err)
	require.NotNil(t, js.Status)
	assert.Equal(t, 3, js.Status.Missed, "JobState reads the missed count")
	runs, _, err := env.Store.History(ctx, key, 0, 1)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, 3, runs[0].Missed, "the history keeps the missed count")
}

func testStatusLost(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:lost-status"
	first, err := env.Store.Acquire(ctx, key, ttl, lease.WithRound(1))
	require.NoError(t, err)
	_, err = env.Store.ReleaseWithStatus(ctx, first, fleet.Status{Occurrence: time.UnixMilli(1), Outcome: "succeeded"})
	require.NoError(t, err)

	stale, err := env.Store.Acquire(ctx, key, ttl, lease.WithRound(2))
	require.NoError(t, err)
	require.NoError(t, env.Store.Release(ctx, stale.ID)) // released behind its back
	_, err = env.Store.ReleaseWithStatus(ctx, stale, fleet.Status{Occurrence: time.UnixMilli(2), Outcome: "failed"})
	require.True(t, errors.Is(err, lease.ErrNotHeld), "%v", err)
	got, _, err := env.Store.LastStatus(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, "succeeded", got.Outcome, "a lease no longer held records nothing")
}
