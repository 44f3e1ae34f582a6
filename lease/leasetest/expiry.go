package leasetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

var expiryTests = []subtest{
	{"AcquireAfterExpiry", testAcquireAfterExpiry},
	{"LiveWithinTolerance", testLiveWithinTolerance},
	{"ExtendReplacesExpiry", testExtendReplacesExpiry},
	{"ExtendAndReleaseExpired", testExtendAndReleaseExpired},
}

func testAcquireAfterExpiry(t *testing.T, env Env) {
	key := testKey(t, "k")
	first := acquire(t, env, key, shortTTL)
	expire(env, shortTTL)
	requireLockedState(t, env, key, false, "TTL + ExpiryTolerance has passed")
	second := acquire(t, env, key, longTTL)
	assert.Greater(t, second.Fence, first.Fence, "fence must grow across an expiry")
	assert.NotEqual(t, first.ID, second.ID)
}

// testLiveWithinTolerance: a lease is live while ExpiresAt > now -
// ExpiryTolerance, so halfway through the tolerance it still excludes.
func testLiveWithinTolerance(t *testing.T, env Env) {
	key := testKey(t, "k")
	acquire(t, env, key, shortTTL)
	env.Wait(shortTTL + lease.ExpiryTolerance/2)
	requireLockedState(t, env, key, true, "a lease is live until ExpiresAt + ExpiryTolerance")
	_, err := env.Store.Acquire(t.Context(), key, longTTL)
	le := requireLocked(t, err, "Acquire within the expiry tolerance")
	// Remaining counts to when the key can be taken (ExpiresAt +
	// ExpiryTolerance), about half the tolerance here, not to ExpiresAt,
	// which has passed: a waiter told "1ms" would spin for a second.
	assert.Greater(t, le.Remaining, lease.ExpiryTolerance/10,
		"LockedError.Remaining within the tolerance must count to ExpiresAt + ExpiryTolerance")
	assert.LessOrEqual(t, le.Remaining, lease.ExpiryTolerance/2+50*time.Millisecond,
		"LockedError.Remaining cannot exceed the time until the key is free")
}

// testExtendReplacesExpiry: Extend sets expiry to now + ttl (it does not add
// ttl to the old expiry), and keeps the lease live past its first TTL.
func testExtendReplacesExpiry(t *testing.T, env Env) {
	ctx := t.Context()
	const (
		ttl0   = 500 * time.Millisecond
		before = 100 * time.Millisecond // wait before Extend
		ttl1   = 1000 * time.Millisecond
	)
	key := testKey(t, "k")
	l := acquire(t, env, key, ttl0)
	env.Wait(before)
	exp, err := env.Store.Extend(ctx, l.ID, ttl1)
	require.NoError(t, err, "Extend of a live lease")

	// Server time of the Extend is AcquiredAt + before (+ latency), so the
	// new expiry is about AcquiredAt + before + ttl1. Adding ttl1 to the old
	// expiry would give AcquiredAt + ttl0 + ttl1, ttl0 - before later.
	got := exp.Sub(l.AcquiredAt)
	assert.GreaterOrEqual(t, got, before+ttl1-time.Millisecond,
		"Extend must set expiry to server-now + ttl: expiry is AcquiredAt+%s, want about %s", got, before+ttl1)
	assert.Less(t, got, before+ttl1+(ttl0-before)/2,
		"Extend must replace the expiry, not add to it: expiry is AcquiredAt+%s, want about %s (adding would give %s)",
		got, before+ttl1, ttl0+ttl1)

	// Past the first TTL and its tolerance, the extended lease still holds.
	env.Wait(ttl0 + lease.ExpiryTolerance + margin - before)
	requireLockedState(t, env, key, true, "an extended lease must outlive its first TTL")
	_, err = env.Store.Acquire(ctx, key, longTTL)
	requireLocked(t, err, "Acquire of an extended lease past its first TTL")
	require.NoError(t, env.Store.Release(ctx, l.ID), "Release of the extended lease")
}

// testExtendAndReleaseExpired: after TTL + ExpiryTolerance, within
// ExpiredRetention, Extend and Release report ReasonExpired.
func testExtendAndReleaseExpired(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	l := acquire(t, env, key, shortTTL)
	expire(env, shortTTL)

	_, err := env.Store.Extend(ctx, l.ID, longTTL)
	requireNotHeld(t, err, "extend", lease.ReasonExpired)
	requireNotHeld(t, env.Store.Release(ctx, l.ID), "release", lease.ReasonExpired)
	requireLockedState(t, env, key, false, "a failed Extend must not revive an expired lease")
	_, err = env.Store.Lookup(ctx, key)
	require.ErrorIs(t, err, lease.ErrNotFound, "Lookup of an expired lease")
	_, err = env.Store.LookupID(ctx, l.ID)
	require.ErrorIs(t, err, lease.ErrNotFound, "LookupID of an expired lease")
}
