package leasetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// RunFair runs the conformance suite of lease.FairStore: arrival order,
// places that expire and waiters that leave, the ordinary lease a queued
// acquire takes, and validation. newEnv is as for Run; its Store must be a
// lease.FairStore. All subtests run concurrently.
func RunFair(t *testing.T, newEnv func(t *testing.T) Env) {
	t.Helper()
	runConcurrently(t, newEnv, fairTests, func(t *testing.T, env Env) {
		_, ok := env.Store.(lease.FairStore)
		require.True(t, ok, "leasetest: the store is not a lease.FairStore")
	})
}

var fairTests = []subtest{
	{"ArrivalOrder", testFairOrder},
	{"FreeKeyFirstComer", testFairFree},
	{"ExpiredPlaceDropped", testFairExpired},
	{"Leave", testFairLeave},
	{"LeaveWakes", testFairLeaveWakes},
	{"PlainAcquireIsNotQueued", testFairPlain},
	{"Validation", testFairValidation},
	{"OwnerLabel", testFairOwner},
}

// queued makes one queued attempt that the subtest expects to be refused,
// and returns the refusal.
func queued(t *testing.T, env Env, key, ticket string, entryTTL time.Duration, why string) *lease.LockedError {
	t.Helper()
	_, err := env.Store.(lease.FairStore).AcquireQueued(t.Context(), key, longTTL, ticket, entryTTL)
	return requireLocked(t, err, why)
}

// granted makes one queued attempt that the subtest expects to take the key.
func granted(t *testing.T, env Env, key, ticket string, entryTTL time.Duration, why string) *lease.Lease {
	t.Helper()
	l, err := env.Store.(lease.FairStore).AcquireQueued(t.Context(), key, longTTL, ticket, entryTTL)
	require.NoError(t, err, "AcquireQueued: %s", why)
	require.NotNil(t, l)
	return l
}

// testFairOrder: three waiters queue behind a holder; after each release
// only the oldest remaining waiter gets the key, whoever asks first.
func testFairOrder(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	holder := acquire(t, env, key, longTTL)
	a, b, c := leasekit.NewID(), leasekit.NewID(), leasekit.NewID()
	for _, ticket := range []string{a, b, c} {
		le := queued(t, env, key, ticket, longTTL, "queued behind the holder")
		assert.Positive(t, le.Remaining)
	}
	require.NoError(t, env.Store.Release(ctx, holder.ID))

	le := queued(t, env, key, c, longTTL, "c is not at the head")
	assert.LessOrEqual(t, le.Remaining, longTTL, "Remaining: the head's place")
	queued(t, env, key, b, longTTL, "b is not at the head")
	la := granted(t, env, key, a, longTTL, "a is at the head")
	assert.Greater(t, la.Fence, holder.Fence, "an ordinary lease with the next fence")
	assert.Equal(t, key, la.Key)
	queued(t, env, key, b, longTTL, "the key is held by a")
	require.NoError(t, la.Release(ctx), "Lease.Release of a queued acquire's lease")

	queued(t, env, key, c, longTTL, "b is now the head")
	lb := granted(t, env, key, b, longTTL, "b")
	require.NoError(t, env.Store.Release(ctx, lb.ID))
	lc := granted(t, env, key, c, longTTL, "c, the last")
	assert.Greater(t, lc.Fence, lb.Fence)
	require.NoError(t, lc.Release(ctx))
	// The queue is empty: the next waiter takes the free key at once.
	granted(t, env, key, leasekit.NewID(), longTTL, "an empty queue")
}

func testFairFree(t *testing.T, env Env) {
	l := granted(t, env, testKey(t, "k"), leasekit.NewID(), longTTL, "a free key and an empty queue")
	requireFenceForm(t, l)
	requireLockedState(t, env, l.Key, true, "the queued acquire took the key")
}

// testFairExpired: a waiter that stops attempting loses its place when its
// entry expires, and the waiter behind it gets the key.
func testFairExpired(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	holder := acquire(t, env, key, longTTL)
	dead, alive := leasekit.NewID(), leasekit.NewID()
	queued(t, env, key, dead, shortTTL, "the first waiter")
	queued(t, env, key, alive, longTTL, "the second waiter")
	require.NoError(t, env.Store.Release(ctx, holder.ID))
	le := queued(t, env, key, alive, longTTL, "the dead waiter's place has not expired yet")
	assert.LessOrEqual(t, le.Remaining, shortTTL, "Remaining: until the head's place expires")
	env.Wait(shortTTL + margin)
	granted(t, env, key, alive, longTTL, "the dead waiter's place expired")
}

func testFairLeave(t *testing.T, env Env) {
	ctx := t.Context()
	fs := env.Store.(lease.FairStore)
	key := testKey(t, "k")
	holder := acquire(t, env, key, longTTL)
	gone, next := leasekit.NewID(), leasekit.NewID()
	queued(t, env, key, gone, longTTL, "first")
	queued(t, env, key, next, longTTL, "second")
	require.NoError(t, fs.LeaveQueue(ctx, key, gone), "LeaveQueue")
	require.NoError(t, fs.LeaveQueue(ctx, key, gone), "leaving twice is not an error")
	require.NoError(t, fs.LeaveQueue(ctx, testKey(t, "other"), leasekit.NewID()), "leaving a queue one is not in")
	require.NoError(t, env.Store.Release(ctx, holder.ID))
	granted(t, env, key, next, longTTL, "the waiter ahead left")
}

func testFairLeaveWakes(t *testing.T, env Env) {
	n := notifier(t, env)
	ctx := t.Context()
	key := testKey(t, "k")
	head, next := leasekit.NewID(), leasekit.NewID()
	holder := acquire(t, env, key, longTTL)
	queued(t, env, key, head, longTTL, "head")
	queued(t, env, key, next, longTTL, "next")
	require.NoError(t, env.Store.Release(ctx, holder.ID))
	w, err := n.Watch(ctx, key)
	require.NoError(t, err)
	defer w.Stop()
	require.NoError(t, env.Store.(lease.FairStore).LeaveQueue(ctx, key, head))
	requireWoken(t, w, "the head left the queue of a free key")
}

// testFairPlain: Acquire without a queue does not look at it (fairness
// holds among the waiters that ask for it).
func testFairPlain(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	holder := acquire(t, env, key, longTTL)
	queued(t, env, key, leasekit.NewID(), longTTL, "a queued waiter")
	require.NoError(t, env.Store.Release(ctx, holder.ID))
	acquire(t, env, key, longTTL)
}

func testFairValidation(t *testing.T, env Env) {
	ctx := t.Context()
	fs := env.Store.(lease.FairStore)
	key := testKey(t, "k")
	_, err := fs.AcquireQueued(ctx, key, longTTL, "short", longTTL)
	requireInvalid(t, err, "a malformed ticket")
	_, err = fs.AcquireQueued(ctx, key, longTTL, leasekit.NewID(), 0)
	requireInvalid(t, err, "a zero entry TTL")
	_, err = fs.AcquireQueued(ctx, key, 0, leasekit.NewID(), longTTL)
	requireInvalid(t, err, "a zero TTL")
	_, err = fs.AcquireQueued(ctx, "", longTTL, leasekit.NewID(), longTTL)
	requireInvalid(t, err, "an empty key")
	for name, opt := range map[string]lease.AcquireOption{
		"round":   lease.WithRound(1),
		"pause":   lease.WithPauseCheck(),
		"trigger": lease.WithTrigger(),
	} {
		_, err = fs.AcquireQueued(ctx, key, longTTL, leasekit.NewID(), longTTL, opt)
		requireInvalid(t, err, "a queued acquire with a "+name)
	}
	requireInvalid(t, fs.LeaveQueue(ctx, key, "short"), "LeaveQueue with a malformed ticket")
	requireInvalid(t, fs.LeaveQueue(ctx, "", leasekit.NewID()), "LeaveQueue with an empty key")
}

// testFairOwner: a queued acquire stores the label it is given, and no
// label without one, as Acquire does (testLookupNoOwner).
func testFairOwner(t *testing.T, env Env) {
	ctx := t.Context()
	fs := env.Store.(lease.FairStore)
	key := testKey(t, "k")
	l, err := fs.AcquireQueued(ctx, key, longTTL, leasekit.NewID(), longTTL)
	require.NoError(t, err)
	assert.Empty(t, l.Owner, "Lease.Owner without WithOwner")
	info, err := env.Store.Lookup(ctx, key)
	require.NoError(t, err)
	assert.Empty(t, info.Owner, "Info.Owner without WithOwner")

	key = testKey(t, "labelled")
	l, err = fs.AcquireQueued(ctx, key, longTTL, leasekit.NewID(), longTTL, lease.WithOwner("host-1/4242/job"))
	require.NoError(t, err)
	assert.Equal(t, "host-1/4242/job", l.Owner, "Lease.Owner")
	info, err = env.Store.Lookup(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, "host-1/4242/job", info.Owner, "Info.Owner")
}
