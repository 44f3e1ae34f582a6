package leasetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// RunSemaphore runs the conformance suite of lease.SemaphoreStore: limits,
// fences, extend and release by ID, expiry, notifications, validation, and
// lease.Semaphore on top. newEnv is as for Run; its Store must be a
// lease.SemaphoreStore. All subtests run concurrently.
func RunSemaphore(t *testing.T, newEnv func(t *testing.T) Env) {
	t.Helper()
	runConcurrently(t, newEnv, semaphoreTests, func(t *testing.T, env Env) {
		_, ok := env.Store.(lease.SemaphoreStore)
		require.True(t, ok, "leasetest: the store is not a lease.SemaphoreStore")
	})
}

var semaphoreTests = []subtest{
	{"Limit", testSemaphoreLimit},
	{"Race", testSemaphoreRace},
	{"Fences", testSemaphoreFences},
	{"ExtendAndRelease", testSemaphoreExtendRelease},
	{"Expiry", testSemaphoreExpiry},
	{"ApartFromLeases", testSemaphoreApart},
	{"ReleaseWakes", testSemaphoreWakes},
	{"AcquireWaits", testSemaphoreAcquireWaits},
	{"HeartbeatView", testSemaphoreView},
	{"Validation", testSemaphoreValidation},
}

// newSemaphore returns a semaphore unique to the running subtest.
func newSemaphore(t *testing.T, env Env, limit int) *lease.Semaphore {
	t.Helper()
	s, err := lease.NewSemaphore(env.Store, testKey(t, "sem"), limit)
	require.NoError(t, err, "NewSemaphore")
	return s
}

// take makes a holder of s that the subtest expects to get.
func take(t *testing.T, s *lease.Semaphore, ttl time.Duration) *lease.Lease {
	t.Helper()
	l, err := s.TryAcquire(t.Context(), ttl)
	require.NoError(t, err, "TryAcquire with a free slot")
	require.NotNil(t, l)
	return l
}

func requireHeld(t *testing.T, s *lease.Semaphore, want int, why string) {
	t.Helper()
	n, err := s.Held(t.Context())
	require.NoError(t, err, "Held")
	require.Equal(t, want, n, "Held: %s", why)
}

func testSemaphoreLimit(t *testing.T, env Env) {
	ctx := t.Context()
	s := newSemaphore(t, env, 3)
	requireHeld(t, s, 0, "nothing acquired yet")
	var hs []*lease.Lease
	for range 3 {
		l := take(t, s, longTTL)
		assert.Equal(t, s.Name(), l.Key, "a holder's Key is the semaphore's name")
		requireValidID(t, l.ID)
		requireFenceForm(t, l)
		assert.Equal(t, longTTL, l.ExpiresAt.Sub(l.AcquiredAt), "ExpiresAt - AcquiredAt is the TTL")
		assert.False(t, l.Deadline.IsZero(), "Deadline is set")
		hs = append(hs, l)
	}
	requireHeld(t, s, 3, "three holders")
	_, err := s.TryAcquire(ctx, longTTL)
	le := requireLocked(t, err, "a fourth holder of three")
	assert.Positive(t, le.Remaining, "Remaining counts to the first holder's end")
	assert.LessOrEqual(t, le.Remaining, longTTL+lease.ExpiryTolerance)

	require.NoError(t, hs[1].Release(ctx), "Lease.Release of a holder")
	requireHeld(t, s, 2, "after a release")
	take(t, s, longTTL)
	requireHeld(t, s, 3, "the released slot was taken again")
}

// testSemaphoreRace: of 20 concurrent attempts on a semaphore of 3, exactly
// 3 win.
func testSemaphoreRace(t *testing.T, env Env) {
	s := newSemaphore(t, env, 3)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		won  int
		errs []error
	)
	for range 20 {
		wg.Go(func() {
			_, err := s.TryAcquire(t.Context(), longTTL)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				won++
			} else if !errors.Is(err, lease.ErrLocked) {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	require.Empty(t, errs)
	assert.Equal(t, 3, won, "exactly the limit wins")
}

// testSemaphoreFences: every holder's fence follows the semaphore's
// previous one (the fence rule of leases), across releases and refusals.
func testSemaphoreFences(t *testing.T, env Env) {
	ctx := t.Context()
	s := newSemaphore(t, env, 2)
	prev := take(t, s, longTTL)
	other := take(t, s, longTTL)
	requireNextFence(t, prev, other, "second holder")
	_, err := s.TryAcquire(ctx, longTTL)
	requireLocked(t, err, "full")
	require.NoError(t, prev.Release(ctx))
	next := take(t, s, longTTL)
	requireNextFence(t, other, next, "a refused acquire uses no fence; a release keeps the counter")
	assert.GreaterOrEqual(t, next.Fence, lease.FenceFloor(next.AcquiredAt))
}

func testSemaphoreExtendRelease(t *testing.T, env Env) {
	ctx := t.Context()
	s := newSemaphore(t, env, 2)
	ss := env.Store.(lease.SemaphoreStore)
	l := take(t, s, 500*time.Millisecond)
	env.Wait(100 * time.Millisecond)
	exp, err := l.Extend(ctx, time.Second)
	require.NoError(t, err, "Lease.Extend of a holder")
	assert.GreaterOrEqual(t, exp.Sub(l.AcquiredAt), time.Second+100*time.Millisecond-margin/5, "extend sets server now + ttl")
	exp2, err := ss.ExtendSemaphore(ctx, s.Name(), l.ID, longTTL)
	require.NoError(t, err, "ExtendSemaphore by ID")
	assert.True(t, exp2.After(exp))

	_, err = ss.ExtendSemaphore(ctx, s.Name(), leasekit.NewID(), longTTL)
	requireNotHeld(t, err, "extend", lease.ReasonNotFound)
	requireNotHeld(t, ss.ReleaseSemaphore(ctx, s.Name(), leasekit.NewID()), "release", lease.ReasonNotFound)
	other, err := lease.NewSemaphore(env.Store, testKey(t, "other"), 2)
	require.NoError(t, err)
	requireNotHeld(t, ss.ReleaseSemaphore(ctx, other.Name(), l.ID), "release", lease.ReasonNotFound)

	require.NoError(t, ss.ReleaseSemaphore(ctx, s.Name(), l.ID), "ReleaseSemaphore by ID")
	requireNotHeld(t, ss.ReleaseSemaphore(ctx, s.Name(), l.ID), "release", lease.ReasonNotFound)
	_, err = l.Extend(ctx, longTTL)
	requireNotHeld(t, err, "extend", lease.ReasonNotFound)
	requireHeld(t, s, 0, "released")
}

// testSemaphoreExpiry: a holder that is not extended stops being live at
// ExpiresAt + ExpiryTolerance, and its slot is free again.
func testSemaphoreExpiry(t *testing.T, env Env) {
	ctx := t.Context()
	s := newSemaphore(t, env, 1)
	first := take(t, s, shortTTL)
	env.Wait(shortTTL + lease.ExpiryTolerance/2)
	_, err := s.TryAcquire(ctx, longTTL)
	requireLocked(t, err, "live within the expiry tolerance")
	expire(env, shortTTL)
	requireHeld(t, s, 0, "expired")
	_, err = first.Extend(ctx, longTTL)
	requireNotHeld(t, err, "extend", lease.ReasonExpired, lease.ReasonNotFound)
	second := take(t, s, longTTL)
	assert.Greater(t, second.Fence, first.Fence)
	requireNotHeld(t, first.Release(ctx), "release", lease.ReasonNotFound)
}

// testSemaphoreApart: a semaphore and a lease of the same name are
// unrelated.
func testSemaphoreApart(t *testing.T, env Env) {
	s := newSemaphore(t, env, 1)
	l := acquire(t, env, s.Name(), longTTL)
	h := take(t, s, longTTL)
	require.NoError(t, env.Store.Release(t.Context(), l.ID))
	requireHeld(t, s, 1, "a lease's release is not a holder's")
	require.NoError(t, h.Release(t.Context()))
}

func testSemaphoreWakes(t *testing.T, env Env) {
	ctx := t.Context()
	s := newSemaphore(t, env, 1)
	ss := env.Store.(lease.SemaphoreStore)
	w, err := ss.WatchSemaphore(ctx, s.Name())
	if err != nil {
		t.Skipf("the store cannot notify semaphore releases (waiters poll): %v", err)
	}
	defer w.Stop()
	assert.True(t, w.Live())
	l := take(t, s, longTTL)
	require.NoError(t, l.Release(ctx))
	requireWoken(t, w, "a holder's release")
}

// testSemaphoreAcquireWaits: Semaphore.Acquire waits for a full semaphore
// and gets the slot a holder releases. With a store that notifies, it is
// woken by the release: its Lock clock is then the store's, which does not
// move unless the test moves it (a real clock moves, but far less than the
// holder's TTL, the first wait). A store that cannot notify is polled on
// the real clock.
func testSemaphoreAcquireWaits(t *testing.T, env Env) {
	ctx, cancel := context.WithTimeout(t.Context(), deliveryBound)
	defer cancel()
	s := newSemaphore(t, env, 1)
	clock := lease.ClockOf(env.Store)
	if w, err := env.Store.(lease.SemaphoreStore).WatchSemaphore(ctx, s.Name()); err != nil {
		clock = clockwork.NewRealClock()
	} else {
		w.Stop()
	}
	held := take(t, s, longTTL)
	got := make(chan *lease.Lease, 1)
	go func() {
		l, err := s.Acquire(ctx, longTTL, lease.WithMaxWait(time.Hour), lease.WithLockClock(clock))
		assert.NoError(t, err, "Semaphore.Acquire")
		got <- l
	}()
	env.Wait(50 * time.Millisecond)
	require.NoError(t, held.Release(ctx))
	l := <-got
	require.NotNil(t, l)
	assert.Greater(t, l.Fence, held.Fence)
	require.NoError(t, l.Release(ctx))

	_, err := s.Acquire(ctx, longTTL, lease.WithAcquireOptions(lease.WithOwner("x")))
	requireInvalid(t, err, "acquire options on a semaphore")
}

// testSemaphoreView: Semaphore.Store is a lease.Store of the holders, as
// heartbeat uses it.
func testSemaphoreView(t *testing.T, env Env) {
	ctx := t.Context()
	s := newSemaphore(t, env, 1)
	v := s.Store()
	l, err := v.Acquire(ctx, s.Name(), longTTL)
	require.NoError(t, err, "the view's Acquire of the semaphore's name")
	locked, err := v.IsLocked(ctx, s.Name())
	require.NoError(t, err)
	assert.True(t, locked, "a full semaphore is locked")
	_, err = lease.Extend(ctx, v, l, longTTL)
	require.NoError(t, err, "lease.Extend through the view")
	require.NoError(t, v.Release(ctx, l.ID))
	_, err = v.Acquire(ctx, "another name", longTTL)
	requireInvalid(t, err, "the view's Acquire of another name")
	_, err = v.LookupID(ctx, l.ID)
	requireInvalid(t, err, "LookupID on a semaphore")
}

func testSemaphoreValidation(t *testing.T, env Env) {
	ctx := t.Context()
	ss := env.Store.(lease.SemaphoreStore)
	name := testKey(t, "sem")
	for _, limit := range []int{0, -1, lease.MaxSemaphoreLimit + 1} {
		_, err := lease.NewSemaphore(env.Store, name, limit)
		requireInvalid(t, err, "NewSemaphore with a bad limit")
		_, err = ss.AcquireSemaphore(ctx, name, limit, longTTL)
		requireInvalid(t, err, "AcquireSemaphore with a bad limit")
	}
	_, err := lease.NewSemaphore(env.Store, "", 1)
	requireInvalid(t, err, "NewSemaphore with an empty name")
	_, err = ss.AcquireSemaphore(ctx, "", 1, longTTL)
	requireInvalid(t, err, "AcquireSemaphore with an empty name")
	for _, ttl := range []time.Duration{0, -time.Second, 1500 * time.Microsecond} {
		_, err = ss.AcquireSemaphore(ctx, name, 1, ttl)
		requireInvalid(t, err, "AcquireSemaphore with a bad ttl")
	}
	_, err = ss.ExtendSemaphore(ctx, name, "short", longTTL)
	requireInvalid(t, err, "ExtendSemaphore with a malformed ID")
	requireInvalid(t, ss.ReleaseSemaphore(ctx, name, "short"), "ReleaseSemaphore with a malformed ID")
	_, err = ss.SemaphoreHeld(ctx, "")
	requireInvalid(t, err, "SemaphoreHeld with an empty name")
	_, err = ss.WatchSemaphore(ctx, "")
	requireInvalid(t, err, "WatchSemaphore with an empty name")
	_, err = lease.NewSemaphore(nonSemaphoreStore{env.Store}, name, 1)
	requireInvalid(t, err, "NewSemaphore on a store that keeps no semaphores")
}

// nonSemaphoreStore hides every optional interface of a Store.
type nonSemaphoreStore struct{ lease.Store }
