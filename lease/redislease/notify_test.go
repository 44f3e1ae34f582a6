package redislease

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/testutil"
)

// requireWoken waits for a value on w's channel, bounded by the test's
// context (a release is delivered at once; the bound only keeps a broken
// build from hanging).
func requireWoken(t *testing.T, w lease.Watch, why string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	select {
	case <-w.C():
	case <-ctx.Done():
		t.Fatalf("no notification: %s", why)
	}
}

// Every way a lease leaves Redis through the Store publishes on the key's
// channel: release by ID, the keyed release, the release with status, the
// roll-back of an acquire.
func TestStore_Watch_EveryReleaseNotifies(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	tests := []struct {
		name    string
		release func(ctx context.Context, l *lease.Lease) error
	}{
		{"ByID", func(ctx context.Context, l *lease.Lease) error { return st.Release(ctx, l.ID) }},
		{"Keyed", func(ctx context.Context, l *lease.Lease) error { return l.Release(ctx) }},
		{"WithStatus", func(ctx context.Context, l *lease.Lease) error {
			_, err := st.ReleaseWithStatus(ctx, l, fleet.Status{Outcome: "succeeded"})
			return err
		}},
		{"Rollback", func(ctx context.Context, l *lease.Lease) error {
			ks, err := keysFor(st.prefix, l.Key)
			if err != nil {
				return err
			}
			ik, _ := indexKey(st.prefix, l.ID)
			st.rollback(ctx, ks, ik, l.ID, 0, 0, time.Second, "k")
			return nil
		}},
		{"ForceRelease", func(ctx context.Context, l *lease.Lease) error {
			_, err := st.ForceRelease(ctx, l.Key)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			key := "notify/" + tt.name
			l, err := st.Acquire(ctx, key, time.Minute)
			require.NoError(t, err)
			w, err := st.Watch(ctx, key)
			require.NoError(t, err)
			defer w.Stop()
			require.True(t, w.Live())
			select {
			case <-w.C():
				t.Fatal("woken before any release")
			default:
			}
			require.NoError(t, tt.release(ctx, l))
			requireWoken(t, w, "after "+tt.name)
			locked, err := st.IsLocked(ctx, key)
			require.NoError(t, err)
			assert.False(t, locked)
		})
	}
}

// A watch whose connection is cut stops being live (its waiter then
// polls) and is woken; once the connection is back the subscription is
// made again, the watch is live and woken again, and releases wake it as
// before.
func TestStore_Watch_DroppedSubscriptionComesBack(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	proxy := testutil.NewProxy(t, srv.redis.Addr)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{proxy.Addr}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	st, err := New(client, WithPrefix(uniquePrefix()), WithLogger(quietLogger()))
	require.NoError(t, err)
	admin, err := New(srv.client, WithPrefix(st.prefix), WithLogger(quietLogger()))
	require.NoError(t, err)
	ctx := t.Context()

	w, err := st.Watch(ctx, "k")
	require.NoError(t, err)
	defer w.Stop()
	require.True(t, w.Live())

	proxy.Cut()
	requireWoken(t, w, "the subscription dropped")
	assert.False(t, w.Live(), "not live while the connection is cut")
	proxy.Restore()
	requireWoken(t, w, "the subscription was made again")
	assert.True(t, w.Live(), "live again")

	l, err := admin.Acquire(ctx, "k", time.Minute)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	requireWoken(t, w, "a release after the subscription came back")
}
