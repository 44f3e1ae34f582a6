package redislease

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

// fakeRedis is a minimal RESP server: it completes rueidis's handshake and
// then answers every script call according to its mode, so tests get the
// real errors rueidis produces for replies and faults a real server cannot
// be made to give on demand.
type fakeRedis struct {
	ln    net.Listener
	mode  string // "-<error line>", "close" or "hang"
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func startFakeRedis(t *testing.T, mode string) *fakeRedis {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &fakeRedis{ln: ln, mode: mode}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

func (f *fakeRedis) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(c)
	}
}

func (f *fakeRedis) close() {
	_ = f.ln.Close()
	f.mu.Lock()
	for _, c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

const helloReply = "%7\r\n+server\r\n+redis\r\n+version\r\n+7.0.0\r\n+proto\r\n:3\r\n+id\r\n:1\r\n+mode\r\n+standalone\r\n+role\r\n+master\r\n+modules\r\n*0\r\n"

func (f *fakeRedis) serve(c net.Conn) {
	defer f.wg.Done()
	defer c.Close()
	r := bufio.NewReader(c)
	hung := false
	for {
		cmd, err := readCommand(r)
		if err != nil {
			return
		}
		var reply string
		switch name := strings.ToUpper(cmd[0]); {
		case hung: // replies stay in order: nothing after a hung command
			continue
		case name == "HELLO":
			reply = helloReply
		case name != "EVALSHA" && name != "EVAL":
			reply = "+OK\r\n"
		case f.mode == "close":
			return
		case f.mode == "hang":
			hung = true
			continue
		default:
			reply = f.mode + "\r\n"
		}
		if _, err := io.WriteString(c, reply); err != nil {
			return
		}
	}
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || n < 1 {
		return nil, errors.New("bad command")
	}
	out := make([]string, 0, n)
	for range n {
		if _, err := r.ReadString('\n'); err != nil { // $len
			return nil, err
		}
		arg, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		out = append(out, strings.TrimSuffix(arg, "\r\n"))
	}
	return out, nil
}

func fakeClient(t *testing.T, addr string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{addr},
		DisableCache:      true,
		DisableRetry:      true,
		ForceSingleClient: true,
		ConnWriteTimeout:  300 * time.Millisecond,
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// TestClassify_RealErrors maps the errors rueidis really returns, for
// server replies and for faults, to the lease sentinels.
func TestClassify_RealErrors(t *testing.T) {
	t.Parallel()
	replies := []struct {
		reply string
		want  error
	}{
		{"-NOAUTH Authentication required.", lease.ErrAuth},
		{"-WRONGPASS invalid username-password pair or user is disabled.", lease.ErrAuth},
		{"-NOPERM this user has no permissions to run the 'evalsha' command", lease.ErrAuth},
		{"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.", lease.ErrUnavailable},
		{"-LOADING Redis is loading the dataset in memory", lease.ErrUnavailable},
		{"-READONLY You can't write against a read only replica.", lease.ErrUnavailable},
		{"-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.", lease.ErrUnavailable},
		{"-CLUSTERDOWN The cluster is down", lease.ErrUnavailable},
		{"-TRYAGAIN Multiple keys request during rehashing of slot", lease.ErrUnavailable},
		{"-WRONGTYPE Operation against a key holding the wrong kind of value", lease.ErrInternal},
		{"-ERR unknown command", lease.ErrInternal},
		{"-BUSYKEY Target key name already exists.", lease.ErrInternal},
	}
	for _, tt := range replies {
		t.Run(strings.Fields(tt.reply)[0], func(t *testing.T) {
			st, err := New(fakeClient(t, startFakeRedis(t, tt.reply).ln.Addr().String()))
			require.NoError(t, err)
			id := newID(0)
			err = st.Release(t.Context(), id)
			require.ErrorIs(t, err, tt.want)
			var re *rueidis.RedisError
			require.ErrorAs(t, err, &re, "the cause stays reachable")
			assert.Contains(t, err.Error(), "redislease: release")
			var e *Error
			require.ErrorAs(t, err, &e, "every Store error is an *Error")
			assert.Equal(t, "release", e.Op)
			assert.Equal(t, "lease "+lease.ShortID(id), e.Subject, "the subject is the short ID, never the full one")
			assert.NotContains(t, err.Error(), id, "the full lease ID is not in the error")
		})
	}

	t.Run("EOF", func(t *testing.T) {
		st, err := New(fakeClient(t, startFakeRedis(t, "close").ln.Addr().String()))
		require.NoError(t, err)
		err = st.Release(t.Context(), newID(0))
		require.ErrorIs(t, err, lease.ErrUnavailable)
	})
	t.Run("i/o timeout", func(t *testing.T) {
		st, err := New(fakeClient(t, startFakeRedis(t, "hang").ln.Addr().String()))
		require.NoError(t, err)
		err = st.Release(t.Context(), newID(0))
		require.ErrorIs(t, err, lease.ErrTimeout)
		var ne net.Error
		require.ErrorAs(t, err, &ne)
	})
	t.Run("context deadline", func(t *testing.T) {
		st, err := New(fakeClient(t, startFakeRedis(t, "hang").ln.Addr().String()))
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		err = st.Release(ctx, newID(0))
		require.ErrorIs(t, err, lease.ErrTimeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("context canceled", func(t *testing.T) {
		st, err := New(fakeClient(t, startFakeRedis(t, "hang").ln.Addr().String()))
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(50*time.Millisecond, cancel)
		err = st.Release(ctx, newID(0))
		require.ErrorIs(t, err, lease.ErrAborted)
	})
	t.Run("client closed", func(t *testing.T) {
		srv := startServer(t)
		st := srv.store(t)
		srv.client.Close()
		err := st.Release(t.Context(), newID(0))
		require.ErrorIs(t, err, lease.ErrUnavailable)
		require.ErrorIs(t, err, rueidis.ErrClosing)
	})
	t.Run("connection refused", func(t *testing.T) {
		srv := startServer(t)
		st := srv.store(t)
		srv.redis.Stop()
		err := st.Release(t.Context(), newID(0))
		require.ErrorIs(t, err, lease.ErrUnavailable)

		port, perr := freeClosedPort()
		require.NoError(t, perr)
		_, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{port}, DisableCache: true})
		require.Error(t, err)
		assert.ErrorIs(t, classify(t.Context(), err), lease.ErrUnavailable, "dial error %v", err)
	})
	t.Run("NOPERM from a real server", func(t *testing.T) {
		srv := startServer(t)
		require.NoError(t, srv.client.Do(t.Context(), srv.client.B().Arbitrary("ACL", "SETUSER").
			Args("weak", "on", ">pw", "~*", "+@all", "-evalsha", "-eval").Build()).Error())
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.redis.Addr}, DisableCache: true, Username: "weak", Password: "pw"})
		require.NoError(t, err)
		defer c.Close()
		st, err := New(c)
		require.NoError(t, err)
		_, err = st.Acquire(t.Context(), "k", time.Second)
		require.ErrorIs(t, err, lease.ErrAuth)
	})
	t.Run("WRONGPASS and NOAUTH from a real server", func(t *testing.T) {
		srv := startServer(t)
		require.NoError(t, srv.client.Do(t.Context(), srv.client.B().ConfigSet().ParameterValue().ParameterValue("requirepass", "secret").Build()).Error())
		_, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.redis.Addr}, DisableCache: true, Password: "wrong"})
		require.Error(t, err)
		assert.ErrorIs(t, classify(t.Context(), err), lease.ErrAuth, "%v", err)
		_, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.redis.Addr}, DisableCache: true})
		require.Error(t, err)
		assert.ErrorIs(t, classify(t.Context(), err), lease.ErrAuth, "%v", err)
	})
}

// freeClosedPort returns an address on which nothing listens.
func freeClosedPort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// Options fail with an *Error naming the option and the rule.
func TestError_Option(t *testing.T) {
	_, err := New(fakeClient(t, startFakeRedis(t, "close").ln.Addr().String()), WithPrefix("a\x00"))
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "WithPrefix", e.Op)
	assert.Empty(t, e.Subject)
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
	assert.True(t, strings.HasPrefix(err.Error(), "redislease: WithPrefix: "), err.Error())
}

// The answer of a paused refusal that recorded its round is read as it
// comes: a negative round or time (no script of the store writes one)
// reads as none, never as a time before 1970.
func TestPausedError_FromTheScriptsAnswer(t *testing.T) {
	e := pausedError(100, 1_700_000_000_000)
	assert.Equal(t, int64(100), e.PrevRound)
	assert.Equal(t, int64(1_700_000_000_000), e.PausedAt.UnixMilli())
	assert.ErrorIs(t, e, lease.ErrPaused)
	assert.Equal(t, "paused", lease.Class(e))

	e = pausedError(-5, -1)
	assert.Zero(t, e.PrevRound)
	assert.True(t, e.PausedAt.IsZero(), "an unreadable pause time is unknown")
	e = pausedError(0, 0)
	assert.Zero(t, e.PrevRound)
	assert.True(t, e.PausedAt.IsZero())
}
