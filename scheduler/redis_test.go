package scheduler

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/testutil"
)

// Three replicas on a real redis-server and the real clock run a 200ms
// Every job for about 3s: no occurrence runs twice, and every one between
// the first and the last few runs or is reported missed (EventMissed, by
// the replica that won the next one). On a quiet machine none is missed;
// a loaded one can hold the test process, and with it all three replicas,
// past an occurrence (one was, once, in the suite's Valkey step beside
// the Redis store's tests and a busy core), and the scheduler then reports
// what ran nowhere rather than run it late, which is what this test holds
// it to on the real clock.
func TestScheduler_Run_RealRedisOncePerOccurrence(t *testing.T) {
	t.Parallel()
	srv := testutil.StartRedis(t)
	occ := newOccurrences()
	var ev events
	var replicas []*Scheduler
	for i := range 3 {
		store, err := redislease.New(srv.Client(t))
		require.NoError(t, err)
		s := newScheduler(t, store, WithInstanceID(fmt.Sprintf("replica-%d", i)), WithObserver(ev.observe))
		require.NoError(t, s.Register("grid", Every(200*time.Millisecond), occ.record, WithTTL(time.Second)))
		replicas = append(replicas, s)
	}
	for _, s := range replicas {
		require.NoError(t, s.Start())
	}
	time.Sleep(3 * time.Second) // real time is the point of this test
	for _, s := range replicas {
		shutdown(t, s)
	}

	ms := occ.sorted("grid")
	require.GreaterOrEqual(t, len(ms), 12, "about 15 occurrences in 3s")
	seen := make(map[int64]bool)
	for _, m := range ms {
		require.False(t, seen[m], "occurrence %d ran twice", m)
		seen[m] = true
		assert.Zero(t, m%200, "occurrence %d is on the 200ms epoch grid", m)
	}
	missed := ev.of(EventMissed)
	reported := func(at time.Time) bool {
		return slices.ContainsFunc(missed, func(e Event) bool {
			return !at.Before(e.Missed.First) && !at.After(e.Missed.Last)
		})
	}
	inner := ms[2 : len(ms)-2]
	for i := 1; i < len(inner); i++ {
		for m := inner[i-1] + 200; m < inner[i]; m += 200 {
			at := time.UnixMilli(m)
			assert.True(t, reported(at), "grid: occurrence %s ran nowhere and was not reported missed", at.UTC().Format(time.RFC3339Nano))
			t.Logf("grid: occurrence %s ran nowhere, reported missed", at.UTC().Format(time.RFC3339Nano))
		}
	}
	var started, skewed uint64
	for _, s := range replicas {
		started += s.Stats().Started
		skewed += s.Stats().SkipClockSkew
	}
	assert.Equal(t, uint64(len(ms)), started)
	assert.Zero(t, skewed)
}

// A run's connections are reset (as by a Redis restart or a proxy) while
// it runs: the first command on each stale connection fails with EOF, and
// that command is the run's release. The release retries within its bound,
// so the lease is released and the next occurrence runs on time, instead of
// every replica skipping the job until the TTL (30s here) runs out.
func TestScheduler_Run_ReleaseRetriesAfterARedisConnectionReset(t *testing.T) {
	t.Parallel()
	srv := testutil.StartRedis(t)
	proxy := testutil.NewProxy(t, srv.Addr)
	viaProxy, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{proxy.Addr}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(viaProxy.Close)
	storeA, err := redislease.New(viaProxy)
	require.NoError(t, err)
	storeB, err := redislease.New(srv.Client(t))
	require.NoError(t, err)

	occ := newOccurrences()
	var reset atomic.Bool
	job := func(ctx context.Context) error {
		r, _ := RunFromContext(ctx)
		if r.Owner[:1] == "a" && reset.CompareAndSwap(false, true) {
			proxy.Cut() // every connection of a is reset...
			proxy.Restore()
		}
		return occ.record(ctx)
	}
	var evA, evB events
	a := newScheduler(t, storeA, WithInstanceID("a"), WithObserver(evA.observe),
		WithClock(skewedClock{clockwork.NewRealClock(), 150 * time.Millisecond})) // a fires first when it races
	b := newScheduler(t, storeB, WithInstanceID("b"), WithObserver(evB.observe))
	for _, s := range []*Scheduler{a, b} {
		require.NoError(t, s.Register("reset", Every(time.Second), job, WithTTL(30*time.Second)))
	}
	require.NoError(t, a.Start())
	require.NoError(t, b.Start())
	// Real time is the point of this test. a runs the occurrences it is
	// the preferred replica for (about half of them, by the occurrence's
	// hash): wait until it has run one, then for two more occurrences.
	for deadline := time.Now().Add(20 * time.Second); !reset.Load() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2500 * time.Millisecond)
	shutdown(t, a)
	shutdown(t, b)

	require.True(t, reset.Load(), "a ran an occurrence and reset its connections")
	ms := occ.sorted("reset")
	require.GreaterOrEqual(t, len(ms), 3)
	requireOncePerStep(t, "reset", ms, time.Second)
	for _, e := range append(evA.of(EventSkipped), evB.of(EventSkipped)...) {
		assert.NotEqual(t, SkipLocked, e.Reason, "no occurrence found the lease still held (%s)", e.Occurrence)
	}
	assert.Equal(t, a.Stats().Started, a.Stats().Released, "a released every lease it won")
}

// redis-server is stopped while the replicas' acquires for an occurrence
// reach it, and crashes and restarts with them unanswered: the acquires in flight break
// (their outcome unknown, rolled back) and are retried within the
// occurrence, which still runs exactly once, late; nothing is reported
// missed. The test moves on signals, not on the clock: it stops the server
// once every replica has settled the previous occurrence, and restarts it
// once the proxy in front of it has delivered the three acquires of the
// next one.
func TestScheduler_Run_RedisRestartDuringTheAcquireWindow(t *testing.T) {
	t.Parallel()
	// The occurrence is retried until 1s before the next one (9s here).
	// Before its retry, a replica waits for the acquire lost in the crash
	// (bounded by min(ttl, MaxCleanup)) and for its roll-back (bounded by
	// min(ttl, 5s)): with a TTL of 3s, 6s at worst, which leaves 3s for
	// the restart and the retry on a loaded machine. With a TTL of 5s the
	// two bounds alone took the 9s once, under load: both hung until their
	// timeouts, and the occurrence was given up before its retry.
	const every, ttl = 10 * time.Second, 3 * time.Second
	srv := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	proxy := testutil.NewProxy(t, srv.Addr)
	occ := newOccurrences()
	var ev events
	settled := newSettledOccurrences(3)
	observe := func(e Event) {
		ev.observe(e)
		settled.observe(e)
	}
	ran := make(chan time.Time, 64)
	job := func(ctx context.Context) error {
		r, _ := RunFromContext(ctx)
		ran <- r.Occurrence
		return occ.record(ctx)
	}
	var replicas []*Scheduler
	for i := range 3 {
		// Always pipelining: each command is written at once, so every
		// replica's acquire reaches the stopped server even while another of
		// its commands (a keep-alive PING, a registry refresh) waits there
		// unanswered; otherwise rueidis holds it back in the client, which
		// would make this a client timeout, not a server lost mid-request.
		// The connection timeout outlasts the pause: by default (10s) an
		// unanswered keep-alive PING closes the connection while the server
		// is stopped, and an acquire sent after that waits behind the new
		// connection's handshake, in the client, instead of reaching the
		// server.
		client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{proxy.Addr}, DisableCache: true,
			AlwaysPipelining: true, ConnWriteTimeout: 3 * every})
		require.NoError(t, err)
		t.Cleanup(client.Close)
		store, err := redislease.New(client)
		require.NoError(t, err)
		// Every replica claims every occurrence (no preferred replica):
		// the three acquires are in flight when the server stops.
		s := newScheduler(t, store, WithInstanceID(fmt.Sprintf("replica-%d", i)), WithObserver(observe), WithoutControlPlane())
		require.NoError(t, s.Register("restart", Every(every), job, WithTTL(ttl)))
		replicas = append(replicas, s)
	}
	for _, s := range replicas {
		require.NoError(t, s.Start())
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	// Once all three replicas are done with an occurrence (one released
	// it, two skipped it), nothing of the job is in flight until the next.
	prev, err := settled.next(ctx)
	require.NoError(t, err, "an occurrence ran and every replica settled it")
	target := prev.Add(every)
	acquires := proxy.CountRequests([]byte("cronguard:{job:restart}"))
	srv.Pause()
	t.Logf("server paused at %s; next occurrence %s", time.Now().Format(timeOfDay), target.Format(timeOfDay))
	t.Cleanup(srv.Resume) // before the clients close, should the test stop here
	require.NoError(t, acquires.Wait(ctx, 3), "the three acquires for %s reached the stopped server", target)
	restarting := time.Now()
	srv.Crash()
	t.Logf("the three acquires reached the stopped server by %s; crashed and restarted by %s",
		restarting.Format(timeOfDay), time.Now().Format(timeOfDay))
	for want := target.Add(every); ; {
		select {
		case o := <-ran:
			if o.Before(want) {
				continue
			}
		case <-ctx.Done():
			t.Fatalf("the occurrence after %s did not run: %v", target, ctx.Err())
		}
		break
	}
	for _, s := range replicas {
		shutdown(t, s)
	}

	ms := occ.sorted("restart")
	require.Contains(t, ms, target.UnixMilli(), "the occurrence during the restart ran")
	from := slices.Index(ms, target.UnixMilli())
	require.Greater(t, len(ms)-from, 1, "and the one after it")
	requireOncePerStep(t, "restart", ms, every) // no duplicate, no gap
	assert.Empty(t, ev.of(EventMissed), "nothing ran nowhere")
	var started bool
	for _, e := range ev.of(EventStarted) {
		if e.Occurrence.Equal(target) {
			started = true
			assert.True(t, target.Add(e.Lateness).After(restarting), "it ran after the server came back (lateness %s)", e.Lateness)
		}
	}
	assert.True(t, started, "a replica reported starting %s", target)
	assert.NotEmpty(t, ev.of(EventAcquireRetrying), "the acquires were retried")
}

// settledOccurrences tells when every one of n replicas has settled an
// occurrence: released it after running it, or skipped it.
type settledOccurrences struct {
	n    int
	mu   sync.Mutex
	seen map[time.Time]int
	done chan time.Time // each occurrence once, when its n-th replica settled it
}

func newSettledOccurrences(n int) *settledOccurrences {
	return &settledOccurrences{n: n, seen: make(map[time.Time]int), done: make(chan time.Time, 64)}
}

func (s *settledOccurrences) observe(e Event) {
	if e.Kind != EventReleased && e.Kind != EventSkipped {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := e.Occurrence.UTC()
	s.seen[k]++
	if s.seen[k] == s.n {
		select {
		case s.done <- k:
		default:
		}
	}
}

// next returns the next occurrence that every replica settled.
func (s *settledOccurrences) next(ctx context.Context) (time.Time, error) {
	select {
	case o := <-s.done:
		return o, nil
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

// timeOfDay formats the instants of a test's timeline in its log.
const timeOfDay = "15:04:05.000"
