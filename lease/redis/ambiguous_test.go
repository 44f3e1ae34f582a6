package redis

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

// busyScript keeps the server busy for ARGV[1] microseconds.
const busyScript = `local t0 = redis.call('TIME')
repeat local t = redis.call('TIME') until (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) > tonumber(ARGV[1])
return 1`

// TestStore_Acquire_AmbiguousTimeoutIsRolledBack: the acquire is sent, the
// caller's deadline passes while the server is busy, and the acquire then
// runs. Acquire returns ErrTimeout and has released what it took, so the key
// is free and not blocked until the TTL passes.
func TestStore_Acquire_AmbiguousTimeoutIsRolledBack(t *testing.T) {
	srv := startServer(t)
	var logs bytes.Buffer
	st := srv.store(t, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	blocker := srv.redis.Client(t)                               // another connection
	warm, err := st.Acquire(t.Context(), "warm-up", time.Second) // loads the scripts: EVALSHA runs at once
	require.NoError(t, err)
	require.NoError(t, warm.Release(t.Context()))

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = blocker.Do(context.Background(), blocker.B().Eval().Script(busyScript).Numkeys(0).Arg("600000").Build()).Error()
	}()
	time.Sleep(100 * time.Millisecond) // let the busy script start first

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err = st.Acquire(ctx, "k", time.Minute)
	wg.Wait()
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
