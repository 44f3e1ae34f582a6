package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/scheduler"
	"github.com/cronguard/cronguard/testutil"
)

// testBy is who the tests say runs the commands.
const testBy = "tester@testhost"

// result is what one command did.
type result struct {
	stdout, stderr string
	code           int
}

// cli runs cronguard with args and the environment vars, and returns its
// output and exit code. Every command's error output is one line.
func cli(t *testing.T, vars map[string]string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	e := env{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return vars[k] },
		by: func() string { return testBy }, now: time.Now}
	code := run(t.Context(), args, e)
	r := result{stdout: stdout.String(), stderr: stderr.String(), code: code}
	if r.stderr != "" {
		assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line on stderr: %q", r.stderr)
		assert.True(t, strings.HasPrefix(r.stderr, "cronguard: "), r.stderr)
		assert.True(t, strings.HasSuffix(r.stderr, "\n"))
	}
	if code == exitOK {
		assert.Empty(t, r.stderr)
	} else {
		assert.NotEmpty(t, r.stderr, "a failure says why")
	}
	return r
}

// decode parses a command's JSON output into v, strictly.
func decode(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(v), "JSON output: %s", out)
}

// fleetRefresh is the test replicas' registry refresh.
const fleetRefresh = 200 * time.Millisecond

// waitBound bounds every wait for the fleet; never a timing assertion.
const waitBound = 30 * time.Second

// testFleet is a redis-server with replicas running in this process, each
// on its own client behind its own proxy (so that it can be cut off).
type testFleet struct {
	redis  *testutil.Redis
	prefix string
	url    string // redis:// URL of the server
	admin  rueidis.Client
	events *eventLog
}

var prefixSeq atomic.Int64

func newTestFleet(t *testing.T) *testFleet {
	t.Helper()
	r := testutil.StartRedis(t)
	return &testFleet{redis: r, prefix: fmt.Sprintf("cli%d", prefixSeq.Add(1)), url: "redis://" + r.Addr,
		admin: r.Client(t), events: &eventLog{changed: make(chan struct{})}}
}

// cli runs cronguard against the fleet (--redis and --prefix given).
func (f *testFleet) cli(t *testing.T, args ...string) result {
	t.Helper()
	return cli(t, nil, append([]string{"--redis", f.url, "--prefix", f.prefix}, args...)...)
}

// replica is a scheduler of the fleet.
type replica struct {
	id    string
	proxy *testutil.Proxy
}

func (r *replica) kill() { r.proxy.Cut() }

// start starts a replica with the jobs register adds, shut down when the
// test ends.
func (f *testFleet) start(t *testing.T, id string, register func(*scheduler.Scheduler) error) *replica {
	t.Helper()
	proxy := testutil.NewProxy(t, f.redis.Addr)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{proxy.Addr}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	store, err := redislease.New(client, redislease.WithPrefix(f.prefix))
	require.NoError(t, err)
	s, err := scheduler.New(store, scheduler.WithInstanceID(id), scheduler.WithRegistryRefresh(fleetRefresh),
		scheduler.WithObserver(f.events.add), scheduler.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	require.NoError(t, register(s))
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return &replica{id: id, proxy: proxy}
}

// waitReplicas waits until the registry lists exactly ids, each subscribed
// to the control channel.
func (f *testFleet) waitReplicas(t *testing.T, ids ...string) {
	t.Helper()
	ids = slices.Sorted(slices.Values(ids))
	waitUntil(t, fmt.Sprintf("replicas %v", ids), func() bool {
		r := cli(t, nil, "--redis", f.url, "--prefix", f.prefix, "replicas", "--json")
		var out replicasJSON
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil {
			return false
		}
		var got []string
		for _, rep := range out.Replicas {
			got = append(got, rep.ID)
		}
		if !slices.Equal(got, ids) {
			return false
		}
		n, err := f.admin.Do(t.Context(), f.admin.B().PubsubNumsub().Channel(f.prefix+":control").Build()).AsIntMap()
		return err == nil && n[f.prefix+":control"] >= int64(len(ids))
	})
}

// storeNow returns the Redis server's time.
func (f *testFleet) storeNow(t *testing.T) time.Time {
	t.Helper()
	parts, err := f.admin.Do(t.Context(), f.admin.B().Time().Build()).AsIntSlice()
	require.NoError(t, err)
	return time.Unix(parts[0], parts[1]*1000)
}

// waitUntil polls cond every 20ms until it holds, failing after waitBound.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s waiting for: %s", waitBound, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// eventLog keeps every replica's events.
type eventLog struct {
	mu      sync.Mutex
	events  []scheduler.Event
	changed chan struct{}
}

func (l *eventLog) add(e scheduler.Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// waitFor waits until some event satisfies match, and returns it.
func (l *eventLog) waitFor(t *testing.T, what string, match func(scheduler.Event) bool) scheduler.Event {
	t.Helper()
	timer := time.NewTimer(waitBound)
	defer timer.Stop()
	for {
		l.mu.Lock()
		events, changed := slices.Clone(l.events), l.changed
		l.mu.Unlock()
		for _, e := range events {
			if match(e) {
				return e
			}
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("gave up after %s waiting for: %s", waitBound, what)
		}
	}
}

// gate is a job whose first run blocks until the gate opens.
type gate struct {
	once    atomic.Bool
	started chan scheduler.Run
	open    chan struct{}
	closed  sync.Once
}

func newGate(t *testing.T) *gate {
	g := &gate{started: make(chan scheduler.Run, 1), open: make(chan struct{})}
	t.Cleanup(g.release)
	return g
}

func (g *gate) job(ctx context.Context) error {
	if g.once.Swap(true) {
		return nil
	}
	run, _ := scheduler.RunFromContext(ctx)
	g.started <- run
	select {
	case <-g.open:
	case <-ctx.Done():
	}
	return nil
}

func (g *gate) release() { g.closed.Do(func() { close(g.open) }) }

// waitStarted returns the gated run once it started.
func (g *gate) waitStarted(t *testing.T) scheduler.Run {
	t.Helper()
	select {
	case r := <-g.started:
		return r
	case <-time.After(waitBound):
		t.Fatal("the gated job never started")
		return scheduler.Run{}
	}
}

// parseDuration is time.ParseDuration, for tables of durations.
func parseDuration(s string) (time.Duration, error) { return time.ParseDuration(s) }
