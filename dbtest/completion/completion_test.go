package completion

import (
	"context"
	"database/sql"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/scheduler"
	"github.com/cronguard/cronguard/testutil"
)

// ttl is the jobs' lease TTL: short, so that a dead holder is found soon.
const ttl = 2 * time.Second

// resumeBound is how soon after a release that leaves the occurrence open
// another replica must start its next attempt.
const resumeBound = 2 * time.Second

// deathBound is how soon after the death of a holder another replica must
// start the next attempt: its lease lives up to TTL after the last renewal,
// counts as live lease.ExpiryTolerance more, and the index of open
// occurrences is read every second.
const deathBound = ttl + 2*time.Second

// commitJob is the job as the replica that takes over runs it: it commits
// the effect at once.
func commitJob(db *sql.DB) func(context.Context) error {
	return func(ctx context.Context) error { return commitEffect(ctx, db) }
}

// A fenced nightly job runs on replica a, a process of its own; a is sent
// SIGTERM during the run. Its Shutdown cancels the run, which returns the
// cause: a reports it interrupted, at warn, and no failure, and releases
// the occurrence open. Replica b starts attempt 2 within 2s of the release
// and commits the effect: one row.
func TestCompletion_Shutdown_ResumedElsewhereWithin2s(t *testing.T) {
	srv := testutil.StartRedis(t)
	fs := newFleetStore(t, srv)
	pg, db := startDatabase(t)
	j := newJournal()
	spec := jobSpec{Name: "nightly", TTL: ttl}

	a := startChild(t, childConfig{Replica: "a", Redis: srv.Addr, DSN: pg.DSN, Job: spec, Does: holdUntilStopped}, j)
	first := j.waitFor(t, "a's first attempt", childReadyBound, event(scheduler.EventStarted, "a"))
	require.Equal(t, 1, first.Attempt)
	occ := first.Occurrence
	startReplica(t, srv, "b", spec, commitJob(db), j)
	fs.waitSubscribed(t, 2)
	j.waitFor(t, "a renewed its lease", ttl, event(scheduler.EventRenewed, "a"))

	term := a.signal(t, syscall.SIGTERM)
	released := j.waitFor(t, "a released its lease", childStopBound, event(scheduler.EventReleased, "a"))
	second := j.waitFor(t, "b's attempt 2", resumeBound+time.Second, event(scheduler.EventStarted, "b").attempt(occ, 2))
	afterRelease, afterTerm := second.At.Sub(released.At), second.At.Sub(term)
	t.Logf("attempt 2 started on b %s after a's release (%s after SIGTERM)", afterRelease, afterTerm)
	assert.LessOrEqual(t, afterRelease, resumeBound, "attempt 2 started within %s of the release", resumeBound)
	j.waitFor(t, "b's attempt 2 succeeded", storeWaitBound, event(scheduler.EventSucceeded, "b").attempt(occ, 2))

	ps := a.wait(t, childStopBound)
	assert.Equal(t, 0, ps.ExitCode(), "a shut down cleanly")
	exit := j.waitFor(t, "a's exit", 0, func(n note) bool { return n.Kind == kindExit })
	require.NotNil(t, exit.Stats)
	assert.Empty(t, exit.Err, "a's Shutdown")
	assert.Zero(t, exit.Stats.Failed, "a reports no failure")
	assert.Equal(t, uint64(1), exit.Stats.Interrupted)
	assert.Len(t, j.all(event(scheduler.EventInterrupted, "a").attempt(occ, 1)), 1, "a reports attempt 1 interrupted")
	assert.Empty(t, j.all(event(scheduler.EventFailed, "a")))
	assertLogged(t, a.stderr, "WARN", "job interrupted: it did not end by itself", 1)

	assert.Equal(t, []effect{{Attempt: 2, Replica: "b", Fence: second.Fence}}, effectsOf(t, db, occ),
		"the effect committed once, by attempt 2")
	assert.Equal(t, []string{"a/1/interrupted", "b/2/succeeded"}, outcomes(fs.historyOf(t, spec.key(), occ)))
}

// outcomes lists runs as "replica/attempt/outcome".
func outcomes(runs []fleet.RunRecord) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.Replica+"/"+strconv.Itoa(r.Attempt)+"/"+r.Outcome)
	}
	return out
}

// assertLogged checks that log holds n lines at level with message msg.
func assertLogged(t *testing.T, log *lockedBuffer, level, msg string, n int) {
	t.Helper()
	got := 0
	for _, l := range log.lines() {
		if l["level"] == level && l["msg"] == msg {
			got++
		}
	}
	assert.Equal(t, n, got, "%d line(s) at %s %q in:\n%s", n, level, msg, log)
}
