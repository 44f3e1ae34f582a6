package redislease

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

func TestStore_AcquireExtendRelease_Lifecycle(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	ctx := t.Context()

	l, err := st.Acquire(ctx, "job:a", time.Second)
	require.NoError(t, err)
	assert.Equal(t, "job:a", l.Key)
	assert.Empty(t, l.Owner, "an acquire without lease.WithOwner stores no label")
	assert.Equal(t, lease.FenceFloor(l.AcquiredAt), l.Fence, "the first fence is the clock floor")
	assert.Equal(t, time.Second, l.ExpiresAt.Sub(l.AcquiredAt))
	slot, ok := decodeSlot(l.ID)
	require.True(t, ok)
	ks, err := keysFor(st.prefix, "job:a")
	require.NoError(t, err)
	assert.Equal(t, ks.slot, slot, "the ID routes to the key's slot")

	_, err = st.Acquire(ctx, "job:a", time.Second)
	var le *lease.LockedError
	require.ErrorAs(t, err, &le)
	assert.Greater(t, le.Remaining, time.Duration(0))
	assert.LessOrEqual(t, le.Remaining, time.Second+lease.ExpiryTolerance, "until ExpiresAt + ExpiryTolerance")

	info, err := st.Lookup(ctx, "job:a")
	require.NoError(t, err)
	assert.Equal(t, l.Fence, info.Fence)
	assert.Equal(t, leasekit.Hash(l.ID), info.IDHash)
	assert.Equal(t, leasekit.Hash(ks.storage), info.KeyHash)
	assert.Empty(t, info.Owner)
	assert.True(t, info.ExpiresAt.Equal(l.ExpiresAt))

	exp, err := l.Extend(ctx, 5*time.Second)
	require.NoError(t, err)
	assert.True(t, exp.After(l.ExpiresAt))
	info2, err := st.LookupID(ctx, l.ID)
	require.NoError(t, err)
	assert.True(t, info2.ExpiresAt.Equal(exp), "the extended expiry is stored")
	assert.Equal(t, info.KeyHash, info2.KeyHash)

	require.NoError(t, l.Release(ctx))
	locked, err := st.IsLocked(ctx, "job:a")
	require.NoError(t, err)
	assert.False(t, locked)

	l2, err := st.Acquire(ctx, "job:a", time.Second, lease.WithOwner("other"))
	require.NoError(t, err)
	assert.Equal(t, max(l.Fence+1, lease.FenceFloor(l2.AcquiredAt)), l2.Fence)
	assert.Equal(t, "other", l2.Owner)
}
