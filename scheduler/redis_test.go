package scheduler

import (
	"context"
	"fmt"
	"slices"
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
// Every job for about 3s: no occurrence runs twice, and none is missed
// between the first and the last few.
func TestScheduler_Run_RealRedisOncePerOccurrence(t *testing.T) {
	srv := testutil.StartRedis(t)
	occ := newOccurrences()
	var replicas []*Scheduler
	for i := range 3 {
		store, err := redislease.New(srv.Client(t))
		require.NoError(t, err)
		s := newScheduler(t, store, WithInstanceID(fmt.Sprintf("replica-%d", i)))
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
	requireOncePerStep(t, "grid", ms[2:len(ms)-2], 200*time.Millisecond)
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
func TestScheduler_Run_ReleaseRetriesAfterConnectionReset(t *testing.T) {
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
		WithClock(skewedClock{clockwork.NewRealClock(), 150 * time.Millisecond})) // a fires first
	b := newScheduler(t, storeB, WithInstanceID("b"), WithObserver(evB.observe))
	for _, s := range []*Scheduler{a, b} {
		require.NoError(t, s.Register("reset", Every(time.Second), job, WithTTL(30*time.Second)))
	}
	require.NoError(t, a.Start())
	require.NoError(t, b.Start())
	time.Sleep(4500 * time.Millisecond) // real time is the point of this test
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

// redis-server is paused just before an occurrence and restarted during
// its acquire window: the acquires in flight break (their outcome unknown,
// rolled back) and are retried within the occurrence, which still runs
// exactly once, late; nothing is reported missed.
func TestScheduler_Run_RedisRestartDuringTheAcquireWindow(t *testing.T) {
	t.Parallel()
	srv := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	occ := newOccurrences()
	var ev events
	var replicas []*Scheduler
	for i := range 3 {
		store, err := redislease.New(srv.Client(t))
		require.NoError(t, err)
		s := newScheduler(t, store, WithInstanceID(fmt.Sprintf("replica-%d", i)), WithObserver(ev.observe))
		require.NoError(t, s.Register("restart", Every(2*time.Second), occ.record, WithTTL(3*time.Second)))
		replicas = append(replicas, s)
	}
	for _, s := range replicas {
		require.NoError(t, s.Start())
	}
	// The occurrence 4-6s from now; the server stops answering 200ms before it.
	target := time.UnixMilli(time.Now().Add(4*time.Second).UnixMilli() / 2000 * 2000)
	time.Sleep(time.Until(target.Add(-200 * time.Millisecond)))
	srv.Pause()
	time.Sleep(500 * time.Millisecond) // the acquires for target hang
	srv.Restart()
	time.Sleep(time.Until(target.Add(4500 * time.Millisecond))) // two more occurrences
	for _, s := range replicas {
		shutdown(t, s)
	}

	ms := occ.sorted("restart")
	require.Contains(t, ms, target.UnixMilli(), "the occurrence during the restart ran")
	from := slices.Index(ms, target.UnixMilli())
	require.Greater(t, len(ms)-from, 2, "and the ones after it")
	requireOncePerStep(t, "restart", ms, 2*time.Second) // no duplicate, no gap
	assert.Empty(t, ev.of(EventMissed), "nothing ran nowhere")
	for _, e := range ev.of(EventStarted) {
		if e.Occurrence.Equal(target) {
			assert.GreaterOrEqual(t, e.Lateness, 300*time.Millisecond, "it ran after the server came back")
		}
	}
	assert.NotEmpty(t, ev.of(EventAcquireRetrying), "the acquires were retried")
}
