package leasetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

var lookupTests = []subtest{
	{"ByKeyAndID", testLookup},
	{"AfterExtend", testLookupAfterExtend},
	{"NotFound", testLookupNotFound},
	{"NoOwnerLabel", testLookupNoOwner},
}

func testLookup(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "secret-key-value")
	const owner = "host-1/4242/job"
	l := acquire(t, env, key, longTTL, lease.WithOwner(owner))
	assert.Equal(t, owner, l.Owner, "Lease.Owner")

	byKey, err := env.Store.Lookup(ctx, key)
	require.NoError(t, err, "Lookup of a held key")
	byID, err := env.Store.LookupID(ctx, l.ID)
	require.NoError(t, err, "LookupID of a held lease")
	assert.Equal(t, byKey, byID, "Lookup and LookupID must describe the same lease identically")

	assert.Len(t, byKey.KeyHash, 22, "Info.KeyHash is a 22-character hash")
	assert.Equal(t, leasekit.Hash(l.ID), byKey.IDHash, "Info.IDHash = leasekit.Hash(ID)")
	assert.Equal(t, l.Fence, byKey.Fence, "Info.Fence")
	assert.Equal(t, owner, byKey.Owner, "Info.Owner")
	assert.True(t, l.AcquiredAt.Equal(byKey.AcquiredAt), "Info.AcquiredAt %s, Lease.AcquiredAt %s", byKey.AcquiredAt, l.AcquiredAt)
	assert.True(t, l.ExpiresAt.Equal(byKey.ExpiresAt), "Info.ExpiresAt %s, Lease.ExpiresAt %s", byKey.ExpiresAt, l.ExpiresAt)
	assert.False(t, byKey.ExpiresAt.Before(byKey.AcquiredAt), "AcquiredAt must not be after ExpiresAt")

	dump := fmt.Sprintf("%+v %#v", byKey, byKey)
	assert.False(t, strings.Contains(dump, "secret-key-value"), "Info must not contain the raw key: %s", dump)
	assert.False(t, strings.Contains(dump, l.ID), "Info must not contain the raw ID: %s", dump)

	other := acquire(t, env, testKey(t, "other"), longTTL)
	otherInfo, err := env.Store.LookupID(ctx, other.ID)
	require.NoError(t, err)
	assert.NotEqual(t, byKey.KeyHash, otherInfo.KeyHash, "different keys must have different key hashes")
}

func testLookupAfterExtend(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	l := acquire(t, env, key, longTTL)
	env.Wait(50 * time.Millisecond)
	exp, err := env.Store.Extend(ctx, l.ID, 2*longTTL)
	require.NoError(t, err)
	info, err := env.Store.Lookup(ctx, key)
	require.NoError(t, err)
	assert.True(t, exp.Equal(info.ExpiresAt), "Lookup after Extend: ExpiresAt %s, Extend returned %s", info.ExpiresAt, exp)
	assert.True(t, l.AcquiredAt.Equal(info.AcquiredAt), "Extend must not change AcquiredAt")
	assert.Equal(t, l.Fence, info.Fence, "Extend must not change the fence")
}

func testLookupNotFound(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	_, err := env.Store.Lookup(ctx, key)
	require.ErrorIs(t, err, lease.ErrNotFound, "Lookup of a key never acquired")
	_, err = env.Store.LookupID(ctx, leasekit.NewID())
	require.ErrorIs(t, err, lease.ErrNotFound, "LookupID of an ID never issued")

	l := acquire(t, env, key, longTTL)
	require.NoError(t, env.Store.Release(ctx, l.ID))
	_, err = env.Store.Lookup(ctx, key)
	require.ErrorIs(t, err, lease.ErrNotFound, "Lookup after Release")
	_, err = env.Store.LookupID(ctx, l.ID)
	require.ErrorIs(t, err, lease.ErrNotFound, "LookupID after Release")
}

// testLookupNoOwner: an acquire without lease.WithOwner, or with the empty
// label, stores no label (lease.ValidateOwner): the Lease and Info say "",
// not a default the store makes up (the scheduler applies its own default,
// "<instance ID>/<job>", above the store). A later WithOwner replaces it.
func testLookupNoOwner(t *testing.T, env Env) {
	ctx := t.Context()
	for i, tc := range []struct {
		name string
		opts []lease.AcquireOption
	}{
		{"without WithOwner", nil},
		{`with WithOwner("")`, []lease.AcquireOption{lease.WithOwner("")}},
		{`with a label, then ""`, []lease.AcquireOption{lease.WithOwner("host-1/4242/job"), lease.WithOwner("")}},
	} {
		key := testKey(t, fmt.Sprint("k", i))
		l := acquire(t, env, key, longTTL, tc.opts...)
		assert.Empty(t, l.Owner, "Lease.Owner %s", tc.name)
		info, err := env.Store.Lookup(ctx, key)
		require.NoError(t, err)
		assert.Empty(t, info.Owner, "Info.Owner of Lookup %s", tc.name)
		info, err = env.Store.LookupID(ctx, l.ID)
		require.NoError(t, err)
		assert.Empty(t, info.Owner, "Info.Owner of LookupID %s", tc.name)
	}
}
