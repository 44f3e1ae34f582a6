package redis

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

// TestStore_Acquire_AmbiguousTimeoutIsRolledBack: the acquire is sent, the
// caller's deadline passes while the server holds it, and the acquire then
// runs. Acquire returns ErrTimeout and has released what it took, so the key
// is free and not blocked until the TTL passes.
//
// CLIENT PAUSE makes the server hold every command for a known time, from
// the moment the pause is acknowledged; the acquire's deadline (0.8 s)
// passes inside the pause (2 s), and the rollback's own deadline (0.8 s +
// reconcileTimeout) outside it.
func TestStore_Acquire_AmbiguousTimeoutIsRolledBack(t *testing.T) {
	srv := startServer(t)
	var logs bytes.Buffer
	st := srv.store(t, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	warm, err := st.Acquire(t.Context(), "warm-up", time.Second) // loads the scripts: EVALSHA runs at once
	require.NoError(t, err)
	require.NoError(t, warm.Release(t.Context()))

	const pause, deadline = 2 * time.Second, 800 * time.Millisecond
	require.Less(t, pause, deadline+reconcileTimeout, "the rollback must outlast the pause")
	admin := srv.redis.Client(t) // another connection
	require.NoError(t, admin.Do(t.Context(), admin.B().ClientPause().Timeout(pause.Milliseconds()).All().Build()).Error())

	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	_, err = st.Acquire(ctx, "k", time.Minute)
	require.ErrorIs(t, err, lease.ErrTimeout)

	ks, _ := keysFor(st.prefix, "k")
	fence, err := srv.client.Do(t.Context(), srv.client.B().Get().Key(ks.fence).Build()).AsInt64()
	require.NoError(t, err)
	assert.EqualValues(t, 1, fence, "the timed-out acquire did run on the server")
	locked, err := st.IsLocked(t.Context(), "k")
	require.NoError(t, err)
	assert.False(t, locked, "the ambiguous acquire was rolled back")
	assert.Contains(t, logs.String(), "rolled back an acquire whose outcome was unknown")

	l, err := st.Acquire(t.Context(), "k", time.Second)
	require.NoError(t, err, "the key is free at once")
	assert.EqualValues(t, 2, l.Fence)
}

// TestStore_Acquire_AbortedBeforeSendLeavesNothing: a canceled context
// sends nothing; the reconcile finds nothing to release.
func TestStore_Acquire_AbortedBeforeSendLeavesNothing(t *testing.T) {
	srv := startServer(t)
	st := srv.store(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := st.Acquire(ctx, "k", time.Second)
	require.ErrorIs(t, err, lease.ErrAborted)
	ks, _ := keysFor(st.prefix, "k")
	err = srv.client.Do(t.Context(), srv.client.B().Get().Key(ks.fence).Build()).Error()
	assert.True(t, rueidis.IsRedisNil(err), "no fence was taken: %v", err)
}
