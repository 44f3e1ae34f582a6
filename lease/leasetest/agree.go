package leasetest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

// agreeTests check that Lease.Extend and Lease.Release, which a store may
// serve with a keyed fast path (lease.KeyedStore), answer exactly as
// Store.Extend and Store.Release do for the lease's ID.
var agreeTests = []subtest{
	{"AfterReleaseByID", testAgreeAfterRelease},
	{"AfterExpiry", testAgreeAfterExpiry},
	{"AfterTakeover", testAgreeAfterTakeover},
	{"EditedKey", testAgreeEditedKey},
}

// requireSameNotHeld checks that viaLease and viaStore are both a
// *lease.NotHeldError for op with the same reason, one of reasons.
func requireSameNotHeld(t *testing.T, viaLease, viaStore error, op string, reasons ...lease.NotHeldReason) {
	t.Helper()
	requireNotHeld(t, viaLease, op, reasons...)
	requireNotHeld(t, viaStore, op, reasons...)
	var a, b *lease.NotHeldError
	require.True(t, errors.As(viaLease, &a) && errors.As(viaStore, &b))
	assert.Equal(t, b.Reason, a.Reason, "%s: the Lease method and the Store method must give the same reason", op)
}

// compareNotHeld runs Extend and Release through the Lease and through the
// Store by ID, and checks that they fail alike.
func compareNotHeld(t *testing.T, env Env, l *lease.Lease, reasons ...lease.NotHeldReason) {
	t.Helper()
	ctx := t.Context()
	_, viaLease := l.Extend(ctx, longTTL)
	_, viaStore := env.Store.Extend(ctx, l.ID, longTTL)
	requireSameNotHeld(t, viaLease, viaStore, "extend", reasons...)
	requireSameNotHeld(t, l.Release(ctx), env.Store.Release(ctx, l.ID), "release", reasons...)
}

// testAgreeAfterRelease: a lease released by ID is not found either way.
func testAgreeAfterRelease(t *testing.T, env Env) {
	key := testKey(t, "k")
	l := acquire(t, env, key, longTTL)
	require.NoError(t, env.Store.Release(t.Context(), l.ID))
	compareNotHeld(t, env, l, lease.ReasonNotFound)
	next := acquire(t, env, key, longTTL)
	compareNotHeld(t, env, l, lease.ReasonNotFound, lease.ReasonNotOwner)
	requireUntouched(t, env, next, "the released lease's methods must not touch the next holder")
}

// testAgreeAfterExpiry: an expired lease is expired either way, and a
// failed call revives nothing.
func testAgreeAfterExpiry(t *testing.T, env Env) {
	key := testKey(t, "k")
	l := acquire(t, env, key, shortTTL)
	expire(env, shortTTL)
	compareNotHeld(t, env, l, lease.ReasonExpired)
	requireLockedState(t, env, key, false, "failed calls must not revive an expired lease")
}

// testAgreeAfterTakeover: once another lease took the key after expiry,
// the old lease's methods and its ID give the same reason and leave the new
// holder alone.
func testAgreeAfterTakeover(t *testing.T, env Env) {
	key := testKey(t, "k")
	old := acquire(t, env, key, shortTTL)
	expire(env, shortTTL)
	cur := acquire(t, env, key, longTTL)
	compareNotHeld(t, env, old, lease.ReasonNotOwner, lease.ReasonNotFound)
	requireUntouched(t, env, cur, "an expired lease's methods must not touch the next holder")
}

// testAgreeEditedKey: a copy of a Lease whose Key was changed to another
// held key still acts on the lease its ID names, as the Store methods do,
// and never on the other key's lease.
func testAgreeEditedKey(t *testing.T, env Env) {
	ctx := t.Context()
	key, other := testKey(t, "mine"), testKey(t, "other")
	l := acquire(t, env, key, shortTTL)
	theirs := acquire(t, env, other, longTTL)
	edited := *l
	edited.Key = other

	env.Wait(10 * time.Millisecond)
	exp, err := edited.Extend(ctx, longTTL)
	require.NoError(t, err, "Extend through a Lease with an edited Key acts on its ID's lease")
	info, err := env.Store.Lookup(ctx, key)
	require.NoError(t, err)
	assert.True(t, exp.Equal(info.ExpiresAt), "the ID's lease was extended: %s vs %s", info.ExpiresAt, exp)
	requireUntouched(t, env, theirs, "an edited Key must not extend another key's lease")

	require.NoError(t, edited.Release(ctx), "Release through a Lease with an edited Key releases its ID's lease")
	requireLockedState(t, env, key, false, "the ID's lease was released")
	requireUntouched(t, env, theirs, "an edited Key must not release another key's lease")
}
