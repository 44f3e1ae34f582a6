package fleettest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
)

func replica(id string, jobs ...fleet.Job) fleet.Replica {
	return fleet.Replica{ID: id, Version: "v0.1.0", Started: time.UnixMilli(1_700_000_000_000), Refresh: time.Second, Jobs: jobs}
}

func job(name, fp string) fleet.Job {
	return fleet.Job{Name: name, Key: "job:" + name, Schedule: "every(1s)", Fingerprint: fp}
}

func testRegistry(t *testing.T, env Env) {
	ctx := t.Context()
	conflicts, err := env.Store.PublishReplica(ctx, replica("r1", job("a", "x"), job("b", "y")), time.Minute)
	require.NoError(t, err)
	assert.Empty(t, conflicts)
	r2 := replica("r2", job("a", "x"))
	r2.ClockOffset = -412 * time.Millisecond
	r2.ReadsIndex = true
	_, err = env.Store.PublishReplica(ctx, r2, time.Minute)
	require.NoError(t, err)

	all, err := env.Store.Replicas(ctx)
	require.NoError(t, err)
	require.Len(t, all, 2)
	assert.Equal(t, "r1", all[0].ID)
	assert.Equal(t, "v0.1.0", all[0].Version)
	assert.True(t, all[0].Started.Equal(time.UnixMilli(1_700_000_000_000)))
	assert.Equal(t, time.Second, all[0].Refresh)
	assert.Equal(t, []fleet.Job{job("a", "x"), job("b", "y")}, all[0].Jobs)
	assert.False(t, all[0].Expires.IsZero(), "the store sets the expiry, in its own time")
	assert.Zero(t, all[0].ClockOffset, "r1 published no offset")
	assert.Equal(t, -412*time.Millisecond, all[1].ClockOffset, "r2's clock offset, to the millisecond")
	assert.False(t, all[0].ReadsIndex, "r1 did not say it reads the index")
	assert.True(t, all[1].ReadsIndex, "r2 said it reads the index")

	gen, found, err := env.Store.RefreshReplica(ctx, "r1", time.Minute)
	require.NoError(t, err)
	require.True(t, found)
	gen2, found, err := env.Store.RefreshReplica(ctx, "r1", time.Minute)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, gen, gen2, "a refresh changes nothing")

	require.NoError(t, env.Store.DropReplica(ctx, "r2"))
	gen3, _, err := env.Store.RefreshReplica(ctx, "r1", time.Minute)
	require.NoError(t, err)
	assert.NotEqual(t, gen, gen3, "a drop changes the generation")
	all, err = env.Store.Replicas(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	_, found, err = env.Store.RefreshReplica(ctx, "r2", time.Minute)
	require.NoError(t, err)
	assert.False(t, found, "a dropped entry must be published again")
}

func testConflicts(t *testing.T, env Env) {
	ctx := t.Context()
	_, err := env.Store.PublishReplica(ctx, replica("r1", job("report", "every-minute"), job("same", "s")), time.Minute)
	require.NoError(t, err)
	gen, _, err := env.Store.RefreshReplica(ctx, "r1", time.Minute)
	require.NoError(t, err)

	conflicts, err := env.Store.PublishReplica(ctx, replica("r2", job("report", "every-hour"), job("same", "s")), time.Minute)
	require.NoError(t, err)
	require.Len(t, conflicts, 1, "the publisher learns of its conflict")
	c := conflicts[0]
	assert.Equal(t, "report", c.Job)
	assert.Equal(t, "job:report", c.Key)
	assert.Equal(t, [2]string{"r1", "r2"}, c.Replicas)
	assert.Equal(t, "every-minute", c.Jobs[0].Fingerprint)
	assert.Equal(t, "every-hour", c.Jobs[1].Fingerprint)

	gen2, _, err := env.Store.RefreshReplica(ctx, "r1", time.Minute)
	require.NoError(t, err)
	assert.NotEqual(t, gen, gen2, "r1 sees the fleet changed")
	all, err := env.Store.Conflicts(ctx)
	require.NoError(t, err)
	assert.Equal(t, conflicts, all, "and finds the conflict too")
}

func testRegistryLapse(t *testing.T, env Env) {
	ctx := t.Context()
	_, err := env.Store.PublishReplica(ctx, replica("dies", job("a", "x")), 300*time.Millisecond)
	require.NoError(t, err)
	env.Wait(700 * time.Millisecond)
	all, err := env.Store.Replicas(ctx)
	require.NoError(t, err)
	assert.Empty(t, all, "an entry not refreshed lapses")
	_, found, err := env.Store.RefreshReplica(ctx, "dies", time.Second)
	require.NoError(t, err)
	assert.False(t, found)
}
