package redislease

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/cronguard/cronguard/testutil"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

// ambiguousPause and ambiguousDeadline frame an acquire whose outcome is
// unknown to the caller: CLIENT PAUSE makes the server hold every command
// for ambiguousPause from the moment the pause is acknowledged, the
// acquire's deadline passes inside the pause, and the rollback's own
// deadline (ambiguousDeadline + rollbackTimeout) outside it.
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
	require.Less(t, ambiguousPause, ambiguousDeadline+rollbackTimeout, "the rollback must outlast the pause")
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
// acquire, and that the next acquire takes a fence above after (the fence
// counter left by the ambiguous acquire; 0 if it never ran).
func requireFreeAtOnce(t *testing.T, st *Store, after int64) {
	t.Helper()
	locked, err := st.IsLocked(t.Context(), "k")
	require.NoError(t, err)
	assert.False(t, locked, "the ambiguous acquire left the key free")
	l, err := st.Acquire(t.Context(), "k", time.Second)
	require.NoError(t, err, "the key is free at once")
	assert.Greater(t, int64(l.Fence), after)
}

// TestStore_Acquire_AmbiguousTimeoutIsRolledBack: the acquire is sent, the
// caller's deadline passes while the server holds it, and the acquire then
// runs. Acquire returns ErrTimeout and has released what it took, so the key
// is free and not blocked until the TTL passes.
//
// The client pipelines on one connection, so the timed-out acquire stays
// queued on the server and the rollback runs behind it.
func TestStore_Acquire_AmbiguousTimeoutIsRolledBack(t *testing.T) {
	t.Parallel()
	got := pausedAcquire(t.Context(), t, rueidis.ClientOption{AlwaysPipelining: true, PipelineMultiplex: -1})
	require.ErrorIs(t, got.err, lease.ErrTimeout)
	assert.Positive(t, got.fence, "the timed-out acquire did run on the server")
	assert.Contains(t, got.logs, "rolled back an acquire whose outcome was unknown")
	requireFreeAtOnce(t, got.store, got.fence)
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
	t.Parallel()
	warm, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	got := pausedAcquire(warm, t, rueidis.ClientOption{PipelineMultiplex: -1})
	require.ErrorIs(t, got.err, lease.ErrTimeout)
	assert.Zero(t, got.fence, "the acquire was dropped with its connection")
	assert.Contains(t, got.logs, "acquire whose outcome was unknown did not take effect")
	requireFreeAtOnce(t, got.store, 0)
}

// TestStore_Acquire_AbortedBeforeSendLeavesNothing: a canceled context
// sends nothing; the reconcile finds nothing to release.
func TestStore_Acquire_AbortedBeforeSendLeavesNothing(t *testing.T) {
	t.Parallel()
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

// TestStore_Acquire_ReplyLostToBrokenConnectionIsRolledBack: the acquire
// runs on the server, and its reply is lost with the connection (EOF), not
// to a timeout. The outcome is just as unknown: Acquire rolls it back, so
// the key is free at once and the round it claimed is given back, and
// another replica can still run that occurrence.
func TestStore_Acquire_ReplyLostToBrokenConnectionIsRolledBack(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	proxy := testutil.NewProxy(t, srv.redis.Addr)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{proxy.Addr}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	logs := new(bytes.Buffer)
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	prefix := uniquePrefix()
	st, err := New(client, WithPrefix(prefix), WithLogger(log))
	require.NoError(t, err)
	other, err := New(srv.client, WithPrefix(prefix))
	require.NoError(t, err)
	ctx := t.Context()

	l, err := other.Acquire(ctx, "k", time.Minute, lease.WithRound(100))
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	warm, err := st.Acquire(ctx, "warm-up", time.Second) // scripts loaded, connection up
	require.NoError(t, err)
	require.NoError(t, warm.Release(ctx))

	proxy.LoseReplyTo([]byte(acquireSHA)) // the acquire script's EVALSHA
	_, err = st.Acquire(ctx, "k", time.Minute, lease.WithRound(200))
	require.ErrorIs(t, err, lease.ErrUnavailable, "a broken connection")
	ks, _ := keysFor(prefix, "k")
	fence, ferr := srv.client.Do(ctx, srv.client.B().Get().Key(ks.fence).Build()).AsInt64()
	require.NoError(t, ferr)
	assert.Greater(t, fence, int64(l.Fence), "the acquire ran on the server")
	assert.Contains(t, logs.String(), "rolled back an acquire whose outcome was unknown: lease released, round given back")

	locked, err := other.IsLocked(ctx, "k")
	require.NoError(t, err)
	assert.False(t, locked, "the key is free at once, not after the TTL")
	again, err := other.Acquire(ctx, "k", time.Minute, lease.WithRound(200))
	require.NoError(t, err, "the occurrence can still be claimed")
	assert.Equal(t, int64(100), again.PrevRound, "the round record was set back")
	assert.Greater(t, int64(again.Fence), fence, "fences never go back")
}

// TestStore_Acquire_RefusedConnectionIsNotRolledBack: a connection that
// could not be made never carried the acquire: no roll-back is attempted.
func TestStore_Acquire_RefusedConnectionIsNotRolledBack(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	proxy := testutil.NewProxy(t, srv.redis.Addr)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{proxy.Addr}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	logs := new(bytes.Buffer)
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st, err := New(client, WithPrefix(uniquePrefix()), WithLogger(log))
	require.NoError(t, err)
	proxy.Close() // nothing listens any more
	// Once the client has seen its connection go, its next dial is refused.
	require.Eventually(t, func() bool {
		var op *net.OpError
		err := client.Do(t.Context(), client.B().Ping().Build()).Error()
		return errors.As(err, &op) && op.Op == "dial"
	}, 5*time.Second, 10*time.Millisecond)
	_, err = st.Acquire(t.Context(), "k", time.Minute)
	require.ErrorIs(t, err, lease.ErrUnavailable)
	assert.NotContains(t, logs.String(), "outcome was unknown", "a refused connection is a known outcome")
}

// TestOutcomeUnknown classifies the errors of a failed command.
func TestOutcomeUnknown(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(live)
	cancel()
	for name, tc := range map[string]struct {
		ctx  context.Context
		err  error
		want bool
	}{
		"EOF":               {live, io.EOF, true},
		"unexpected EOF":    {live, io.ErrUnexpectedEOF, true},
		"reset":             {live, &net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		"broken pipe":       {live, &net.OpError{Op: "write", Err: syscall.EPIPE}, true},
		"closed connection": {live, net.ErrClosed, true},
		"client closing":    {live, rueidis.ErrClosing, true},
		"context done":      {done, errors.New("anything"), true},
		"deadline":          {live, context.DeadlineExceeded, true},
		"refused":           {live, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, false},
		"dial failed":       {live, &net.OpError{Op: "dial", Err: errors.New("no route")}, false},
		"dns":               {live, &net.DNSError{Err: "no such host"}, false},
		"no address":        {live, rueidis.ErrNoAddr, false},
		"BUSY reply":        {live, redisErr(t, "BUSY script running"), false},
		"NOPERM reply":      {live, redisErr(t, "NOPERM denied"), false},
	} {
		assert.Equal(t, tc.want, outcomeUnknown(tc.ctx, tc.err), name)
	}
}

// redisErr returns the error a command gets when the server replies with
// the error reply (a RESP error line without its "-"), as rueidis returns
// it: a script makes a real server send it.
func redisErr(t *testing.T, reply string) error {
	t.Helper()
	c := startServer(t).client
	err := c.Do(t.Context(), c.B().Eval().Script("return redis.error_reply(ARGV[1])").Numkeys(0).Arg(reply).Build()).Error()
	var re *rueidis.RedisError
	require.ErrorAs(t, err, &re)
	require.Equal(t, reply, re.Error())
	return err
}
