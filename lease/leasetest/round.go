package leasetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

var roundTests = []subtest{
	{"Claimed", testRoundClaimed},
	{"LockedBeforeRound", testRoundLockedFirst},
	{"ClockSkew", testRoundClockSkew},
	{"Invalid", testRoundInvalid},
}

// testRoundClaimed: a round succeeds once; only a higher round follows.
func testRoundClaimed(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	l := acquire(t, env, key, longTTL, lease.WithRound(10))
	require.NoError(t, env.Store.Release(ctx, l.ID))
	for _, r := range []int64{10, 9, 1} {
		got, err := env.Store.Acquire(ctx, key, longTTL, lease.WithRound(r))
		require.Nil(t, got)
		require.ErrorIs(t, err, lease.ErrRoundClaimed, "round %d after round 10 was claimed", r)
	}
	requireLockedState(t, env, key, false, "a claimed-round acquire must not take the lease")
	l = acquire(t, env, key, longTTL, lease.WithRound(11))
	require.NoError(t, env.Store.Release(ctx, l.ID))
	l = acquire(t, env, key, longTTL) // no round: rounds do not block plain acquires
	require.NoError(t, env.Store.Release(ctx, l.ID))
	_, err := env.Store.Acquire(ctx, key, longTTL, lease.WithRound(11))
	require.ErrorIs(t, err, lease.ErrRoundClaimed, "a plain acquire must not reset the round record")
}

// testRoundLockedFirst: a live lease is reported before the round, and a
// failed contended acquire records no round.
func testRoundLockedFirst(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	holder := acquire(t, env, key, longTTL, lease.WithRound(10))
	_, err := env.Store.Acquire(ctx, key, longTTL, lease.WithRound(5))
	requireLocked(t, err, "lower round while the key is held (locked is checked first)")
	_, err = env.Store.Acquire(ctx, key, longTTL, lease.WithRound(11))
	requireLocked(t, err, "higher round while the key is held")
	require.NoError(t, env.Store.Release(ctx, holder.ID))
	l := acquire(t, env, key, longTTL, lease.WithRound(11)) // 11 was not recorded by the failed acquire
	require.NoError(t, env.Store.Release(ctx, l.ID))
}

// testRoundClockSkew: a time round further ahead of server time than the
// maximum skew is refused with ErrClockSkew and records nothing; a round
// within the skew succeeds; a claimed round is reported before skew.
func testRoundClockSkew(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	probe := acquire(t, env, key, longTTL) // its AcquiredAt tells server time
	require.NoError(t, env.Store.Release(ctx, probe.ID))
	serverNow := probe.AcquiredAt
	far := serverNow.Add(time.Hour)

	got, err := env.Store.Acquire(ctx, key, longTTL, lease.WithRoundTime(far, 5*time.Second))
	require.Nil(t, got)
	require.ErrorIs(t, err, lease.ErrClockSkew, "round an hour ahead of server time with max skew 5s")
	requireLockedState(t, env, key, false, "a clock-skew refusal must not take the lease")

	near := serverNow.Add(2 * time.Second)
	l := acquire(t, env, key, longTTL, lease.WithRoundTime(near, 5*time.Second)) // far was not recorded
	require.NoError(t, env.Store.Release(ctx, l.ID))
	l = acquire(t, env, key, longTTL, lease.WithRound(far.UnixMilli())) // no skew bound
	require.NoError(t, env.Store.Release(ctx, l.ID))
	_, err = env.Store.Acquire(ctx, key, longTTL, lease.WithRoundTime(far, 5*time.Second))
	require.ErrorIs(t, err, lease.ErrRoundClaimed, "a claimed round is reported before clock skew")
}

func testRoundInvalid(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	for _, r := range []int64{0, -1} {
		_, err := env.Store.Acquire(ctx, key, longTTL, lease.WithRound(r))
		requireInvalid(t, err, "WithRound(non-positive)")
	}
	_, err := env.Store.Acquire(ctx, key, longTTL, lease.WithRoundTime(time.UnixMilli(1000), -time.Second))
	requireInvalid(t, err, "WithRoundTime with a negative max skew")
	requireLockedState(t, env, key, false, "invalid acquires must not take the lease")
}
