package scheduler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/testutil"
)

// Finding open occurrences costs the fleet the same store commands per
// read whatever the number of jobs, and fewer reads than replicas: 5
// replicas with 100 idle jobs each, and with 10,000, read the fleet's
// index 3.5 times per period (index_readers.go: the two readers every
// period, the three others every other period; one script per read, TIME
// and ZRANGEBYSCORE), and nothing else. Each replica's fake
// clock is advanced one period at a time; the registry's refresh (an
// hour) and the jobs (daily) do not come due.
func TestScheduler_Resume_DetectionIsConstantOnRedis(t *testing.T) {
	t.Parallel()
	const replicas, periods = 5, 6
	require.Equal(t, 2, indexEvery(replicas))
	// At most the reads of the measured periods, the readers' every
	// period and the others' every other one, and one read per replica of
	// the period before them that may land among them. (A replica that
	// was still busy when the clock moved on misses that tick: fewer.)
	const most = indexReaders*periods + (replicas-indexReaders)*periods/2 + replicas
	perPeriod := func(t *testing.T, jobs int) map[string]int64 {
		srv := testutil.StartRedis(t)
		admin := srv.Client(t)
		clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 25, 12, 0, 0, 500_000_000, time.UTC))
		var scheds []*Scheduler
		for r := range replicas {
			store, err := redislease.New(srv.Client(t))
			require.NoError(t, err)
			s := newScheduler(t, store, WithInstanceID(fmt.Sprintf("r%d", r)), WithRegistryRefresh(time.Hour), WithClock(clock))
			for i := range jobs {
				require.NoError(t, s.Register(fmt.Sprintf("job-%05d", i), Every(24*time.Hour), func(context.Context) error { return nil }))
			}
			require.NoError(t, s.Start())
			scheds = append(scheds, s)
		}
		waitUntilHolds(t, "every replica is in the registry, subscribed, and has looked for waiting triggers (one read per job)", func() bool {
			n, err := admin.Do(t.Context(), admin.B().Zcard().Key("cronguard:fleet:{fleet}:replicas").Build()).AsInt64()
			return err == nil && n == replicas && callsByCommand(t, admin)["lrange"] >= int64(replicas*jobs)
		})
		// Every period, the two readers of the whole fleet read the index
		// (they are readers in any part of it that a view shows, or read
		// for themselves without one).
		polls := func() int64 { return callsByCommand(t, admin)["zrangebyscore"] }
		clock.Advance(resumePoll) // a first period loads the script on each connection
		waitUntilHolds(t, "a first period", func() bool { return polls() >= indexReaders })
		// Once it has other replicas in view, a replica samples its clock's
		// offset at each period and publishes it once (offset.go): periods
		// go by until one publishes nothing (the fleet's generation stays)
		// and every replica's view shows the fleet, so that the measured
		// ones are the steady state.
		generation := func() string {
			v, _ := admin.Do(t.Context(), admin.B().Get().Key("cronguard:fleet:{fleet}:generation").Build()).ToString()
			return v
		}
		settled := func() bool {
			for _, s := range scheds {
				if s.view.Load().indexRole() == indexReadOwn {
					return false
				}
			}
			return true
		}
		last := generation()
		for period := 0; ; period++ {
			require.Less(t, period, 20, "a period in which no replica publishes and every view shows the fleet")
			polled := polls()
			clock.Advance(resumePoll)
			waitUntilHolds(t, "the period's polls", func() bool { return polls() >= polled+indexReaders })
			now := generation()
			if now == last && settled() {
				break
			}
			last = now
		}
		require.NoError(t, admin.Do(t.Context(), admin.B().ConfigResetstat().Build()).Error())
		for i := int64(1); i <= periods; i++ {
			clock.Advance(resumePoll)
			waitUntilHolds(t, fmt.Sprintf("period %d of %d", i, periods), func() bool {
				return polls() >= i*indexReaders
			})
		}
		calls := callsByCommand(t, admin)
		out := map[string]int64{}
		for name, c := range calls {
			switch {
			case name == "config|resetstat", name == "info", name == "zcard", name == "ping", name == "hello",
				strings.HasPrefix(name, "client|"): // the test's own, and the clients' keep-alive and (re)connections (Valkey counts CLIENT SETINFO)
			default:
				out[name] = c
			}
		}
		return out
	}
	for _, jobs := range []int{100, 10_000} {
		calls := perPeriod(t, jobs)
		n := calls["zrangebyscore"]
		assert.Equal(t, map[string]int64{"evalsha": n, "time": n, "zrangebyscore": n}, calls,
			"%d jobs: one script of TIME and ZRANGEBYSCORE per read, and nothing else", jobs)
		assert.GreaterOrEqual(t, n, int64(indexReaders*periods), "%d jobs: the fleet's reads in %d periods", jobs, periods)
		assert.LessOrEqual(t, n, int64(most), "%d jobs: the fleet's reads in %d periods, against %d if every replica read every period",
			jobs, periods, replicas*periods)
	}
}

// On a real redis-server: a replica that shuts down during a run releases
// it open and announces it on the control channel; another replica resumes
// it as attempt 2, and the effect commits once. A replica cut off from
// Redis during a run (its heartbeat and release never arrive) is resumed
// through the fleet's index once its lease has run out.
//
// How soon is asserted where time is the scheduler's own, not the
// machine's: the synctest twins (TestScheduler_Completion_ShutdownResumesOnAnotherReplica,
// within 2s of the release; TestScheduler_Completion_DeadHolderResumedAfterItsTTL,
// within TTL + 2s of the death). On the real clock the second of those
// bounds has no room for the machine at all: the index entry comes due at
// the lease's expiry plus lease.ExpiryTolerance (1s), up to TTL after the
// cut, and is read within resumePoll (1s) after that, so a resume that
// takes the scheduler a few hundred milliseconds of CPU on a loaded
// machine passes TTL + 2s (4.41s was seen, in the suite beside eight other
// tests). Here the mechanism is asserted instead: the release's
// announcement, and a resume of the same occurrence with a greater fence.
func TestScheduler_Completion_RealRedisResumes(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second
	for _, tc := range []struct {
		name  string
		crash bool
	}{
		{"ShutdownDuringARun", false},
		{"DeadHolder", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
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

			log, fx := newAttemptLog(), newEffects()
			job := func(ctx context.Context) error {
				r, i := log.begin(ctx)
				if r.Replica == "a" {
					<-ctx.Done()
					return log.end(i, context.Cause(ctx))
				}
				return log.end(i, fx.commit(r))
			}
			var evA events
			// Both replicas' decisions, printed if the test fails.
			decisions := newDebugLog(t)
			a := newScheduler(t, storeA, WithInstanceID("a"), WithObserver(evA.observe), WithLogger(decisions.logger("a")))
			// The hour's occurrence is caught up at Start: a round claim
			// with attempts, as a scheduled one.
			opts := []JobOption{WithTTL(ttl), WithCatchUp(time.Hour)}
			require.NoError(t, a.Register("nightly", Every(time.Hour), job, opts...))
			require.NoError(t, a.Start())
			first := waitRun(t, log)
			require.Equal(t, "a", first.Replica)
			b := newScheduler(t, storeB, WithInstanceID("b"), WithLogger(decisions.logger("b")))
			require.NoError(t, b.Register("nightly", Every(time.Hour), job, opts...))
			require.NoError(t, b.Start())
			waitUntilHolds(t, "a's lease renewed", func() bool { return len(evA.of(EventRenewed)) > 0 })
			admin := srv.Client(t)
			waitUntilHolds(t, "both replicas subscribed to the control channel", func() bool { return subscribers(t, admin) >= 2 })
			// What the control channel carries from here on.
			observer, err := redislease.New(admin)
			require.NoError(t, err)
			announced := make(chan fleet.Message, 64)
			stopObserving, err := observer.Subscribe(t.Context(), func(m fleet.Message) {
				if m.Kind == fleet.MessageOpen && m.Replica == "" { // a release's, not an index reader's
					select {
					case announced <- m:
					default:
					}
				}
			})
			require.NoError(t, err)
			t.Cleanup(stopObserving)

			if tc.crash {
				proxy.Blackhole()
			} else {
				shutdown(t, a)
			}
			cut := time.Now()
			second := waitRun(t, log)
			t.Logf("resumed %s after the cut", time.Since(cut).Round(time.Millisecond))

			assert.Equal(t, "b", second.Replica)
			assert.Equal(t, 2, second.Attempt)
			assert.True(t, second.Occurrence.Equal(first.Occurrence))
			assert.Greater(t, second.Fence, first.Fence)
			if !tc.crash {
				// a's release announced the open occurrence (an index
				// reader's announcement names its replica; a release's does
				// not), for the replicas that have the job to resume at once.
				select {
				case m := <-announced:
					assert.Equal(t, JobKeyPrefix+"nightly", m.Key)
					assert.Equal(t, first.Occurrence.UnixMilli(), m.Round)
				case <-time.After(redisWaitBound):
					t.Error("a's release did not announce the open occurrence on the control channel")
				}
			}
			waitUntilHolds(t, "b's attempt ended", func() bool { return b.Stats().Succeeded == 1 })
			assert.Equal(t, 1, fx.count(), "the effect committed once")
			if !tc.crash {
				require.Len(t, evA.of(EventInterrupted), 1)
				assert.Empty(t, evA.of(EventFailed))
			}
			proxy.Restore()
		})
	}
}

// waitRun waits for the next attempt of log to start.
func waitRun(t *testing.T, log *attemptLog) Run {
	t.Helper()
	select {
	case r := <-log.started:
		return r
	case <-time.After(redisWaitBound):
		t.Fatal("no attempt started")
		return Run{}
	}
}
