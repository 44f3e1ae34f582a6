package leasetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

// notifyTests check lease.Notifier, for stores that implement it: every
// release wakes the key's watches, a watch is live once Watch returns, and
// Watch validates its key.
var notifyTests = []subtest{
	{"ReleaseWakesEveryWatch", testNotifyRelease},
	{"LeaseReleaseWakes", testNotifyLeaseRelease},
	{"InvalidKey", testNotifyInvalidKey},
}

// deliveryBound bounds the wait for a notification: it comes at once (in
// process) or after one network hop; the bound only keeps a store that
// never notifies from hanging the suite.
const deliveryBound = 10 * time.Second

// notifier returns the store as a lease.Notifier, or skips a store that
// does not implement it (the interface is optional).
func notifier(t *testing.T, env Env) lease.Notifier {
	t.Helper()
	n, ok := env.Store.(lease.Notifier)
	if !ok {
		t.Skip("the store does not implement lease.Notifier (optional): waiters poll it")
	}
	return n
}

// requireWoken waits for a value on w's channel.
func requireWoken(t *testing.T, w lease.Watch, why string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), deliveryBound)
	defer cancel()
	select {
	case <-w.C():
	case <-ctx.Done():
		t.Fatalf("no notification within %s: %s", deliveryBound, why)
	}
}

func testNotifyRelease(t *testing.T, env Env) {
	n := notifier(t, env)
	ctx := t.Context()
	key := testKey(t, "k")
	l := acquire(t, env, key, longTTL)
	var ws []lease.Watch
	for range 3 {
		w, err := n.Watch(ctx, key)
		require.NoError(t, err, "Watch")
		defer w.Stop()
		assert.True(t, w.Live(), "a watch is live once Watch returns")
		ws = append(ws, w)
	}
	require.NoError(t, env.Store.Release(ctx, l.ID))
	for _, w := range ws {
		requireWoken(t, w, "every watch of the key wakes at a release by ID")
	}

	// After a wake, the next release wakes again.
	l = acquire(t, env, key, longTTL)
	require.NoError(t, env.Store.Release(ctx, l.ID))
	requireWoken(t, ws[0], "a second release")

	ws[1].Stop()
	ws[1].Stop() // twice is fine
}

func testNotifyLeaseRelease(t *testing.T, env Env) {
	n := notifier(t, env)
	ctx := t.Context()
	key := testKey(t, "k")
	w, err := n.Watch(ctx, key)
	require.NoError(t, err)
	defer w.Stop()
	l := acquire(t, env, key, longTTL)
	require.NoError(t, l.Release(ctx), "Lease.Release (a keyed store takes its own path)")
	requireWoken(t, w, "a release through the lease")
}

func testNotifyInvalidKey(t *testing.T, env Env) {
	n := notifier(t, env)
	_, err := n.Watch(t.Context(), "")
	requireInvalid(t, err, "Watch of an empty key")
}
