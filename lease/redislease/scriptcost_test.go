package redislease

import (
	"bufio"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// BenchmarkScriptCost measures the Redis side of each operation with INFO
// commandstats (CONFIG RESETSTAT first): server µs per script run
// (EVALSHA, which includes the commands the script calls) and commands per
// operation, counting the EVALSHA and every command inside it. Client
// latency is in ns/op as usual; the server numbers are what the store asks
// of Redis, and they barely move with machine load.
func BenchmarkScriptCost(b *testing.B) {
	c, st := benchServer(b)
	ctx := context.Background()
	const ttl = 30 * time.Second
	run := func(b *testing.B, scripts int, op func()) {
		b.Helper()
		stats, n := measureScripts(b, c, op)
		b.ReportMetric(float64(stats["evalsha"].calls)/float64(n*scripts), "scripts/expected")
	}
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Run("AcquireRelease/ByID", func(b *testing.B) {
		run(b, 2, func() {
			l, err := st.Acquire(ctx, "job:cost", ttl)
			must(err)
			must(st.Release(ctx, l.ID))
		})
	})
	b.Run("AcquireRelease/ByLease", func(b *testing.B) {
		run(b, 2, func() {
			l, err := st.Acquire(ctx, "job:cost", ttl)
			must(err)
			must(l.Release(ctx))
		})
	})
	b.Run("Acquire", func(b *testing.B) {
		// The lease is removed with a plain DEL of its two keys, so that
		// script µs is the acquire script's alone (cmds/op counts the DEL).
		run(b, 1, func() {
			l, err := st.Acquire(ctx, "job:cost", ttl)
			must(err)
			ks, err := keysFor(st.prefix, l.Key)
			must(err)
			ik, _ := indexKey(st.prefix, l.ID)
			must(c.Do(ctx, c.B().Del().Key(ks.data, ik).Build()).Error())
		})
	})
	// The scheduler's acquire, as a fleet makes it: a time round, newer
	// each time (the ledger reads and rewrites the round record), over many
	// keys, so that each key is acquired at most once a millisecond or so,
	// as in production (a job is acquired once per occurrence).
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "job:round-" + strconv.Itoa(i)
	}
	round := time.Now().UnixMilli()
	b.Run("AcquireRound", func(b *testing.B) {
		i := 0
		run(b, 1, func() {
			i++
			l, err := st.Acquire(ctx, keys[i%len(keys)], ttl, lease.WithRound(round+int64(i/len(keys))+1))
			must(err)
			ks, err := keysFor(st.prefix, l.Key)
			must(err)
			ik, _ := indexKey(st.prefix, l.ID)
			must(c.Do(ctx, c.B().Del().Key(ks.data, ik).Build()).Error())
		})
		round += int64(i/len(keys)) + 2
	})
	b.Run("AcquireLost", func(b *testing.B) {
		// A replica that lost the occurrence's race: the winner holds the
		// lease and has claimed the round (a fresh one per call of this
		// sub-benchmark, as -count repeats it).
		round++
		held, err := st.Acquire(ctx, "job:lost", ttl, lease.WithRound(round))
		must(err)
		defer func() { must(held.Release(ctx)) }()
		run(b, 1, func() {
			_, err := st.Acquire(ctx, "job:lost", ttl, lease.WithRound(round))
			if !errors.Is(err, lease.ErrLocked) && !errors.Is(err, lease.ErrRoundClaimed) {
				b.Fatal(err)
			}
		})
	})
	b.Run("AcquireReleaseRound", func(b *testing.B) {
		i := 0
		run(b, 2, func() {
			i++
			l, err := st.Acquire(ctx, keys[i%len(keys)], ttl, lease.WithRound(round+int64(i/len(keys))+1))
			must(err)
			must(l.Release(ctx))
		})
		round += int64(i/len(keys)) + 2
	})
	b.Run("TriggerRun", func(b *testing.B) {
		// A triggered run's store work: the trigger queued (trigger_add),
		// then the scheduler's acquire that consumes it, claims the run's
		// round and checks the pause; the lease is dropped with a plain DEL
		// of its two keys (counted).
		run(b, 2, func() {
			_, err := st.AddTrigger(ctx, "job:trigger", "bench", time.Minute)
			must(err)
			l, err := st.Acquire(ctx, "job:trigger", ttl, lease.WithTrigger(), lease.WithPauseCheck())
			must(err)
			ks, err := keysFor(st.prefix, l.Key)
			must(err)
			ik, _ := indexKey(st.prefix, l.ID)
			must(c.Do(ctx, c.B().Del().Key(ks.data, ik).Build()).Error())
		})
	})
	b.Run("SchedulerLost", func(b *testing.B) {
		// What the scheduler asks of a replica that lost the occurrence:
		// the acquire with the round and the pause check.
		round++
		held, err := st.Acquire(ctx, "job:lost", ttl, lease.WithRound(round))
		must(err)
		defer func() { must(held.Release(ctx)) }()
		run(b, 1, func() {
			_, err := st.Acquire(ctx, "job:lost", ttl, lease.WithRound(round), lease.WithPauseCheck())
			if !errors.Is(err, lease.ErrLocked) && !errors.Is(err, lease.ErrRoundClaimed) {
				b.Fatal(err)
			}
		})
	})
	b.Run("SchedulerRun", func(b *testing.B) {
		// What the scheduler asks per run it wins: an acquire with the
		// round and the pause check, then a release that records the run's
		// status.
		i := 0
		run(b, 2, func() {
			i++
			l, err := st.Acquire(ctx, keys[i%len(keys)], ttl, lease.WithRound(round+int64(i/len(keys))+1), lease.WithPauseCheck())
			must(err)
			_, err = st.ReleaseWithStatus(ctx, l, fleet.Status{
				Occurrence: time.UnixMilli(round), Owner: "replica-1/job", Replica: "replica-1", Attempt: 1, Fence: l.Fence,
				Started: l.AcquiredAt, Duration: 1500 * time.Millisecond, Outcome: "succeeded",
			})
			must(err)
		})
		round += int64(i/len(keys)) + 2
	})
	b.Run("SchedulerRunFullHistory", func(b *testing.B) {
		// SchedulerRun once every job's history is full: key i holds the
		// limit of runs plus i mod (slack + 1), the lengths a list takes in
		// turn between two trims, so that one release in slack + 1 trims
		// (back to the limit), the steady state of jobs that have run
		// long enough.
		entry := `{"occurrence":1700000000000,"owner":"replica-1/job","replica":"replica-1","attempt":1,"fence":1,"startedAt":1700000000000,"durationMs":1500,"outcome":"succeeded"}`
		slack := historySlack(st.historyLimit)
		for i, key := range keys {
			ks, err := keysFor(st.prefix, key)
			must(err)
			must(c.Do(ctx, c.B().Del().Key(ks.history(st.prefix)).Build()).Error())
			entries := make([]string, st.historyLimit+i%(slack+1))
			for j := range entries {
				entries[j] = entry
			}
			must(c.Do(ctx, c.B().Rpush().Key(ks.history(st.prefix)).Element(entries...).Build()).Error())
		}
		i := 0
		run(b, 2, func() {
			i++
			l, err := st.Acquire(ctx, keys[i%len(keys)], ttl, lease.WithRound(round+int64(i/len(keys))+1), lease.WithPauseCheck())
			must(err)
			_, err = st.ReleaseWithStatus(ctx, l, fleet.Status{
				Occurrence: time.UnixMilli(round), Owner: "replica-1/job", Replica: "replica-1", Attempt: 1, Fence: l.Fence,
				Started: l.AcquiredAt, Duration: 1500 * time.Millisecond, Outcome: "succeeded",
			})
			must(err)
		})
		round += int64(i/len(keys)) + 2
	})
	b.Run("SchedulerRunAttempts", func(b *testing.B) {
		// SchedulerRun for a job with completion records: the acquire
		// also writes the occurrence's record (SET ... GET of the old
		// one), and the release closes it done, with a ZREM of the index
		// entry pipelined in the same round trip.
		a := lease.Attempts{Max: 3, Deadline: time.Now().Add(time.Hour)}
		i := 0
		run(b, 2, func() {
			i++
			l, err := st.Acquire(ctx, keys[i%len(keys)], ttl, lease.WithRound(round+int64(i/len(keys))+1), lease.WithPauseCheck(), lease.WithAttempts(a))
			must(err)
			_, err = st.ReleaseWithStatus(ctx, l, fleet.Status{
				Occurrence: time.UnixMilli(round), Owner: "replica-1/job", Replica: "replica-1", Attempt: 1, Fence: l.Fence,
				Started: l.AcquiredAt, Duration: 1500 * time.Millisecond, Outcome: "succeeded", Close: fleet.CloseDone,
			})
			must(err)
		})
		round += int64(i/len(keys)) + 2
	})
	b.Run("SchedulerResume", func(b *testing.B) {
		// An attempt after the first: the resume (acquire_resume.lua, with
		// the pause check), then a release that leaves the occurrence
		// open for the next one (release_status.lua reads TIME for the
		// backoff; a ZADD of the index entry rides in the same round
		// trip). Each key's occurrence allows lease.MaxAttempts attempts.
		round++
		a := lease.Attempts{Max: lease.MaxAttempts, Deadline: time.Now().Add(time.Hour)}
		resumeKeys := make([]string, 64)
		for j := range resumeKeys {
			resumeKeys[j] = "job:resume-" + strconv.Itoa(j)
			l, err := st.Acquire(ctx, resumeKeys[j], ttl, lease.WithRound(round), lease.WithAttempts(a))
			must(err)
			must(l.Release(ctx))
		}
		i := 0
		run(b, 2, func() {
			i++
			l, err := st.Acquire(ctx, resumeKeys[i%len(resumeKeys)], ttl, lease.WithResume(round), lease.WithPauseCheck())
			must(err)
			_, err = st.ReleaseWithStatus(ctx, l, fleet.Status{
				Occurrence: time.UnixMilli(round), Owner: "replica-1/job", Replica: "replica-1", Attempt: l.Attempt, Fence: l.Fence,
				Started: l.AcquiredAt, Duration: 1500 * time.Millisecond, Outcome: "failed", Error: "boom", Close: fleet.CloseOpen,
			})
			must(err)
		})
	})
	l, err := st.Acquire(ctx, "job:extend", ttl)
	must(err)
	b.Run("Extend/ByID", func(b *testing.B) {
		run(b, 1, func() {
			_, err := st.Extend(ctx, l.ID, ttl)
			must(err)
		})
	})
	b.Run("Extend/ByLease", func(b *testing.B) {
		run(b, 1, func() {
			_, err := l.Extend(ctx, ttl)
			must(err)
		})
	})
}

// TestStore_ScriptCost_Commands counts, with INFO commandstats, the Redis
// commands each operation of a scheduled run costs: its EVALSHA and every
// command the script runs (pipelined index commands included), one
// operation at a time on a server of its own. These are what the
// scripts are written to: a won round acquire is TIME, MGET (record, fence
// counter, round record, pause), MSET (fence counter, round record), SET
// record, SET index; a lost one TIME and MGET; a release with status GET,
// DEL, SET status, LPUSH history, SPUBLISH, LLEN, and LTRIM only once the
// history holds more than its limit plus slack.
func TestStore_ScriptCost_Commands(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := srv.client
	ctx := t.Context()
	st := srv.store(t, WithHistoryLimit(4)) // a slack of 8: one release in 9 trims
	const ttl = time.Minute
	var round int64 = 1_700_000_000_000
	nextRound := func() int64 { round += 1000; return round }
	status := func(l *lease.Lease, ck fleet.CloseKind) fleet.Status {
		return fleet.Status{Occurrence: time.UnixMilli(l.Round), Owner: l.Owner, Replica: "r1", Attempt: max(l.Attempt, 1),
			Fence: l.Fence, Started: l.AcquiredAt, Outcome: fleet.OutcomeSucceeded, Close: ck}
	}
	// count runs op once between a reset of the statistics and their read,
	// and returns the commands it cost, by name.
	count := func(t *testing.T, op func()) (int64, map[string]int64) {
		t.Helper()
		require.NoError(t, c.Do(ctx, c.B().ConfigResetstat().Build()).Error())
		op()
		stats, err := commandStats(ctx, c)
		require.NoError(t, err)
		var n int64
		calls := map[string]int64{}
		for name, s := range stats {
			switch name {
			case "config|resetstat", "info", "ping", "hello", "client|setinfo":
				continue // the measurement itself, and a client's keep-alive and reconnection
			}
			n += s.calls
			calls[name] = s.calls
		}
		return n, calls
	}
	must := func(t *testing.T, err error) {
		t.Helper()
		require.NoError(t, err)
	}
	// Load every script and run the store's first-acquire check once.
	warm, err := st.Acquire(ctx, "job:warm", ttl, lease.WithRound(nextRound()), lease.WithPauseCheck(),
		lease.WithAttempts(lease.Attempts{Max: 3, Deadline: time.Now().Add(time.Hour)}))
	must(t, err)
	_, err = st.ReleaseWithStatus(ctx, warm, status(warm, fleet.CloseOpen))
	must(t, err)
	w2, err := st.Acquire(ctx, "job:warm", ttl, lease.WithResume(warm.Round), lease.WithPauseCheck())
	must(t, err)
	must(t, w2.Release(ctx))
	_, err = st.AddTrigger(ctx, "job:warm", "test", time.Minute)
	must(t, err)
	w3, err := st.Acquire(ctx, "job:warm", ttl, lease.WithTrigger(), lease.WithPauseCheck())
	must(t, err)
	_, err = st.ReleaseWithStatus(ctx, w3, status(w3, fleet.CloseDone))
	must(t, err)
	p, err := st.Acquire(ctx, "job:warm", ttl)
	must(t, err)
	must(t, st.Release(ctx, p.ID))

	t.Run("RoundAcquire", func(t *testing.T) {
		for name, opts := range map[string][]lease.AcquireOption{
			"PauseCheck": {lease.WithPauseCheck()},
			"NoPause":    nil,
		} {
			var l *lease.Lease
			n, calls := count(t, func() {
				var err error
				l, err = st.Acquire(ctx, "job:round-"+name, ttl, append(opts, lease.WithRound(nextRound()))...)
				must(t, err)
			})
			assert.EqualValues(t, 6, n, "%s: EVALSHA, TIME, MGET, SET record, MSET, SET index: %v", name, calls)
			assert.EqualValues(t, 1, calls["mget"], name)
			assert.EqualValues(t, 1, calls["mset"], name)
			for _, gone := range []string{"exists", "incr", "incrby"} {
				assert.Zero(t, calls[gone], "%s: no %s", name, gone)
			}

			// A replica that lost the race: the round is claimed and
			// the key held.
			n, calls = count(t, func() {
				_, err := st.Acquire(ctx, "job:round-"+name, ttl, append(opts, lease.WithRound(l.Round))...)
				require.ErrorIs(t, err, lease.ErrRoundClaimed)
			})
			assert.EqualValues(t, 3, n, "%s lost: EVALSHA, TIME, MGET: %v", name, calls)
			// An overlap: a newer round while the key is held.
			n, calls = count(t, func() {
				_, err := st.Acquire(ctx, "job:round-"+name, ttl, append(opts, lease.WithRound(nextRound()))...)
				var locked *lease.LockedError
				require.ErrorAs(t, err, &locked)
			})
			assert.EqualValues(t, 3, n, "%s overlap: EVALSHA, TIME, MGET: %v", name, calls)
			must(t, l.Release(ctx))
		}
	})

	t.Run("PlainAcquire", func(t *testing.T) {
		var l *lease.Lease
		n, calls := count(t, func() {
			var err error
			l, err = st.Acquire(ctx, "job:plain", ttl)
			must(t, err)
		})
		assert.EqualValues(t, 6, n, "EVALSHA, TIME, MGET, SET record, SET fence, SET index: %v", calls)
		n, calls = count(t, func() { must(t, l.Release(ctx)) })
		assert.EqualValues(t, 4, n, "EVALSHA, GET, DEL, SPUBLISH: %v", calls)
	})

	t.Run("Paused", func(t *testing.T) {
		must(t, st.SetPause(ctx, "job:paused", fleet.Pause{By: "test"}))
		r := nextRound()
		n, calls := count(t, func() {
			_, err := st.Acquire(ctx, "job:paused", ttl, lease.WithRound(r), lease.WithPauseCheck())
			require.ErrorIs(t, err, lease.ErrPaused)
		})
		assert.EqualValues(t, 4, n, "EVALSHA, TIME, MGET, SET round: %v", calls)
		n, calls = count(t, func() {
			_, err := st.Acquire(ctx, "job:paused", ttl, lease.WithRound(r), lease.WithPauseCheck())
			require.ErrorIs(t, err, lease.ErrPaused)
		})
		assert.EqualValues(t, 3, n, "the round already recorded: EVALSHA, TIME, MGET: %v", calls)
	})

	t.Run("ScheduledRun", func(t *testing.T) {
		// A run the scheduler wins, end to end: the acquire with round and
		// pause check, the release with status; the history trims once
		// it holds more than limit + slack = 12 runs, back to 4.
		most := st.HistoryLimit() + historySlack(st.HistoryLimit())
		for i := range most + 2 {
			var l *lease.Lease
			acq, acqCalls := count(t, func() {
				var err error
				l, err = st.Acquire(ctx, "job:run", ttl, lease.WithRound(nextRound()), lease.WithPauseCheck())
				must(t, err)
			})
			rel, relCalls := count(t, func() {
				_, err := st.ReleaseWithStatus(ctx, l, status(l, fleet.CloseDone))
				must(t, err)
			})
			assert.EqualValues(t, 6, acq, "run %d: acquire: %v", i+1, acqCalls)
			if i+1 == most+1 {
				assert.EqualValues(t, 8, rel, "run %d: the release that trims: %v", i+1, relCalls)
				assert.EqualValues(t, 1, relCalls["ltrim"])
			} else {
				assert.EqualValues(t, 7, rel, "run %d: EVALSHA, GET, DEL, SET, LPUSH, SPUBLISH, LLEN: %v", i+1, relCalls)
				assert.Zero(t, relCalls["ltrim"], "run %d", i+1)
			}
			assert.LessOrEqual(t, acq+rel, int64(14), "run %d: a scheduled run costs 14 commands at most", i+1)
		}
	})

	t.Run("Attempts", func(t *testing.T) {
		a := lease.Attempts{Max: 3, Deadline: time.Now().Add(time.Hour)}
		var l *lease.Lease
		n, calls := count(t, func() {
			var err error
			l, err = st.Acquire(ctx, "job:attempts", ttl, lease.WithRound(nextRound()), lease.WithPauseCheck(), lease.WithAttempts(a))
			must(t, err)
		})
		assert.EqualValues(t, 6, n, "the completion record rides in the MGET and the MSET: %v", calls)
		n, calls = count(t, func() {
			_, err := st.ReleaseWithStatus(ctx, l, status(l, fleet.CloseOpen))
			must(t, err)
		})
		assert.EqualValues(t, 9, n, "EVALSHA, GET, DEL, TIME, MSET status and record, LPUSH, SPUBLISH, LLEN; ZADD beside it: %v", calls)
		assert.EqualValues(t, 1, calls["mset"], "the status and the record in one MSET")
		assert.Zero(t, calls["set"], "no SET of its own for either")
		n, calls = count(t, func() {
			l, err = st.Acquire(ctx, "job:attempts", ttl, lease.WithResume(l.Round), lease.WithPauseCheck())
			must(t, err)
		})
		assert.EqualValues(t, 7, n, "resume: EVALSHA, TIME, MGET, SET XX GET (the free lease key is no other type), MSET, SET, SET: %v", calls)
		n, calls = count(t, func() {
			_, err := st.ReleaseWithStatus(ctx, l, status(l, fleet.CloseDone))
			must(t, err)
		})
		assert.EqualValues(t, 8, n, "done: EVALSHA, GET, DEL, MSET status and record, LPUSH, SPUBLISH, LLEN; ZREM beside it: %v", calls)
	})

	t.Run("FairOnAFreeKey", func(t *testing.T) {
		l, err := lease.Lock(ctx, st, "job:fair-warm", ttl, lease.WithFairness()) // the script's first run is an EVAL after a NOSCRIPT
		must(t, err)
		must(t, l.Release(ctx))
		n, calls := count(t, func() {
			var err error
			l, err = lease.Lock(ctx, st, "job:fair", ttl, lease.WithFairness())
			must(t, err)
		})
		assert.EqualValues(t, 8, n, "EVALSHA, TIME, MGET, SET XX GET (the free lease key is no other type), EXISTS (no queue), SET record, SET fence, SET index: %v", calls)
		must(t, l.Release(ctx))
	})

	t.Run("Trigger", func(t *testing.T) {
		_, err := st.AddTrigger(ctx, "job:trigger", "test", time.Minute)
		must(t, err)
		var l *lease.Lease
		n, calls := count(t, func() {
			var err error
			l, err = st.Acquire(ctx, "job:trigger", ttl, lease.WithTrigger(), lease.WithPauseCheck())
			must(t, err)
		})
		assert.EqualValues(t, 8, n, "EVALSHA, TIME, MGET, SET XX GET (the free lease key is no other type), LPOP, MSET, SET, SET: %v", calls)
		must(t, l.Release(ctx))
	})
}

type commandStat struct {
	calls int64
	usec  float64
}

// commandStats reads INFO commandstats, keyed by lower-case command name.
func commandStats(ctx context.Context, c rueidis.Client) (map[string]commandStat, error) {
	info, err := c.Do(ctx, c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		return nil, err
	}
	out := map[string]commandStat{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		name, rest, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var s commandStat
		for kv := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				s.calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				s.usec, _ = strconv.ParseFloat(v, 64)
			}
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = s
	}
	return out, sc.Err()
}

// measureScripts runs op in b's loop, after one call that loads the
// scripts, with Redis's command statistics reset before the loop; it
// reports the server µs of scripts and the commands per op, and returns
// the statistics and the number of ops.
func measureScripts(b *testing.B, c rueidis.Client, op func()) (map[string]commandStat, int) {
	b.Helper()
	ctx := context.Background()
	op() // warm up: load the scripts
	if err := c.Do(ctx, c.B().ConfigResetstat().Build()).Error(); err != nil {
		b.Fatal(err)
	}
	n := 0
	for b.Loop() {
		op()
		n++
	}
	b.StopTimer()
	stats, err := commandStats(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	var cmds int64
	for name, s := range stats {
		if name != "config|resetstat" && name != "info" {
			cmds += s.calls
		}
	}
	b.ReportMetric(stats["evalsha"].usec/float64(n), "script-µs/op")
	b.ReportMetric(float64(cmds)/float64(n), "cmds/op")
	return stats, n
}
