package inspect_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/lease"
)

// plantUnreadableEntry makes replica id live in f's registry with an
// entry this version cannot read (as one written by a later version, or
// by hand, may be): the registry's sorted set names it, its entry is not
// JSON.
func plantUnreadableEntry(t *testing.T, f *liveFleet, id string) {
	t.Helper()
	c := f.admin
	key := f.prefix + ":fleet:{fleet}:"
	for _, r := range c.DoMulti(t.Context(),
		c.B().Set().Key(key+"replica:"+id).Value(`{"id":`).Px(time.Minute).Build(),
		c.B().Zadd().Key(key+"replicas").ScoreMember().ScoreMember(float64(f.storeNow(t).Add(time.Minute).UnixMilli()), id).Build(),
	) {
		require.NoError(t, r.Error())
	}
}

// One registry entry the Inspector cannot read does not hide the rest of
// the fleet: Replicas, Jobs and Job return what the readable entries say,
// with an error that wraps a *fleet.UnreadableError naming the replica
// left out; a command on a job the readable entries name works, and an
// unknown job's error says that some entries were left out.
func TestInspector_UnreadableEntry_TheRestIsShown(t *testing.T) {
	t.Parallel()
	f := newLiveFleet(t)
	ctx := t.Context()
	_, err := f.store.PublishReplica(ctx, fleet.Replica{ID: "r0", Version: "test", Started: time.Now(),
		Refresh: 5 * time.Second, Jobs: []fleet.Job{reportJob, tickJob}}, time.Minute)
	require.NoError(t, err)
	plantUnreadableEntry(t, f, "r9")

	requireLeftOut := func(t *testing.T, err error) {
		t.Helper()
		var u *fleet.UnreadableError
		require.ErrorAs(t, err, &u)
		assert.Equal(t, []string{"r9"}, u.Replicas)
		assert.ErrorIs(t, err, lease.ErrInternal)
	}

	rs, err := f.in.Replicas(ctx)
	requireLeftOut(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, "r0", rs[0].ID)

	jobs, err := f.in.Jobs(ctx)
	requireLeftOut(t, err)
	require.Len(t, jobs, 2)
	assert.Equal(t, "report", jobs[0].Name)
	assert.Equal(t, "tick", jobs[1].Name)

	j, err := f.in.Job(ctx, "tick")
	requireLeftOut(t, err)
	assert.Equal(t, "tick", j.Name)
	assert.Equal(t, []string{"r0"}, j.Replicas())

	require.NoError(t, f.in.Pause(ctx, "tick", "ops", "maintenance"), "a command acts on the job as the readable entries name it")
	_, err = f.in.Resume(ctx, "tick")
	require.NoError(t, err)

	_, err = f.in.Job(ctx, "nightly")
	require.ErrorIs(t, err, inspect.ErrUnknownJob)
	requireLeftOut(t, err)
	assert.Contains(t, err.Error(), `replica "r9"`, "the unknown job's error names the entry left out")
}
