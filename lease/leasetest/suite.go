package leasetest

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// Env is one isolated store under test.
type Env struct {
	// Store is the store under test. It must hold no leases the suite did
	// not create (a fresh store, or a unique key prefix per Env).
	Store lease.Store
	// Wait lets d pass on the store's clock: time.Sleep for a real server,
	// Advance for a fake clock.
	Wait func(d time.Duration)
}

// Timings used by the suite. Against a real server, Wait really sleeps, so
// they are short; the margins absorb scheduling and network latency.
const (
	shortTTL = 200 * time.Millisecond // a lease the suite lets expire
	longTTL  = 5 * time.Second        // a lease that must not expire during a subtest
	margin   = 250 * time.Millisecond // slack around every time-based expectation
)

// Run runs the conformance suite. newEnv is called once per subtest and must
// return a fresh, isolated Env (for a shared server: a unique key prefix);
// it may register cleanups on the t it is given, and is called from
// several goroutines at once. All subtests run concurrently.
func Run(t *testing.T, newEnv func(t *testing.T) Env) {
	t.Helper()
	groups := []struct {
		name  string
		tests []subtest
	}{
		{"Lifecycle", lifecycleTests},
		{"Expiry", expiryTests},
		{"Ownership", ownershipTests},
		{"Fence", fenceTests},
		{"Round", roundTests},
		{"Lookup", lookupTests},
		{"LeaseMethodsAgree", agreeTests},
		{"Validation", validationTests},
		{"Notify", notifyTests},
	}
	// Subtests spend most of their time in Wait, so they run concurrently,
	// all at once: t.Parallel would cap them at -parallel (GOMAXPROCS).
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Go(func() {
			t.Run(g.name, func(t *testing.T) {
				var gwg sync.WaitGroup
				for _, st := range g.tests {
					gwg.Go(func() {
						t.Run(st.name, func(t *testing.T) {
							env := newEnv(t)
							require.NotNil(t, env.Store, "leasetest: newEnv returned an Env without a Store")
							require.NotNil(t, env.Wait, "leasetest: newEnv returned an Env without Wait")
							st.fn(t, env)
						})
					})
				}
				gwg.Wait()
			})
		})
	}
	wg.Wait()
}

type subtest struct {
	name string
	fn   func(t *testing.T, env Env)
}

// testKey returns a key unique to the running subtest.
func testKey(t *testing.T, suffix string) string {
	return "leasetest/" + t.Name() + "/" + suffix
}

// acquire takes a lease that the subtest expects to get.
func acquire(t *testing.T, env Env, key string, ttl time.Duration, opts ...lease.AcquireOption) *lease.Lease {
	t.Helper()
	l, err := env.Store.Acquire(t.Context(), key, ttl, opts...)
	require.NoError(t, err, "Acquire(%q, %s) of a free key", key, ttl)
	require.NotNil(t, l, "Acquire returned a nil Lease without an error")
	return l
}

// expire waits until a lease acquired or extended with ttl has stopped
// being live: ttl + lease.ExpiryTolerance + margin.
func expire(env Env, ttl time.Duration) {
	env.Wait(ttl + lease.ExpiryTolerance + margin)
}

// requireNotHeld checks that err is a *lease.NotHeldError for op with one of
// the given reasons.
func requireNotHeld(t *testing.T, err error, op string, reasons ...lease.NotHeldReason) {
	t.Helper()
	require.Error(t, err, "%s: expected lease.ErrNotHeld, got success", op)
	require.ErrorIs(t, err, lease.ErrNotHeld, "%s: error must wrap lease.ErrNotHeld", op)
	var nh *lease.NotHeldError
	require.ErrorAs(t, err, &nh, "%s: error must be a *lease.NotHeldError", op)
	assert.Contains(t, reasons, nh.Reason, "%s: unexpected NotHeldError reason %q (allowed: %v)", op, nh.Reason, reasons)
	assert.Equal(t, op, nh.Op, "NotHeldError.Op")
}

// requireLocked checks that err is a *lease.LockedError.
func requireLocked(t *testing.T, err error, what string) *lease.LockedError {
	t.Helper()
	require.Error(t, err, "%s: expected lease.ErrLocked, got success", what)
	require.ErrorIs(t, err, lease.ErrLocked, "%s: error must wrap lease.ErrLocked", what)
	var le *lease.LockedError
	require.ErrorAs(t, err, &le, "%s: error must be a *lease.LockedError", what)
	assert.GreaterOrEqual(t, le.Remaining, time.Duration(0), "%s: LockedError.Remaining must not be negative", what)
	return le
}

// requireLockedState checks IsLocked against want.
func requireLockedState(t *testing.T, env Env, key string, want bool, why string) {
	t.Helper()
	got, err := env.Store.IsLocked(t.Context(), key)
	require.NoError(t, err, "IsLocked(%q)", key)
	require.Equal(t, want, got, "IsLocked(%q): %s", key, why)
}

// requireInvalid checks that err is lease.ErrInvalidArgument and none of
// the outcomes that would mean the store did I/O with a bad argument.
func requireInvalid(t *testing.T, err error, what string) {
	t.Helper()
	require.Error(t, err, "%s: expected lease.ErrInvalidArgument, got success", what)
	require.ErrorIs(t, err, lease.ErrInvalidArgument, "%s: got %v", what, err)
	for _, other := range []error{lease.ErrNotFound, lease.ErrNotHeld, lease.ErrLocked} {
		require.False(t, errors.Is(err, other), "%s: invalid argument must not also be %v", what, other)
	}
}

// requireValidID checks the form of a lease ID.
func requireValidID(t *testing.T, id string) {
	t.Helper()
	require.NoError(t, leasekit.ValidateID(id), "store issued a malformed lease ID")
}

// requireFenceForm checks the 15-digit form of a fence.
func requireFenceForm(t *testing.T, l *lease.Lease) {
	t.Helper()
	s := l.Fence.String()
	require.Len(t, s, 15, "fence %s must be 15 digits", s)
	require.Equal(t, "", strings.Trim(s, "0123456789"), "fence %s must be all digits", s)
	require.Positive(t, uint64(l.Fence), "fence must be positive")
}

// runConcurrently runs each of tests as a subtest of t, all at once, each
// on an Env of its own from newEnv that check accepts.
func runConcurrently(t *testing.T, newEnv func(t *testing.T) Env, tests []subtest, check func(t *testing.T, env Env)) {
	t.Helper()
	var wg sync.WaitGroup
	for _, st := range tests {
		wg.Go(func() {
			t.Run(st.name, func(t *testing.T) {
				env := newEnv(t)
				require.NotNil(t, env.Store, "leasetest: newEnv returned an Env without a Store")
				require.NotNil(t, env.Wait, "leasetest: newEnv returned an Env without Wait")
				check(t, env)
				st.fn(t, env)
			})
		})
	}
	wg.Wait()
}
