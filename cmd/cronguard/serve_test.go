package main

import (
	"bytes"
	"context"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/scheduler"
	"github.com/cronguard/cronguard/testutil"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{}, 1)} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serving is a cronguard serve running in the test.
type serving struct {
	url    string // the console's address, as serve printed it
	stderr *syncBuffer
	stop   func() int
}

var servedAt = regexp.MustCompile(`cronguard console on (https?://\S+/) `)

// serve runs cronguard serve against the fleet with args, and returns once
// it printed its address. stop stops it and returns its exit code.
func (f *testFleet) serve(t *testing.T, args ...string) *serving {
	t.Helper()
	return f.serveAs(t, f.url, args...)
}

// serveAs is serve with another Redis URL (another user).
func (f *testFleet) serveAs(t *testing.T, redisURL string, args ...string) *serving {
	t.Helper()
	stdout, stderr := newSyncBuffer(), newSyncBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	e := env{stdout: stdout, stderr: stderr, getenv: func(string) string { return "" }, by: func() string { return testBy }, now: time.Now}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, append([]string{"--redis", redisURL, "--prefix", f.prefix, "serve", "--addr", "127.0.0.1:0"}, args...), e)
	}()
	s := &serving{stderr: stderr}
	var once sync.Once
	exit := -1
	s.stop = func() int {
		once.Do(func() {
			cancel()
			exit = <-code
		})
		return exit
	}
	t.Cleanup(func() { s.stop() })
	timer := time.NewTimer(waitBound)
	defer timer.Stop()
	for {
		if m := servedAt.FindStringSubmatch(stdout.String()); m != nil {
			s.url = m[1]
			return s
		}
		select {
		case <-stdout.changed:
		case c := <-code:
			t.Fatalf("serve exited with %d before serving: %s", c, stderr.String())
		case <-timer.C:
			t.Fatalf("serve printed no address within %s: %s", waitBound, stderr.String())
		}
	}
}

// authFile writes an auth file with mode perm and returns its path.
func authFile(t *testing.T, content string, perm os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users")
	require.NoError(t, os.WriteFile(path, []byte(content), perm))
	require.NoError(t, os.Chmod(path, perm))
	return path
}

// httpGet fetches url with client, returning status and body.
func httpGet(t *testing.T, c *http.Client, u string, user, pass string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

var pauseTokenRE = regexp.MustCompile(`(?s)id="pause-form">\s*<input type="hidden" name="csrf_token" value="([^"]+)"`)

func TestServe_ReadOnlyByDefault(t *testing.T) {
	f := newTestFleet(t)
	f.start(t, "replica-1", func(s *scheduler.Scheduler) error {
		return s.Register("report", scheduler.Cron("0 0 1 1 *"), func(context.Context) error { return nil })
	})
	f.waitReplicas(t, "replica-1")
	s := f.serve(t)
	assert.True(t, strings.HasPrefix(s.url, "http://127.0.0.1:"), s.url)

	code, body := httpGet(t, http.DefaultClient, s.url+"jobs", "", "")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `href="/jobs/report"`)
	assert.Contains(t, body, "read-only")

	resp, err := http.PostForm(s.url+"jobs/report/pause", url.Values{"note": {"x"}})
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, f.cli(t, "job", "report").stdout, "paused:           no")
	assert.Equal(t, exitOK, s.stop())
}

// With --auth-file and --actions, a signed-in user pauses a job from its
// page; the pause and its note show in cronguard jobs, with the user's
// name.
func TestServe_Actions_SignedIn(t *testing.T) {
	f := newTestFleet(t)
	f.start(t, "replica-1", func(s *scheduler.Scheduler) error {
		return s.Register("report", scheduler.Cron("0 0 1 1 *"), func(context.Context) error { return nil })
	})
	f.waitReplicas(t, "replica-1")
	users := authFile(t, "# operators\nalice:correct horse\nbob:battery\n", 0o600)
	s := f.serve(t, "--auth-file", users, "--actions", "pause,resume")

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	code, _ := httpGet(t, c, s.url+"jobs/report", "", "")
	assert.Equal(t, http.StatusUnauthorized, code, "no sign-in")
	code, _ = httpGet(t, c, s.url+"jobs/report", "alice", "wrong")
	assert.Equal(t, http.StatusUnauthorized, code, "wrong password")
	code, body := httpGet(t, c, s.url+"jobs/report", "alice", "correct horse")
	require.Equal(t, http.StatusOK, code)
	assert.NotContains(t, body, `id="trigger-form"`, "trigger is not among the --actions")
	m := pauseTokenRE.FindStringSubmatch(body)
	require.NotNil(t, m, "the page has the pause form")

	form := url.Values{"note": {"quarterly close: hold reports"}, "csrf_token": {html.UnescapeString(m[1])}}
	req, err := http.NewRequest(http.MethodPost, s.url+"jobs/report/pause", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("alice", "correct horse")
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	out := f.cli(t, "jobs")
	require.Equal(t, exitOK, out.code)
	assert.Contains(t, out.stdout, "paused by alice")
	assert.Contains(t, f.cli(t, "job", "report").stdout, `"quarterly close: hold reports"`)
	assert.Contains(t, s.stderr.String(), "job paused fleet-wide", "the action is logged")
	assert.Contains(t, s.stderr.String(), "by=alice")
	assert.NotContains(t, s.stderr.String(), "correct horse", "no password in the log")
	assert.Equal(t, exitOK, s.stop())
}

func TestServe_BadFlags(t *testing.T) {
	open := authFile(t, "alice:pw\n", 0o644)
	users := authFile(t, "alice:pw\n", 0o600)
	bad := authFile(t, "alice\n", 0o600)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"actions without auth", []string{"--actions", "all"}, "--actions needs --auth-file"},
		{"unknown action", []string{"--auth-file", users, "--actions", "pause,delete"}, "want all, or a comma-separated list"},
		{"auth file readable by others", []string{"--auth-file", open}, "chmod 600"},
		{"auth file line without password", []string{"--auth-file", bad}, "line 1: want user:password"},
		{"missing auth file", []string{"--auth-file", "/nonexistent/users"}, "no such file"},
		{"bad address", []string{"--addr", "8080"}, "want host:port"},
		{"cert without key", []string{"--tls-cert", "c.pem"}, "go together"},
		{"sub-second refresh", []string{"--refresh", "500ms"}, "whole number of seconds"},
		{"bad base path", []string{"--base-path", "cron/"}, "must start with /"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, nil, append([]string{"--redis", "redis://127.0.0.1:1", "serve"}, tt.args...)...)
			assert.Equal(t, exitUsage, r.code)
			assert.Contains(t, r.stderr, tt.want)
			assert.NotContains(t, r.stderr, "pw")
		})
	}
}

// Redis that cannot be read at the start: exit 1, with the reason.
func TestServe_RedisDown(t *testing.T) {
	r := cli(t, nil, "--redis", "redis://127.0.0.1:1", "serve", "--addr", "127.0.0.1:0")
	assert.Equal(t, exitFailed, r.code)
	assert.Contains(t, r.stderr, "127.0.0.1:1")
}

// The console works as the documented read-only Redis user, which may run
// no script (every page, nothing refused), and its actions as the
// operator's user.
func TestServe_ACL(t *testing.T) {
	f := newTestFleet(t)
	f.start(t, "replica-1", func(s *scheduler.Scheduler) error {
		if err := s.Register("report", scheduler.Cron("0 0 1 1 *"), func(context.Context) error { return nil }); err != nil {
			return err
		}
		return s.Register("tick", scheduler.Every(time.Second), func(context.Context) error { return nil })
	})
	f.waitReplicas(t, "replica-1")
	waitUntil(t, "tick ran", func() bool { return strings.Contains(f.cli(t, "history", "tick").stdout, "succeeded") })
	testutil.SetACLUser(t, f.admin, "console-read", readRules(f.prefix)...)
	testutil.SetACLUser(t, f.admin, "console-ops", aclRules(f.prefix, true, opsGrants())...)

	readURL := "redis://console-read:secret@" + f.redis.Addr
	s := f.serveAs(t, readURL)
	for _, page := range []string{"", "jobs", "jobs/report", "jobs/tick", "jobs/tick?offset=1"} {
		code, body := httpGet(t, http.DefaultClient, s.url+page, "", "")
		assert.Equal(t, http.StatusOK, code, "%s: %s", page, body)
	}
	assert.Empty(t, testutil.ACLDenials(t, f.admin, "console-read", harmlessDenials...), "the read-only user is refused nothing")
	assert.Equal(t, exitOK, s.stop())

	// The read-only user has no script permission at all: a script, which
	// could loop and stall every replica, is refused.
	assertRunsNoScript(t, userClient(t, f.redis.Addr, "console-read"))

	users := authFile(t, "alice:pw\n", 0o600)
	s = f.serveAs(t, "redis://console-ops:secret@"+f.redis.Addr, "--auth-file", users, "--actions", "all")
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	code, body := httpGet(t, c, s.url+"jobs/report", "alice", "pw")
	require.Equal(t, http.StatusOK, code)
	m := pauseTokenRE.FindStringSubmatch(body)
	require.NotNil(t, m)
	form := url.Values{"note": {"acl check"}, "csrf_token": {html.UnescapeString(m[1])}}
	req, err := http.NewRequest(http.MethodPost, s.url+"jobs/report/pause", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("alice", "pw")
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Contains(t, f.cli(t, "jobs").stdout, "paused by alice")
	assert.Empty(t, testutil.ACLDenials(t, f.admin, "console-ops", harmlessDenials...))
	assert.Equal(t, exitOK, s.stop())
}

func TestServe_Exposure(t *testing.T) {
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	wild := &net.TCPAddr{IP: net.IPv4zero, Port: 8080}
	assert.Empty(t, exposure(loop, false, false), "loopback: nothing to say")
	assert.Empty(t, exposure(loop, false, true))
	assert.Contains(t, exposure(wild, false, true), "passwords cross the network in clear")
	assert.Empty(t, exposure(wild, true, true), "TLS and sign-in")
	assert.Contains(t, exposure(wild, true, false), "without --auth-file")
}
