package leasetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

var lifecycleTests = []subtest{
	{"AcquireIsLockedRelease", testLifecycle},
	{"DoubleRelease", testDoubleRelease},
	{"Contended", testContended},
	{"Race100", testRace100},
	{"AcquireAfterRelease", testAcquireAfterRelease},
	{"LeaseMethods", testLeaseMethods},
	{"Deadline", testDeadline},
	{"CanceledContext", testCanceledContext},
}

func testLifecycle(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	requireLockedState(t, env, key, false, "nothing acquired yet")

	l := acquire(t, env, key, longTTL)
	assert.Equal(t, key, l.Key, "Lease.Key")
	requireValidID(t, l.ID)
	requireFenceForm(t, l)
	assert.Equal(t, longTTL, l.TTL, "Lease.TTL")
	assert.False(t, l.AcquiredAt.IsZero(), "Lease.AcquiredAt must be set")
	assert.Equal(t, longTTL, l.ExpiresAt.Sub(l.AcquiredAt), "ExpiresAt - AcquiredAt must equal the TTL (both server time)")
	assert.False(t, l.Deadline.IsZero(), "Lease.Deadline must be set")
	requireLockedState(t, env, key, true, "after Acquire")

	require.NoError(t, env.Store.Release(ctx, l.ID), "Release of a held lease")
	requireLockedState(t, env, key, false, "after Release")
}

func testDoubleRelease(t *testing.T, env Env) {
	ctx := t.Context()
	l := acquire(t, env, testKey(t, "k"), longTTL)
	require.NoError(t, env.Store.Release(ctx, l.ID), "first Release")
	requireNotHeld(t, env.Store.Release(ctx, l.ID), "release", lease.ReasonNotFound)
	_, err := env.Store.Extend(ctx, l.ID, longTTL)
	requireNotHeld(t, err, "extend", lease.ReasonNotFound)
}

func testContended(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	first := acquire(t, env, key, longTTL)

	second, err := env.Store.Acquire(ctx, key, longTTL)
	assert.Nil(t, second, "a contended Acquire must not return a Lease")
	le := requireLocked(t, err, "second Acquire of a held key")
	assert.LessOrEqual(t, le.Remaining, longTTL+lease.ExpiryTolerance,
		"LockedError.Remaining cannot exceed the time until the key is free (TTL + ExpiryTolerance)")
	assert.Greater(t, le.Remaining, lease.ExpiryTolerance,
		"LockedError.Remaining of a fresh lease counts its TTL and the ExpiryTolerance")

	info, err := env.Store.Lookup(ctx, key)
	require.NoError(t, err, "Lookup after a failed contended acquire")
	assert.Equal(t, first.Fence, info.Fence, "the failed acquire must not replace the holder")
	require.NoError(t, env.Store.Release(ctx, first.ID), "the first holder still owns the lease")
}

func testRace100(t *testing.T, env Env) {
	const n = 100
	key := testKey(t, "k")
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		leases  = make([]*lease.Lease, n)
		errs    = make([]error, n)
		ctx     = t.Context()
		winners []*lease.Lease
	)
	for i := range n {
		wg.Go(func() {
			<-start
			leases[i], errs[i] = env.Store.Acquire(ctx, key, longTTL)
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] == nil {
			winners = append(winners, leases[i])
			continue
		}
		require.ErrorIs(t, errs[i], lease.ErrLocked, "goroutine %d: a losing acquire must fail with ErrLocked only", i)
	}
	require.Len(t, winners, 1, "exactly one of %d concurrent acquires of one key must win", n)
	require.NoError(t, env.Store.Release(ctx, winners[0].ID), "the winner holds the lease")
}

func testAcquireAfterRelease(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	first := acquire(t, env, key, longTTL)
	require.NoError(t, env.Store.Release(ctx, first.ID))
	second := acquire(t, env, key, longTTL)
	assert.NotEqual(t, first.ID, second.ID, "a new acquire must issue a new ID")
	assert.Greater(t, second.Fence, first.Fence, "fence must grow across a release")
	requireLockedState(t, env, key, true, "after re-acquire")
}

func testLeaseMethods(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	l := acquire(t, env, key, longTTL)
	env.Wait(10 * time.Millisecond)
	exp, err := l.Extend(ctx, longTTL)
	require.NoError(t, err, "Lease.Extend of a held lease")
	assert.False(t, exp.Before(l.ExpiresAt), "Lease.Extend must not move expiry backwards (%s < %s)", exp, l.ExpiresAt)
	info, err := env.Store.Lookup(ctx, key)
	require.NoError(t, err)
	assert.True(t, exp.Equal(info.ExpiresAt), "Lookup must show the expiry Lease.Extend returned: %s vs %s", info.ExpiresAt, exp)
	require.NoError(t, l.Release(ctx), "Lease.Release of a held lease")
	requireLockedState(t, env, key, false, "after Lease.Release")
	requireNotHeld(t, l.Release(ctx), "release", lease.ReasonNotFound)
}

// testDeadline checks the local deadline: set on the store's local clock,
// no later than the TTL from now, and moving with that clock.
func testDeadline(t *testing.T, env Env) {
	ctx := t.Context()
	first := acquire(t, env, testKey(t, "a"), longTTL)
	assert.True(t, first.Deadline.Before(time.Now().Add(longTTL)),
		"Deadline %s must be before now+TTL on the local clock", first.Deadline)
	const d = 300 * time.Millisecond
	env.Wait(d)
	second := acquire(t, env, testKey(t, "b"), longTTL)
	assert.GreaterOrEqual(t, second.Deadline.Sub(first.Deadline), d-time.Millisecond,
		"Deadline must follow the store's clock: two acquires %s apart gave deadlines %s apart",
		d, second.Deadline.Sub(first.Deadline))
	for _, l := range []*lease.Lease{first, second} {
		require.NoError(t, env.Store.Release(ctx, l.ID))
	}
}

func testCanceledContext(t *testing.T, env Env) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	key := testKey(t, "k")
	l, err := env.Store.Acquire(ctx, key, longTTL)
	assert.Nil(t, l)
	require.Error(t, err, "Acquire with a canceled context must fail")
	assert.True(t, errors.Is(err, lease.ErrAborted), "Acquire with a canceled context: want ErrAborted, got %v", err)
	requireLockedState(t, env, key, false, "a canceled Acquire must not take the lease")
}
