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

// ambiguousPause and ambiguousDeadline frame an acquire whose outcome is
// unknown to the caller: CLIENT PAUSE makes the server hold every command
// for ambiguousPause from the moment the pause is acknowledged, the
// acquire's deadline passes inside the pause, and the rollback's own
// deadline (ambiguousDeadline + reconcileTimeout) outside it.
const ambiguousPause, ambiguousDeadline = 2 * time.Second, 800 * time.Millisecond

// ambiguous is what pausedAcquire saw.
type ambiguous struct {
	store *Store
	err   error  // what the acquire returned
	fence int64  // the fence counter of "k" afterwards: 0 if no acquire ran
	logs  string // the Store's log, at debug level
}

// pausedAcquire acquires "k" on a Store over a client built with opts while
// the server is paused, with a deadline that passes inside the pause. The
// Store is warmed up first under warmCtx, so its scripts are loaded and
// EVALSHA runs at once.
func pausedAcquire(warmCtx context.Context, t *testing.T, opts rueidis.ClientOption) ambiguous {
	t.Helper()
	require.Less(t, ambiguousPause, ambiguousDeadline+reconcileTimeout, "the rollback must outlast the pause")
	srv := startServer(t)
	opts.InitAddress, opts.DisableCache = []string{srv.redis.Addr}, true
	client, err := rueidis.NewClient(opts)
	require.NoError(t, err)
	t.Cleanup(client.Close)
	logs := new(bytes.Buffer)
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st, err := New(client, WithPrefix(uniquePrefix()), WithLogger(log))
	require.NoError(t, err)
	warm, err := st.Acquire(warmCtx, "warm-up", time.Second)
	require.NoError(t, err)
	require.NoError(t, warm.Release(warmCtx))

	admin := srv.redis.Client(t) // another connection
	require.NoError(t, admin.Do(t.Context(), admin.B().ClientPause().Timeout(ambiguousPause.Milliseconds()).All().Build()).Error())
	ctx, cancel := context.WithTimeout(t.Context(), ambiguousDeadline)
	defer cancel()
	_, acqErr := st.Acquire(ctx, "k", time.Minute)

	ks, _ := keysFor(st.prefix, "k")
	fence, err := srv.client.Do(t.Context(), srv.client.B().Get().Key(ks.fence).Build()).AsInt64()
	if !rueidis.IsRedisNil(err) {
		require.NoError(t, err)
	}
	return ambiguous{store: st, err: acqErr, fence: fence, logs: logs.String()}
}

// requireFreeAtOnce checks that "k" is free right after an ambiguous
// acquire, and that the next acquire takes fence want.
func requireFreeAtOnce(t *testing.T, st *Store, want int64) {
	t.Helper()
	locked, err := st.IsLocked(t.Context(), "k")
	require.NoError(t, err)
	assert.False(t, locked, "the ambiguous acquire left the key free")
	l, err := st.Acquire(t.Context(), "k", time.Second)
	require.NoError(t, err, "the key is free at once")
	assert.EqualValues(t, want, l.Fence)
}

// TestStore_Acquire_AmbiguousTimeoutIsRolledBack: the acquire is sent, the
// caller's deadline passes while the server holds it, and the acquire then
// runs. Acquire returns ErrTimeout and has released what it took, so the key
// is free and not blocked until the TTL passes.
//
// The client pipelines on one connection, so the timed-out acquire stays
// queued on the server and the rollback runs behind it.
func TestStore_Acquire_AmbiguousTimeoutIsRolledBack(t *testing.T) {
	got := pausedAcquire(t.Context(), t, rueidis.ClientOption{AlwaysPipelining: true, PipelineMultiplex: -1})
	require.ErrorIs(t, got.err, lease.ErrTimeout)
	assert.EqualValues(t, 1, got.fence, "the timed-out acquire did run on the server")
	assert.Contains(t, got.logs, "rolled back an acquire whose outcome was unknown")
	requireFreeAtOnce(t, got.store, 2)
}

// TestStore_Acquire_AmbiguousTimeoutThatNeverRan: the other outcome. A
// rueidis connection used by one caller at a time sends synchronously and,
// when the deadline passes, closes the connection; Redis drops the paused
// command of a client that has gone. Acquire cannot tell this from the case
// above, returns ErrTimeout all the same, and its rollback finds nothing.
//
// The warm-up runs under a deadline, which keeps the connection
// synchronous (a context without one would start rueidis' pipelining).
func TestStore_Acquire_AmbiguousTimeoutThatNeverRan(t *testing.T) {
	warm, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	got := pausedAcquire(warm, t, rueidis.ClientOption{PipelineMultiplex: -1})
	require.ErrorIs(t, got.err, lease.ErrTimeout)
	assert.Zero(t, got.fence, "the acquire was dropped with its connection")
	assert.Contains(t, got.logs, "ambiguous acquire did not take effect")
	requireFreeAtOnce(t, got.store, 1)
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
