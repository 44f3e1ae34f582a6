package redislease

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// sameSlotKey returns a key other than key whose lease keys live in the
// same slot, so the keyed scripts run for it (and do not fall back in Go).
func sameSlotKey(t *testing.T, prefix, key string) string {
	t.Helper()
	ks, err := keysFor(prefix, key)
	require.NoError(t, err)
	for i := range 1 << 20 {
		k := fmt.Sprintf("other:%d", i)
		if o, _ := keysFor(prefix, k); o.slot == ks.slot {
			return k
		}
	}
	t.Fatalf("no key in slot %d", ks.slot)
	return ""
}

// TestStore_ExtendLease_EditedKeyInSameSlot: a Lease whose Key was edited
// to another key of the same slot reaches the keyed script, which finds the
// ID's index naming another data key (-5); the store then answers by ID,
// so the ID's lease is extended and released and the other key's is not.
func TestStore_ExtendLease_EditedKeyInSameSlot(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	ctx := t.Context()
	l, err := st.Acquire(ctx, "k", 2*time.Second)
	require.NoError(t, err)
	other := sameSlotKey(t, st.prefix, "k")

	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("otherKeyHeld=%v", held), func(t *testing.T) {
			var theirs *lease.Lease
			if held {
				theirs, err = st.Acquire(ctx, other, 5*time.Second)
				require.NoError(t, err)
			}
			edited := *l
			edited.Key = other
			exp, err := st.ExtendLease(ctx, &edited, 3*time.Second)
			require.NoError(t, err)
			info, err := st.Lookup(ctx, "k")
			require.NoError(t, err)
			assert.True(t, exp.Equal(info.ExpiresAt), "the ID's lease was extended")
			if theirs != nil {
				info, err := st.Lookup(ctx, other)
				require.NoError(t, err)
				assert.True(t, theirs.ExpiresAt.Equal(info.ExpiresAt), "the other key's lease is untouched")
			}
		})
	}
	edited := *l
	edited.Key = other
	require.NoError(t, st.ReleaseLease(ctx, &edited))
	locked, err := st.IsLocked(ctx, "k")
	require.NoError(t, err)
	assert.False(t, locked, "the ID's lease was released")
	locked, err = st.IsLocked(ctx, other)
	require.NoError(t, err)
	assert.True(t, locked, "the other key's lease is untouched")
}

// TestStore_LeaseMethods_Reasons checks the keyed path's codes against the
// ID path's for the states a lease goes through, with reasons compared
// exactly (leasetest allows either of two for some).
func TestStore_LeaseMethods_Reasons(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	ctx := t.Context()
	reason := func(err error) lease.NotHeldReason {
		t.Helper()
		var nh *lease.NotHeldError
		require.ErrorAs(t, err, &nh)
		return nh.Reason
	}
	check := func(t *testing.T, l *lease.Lease, want lease.NotHeldReason) {
		t.Helper()
		_, e1 := st.ExtendLease(ctx, l, time.Second)
		_, e2 := st.Extend(ctx, l.ID, time.Second)
		assert.Equal(t, want, reason(e1), "ExtendLease")
		assert.Equal(t, want, reason(e2), "Extend")
		assert.Equal(t, want, reason(st.ReleaseLease(ctx, l)), "ReleaseLease")
		assert.Equal(t, want, reason(st.Release(ctx, l.ID)), "Release")
	}

	t.Run("released", func(t *testing.T) {
		l, err := st.Acquire(ctx, "released", 5*time.Second)
		require.NoError(t, err)
		require.NoError(t, st.ReleaseLease(ctx, l))
		check(t, l, lease.ReasonNotFound)
		_, err = st.Acquire(ctx, "released", 5*time.Second)
		require.NoError(t, err)
		check(t, l, lease.ReasonNotFound) // the index went with the release
	})
	t.Run("expired then taken", func(t *testing.T) {
		l, err := st.Acquire(ctx, "taken", 100*time.Millisecond)
		require.NoError(t, err)
		time.Sleep(100*time.Millisecond + lease.ExpiryTolerance + 50*time.Millisecond)
		check(t, l, lease.ReasonExpired)
		_, err = st.Acquire(ctx, "taken", 5*time.Second)
		require.NoError(t, err)
		check(t, l, lease.ReasonNotOwner) // its index lives on for the retention
	})
	t.Run("unroutable ID", func(t *testing.T) {
		l := &lease.Lease{Key: "k", ID: strings.Repeat("_", leasekit.IDLen)}
		_, ok := indexKey(st.prefix, l.ID)
		require.False(t, ok, "test needs an ID that routes to no slot")
		check(t, l, lease.ReasonNotFound)
	})
}

// TestStore_ReleaseLease_NilAndInvalid: bad input fails with
// ErrInvalidArgument, as the ID methods do.
func TestStore_ReleaseLease_NilAndInvalid(t *testing.T) {
	t.Parallel()
	st := startServer(t).store(t)
	ctx := context.WithoutCancel(t.Context())
	require.ErrorIs(t, st.ReleaseLease(ctx, nil), lease.ErrInvalidArgument)
	_, err := st.ExtendLease(ctx, nil, time.Second)
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
	l, err := st.Acquire(ctx, "k", time.Second)
	require.NoError(t, err)
	_, err = st.ExtendLease(ctx, l, time.Microsecond)
	require.ErrorIs(t, err, lease.ErrInvalidArgument, "ttl below 1ms")
	bad := *l
	bad.ID = "short"
	require.ErrorIs(t, st.ReleaseLease(ctx, &bad), lease.ErrInvalidArgument, "malformed ID")
}
