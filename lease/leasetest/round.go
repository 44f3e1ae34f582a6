package leasetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

var roundTests = []subtest{
	{"Claimed", testRoundClaimed},
	{"ClaimedBeforeLocked", testRoundClaimedBeforeLocked},
	{"Ledger", testRoundLedger},
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

// testRoundClaimedBeforeLocked: a claimed round is the answer whether or
// not the key is held (that occurrence ran or runs); a newer round finds
// the key locked (held for an earlier round: an overlap); a failed
// contended acquire records no round.
func testRoundClaimedBeforeLocked(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	holder := acquire(t, env, key, longTTL, lease.WithRound(10))
	for _, r := range []int64{10, 5} {
		_, err := env.Store.Acquire(ctx, key, longTTL, lease.WithRound(r))
		require.ErrorIs(t, err, lease.ErrRoundClaimed, "round %d while round 10's lease is held", r)
		require.NotErrorIs(t, err, lease.ErrLocked, "round %d: claimed, not locked", r)
	}
	_, err := env.Store.Acquire(ctx, key, longTTL, lease.WithRound(11))
	requireLocked(t, err, "newer round while the key is held")
	_, err = env.Store.Acquire(ctx, key, longTTL)
	requireLocked(t, err, "plain acquire while the key is held")
	require.NoError(t, env.Store.Release(ctx, holder.ID))
	l := acquire(t, env, key, longTTL, lease.WithRound(11)) // 11 was not recorded by the failed acquire
	require.NoError(t, env.Store.Release(ctx, l.ID))
}

// testRoundLedger: a won acquire reports the round recorded before it, so
// that the rounds strictly between the two are known to have run nowhere.
func testRoundLedger(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	l := acquire(t, env, key, longTTL, lease.WithRound(10))
	require.Equal(t, int64(10), l.Round)
	require.Zero(t, l.PrevRound, "the first claim has no previous round")
	require.NoError(t, env.Store.Release(ctx, l.ID))

	l = acquire(t, env, key, longTTL) // no round: reports none, records none
	require.Zero(t, l.Round)
	require.Zero(t, l.PrevRound)
	require.NoError(t, env.Store.Release(ctx, l.ID))

	_, err := env.Store.Acquire(ctx, key, longTTL, lease.WithRound(10))
	require.ErrorIs(t, err, lease.ErrRoundClaimed)
	l = acquire(t, env, key, longTTL, lease.WithRound(40))
	require.Equal(t, int64(40), l.Round)
	require.Equal(t, int64(10), l.PrevRound, "rounds 11 to 39 were claimed by no one")
	require.NoError(t, env.Store.Release(ctx, l.ID))

	l = acquire(t, env, key, longTTL, lease.WithRound(41))
	require.Equal(t, int64(40), l.PrevRound)
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
