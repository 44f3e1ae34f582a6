package leasetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

var fenceTests = []subtest{
	{"Increasing", testFenceIncreasing},
	{"PerKey", testFencePerKey},
	{"UnchangedByFailedAcquires", testFenceFailedAcquires},
	{"SurvivesExpiryAndRelease", testFenceSurvives},
	{"FloorFollowsServerClock", testFenceFloor},
}

// requireNextFence checks that l's fence follows the rule every store
// keeps: the key's previous fence + 1, or the fence floor at l's server
// time if that is greater (lease.FenceFloor).
func requireNextFence(t *testing.T, prev, l *lease.Lease, why string) {
	t.Helper()
	want := max(prev.Fence+1, lease.FenceFloor(l.AcquiredAt))
	require.Equal(t, want, l.Fence, "%s: fence must be max(previous fence %s + 1, floor %s)", why, prev.Fence, lease.FenceFloor(l.AcquiredAt))
}

// testFenceFloor: every fence is at least the fence floor of its acquire's
// server time, so that a counter lost with the store's data resumes above
// every fence issued before.
func testFenceFloor(t *testing.T, env Env) {
	key := testKey(t, "k")
	var prev *lease.Lease
	for range 3 {
		l := acquire(t, env, key, longTTL)
		require.GreaterOrEqual(t, l.Fence, lease.FenceFloor(l.AcquiredAt), "fence %s is below the floor of its server time %s", l.Fence, l.AcquiredAt)
		if prev != nil {
			requireNextFence(t, prev, l, "consecutive acquires")
		}
		require.NoError(t, env.Store.Release(t.Context(), l.ID))
		prev = l
		env.Wait(3 * time.Millisecond) // let the server clock move on
	}
}

func testFenceIncreasing(t *testing.T, env Env) {
	key := testKey(t, "k")
	var prev *lease.Lease
	for i := range 5 {
		l := acquire(t, env, key, longTTL)
		requireFenceForm(t, l)
		if prev != nil {
			require.Greater(t, l.Fence, prev.Fence, "acquire %d: fence %s must exceed the previous %s", i, l.Fence, prev.Fence)
		}
		require.NoError(t, env.Store.Release(t.Context(), l.ID))
		prev = l
	}
}

// testFencePerKey: acquires of another key do not advance a key's fence.
func testFencePerKey(t *testing.T, env Env) {
	a, b := testKey(t, "a"), testKey(t, "b")
	a1 := acquire(t, env, a, longTTL)
	require.NoError(t, env.Store.Release(t.Context(), a1.ID))
	var prevB *lease.Lease
	for range 3 {
		l := acquire(t, env, b, longTTL)
		if prevB != nil {
			require.Greater(t, l.Fence, prevB.Fence, "fences of key b must increase")
		}
		require.NoError(t, env.Store.Release(t.Context(), l.ID))
		prevB = l
	}
	a2 := acquire(t, env, a, longTTL)
	requireNextFence(t, a1, a2, "acquires of key b must not advance key a's fence")
}

// testFenceFailedAcquires: only successful acquires consume a fence.
func testFenceFailedAcquires(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	first := acquire(t, env, key, longTTL, lease.WithRound(10))

	_, err := env.Store.Acquire(ctx, key, longTTL)
	requireLocked(t, err, "contended acquire")
	require.NoError(t, env.Store.Release(ctx, first.ID))
	_, err = env.Store.Acquire(ctx, key, longTTL, lease.WithRound(10))
	require.ErrorIs(t, err, lease.ErrRoundClaimed, "acquire with a claimed round")
	_, err = env.Store.Acquire(ctx, key, longTTL, lease.WithRoundTime(first.AcquiredAt.Add(time.Hour), time.Second))
	require.ErrorIs(t, err, lease.ErrClockSkew, "acquire with a round an hour ahead")
	_, err = env.Store.Acquire(ctx, key, 0)
	requireInvalid(t, err, "acquire with a zero TTL")

	next := acquire(t, env, key, longTTL)
	requireNextFence(t, first, next, "failed acquires (locked, round claimed, clock skew, invalid) must not consume fences")
}

func testFenceSurvives(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	l1 := acquire(t, env, key, shortTTL)
	expire(env, shortTTL)
	l2 := acquire(t, env, key, longTTL)
	require.Greater(t, l2.Fence, l1.Fence, "fence must grow across an expiry")
	require.NoError(t, env.Store.Release(ctx, l2.ID))
	l3 := acquire(t, env, key, shortTTL)
	require.Greater(t, l3.Fence, l2.Fence, "fence must grow across a release")
	expire(env, shortTTL)
	_, err := env.Store.Extend(ctx, l3.ID, longTTL)
	requireNotHeld(t, err, "extend", lease.ReasonExpired)
	l4 := acquire(t, env, key, longTTL)
	require.Greater(t, l4.Fence, l3.Fence, "fence must grow after an expired lease's failed extend")
}
