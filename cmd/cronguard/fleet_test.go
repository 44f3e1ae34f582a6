package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/scheduler"
)

// exampleJobs registers jobs like the cronworker example's: report on a
// cron schedule, tick every second, rebuild (whose first run holds its
// lease until the gate opens), and flaky, which fails, with a password in
// its error, whenever it is triggered.
func exampleJobs(rebuild *gate) func(*scheduler.Scheduler) error {
	ok := func(context.Context) error { return nil }
	flaky := func(context.Context) error {
		return errors.New("export to postgres://app:hunter2@db:5432/x failed:\nconnection refused")
	}
	return func(s *scheduler.Scheduler) error {
		return errors.Join(
			s.Register("report", scheduler.Cron("*/2 * * * * *"), ok),
			s.Register("tick", scheduler.Every(time.Second), ok, scheduler.WithTTL(2*time.Second)),
			s.Register("rebuild", scheduler.Every(2*time.Second), rebuild.job, scheduler.WithTTL(3*time.Second)),
			s.Register("flaky", scheduler.Every(time.Hour), flaky),
		)
	}
}

// lines returns out's lines, without the final newline.
func lines(out string) []string { return strings.Split(strings.TrimSuffix(out, "\n"), "\n") }

// lineOf returns the line of out that starts with prefix.
func lineOf(t *testing.T, out, prefix string) string {
	t.Helper()
	for _, l := range lines(out) {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("no line starts with %q in:\n%s", prefix, out)
	return ""
}

// Every command against three live replicas: tables and JSON.
func TestCLI_LiveFleet(t *testing.T) {
	f := newTestFleet(t)
	rebuild := newGate(t)
	ids := []string{"replica-1", "replica-2", "replica-3"}
	for _, id := range ids {
		f.start(t, id, exampleJobs(rebuild))
	}
	f.waitReplicas(t, ids...)
	running := rebuild.waitStarted(t)
	for _, job := range []string{"report", "tick"} {
		f.events.waitFor(t, job+" released", func(e scheduler.Event) bool { return e.Job == job && e.Kind == scheduler.EventReleased })
	}

	t.Run("replicas", func(t *testing.T) {
		r := f.cli(t, "replicas")
		require.Equal(t, exitOK, r.code, r.stderr)
		ls := lines(r.stdout)
		require.Len(t, ls, 4, r.stdout)
		assert.Regexp(t, `^REPLICA\s+VERSION\s+STARTED\s+REFRESH\s+ENTRY EXPIRES\s+JOBS$`, ls[0])
		for i, id := range ids {
			assert.Regexp(t, `^`+id+`\s+devel\s+(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d \([0-9.]+m?s ago\)\s+200ms\s+(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d\s+4: flaky, rebuild, report, tick$`, ls[i+1]) // lease/redislease keeps a job list in key order
		}

		r = f.cli(t, "replicas", "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		var out replicasJSON
		decode(t, r.stdout, &out)
		require.Len(t, out.Replicas, 3)
		for i, rep := range out.Replicas {
			assert.Equal(t, ids[i], rep.ID)
			assert.Equal(t, int64(200), rep.RefreshMs)
			assert.Equal(t, []string{"flaky", "rebuild", "report", "tick"}, rep.Jobs)
			assert.True(t, rep.Expires.After(rep.Started))
			assert.Equal(t, time.UTC, rep.Expires.Location())
		}
	})

	t.Run("jobs", func(t *testing.T) {
		r := f.cli(t, "jobs")
		require.Equal(t, exitOK, r.code, r.stderr)
		ls := lines(r.stdout)
		require.Len(t, ls, 5, r.stdout)
		assert.Regexp(t, `^JOB\s+SCHEDULE\s+REPLICAS\s+RUNNING ON\s+LAST RUN\s+NEXT\s+NOTES$`, ls[0])
		assert.Regexp(t, `^flaky\s+every\(1h0m0s\)\s+3\s+-\s+-\s+(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d \(in (\d+m\d\ds|[0-9.]+m?s)\)$`, ls[1])
		assert.Regexp(t, `^rebuild\s+every\(2s\)\s+3\s+`+running.Replica+` \([0-9.]+m?s left\)\s+-\s+(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d \(in [0-9.]+m?s\)$`, ls[2])
		assert.Regexp(t, `^report\s+cron\("\*/2 \* \* \* \* \*"\)\s+3\s+(-|replica-\d \([0-9.]+m?s left\))\s+succeeded in \d+ms, [0-9.]+m?s ago\s+(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d \(in [0-9.]+m?s\)$`, ls[3])
		assert.Regexp(t, `^tick\s+every\(1s\)\s+3\s+`, ls[4])

		r = f.cli(t, "jobs", "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		var out jobsJSON
		decode(t, r.stdout, &out)
		require.Len(t, out.Jobs, 4)
		byName := map[string]jobJSON{}
		for _, j := range out.Jobs {
			byName[j.Name] = j
			assert.Equal(t, ids, j.Replicas)
			assert.Len(t, j.Registrations, 3)
			assert.False(t, j.Conflict)
			assert.Equal(t, "job:"+j.Name, j.Key)
			require.NotNil(t, j.Next, "job %s has a next occurrence", j.Name)
			assert.True(t, j.Next.After(j.Now))
		}
		rb := byName["rebuild"]
		require.NotNil(t, rb.Holder)
		assert.Equal(t, running.Replica, rb.Holder.Replica)
		assert.Equal(t, running.Replica+"/rebuild", rb.Holder.Owner)
		assert.Equal(t, uint64(running.Fence), rb.Holder.Fence)
		assert.Positive(t, rb.Holder.LeftMs)
		assert.LessOrEqual(t, rb.Holder.LeftMs, int64(3000), "a 3s lease, renewed by the heartbeat")
		assert.True(t, strings.HasPrefix(rb.Holder.LeaseHash, "…"), "a short form: %q", rb.Holder.LeaseHash)
		assert.NotContains(t, r.stdout, running.LeaseID[len(running.LeaseID)-6:], "no part of a lease ID is printed")
		assert.NotContains(t, r.stdout, running.LeaseID, "lease IDs are never printed")
		require.NotNil(t, rb.LastOccurrence)
		assert.Equal(t, running.Occurrence.UnixMilli(), rb.LastOccurrence.UnixMilli())
		for _, name := range []string{"report", "tick"} {
			require.NotNil(t, byName[name].LastRun, name)
			assert.Equal(t, "succeeded", byName[name].LastRun.Outcome)
			assert.Contains(t, ids, byName[name].LastRun.Replica)
			assert.Empty(t, byName[name].LastRun.Trigger)
		}
		assert.Nil(t, byName["flaky"].LastRun)
		assert.Nil(t, byName["flaky"].Holder)
		assert.Nil(t, byName["flaky"].LastOccurrence)
	})

	t.Run("job", func(t *testing.T) {
		r := f.cli(t, "job", "rebuild")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, "job:              rebuild", lineOf(t, r.stdout, "job:"))
		assert.Equal(t, "lease key:        job:rebuild", lineOf(t, r.stdout, "lease key:"))
		assert.Equal(t, "replicas:         3: replica-1, replica-2, replica-3", lineOf(t, r.stdout, "replicas:"))
		assert.Regexp(t, fmt.Sprintf(`^running on:\s+%s \(holder %s/rebuild\), fence %d$`, running.Replica, running.Replica, running.Fence),
			lineOf(t, r.stdout, "running on:"))
		assert.Regexp(t, `^\s+since (\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d \([0-9.]+m?s ago\), [0-9.]+m?s left on its lease$`, lines(r.stdout)[5])
		assert.Regexp(t, `^last occurrence:\s+(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d \([0-9.]+m?s ago\)$`, lineOf(t, r.stdout, "last occurrence:"))
		assert.Equal(t, "paused:           no", lineOf(t, r.stdout, "paused:"))
		assert.Regexp(t, `^next:\s+(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d \(in [0-9.]+m?s\)$`, lineOf(t, r.stdout, "next:"))
		assert.Regexp(t, `^store time:\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$`, lineOf(t, r.stdout, "store time:"))

		r = f.cli(t, "--json", "job", "rebuild")
		require.Equal(t, exitOK, r.code, r.stderr)
		var j jobJSON
		decode(t, r.stdout, &j)
		assert.Equal(t, "rebuild", j.Name)
		require.NotNil(t, j.Holder)
		assert.Equal(t, running.Replica, j.Holder.Replica)

		r = f.cli(t, "job", "nightly")
		assert.Equal(t, exitNotFound, r.code)
		assert.Equal(t, `cronguard: unknown job: job "nightly": no live replica has registered it (3 live replicas) (cronguard jobs lists the fleet's jobs)`+"\n", r.stderr)
		assert.Empty(t, r.stdout)
	})

	t.Run("pause", func(t *testing.T) {
		r := f.cli(t, "pause", "report", "--note", "db migration", "--by", "alice")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, `paused report on every replica (by alice: "db migration")`)
		assert.Contains(t, r.stdout, "no occurrence starts until: cronguard resume report\n")

		r = f.cli(t, "jobs")
		require.Equal(t, exitOK, r.code)
		assert.Regexp(t, `paused by alice$`, lineOf(t, r.stdout, "report "))

		r = f.cli(t, "trigger", "report")
		assert.Equal(t, exitFailed, r.code)
		assert.Contains(t, r.stderr, `cronguard: job is paused: trigger "report": paused by "alice" since `)
		assert.Contains(t, r.stderr, `("db migration"): resume it first`)

		r = f.cli(t, "pause", "report", "--note", "longer migration", "--json") // --by defaults to user@host
		require.Equal(t, exitOK, r.code, r.stderr)
		var p pausedJSON
		decode(t, r.stdout, &p)
		assert.Equal(t, "report", p.Job)
		require.NotNil(t, p.Paused)
		assert.Equal(t, testBy, p.Paused.By)
		assert.Equal(t, "longer migration", p.Paused.Note)

		r = f.cli(t, "resume", "report")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Regexp(t, `^resumed report; the occurrences skipped while it was paused are not run; next occurrence (\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d \(in [0-9.]+m?s\)\n$`, r.stdout)
		r = f.cli(t, "resume", "report")
		require.Equal(t, exitOK, r.code)
		assert.Equal(t, "report was not paused\n", r.stdout)
		r = f.cli(t, "resume", "report", "--json")
		require.Equal(t, exitOK, r.code)
		var res resumedJSON
		decode(t, r.stdout, &res)
		assert.Equal(t, resumedJSON{Job: "report", WasPaused: false, Next: res.Next}, res)
		require.NotNil(t, res.Next)

		r = f.cli(t, "pause", "nightly", "--note", "x")
		assert.Equal(t, exitNotFound, r.code)
		r = f.cli(t, "pause", "report", "--note", strings.Repeat("n", 1025))
		assert.Equal(t, exitUsage, r.code)
		assert.Contains(t, r.stderr, "note must be valid UTF-8 of at most 1024 bytes")
		r = f.cli(t, "pause", "report", "--note", "x", "--by", "al\x1bice")
		assert.Equal(t, exitUsage, r.code)
		assert.Contains(t, r.stderr, "control characters")
		assert.NotContains(t, r.stderr, "\x1b", "nothing from the input reaches the terminal raw")
	})

	t.Run("trigger", func(t *testing.T) {
		r := f.cli(t, "trigger", "tick", "--wait")
		require.Equal(t, exitOK, r.code, r.stderr)
		ls := lines(r.stdout)
		require.Len(t, ls, 2, r.stdout)
		assert.Regexp(t, `^triggered tick: trigger \S{16} by `+testBy+`, queued until (\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d \(1m00s\)$`, ls[0])
		assert.Regexp(t, `^tick ran on replica-\d: succeeded in \d+ms$`, ls[1])

		r = f.cli(t, "trigger", "flaky", "--wait", "--by", "alice")
		assert.Equal(t, exitRunFailed, r.code)
		assert.Regexp(t, `flaky ran on replica-\d: failed in \d+ms: export to postgres://\*\*\*@db:5432/x failed: connection refused\n$`, r.stdout)
		assert.NotContains(t, r.stdout, "hunter2")
		assert.Equal(t, "cronguard: the triggered run did not succeed: flaky failed\n", r.stderr)

		r = f.cli(t, "trigger", "flaky", "--wait", "--json", "--ttl", "10s")
		assert.Equal(t, exitRunFailed, r.code)
		var out triggeredJSON
		decode(t, r.stdout, &out)
		assert.Equal(t, "flaky", out.Job)
		assert.True(t, out.Waited)
		assert.True(t, out.Done)
		assert.Equal(t, "failed", out.Outcome)
		assert.Equal(t, "export to postgres://***@db:5432/x failed: connection refused", out.Error)
		require.NotNil(t, out.Run)
		assert.Equal(t, out.Trigger.ID, out.Run.Trigger)
		assert.Equal(t, 10*time.Second, out.Trigger.ExpiresAt.Sub(out.Trigger.QueuedAt))

		r = f.cli(t, "trigger", "tick", "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		out = triggeredJSON{}
		decode(t, r.stdout, &out)
		assert.False(t, out.Waited)
		assert.False(t, out.Done)
		assert.Nil(t, out.Run)
		assert.Equal(t, testBy, out.Trigger.By)

		// rebuild is held by its gated run: the trigger waits in the queue.
		r = f.cli(t, "trigger", "rebuild", "--wait", "--timeout", "300ms")
		assert.Equal(t, exitWaitTimeout, r.code)
		assert.Regexp(t, `^cronguard: the triggered run did not end within the wait: trigger \S+ of "rebuild" after 300ms; it stays queued until \S+ unless a replica takes it\n$`, r.stderr)
		assert.Regexp(t, `^triggered rebuild: trigger \S+ by `, r.stdout)
		r = f.cli(t, "job", "rebuild")
		assert.Equal(t, "triggers:         1 pending", lineOf(t, r.stdout, "triggers:"))
		r = f.cli(t, "jobs")
		assert.Regexp(t, `1 trigger pending$`, lineOf(t, r.stdout, "rebuild "))

		r = f.cli(t, "trigger", "nightly", "--wait")
		assert.Equal(t, exitNotFound, r.code)
		assert.Contains(t, r.stderr, `trigger "nightly": no live replica has registered it`)
	})

	t.Run("release", func(t *testing.T) {
		r := f.cli(t, "release", "rebuild", "--force", "--by", "alice")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Regexp(t, fmt.Sprintf(`^force-released the lease of rebuild held by %s/rebuild \(fence %d, acquired (\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d\)\n`, running.Replica, running.Fence), r.stdout)
		assert.Contains(t, r.stdout, "only fenced writes are safe from it")

		// A lease taken here, as a stuck holder's would be.
		st, err := redislease.New(f.admin, redislease.WithPrefix(f.prefix))
		require.NoError(t, err)
		l, err := st.Acquire(t.Context(), "job:flaky", time.Minute, lease.WithOwner("dead-host/flaky"))
		require.NoError(t, err)
		r = f.cli(t, "release", "flaky", "--force", "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		var out releasedJSON
		decode(t, r.stdout, &out)
		assert.Equal(t, "flaky", out.Job)
		assert.Equal(t, "dead-host/flaky", out.Released.Owner)
		assert.Equal(t, uint64(l.Fence), out.Released.Fence)
		assert.NotContains(t, r.stdout, l.ID)

		r = f.cli(t, "release", "flaky", "--force")
		assert.Equal(t, exitNotFound, r.code)
		assert.Equal(t, `cronguard: no live lease holds the job: force release "flaky" (lease: not found)`+"\n", r.stderr)
	})
}

// A replica cut off from Redis, as if killed, drops out of cronguard
// replicas once its entry lapses: within three refresh periods of its
// last refresh, by the store's clock.
func TestCLI_Replicas_KilledReplicaDropsOut(t *testing.T) {
	f := newTestFleet(t)
	rebuild := newGate(t)
	ids := []string{"replica-1", "replica-2", "replica-3"}
	var victim *replica
	for _, id := range ids {
		r := f.start(t, id, exampleJobs(rebuild))
		if id == "replica-2" {
			victim = r
		}
	}
	f.waitReplicas(t, ids...)

	victim.kill()
	killedAt := f.storeNow(t)
	r := f.cli(t, "replicas", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var out replicasJSON
	decode(t, r.stdout, &out)
	i := slices.IndexFunc(out.Replicas, func(rep replicaJSON) bool { return rep.ID == victim.id })
	require.GreaterOrEqual(t, i, 0, "listed until its entry lapses")
	expires := out.Replicas[i].Expires
	assert.False(t, expires.After(killedAt.Add(3*fleetRefresh)), "expires %s, killed %s", expires, killedAt)

	waitUntil(t, "the store's clock passes the entry's expiry", func() bool { return f.storeNow(t).After(expires) })
	r = f.cli(t, "replicas")
	require.Equal(t, exitOK, r.code)
	assert.NotContains(t, r.stdout, victim.id)
	assert.Len(t, lines(r.stdout), 3, r.stdout)
	r = f.cli(t, "jobs", "--json")
	var jobs jobsJSON
	decode(t, r.stdout, &jobs)
	for _, j := range jobs.Jobs {
		assert.Equal(t, []string{"replica-1", "replica-3"}, j.Replicas)
	}
}

// Values of the wrong type or shape in Redis fail the command with exit 1
// and one line; nothing panics.
func TestCLI_WrongTypesInRedis(t *testing.T) {
	f := newTestFleet(t)
	rebuild := newGate(t)
	f.start(t, "replica-1", exampleJobs(rebuild))
	f.waitReplicas(t, "replica-1")
	ctx := t.Context()
	set := func(key, value string) {
		t.Helper()
		require.NoError(t, f.admin.Do(ctx, f.admin.B().Set().Key(key).Value(value).Build()).Error())
	}
	del := func(key string) {
		t.Helper()
		require.NoError(t, f.admin.Do(ctx, f.admin.B().Del().Key(key).Build()).Error())
	}

	// The hourly job's status: a job that runs during the test would
	// write its status over the garbage at its next release.
	status := f.prefix + ":status:{job:flaky}"
	set(status, "{not json")
	for _, args := range [][]string{{"jobs"}, {"jobs", "--json"}, {"job", "flaky"}} {
		r := f.cli(t, args...)
		assert.Equal(t, exitFailed, r.code, "%v", args)
		assert.Contains(t, r.stderr, "status is not JSON")
		assert.Empty(t, r.stdout)
	}
	del(status)

	pause := f.prefix + ":pause:{job:report}"
	require.NoError(t, f.admin.Do(ctx, f.admin.B().Rpush().Key(pause).Element("x").Build()).Error())
	r := f.cli(t, "job", "report")
	assert.Equal(t, exitFailed, r.code)
	assert.Contains(t, r.stderr, "WRONGTYPE")
	r = f.cli(t, "trigger", "report")
	assert.Equal(t, exitFailed, r.code)
	del(pause)

	entry := f.prefix + ":fleet:{fleet}:replica:replica-1"
	require.NoError(t, f.admin.Do(ctx, f.admin.B().Set().Key(entry).Value("[1,2").Px(time.Minute).Build()).Error())
	r = f.cli(t, "replicas")
	assert.Equal(t, exitFailed, r.code)
	assert.Contains(t, r.stderr, `the entry of replica "replica-1" is not JSON`)

	replicas := f.prefix + ":fleet:{fleet}:replicas"
	del(replicas)
	set(replicas, "not a sorted set")
	for _, args := range [][]string{{"replicas"}, {"jobs"}, {"job", "report"}, {"pause", "report", "--note", "x"}, {"release", "report", "--force"}} {
		r := f.cli(t, args...)
		assert.Equal(t, exitFailed, r.code, "%v", args)
		assert.Contains(t, r.stderr, "WRONGTYPE", "%v", args)
	}
	assert.True(t, regexp.MustCompile(`^cronguard: `).MatchString(r.stderr))
}

// Two replicas that register report with different schedules: jobs notes
// the conflict and says who has what, job lists the registrations, and
// the JSON has both.
func TestCLI_Conflict(t *testing.T) {
	f := newTestFleet(t)
	ok := func(context.Context) error { return nil }
	f.start(t, "replica-a", func(s *scheduler.Scheduler) error {
		return s.Register("report", scheduler.Cron("*/5 * * * * *"), ok)
	})
	f.start(t, "replica-b", func(s *scheduler.Scheduler) error {
		return s.Register("report", scheduler.Every(2*time.Second), ok)
	})
	f.waitReplicas(t, "replica-a", "replica-b")
	for _, id := range []string{"replica-a", "replica-b"} {
		f.events.waitFor(t, id+" reports the conflict", func(e scheduler.Event) bool {
			return e.Kind == scheduler.EventConflict && e.Instance == id
		})
	}

	r := f.cli(t, "jobs")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `conflict$`, lineOf(t, r.stdout, "report "))
	assert.Contains(t, r.stdout, "\nconflict: the replicas registered report differently: replica-a has cron(\"*/5 * * * * *\"); replica-b has every(2s) (cronguard job report shows each)\n")

	r = f.cli(t, "job", "report")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "\nconflict: the replicas registered this job differently:\n")
	assert.Regexp(t, `^REPLICA\s+SCHEDULE\s+LEASE KEY\s+FINGERPRINT$`, lineOf(t, r.stdout, "REPLICA"))
	assert.Regexp(t, `^replica-a\s+cron\("\*/5 \* \* \* \* \*"\)\s+job:report\s+\S+$`, lineOf(t, r.stdout, "replica-a "))
	assert.Regexp(t, `^replica-b\s+every\(2s\)\s+job:report\s+\S+$`, lineOf(t, r.stdout, "replica-b "))

	r = f.cli(t, "job", "report", "--json")
	var j jobJSON
	decode(t, r.stdout, &j)
	assert.True(t, j.Conflict)
	require.Len(t, j.Registrations, 2)
	assert.NotEqual(t, j.Registrations[0].Fingerprint, j.Registrations[1].Fingerprint)
	assert.Equal(t, "every(2s)", j.Registrations[1].Schedule)
}

func TestLeft(t *testing.T) {
	assert.Equal(t, "1.8s left", left(1800*time.Millisecond))
	assert.Equal(t, "expiring", left(0))
	assert.Equal(t, "expiring", left(-300*time.Millisecond))
}

// A replica of an older version that read its cron expression in
// time.Local registered the zone "Local": the CLI cannot know that
// machine's zone and must not read it in its own, so the next occurrence
// shows as unknown (null in JSON), never as a time.
func TestCLI_Jobs_LocalZone(t *testing.T) {
	f := newTestFleet(t)
	store, err := redislease.New(f.admin, redislease.WithPrefix(f.prefix))
	require.NoError(t, err)
	_, err = store.PublishReplica(t.Context(), fleet.Replica{ID: "old-replica", Version: "v0.9.0", Started: time.Now(), Refresh: time.Minute,
		Jobs: []fleet.Job{{Name: "nightly", Key: "job:nightly", Schedule: `cron("0 2 * * *")`, Spec: "cron:Local:0 2 * * *", Fingerprint: "f"}}}, time.Minute)
	require.NoError(t, err)

	r := f.cli(t, "jobs")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `^nightly\s+cron\("0 2 \* \* \*"\)\s+1\s+-\s+-\s+unknown zone\s*$`, lineOf(t, r.stdout, "nightly "))

	r = f.cli(t, "job", "nightly")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `^next:\s+unknown: the schedule is in zone Local, the registering replica's own$`, lineOf(t, r.stdout, "next:"))

	r = f.cli(t, "job", "nightly", "--json")
	var j jobJSON
	decode(t, r.stdout, &j)
	assert.Nil(t, j.Next)
}

// A live replica whose registry entry cannot be read (one written by a
// later version, or by hand) does not hide the others: replicas, jobs and
// job list what the readable entries say, and end with one line on
// stderr naming the replica left out, and exit 1; --json lists it under
// "unreadable". pause still acts on a job the readable entries name.
func TestCLI_UnreadableEntry_TheRestIsListed(t *testing.T) {
	f := newTestFleet(t)
	rebuild := newGate(t)
	f.start(t, "replica-1", exampleJobs(rebuild))
	f.waitReplicas(t, "replica-1")
	ctx := t.Context()
	key := f.prefix + ":fleet:{fleet}:"
	for _, r := range f.admin.DoMulti(ctx,
		f.admin.B().Set().Key(key+"replica:replica-9").Value(`{"id":`).Px(time.Minute).Build(),
		f.admin.B().Zadd().Key(key+"replicas").ScoreMember().ScoreMember(float64(f.storeNow(t).Add(time.Minute).UnixMilli()), "replica-9").Build(),
	) {
		require.NoError(t, r.Error())
	}
	leftOut := func(t *testing.T, r result, args []string) {
		t.Helper()
		assert.Equal(t, exitFailed, r.code, "%v", args)
		assert.Contains(t, r.stderr, "incomplete: the registry entry of 1 live replica could not be read, left out", "%v", args)
		assert.Contains(t, r.stderr, `replica "replica-9"`, "%v", args)
	}

	args := []string{"replicas"}
	r := f.cli(t, args...)
	leftOut(t, r, args)
	assert.Contains(t, lineOf(t, r.stdout, "replica-1"), "4: flaky, rebuild, report, tick")
	assert.NotContains(t, r.stdout, "replica-9")

	args = []string{"jobs"}
	r = f.cli(t, args...)
	leftOut(t, r, args)
	assert.Contains(t, lineOf(t, r.stdout, "tick"), "every(1s)")
	assert.Len(t, lines(r.stdout), 5, "a header and the 4 jobs")

	args = []string{"jobs", "--json"}
	r = f.cli(t, args...)
	leftOut(t, r, args)
	var jobs jobsJSON
	decode(t, r.stdout, &jobs)
	assert.Len(t, jobs.Jobs, 4)
	assert.Equal(t, []string{"replica-9"}, jobs.Unreadable)

	args = []string{"replicas", "--json"}
	r = f.cli(t, args...)
	leftOut(t, r, args)
	var reps replicasJSON
	decode(t, r.stdout, &reps)
	require.Len(t, reps.Replicas, 1)
	assert.Equal(t, []string{"replica-9"}, reps.Unreadable)

	args = []string{"job", "tick"}
	r = f.cli(t, args...)
	leftOut(t, r, args)
	assert.Contains(t, lineOf(t, r.stdout, "replicas:"), "1: replica-1")

	r = f.cli(t, "pause", "tick", "--note", "maintenance")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "paused tick on every replica")
	r = f.cli(t, "resume", "tick")
	assert.Equal(t, exitOK, r.code, r.stderr)

	args = []string{"jobs", "--json"}
	r = f.cli(t, args...)
	decode(t, r.stdout, &jobs)
	require.NoError(t, f.admin.Do(ctx, f.admin.B().Zrem().Key(key+"replicas").Member("replica-9").Build()).Error())
	r = f.cli(t, args...)
	assert.Equal(t, exitOK, r.code, r.stderr)
	decode(t, r.stdout, &jobs)
	assert.Equal(t, []string{}, jobs.Unreadable, "a whole read lists none")
}
