package leasetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

var ownershipTests = []subtest{
	{"WrongID", testWrongID},
	{"StaleIDAfterRelease", testStaleIDAfterRelease},
	{"StaleIDAfterExpiry", testStaleIDAfterExpiry},
}

// requireUntouched checks that the lease l still holds its key with the
// same fence and expiry.
func requireUntouched(t *testing.T, env Env, l *lease.Lease, why string) {
	t.Helper()
	info, err := env.Store.Lookup(t.Context(), l.Key)
	require.NoError(t, err, "Lookup: %s", why)
	assert.Equal(t, l.Fence, info.Fence, "holder's fence: %s", why)
	assert.True(t, l.ExpiresAt.Equal(info.ExpiresAt), "holder's expiry changed from %s to %s: %s", l.ExpiresAt, info.ExpiresAt, why)
	assert.Equal(t, leasekit.Hash(l.ID), info.IDHash, "holder's ID hash: %s", why)
}

// testWrongID: a well-formed ID that was never issued neither releases nor
// extends; the reason is ReasonNotFound.
func testWrongID(t *testing.T, env Env) {
	ctx := t.Context()
	l := acquire(t, env, testKey(t, "k"), longTTL)
	wrong := leasekit.NewID()
	requireNotHeld(t, env.Store.Release(ctx, wrong), "release", lease.ReasonNotFound)
	_, err := env.Store.Extend(ctx, wrong, lease.MaxTTL)
	requireNotHeld(t, err, "extend", lease.ReasonNotFound)
	_, err = env.Store.LookupID(ctx, wrong)
	require.ErrorIs(t, err, lease.ErrNotFound, "LookupID of an ID never issued")
	requireUntouched(t, env, l, "a wrong ID must not touch the lease")
}

// testStaleIDAfterRelease: the ID of a released lease cannot touch the
// lease someone else took next. The store may say ReasonNotFound (the old
// lease is gone) or ReasonNotOwner (the key is held by another ID).
func testStaleIDAfterRelease(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	old := acquire(t, env, key, longTTL)
	require.NoError(t, env.Store.Release(ctx, old.ID))
	cur := acquire(t, env, key, longTTL)

	_, err := env.Store.Extend(ctx, old.ID, lease.MaxTTL)
	requireNotHeld(t, err, "extend", lease.ReasonNotFound, lease.ReasonNotOwner)
	requireNotHeld(t, env.Store.Release(ctx, old.ID), "release", lease.ReasonNotFound, lease.ReasonNotOwner)
	requireUntouched(t, env, cur, "a released lease's ID must not touch the next holder")
}

// testStaleIDAfterExpiry: the ID of an expired lease cannot touch the lease
// someone else took next: ReasonNotOwner or ReasonNotFound.
func testStaleIDAfterExpiry(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	old := acquire(t, env, key, shortTTL)
	expire(env, shortTTL)
	cur := acquire(t, env, key, longTTL)

	_, err := env.Store.Extend(ctx, old.ID, lease.MaxTTL)
	requireNotHeld(t, err, "extend", lease.ReasonNotOwner, lease.ReasonNotFound)
	requireNotHeld(t, env.Store.Release(ctx, old.ID), "release", lease.ReasonNotOwner, lease.ReasonNotFound)
	_, err = env.Store.LookupID(ctx, old.ID)
	require.ErrorIs(t, err, lease.ErrNotFound, "LookupID of an expired, replaced lease")
	requireUntouched(t, env, cur, "an expired lease's ID must not touch the next holder")
}
