package testutil

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// proxiedClient returns a rueidis client for addr (usually a proxy),
// closed when the test ends.
func proxiedClient(t *testing.T, addr string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:  []string{addr},
		DisableCache: true,
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// lineConn is a raw RESP connection that sends inline commands and reads
// single-line replies, so tests see exactly what the proxy does to one TCP
// connection.
type lineConn struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialLine(t *testing.T, addr string) *lineConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return &lineConn{conn: c, r: bufio.NewReader(c)}
}

// do sends cmd and returns the first reply line, or an error if none
// arrives within timeout.
func (c *lineConn) do(cmd string, timeout time.Duration) (string, error) {
	if err := c.conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	if _, err := c.conn.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	line, err := c.r.ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestProxy_Forward_SetGetLargeValue(t *testing.T) {
	srv := StartRedis(t)
	proxy := NewProxy(t, srv.Addr)
	c := proxiedClient(t, proxy.Addr)
	ctx := t.Context()

	value := strings.Repeat("lease-", 200_000) // 1.2 MB: many chunks each way
	require.NoError(t, c.Do(ctx, c.B().Set().Key("k").Value(value).Build()).Error())
	got, err := c.Do(ctx, c.B().Get().Key("k").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, value, got)
}

func TestProxy_Cut_ClosesLiveAndRefusesNewUntilRestore(t *testing.T) {
	srv := StartRedis(t)
	proxy := NewProxy(t, srv.Addr)
	live := dialLine(t, proxy.Addr)
	reply, err := live.do("PING", time.Second)
	require.NoError(t, err)
	require.Equal(t, "+PONG", reply)

	proxy.Cut()

	_, err = live.do("PING", 5*time.Second)
	assert.Error(t, err, "a live connection must be closed by Cut")
	assert.False(t, isTimeout(err), "Cut must close, not stall: %v", err)

	fresh := dialLine(t, proxy.Addr) // accepted, then closed at once
	_, err = fresh.do("PING", 5*time.Second)
	assert.Error(t, err, "a new connection must be refused while cut")
	assert.False(t, isTimeout(err), "Cut must close, not stall: %v", err)

	proxy.Restore()

	reply, err = dialLine(t, proxy.Addr).do("PING", time.Second)
	require.NoError(t, err)
	assert.Equal(t, "+PONG", reply)
}

func TestProxy_Cut_RueidisClientFailsThenRecovers(t *testing.T) {
	srv := StartRedis(t)
	proxy := NewProxy(t, srv.Addr)
	c := proxiedClient(t, proxy.Addr)
	require.NoError(t, c.Do(t.Context(), c.B().Ping().Build()).Error())

	proxy.Cut()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	err := c.Do(ctx, c.B().Set().Key("k").Value("v").Build()).Error()
	cancel()
	assert.Error(t, err, "a command through a cut proxy must fail")

	// After Restore the client recovers: a connection it opened before
	// or during the cut reports the break (EOF, a reset, a refused
	// handshake) at its first use, once, and is replaced. Under load
	// the first command after Restore met such a connection once. Each
	// failure must be such a break, never a timeout, and a few commands
	// (one per connection the client may hold) reach the server.
	proxy.Restore()
	var set error
	for range 5 {
		set = c.Do(t.Context(), c.B().Set().Key("k").Value("v").Build()).Error()
		if set == nil {
			break
		}
		t.Logf("a command after Restore met a broken connection: %v", set)
		var ne net.Error
		require.True(t, errors.Is(set, io.EOF) || errors.Is(set, syscall.ECONNRESET) || errors.Is(set, syscall.ECONNREFUSED) ||
			(errors.As(set, &ne) && !ne.Timeout()), "a command after Restore failed with %v, not a broken connection", set)
	}
	require.NoError(t, set, "the client recovered after Restore")
	got, err := c.Do(t.Context(), c.B().Get().Key("k").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "v", got)
}

func TestProxy_Blackhole_RequestTimesOutAndNothingIsDelivered(t *testing.T) {
	srv := StartRedis(t)
	proxy := NewProxy(t, srv.Addr)
	c := proxiedClient(t, proxy.Addr)
	require.NoError(t, c.Do(t.Context(), c.B().Ping().Build()).Error())
	raw := dialLine(t, proxy.Addr)

	proxy.Blackhole()

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	err := c.Do(ctx, c.B().Set().Key("client").Value("1").Build()).Error()
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	_, err = raw.do("SET raw 1", 200*time.Millisecond)
	assert.True(t, isTimeout(err), "a blackholed connection must stall, got %v", err)

	fresh := dialLine(t, proxy.Addr) // new connections are accepted but also blackholed
	_, err = fresh.do("SET fresh 1", 200*time.Millisecond)
	assert.True(t, isTimeout(err), "a connection opened during the blackhole must stall, got %v", err)

	proxy.Restore()

	// Connections open during the blackhole are closed by Restore.
	_, err = raw.do("PING", 5*time.Second)
	assert.Error(t, err)
	assert.False(t, isTimeout(err), "Restore must close blackholed connections: %v", err)

	// New connections work, and none of the blackholed writes reached the server.
	after := dialLine(t, proxy.Addr)
	reply, err := after.do("EXISTS client raw fresh", time.Second)
	require.NoError(t, err)
	assert.Equal(t, ":0", reply)
}

func TestProxy_SetLatency_DelaysBothDirections(t *testing.T) {
	const d = 100 * time.Millisecond
	srv := StartRedis(t)
	proxy := NewProxy(t, srv.Addr)
	conn := dialLine(t, proxy.Addr)

	proxy.SetLatency(d)
	// Real clock on purpose: the delay itself is the property under test.
	// Only a lower bound is asserted; a loaded machine may add more.
	start := time.Now()
	reply, err := conn.do("PING", 5*time.Second)
	elapsed := time.Since(start)
	require.NoError(t, err)
	assert.Equal(t, "+PONG", reply)
	assert.GreaterOrEqual(t, elapsed, 2*d, "request and reply must each be delayed by d")

	proxy.Restore()
	reply, err = conn.do("PING", time.Second)
	require.NoError(t, err, "latency alone must not break a connection across Restore")
	assert.Equal(t, "+PONG", reply)
}

func TestProxy_Close_StopsAcceptingAndIsIdempotent(t *testing.T) {
	srv := StartRedis(t)
	proxy := NewProxy(t, srv.Addr)
	live := dialLine(t, proxy.Addr)
	_, err := live.do("PING", time.Second)
	require.NoError(t, err)

	proxy.Close()
	proxy.Close()

	_, err = live.do("PING", 5*time.Second)
	assert.Error(t, err, "Close must close live connections")
	_, err = net.DialTimeout("tcp", proxy.Addr, time.Second)
	assert.Error(t, err, "Close must stop listening")
}

func TestProxy_TargetDown_ClosesClientConnection(t *testing.T) {
	proxy := NewProxy(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(refusingPort(t))))

	_, err := dialLine(t, proxy.Addr).do("PING", 5*time.Second)
	assert.Error(t, err)
	assert.False(t, isTimeout(err), "an unreachable target must close the client connection: %v", err)
}

// refusingPort returns a loopback TCP port that refuses connections for
// the rest of the test: a socket bound to it, not listening, holds it. A
// port that FreePort found free could be taken meanwhile by a server
// another test package starts (a redis-server on a free port), and the
// proxy's dial then connected to it: the test read timed out under load.
func refusingPort(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	return sa.(*syscall.SockaddrInet4).Port
}

// LoseReplyTo: the server runs the marked command, its reply is dropped
// and the connection closed; other commands are untouched.
func TestProxy_LoseReplyTo_CommandRunsReplyLost(t *testing.T) {
	srv := StartRedis(t)
	p := NewProxy(t, srv.Addr)
	c := dialLine(t, p.Addr)
	p.LoseReplyTo([]byte("lost-reply"))
	got, err := c.do("PING", time.Second)
	require.NoError(t, err, "an unmarked command is answered")
	assert.Equal(t, "+PONG", got)

	_, err = c.do("SET lost-reply yes", time.Second)
	require.Error(t, err, "the reply never arrives")
	assert.False(t, isTimeout(err), "the connection is closed, not silent: %v", err)

	direct := dialLine(t, srv.Addr)
	got, err = direct.do("GET lost-reply", time.Second)
	require.NoError(t, err)
	assert.Equal(t, "$3", got, "the server ran the command")

	again := dialLine(t, p.Addr)
	got, err = again.do("SET lost-reply again", time.Second)
	require.NoError(t, err)
	assert.Equal(t, "+OK", got, "only one reply was lost")
}
