package lease_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

func TestNotHeldError(t *testing.T) {
	for _, r := range []lease.NotHeldReason{lease.ReasonNotFound, lease.ReasonExpired, lease.ReasonNotOwner} {
		t.Run(r.String(), func(t *testing.T) {
			err := fmt.Errorf("redis: release: %w", &lease.NotHeldError{Op: "release", Reason: r})
			require.ErrorIs(t, err, lease.ErrNotHeld)
			assert.False(t, errors.Is(err, lease.ErrNotFound), "a not-held error is not ErrNotFound")
			var nh *lease.NotHeldError
			require.ErrorAs(t, err, &nh)
			assert.Equal(t, r, nh.Reason)
			assert.Equal(t, "redis: release: lease: release: not held: "+r.String(), err.Error())
		})
	}
	assert.Equal(t, "reason(9)", lease.NotHeldReason(9).String())
}

func TestLockedError(t *testing.T) {
	err := fmt.Errorf("memory: %w", &lease.LockedError{Remaining: 1500 * time.Millisecond})
	require.ErrorIs(t, err, lease.ErrLocked)
	assert.False(t, errors.Is(err, lease.ErrNotHeld))
	var le *lease.LockedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, 1500*time.Millisecond, le.Remaining)
	assert.Equal(t, "memory: lease: acquire: locked (free in 1.5s unless renewed)", err.Error())
	assert.Equal(t, "lease: acquire: locked", (&lease.LockedError{}).Error())
}

func TestSentinels_Distinct(t *testing.T) {
	all := []error{lease.ErrLocked, lease.ErrRoundClaimed, lease.ErrNotHeld, lease.ErrNotFound, lease.ErrClockSkew,
		lease.ErrInvalidArgument, lease.ErrUnavailable, lease.ErrAuth, lease.ErrTimeout, lease.ErrAborted,
		lease.ErrAcquireTimeout, lease.ErrInternal}
	for i, a := range all {
		assert.Regexp(t, `^lease: [a-z]`, a.Error(), "sentinel messages are lower-case and prefixed")
		for j, b := range all {
			assert.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
}

func TestLease_Unattached(t *testing.T) {
	l := &lease.Lease{ID: leasekit.NewID()}
	_, err := l.Extend(t.Context(), time.Second)
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "not attached")
	err = l.Release(t.Context())
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
}

func TestClass(t *testing.T) {
	for want, err := range map[string]error{
		"":                nil,
		"locked":          fmt.Errorf("x: %w", &lease.LockedError{Remaining: time.Second}),
		"claimed":         fmt.Errorf("x: %w", lease.ErrRoundClaimed),
		"not_held":        &lease.NotHeldError{Op: "release", Reason: lease.ReasonExpired},
		"not_found":       lease.ErrNotFound,
		"clock_skew":      lease.ErrClockSkew,
		"invalid":         fmt.Errorf("%w: ttl", lease.ErrInvalidArgument),
		"acquire_timeout": fmt.Errorf("%w: lock: %w", lease.ErrAcquireTimeout, lease.ErrLocked),
		"unavailable":     fmt.Errorf("redis: %w: EOF", lease.ErrUnavailable),
		"auth":            lease.ErrAuth,
		"timeout":         lease.ErrTimeout,
		"aborted":         lease.ErrAborted,
		"internal":        lease.ErrInternal,
		"other":           errors.New("boom"),
	} {
		assert.Equal(t, want, lease.Class(err), "%v", err)
	}
}
