package scheduler

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
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

// callsByCommand reads INFO commandstats: calls per command name, the
// commands scripts call included.
func callsByCommand(t *testing.T, c rueidis.Client) map[string]int64 {
	t.Helper()
	info, err := c.Do(t.Context(), c.B().Info().Section("commandstats").Build()).ToString()
	require.NoError(t, err)
	out := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		name, rest, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, _ := strconv.ParseInt(calls, 10, 64)
		out[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return out
}

// failedCalls returns INFO commandstats' failed_calls of the command name
// (an EVALSHA refused with NOSCRIPT is one, on the servers that count it
// as a call).
func failedCalls(t *testing.T, c rueidis.Client, name string) int64 {
	t.Helper()
	info, err := c.Do(t.Context(), c.B().Info().Section("commandstats").Build()).ToString()
	require.NoError(t, err)
	for line := range strings.SplitSeq(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+name+":")
		if !ok {
			continue
		}
		for field := range strings.SplitSeq(rest, ",") {
			if v, ok := strings.CutPrefix(field, "failed_calls="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
	}
	return 0
}

// The control plane adds no round trip to a run: with the registry, the
// run status and the pause check, a run still costs two scripts, one to
// acquire and one to release (the status rides in the release, the pause
// in the acquire). The window is a count of runs, not a length of time: a
// loaded machine skips some of the job's occurrences, and the ratio holds
// over the runs made.
func TestScheduler_ControlPlane_NoRoundTripPerRunOnRedis(t *testing.T) {
	t.Parallel()
	const window = 12 // runs
	srv := testutil.StartRedis(t)
	admin := srv.Client(t)
	store, err := redislease.New(srv.Client(t))
	require.NoError(t, err)
	var runs atomic.Int64
	ran := make(chan struct{}, 1)                               // a run was made (the latest of them)
	s := newScheduler(t, store, WithRegistryRefresh(time.Hour)) // no refresh within the test
	require.NoError(t, s.Register("quick", Every(100*time.Millisecond), func(context.Context) error {
		runs.Add(1)
		select {
		case ran <- struct{}{}:
		default:
		}
		return nil
	}, WithTTL(10*time.Second)))
	require.NoError(t, s.Start())
	// The entry published (ZADD, PEXPIRE), runs released and the index
	// read once: nothing of the start is left to count, and the server has
	// every script the window calls (the first call of each is an EVALSHA
	// refused NOSCRIPT and an EVAL).
	waitUntilHolds(t, "the replica is in the registry, runs released, the index read", func() bool {
		n, err := admin.Do(t.Context(), admin.B().Zcard().Key("cronguard:fleet:{fleet}:replicas").Build()).AsInt64()
		return err == nil && n == 1 && s.Stats().Released >= 2 && callsByCommand(t, admin)["zrangebyscore"] > 0
	})
	require.NoError(t, admin.Do(t.Context(), admin.B().ConfigResetstat().Build()).Error())
	before := runs.Load()
	ctx, cancel := context.WithTimeout(t.Context(), redisWaitBound)
	defer cancel()
	for runs.Load() < before+window {
		select {
		case <-ran:
		case <-ctx.Done():
			t.Fatalf("%d runs of %d after %s", runs.Load()-before, window, redisWaitBound)
		}
	}
	calls := callsByCommand(t, admin)
	after := runs.Load()
	shutdown(t, s)

	n := after - before
	require.GreaterOrEqual(t, n, int64(window))
	// The control loop reads the index of open occurrences once a second
	// (one script with one ZRANGEBYSCORE), whatever the runs.
	// A script runs as one EVALSHA, or, the first time, as an EVALSHA
	// that the server answers NOSCRIPT and an EVAL: count the EVALSHAs.
	polls := calls["zrangebyscore"]
	scripts := calls["evalsha"] - polls
	// One acquire and one release per run; a run in flight at either end
	// of the window adds at most one script each.
	assert.InDelta(t, 2*n, scripts, 2, "scripts per run: %d scripts for %d runs (%v)", scripts, n, calls)
	// Every other script is an acquire, which reads the record, the
	// round, the fence counter and the pause with one MGET, or a release,
	// which reads the record with one MGET, records the status and reads
	// the trigger queue with one LLEN: the pause check and the status ride
	// in them.
	assert.Equal(t, scripts, calls["mget"], "each script is an acquire or a release (one MGET each) or a poll (ZRANGEBYSCORE): %v", calls)
	assert.InDelta(t, scripts/2, calls["llen"], 1, "acquires and releases (LLEN) alternate: %v", calls)
	for _, cmd := range []string{"publish", "zadd", "pexpire", "lrange"} {
		assert.Zero(t, calls[cmd], "no %s while runs go on", cmd)
	}
}

// The registry's refresh does a constant amount of work whatever the
// number of jobs: one script of the same four commands, and a TIME, for 10
// jobs as for 10,000. The refreshes are driven by a fake clock, one at a time, so a
// loaded machine can neither let the entry lapse (its TTL runs on the
// server's clock: minutes here) nor run two refreshes into one window.
func TestScheduler_ControlPlane_RefreshIsConstantOnRedis(t *testing.T) {
	t.Parallel()
	const refresh = time.Minute
	perRefresh := func(t *testing.T, jobs int) map[string]float64 {
		srv := testutil.StartRedis(t)
		admin := srv.Client(t)
		store, err := redislease.New(srv.Client(t))
		require.NoError(t, err)
		clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
		s := newScheduler(t, store, WithRegistryRefresh(refresh), WithClock(clock))
		for i := range jobs {
			require.NoError(t, s.Register(fmt.Sprintf("job-%05d", i), Every(24*time.Hour), func(context.Context) error { return nil }))
		}
		require.NoError(t, s.Start())
		waitUntilHolds(t, "the replica is in the registry", func() bool {
			n, err := admin.Do(t.Context(), admin.B().Zcard().Key("cronguard:fleet:{fleet}:replicas").Build()).AsInt64()
			return err == nil && n == 1
		})
		// Each tick of the fake clock is one refresh: the registry's loop
		// made its ticker before it published (so it has one now), and a
		// fake ticker keeps a tick that comes while the loop is busy. The
		// ticks are given one at a time, each once the refresh before it
		// showed, so that no refresh is in flight when the window opens
		// or closes. (Giving a tick again until the refresh showed put a
		// refresh astride the window's start on a loaded machine, its
		// TIME before the reset and its script after: 1.8 TIMEs per
		// refresh.)
		refreshes := func(n int64) {
			t.Helper()
			require.NoError(t, admin.Do(t.Context(), admin.B().ConfigResetstat().Build()).Error())
			for i := int64(1); i <= n; i++ {
				clock.Advance(refresh)
				waitUntilHolds(t, fmt.Sprintf("refresh %d of %d", i, n), func() bool {
					return callsByCommand(t, admin)["pexpire"] >= 2*i // the entry and its job list
				})
			}
		}
		refreshes(2) // steady state: the first refresh reads the conflicts once (a new generation)
		refreshes(5)
		calls := callsByCommand(t, admin)
		refused := failedCalls(t, admin, "evalsha")
		shutdown(t, s)
		// The fake clock's ticks also read the index of open occurrences
		// (one script: TIME and ZRANGEBYSCORE), measured on its own by
		// TestScheduler_Resume_DetectionIsConstantOnRedis.
		polls := calls["zrangebyscore"]
		// A script's first run on a server is an EVAL after an EVALSHA
		// refused with NOSCRIPT (rueidis's fallback): one run, whichever
		// script it was (the first poll's can fall in the window).
		calls["evalsha"] += calls["eval"] - refused
		delete(calls, "eval")
		calls["evalsha"] -= polls
		calls["time"] -= polls
		n := float64(calls["evalsha"])
		out := map[string]float64{}
		for name, c := range calls {
			switch {
			case name == "config|resetstat", name == "info", name == "zcard", name == "ping", name == "zrangebyscore",
				name == "hello", strings.HasPrefix(name, "client|"): // the test's own, the client's keep-alive and (re)connections, the polls
			default:
				out[name] = float64(c) / n
			}
		}
		return out
	}
	few := perRefresh(t, 10)
	many := perRefresh(t, 10_000)
	// One script (TIME, MGET of the generation and the entry, PEXPIRE of
	// the entry and of its job list, ZADD) and one TIME of its own: the
	// sample of the clock's offset from the server's (offset.go).
	want := map[string]float64{"evalsha": 1, "time": 2, "mget": 1, "pexpire": 2, "zadd": 1}
	assert.Equal(t, want, few, "commands per refresh with 10 jobs")
	assert.Equal(t, want, many, "commands per refresh with 10,000 jobs")
}
