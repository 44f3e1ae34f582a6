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

// releaseCase is one entry of the batch test: a lease in some state and
// the status it is released with.
type releaseCase struct {
	name string
	l    *lease.Lease
	st   fleet.Status
}

// releaseCases sets up, under keys of world, one lease in each state a
// release can meet: held (with and without triggers waiting, with
// attempts), released behind its holder's back, expired (after the wait
// of short that the caller lets pass), invalid. Its keys are returned in
// the cases' order ("" where the case has none).
func releaseCases(t *testing.T, env Env, world string, short time.Duration) ([]releaseCase, []string) {
	t.Helper()
	ctx := t.Context()
	key := func(name string) string { return "job:release-batch/" + world + "/" + name }
	acquire := func(name string, ttl time.Duration, opts ...lease.AcquireOption) *lease.Lease {
		l, err := env.Store.Acquire(ctx, key(name), ttl, append([]lease.AcquireOption{lease.WithOwner("r1/" + name)}, opts...)...)
		require.NoError(t, err)
		return l
	}
	status := func(l *lease.Lease, outcome string) fleet.Status {
		return fleet.Status{Occurrence: time.UnixMilli(l.Round), Owner: l.Owner, Replica: "r1", Attempt: l.Attempt, Fence: l.Fence,
			Started: l.AcquiredAt, Duration: 10 * time.Millisecond, Outcome: outcome}
	}
	var cs []releaseCase

	held := acquire("held", ttl, lease.WithRound(10))
	cs = append(cs, releaseCase{"held", held, status(held, fleet.OutcomeSucceeded)})

	triggered := acquire("triggers", ttl, lease.WithRound(10))
	for range 2 {
		_, err := env.Store.AddTrigger(ctx, key("triggers"), "ops", time.Minute)
		require.NoError(t, err)
	}
	cs = append(cs, releaseCase{"triggers", triggered, status(triggered, fleet.OutcomeFailed)})

	gone := acquire("gone", ttl, lease.WithRound(10))
	require.NoError(t, env.Store.Release(ctx, gone.ID))
	cs = append(cs, releaseCase{"gone", gone, status(gone, fleet.OutcomeSucceeded)})

	expired := acquire("expired", short, lease.WithRound(10))
	cs = append(cs, releaseCase{"expired", expired, status(expired, fleet.OutcomeSucceeded)})

	open := withAttempts(t, env, key("open"), 10, 3)
	st := status(open, fleet.OutcomeFailed)
	st.Close = fleet.CloseOpen
	cs = append(cs, releaseCase{"open", open, st})

	lost := withAttempts(t, env, key("lost"), 10, 3)
	_, err := env.Store.ForceRelease(ctx, key("lost"))
	require.NoError(t, err)
	cs = append(cs, releaseCase{"lost", lost, status(lost, fleet.OutcomeFailed)})

	badClose := acquire("bad-close", ttl, lease.WithRound(10))
	st = status(badClose, fleet.OutcomeSucceeded)
	st.Close = fleet.CloseKind(7)
	cs = append(cs, releaseCase{"bad-close", badClose, st})

	cs = append(cs, releaseCase{name: "nil"})

	keys := make([]string, len(cs))
	for i, c := range cs {
		if c.l != nil {
			keys[i] = key(c.name)
		}
	}
	return cs, keys
}

// testReleaseBatch: a batch of releases answers each entry as
// ReleaseWithStatus answers it alone (released and the triggers waiting,
// not held and why, invalid), and leaves the store as those calls leave
// it (last status, index of open occurrences).
func testReleaseBatch(t *testing.T, env Env) {
	br, ok := env.Store.(fleet.BatchReleaser)
	if !ok {
		t.Skip("the store is not a fleet.BatchReleaser")
	}
	ctx := t.Context()
	const short = 200 * time.Millisecond
	single, singleKeys := releaseCases(t, env, "single", short)
	batch, batchKeys := releaseCases(t, env, "batch", short)
	env.Wait(short + lease.ExpiryTolerance + margin)

	type answer struct {
		triggers int
		err      error
	}
	want := make([]answer, len(single))
	for i, c := range single {
		want[i].triggers, want[i].err = env.Store.ReleaseWithStatus(ctx, c.l, c.st)
	}
	leases := make([]*lease.Lease, len(batch))
	sts := make([]fleet.Status, len(batch))
	for i, c := range batch {
		leases[i], sts[i] = c.l, c.st
	}
	triggers := make([]int, len(batch))
	errs := make([]error, len(batch))
	br.ReleaseWithStatusBatch(ctx, leases, sts, triggers, errs)

	env.Wait(margin) // the index's time is the store's estimate of its now
	for i, c := range batch {
		w := want[i]
		assert.Equal(t, w.triggers, triggers[i], "%s: triggers", c.name)
		assert.Equal(t, w.err == nil, errs[i] == nil, "%s: %v, alone: %v", c.name, errs[i], w.err)
		assert.Equal(t, lease.Class(w.err), lease.Class(errs[i]), "%s: %v, alone: %v", c.name, errs[i], w.err)
		var wnh, gnh *lease.NotHeldError
		if errors.As(w.err, &wnh) && assert.ErrorAs(t, errs[i], &gnh, c.name) {
			assert.Equal(t, wnh.Reason, gnh.Reason, "%s: why not held", c.name)
		}
		if singleKeys[i] == "" {
			continue
		}
		ws, wfound, err := env.Store.LastStatus(ctx, singleKeys[i])
		require.NoError(t, err)
		gs, gfound, err := env.Store.LastStatus(ctx, batchKeys[i])
		require.NoError(t, err)
		assert.Equal(t, wfound, gfound, "%s: status recorded", c.name)
		assert.Equal(t, ws.Outcome, gs.Outcome, "%s: status", c.name)
		locked, err := env.Store.IsLocked(ctx, batchKeys[i])
		require.NoError(t, err)
		wlocked, err := env.Store.IsLocked(ctx, singleKeys[i])
		require.NoError(t, err)
		assert.Equal(t, wlocked, locked, "%s: locked after the release", c.name)
		assert.Equal(t, len(due(t, env, singleKeys[i])), len(due(t, env, batchKeys[i])), "%s: index entries", c.name)
	}
	// The cases cover what they name.
	assert.Equal(t, 2, want[1].triggers, "triggers wait")
	var nh *lease.NotHeldError
	if assert.ErrorAs(t, want[2].err, &nh) {
		assert.Equal(t, lease.ReasonNotFound, nh.Reason)
	}
	if assert.ErrorAs(t, want[3].err, &nh) {
		assert.Equal(t, lease.ReasonExpired, nh.Reason)
	}
	assert.Len(t, due(t, env, batchKeys[4]), 1, "released open: in the index")
	assert.ErrorIs(t, errs[6], lease.ErrInvalidArgument)
	assert.ErrorIs(t, errs[7], lease.ErrInvalidArgument)
}
