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
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/scheduler"
	"github.com/cronguard/cronguard/testutil"
)

// ttl is the jobs' lease TTL: short, so that a dead holder is found soon.
const ttl = 2 * time.Second

// How soon another replica starts the next attempt, after a release that
// leaves the occurrence open (within a second) or after the death of the
// holder (within TTL + 2s: its lease lives up to TTL after the last
// renewal, counts as live lease.ExpiryTolerance more, and the index of open
// occurrences is read every second), is the scheduler's synctest tests'
// to assert, on the bubble's clock, where the bounds hold exactly:
// TestScheduler_Completion_ShutdownResumesOnAnotherReplica and
// TestScheduler_Completion_DeadHolderResumedAfterItsTTL. On the real
// clock those bounds leave the machine no room (the second is the
// mechanism's worst case), and scheduler's BenchmarkScheduler_Redis_Resume
// measures them. These tests log how long it took and wait for it up to
// storeWaitBound.

// commitJob is the job as the replica that takes over runs it: it commits
// the effect at once.
func commitJob(db *sql.DB) func(context.Context) error {
	return func(ctx context.Context) error { return commitEffect(ctx, db) }
}

// A fenced nightly job runs on replica a, a process of its own; a is sent
// SIGTERM during the run. Its Shutdown cancels the run, which returns the
// cause: a reports it interrupted, at warn, and no failure, and releases
// the occurrence open. Replica b starts attempt 2 and commits the effect:
// one row.
func TestCompletion_Shutdown_ResumedElsewhere(t *testing.T) {
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
	second := j.waitFor(t, "b's attempt 2", storeWaitBound, event(scheduler.EventStarted, "b").attempt(occ, 2))
	afterRelease, afterTerm := second.At.Sub(released.At), second.At.Sub(term)
	t.Logf("attempt 2 started on b %s after a's release (%s after SIGTERM)", afterRelease, afterTerm)
	assert.False(t, second.At.Before(released.At), "attempt 2 started after a's release")
	j.waitFor(t, "b's attempt 2 succeeded", storeWaitBound, event(scheduler.EventSucceeded, "b").attempt(occ, 2))
	j.waitFor(t, "b released attempt 2, recording it", storeWaitBound, event(scheduler.EventReleased, "b").attempt(occ, 2))

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

// A fenced nightly job runs on replica a, a process of its own, which is
// killed (SIGKILL) during the run after a renewal of its lease: nothing is
// released. Replica b starts attempt 2 once a's lease is no longer live
// (on the store's clock: from the dead lease's expiry to b's acquire), and
// commits the effect: one row.
func TestCompletion_Kill_ResumedOnceTheLeaseIsNoLongerLive(t *testing.T) {
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

	kill := a.signal(t, syscall.SIGKILL)
	require.True(t, killed(a.wait(t, childStopBound)), "a was killed")
	dead := fs.jobState(t, spec.key())
	require.NotNil(t, dead.Holder, "a's lease outlives a")
	require.Equal(t, first.Fence, int64(dead.Holder.Fence))

	second := j.waitFor(t, "b's attempt 2", storeWaitBound, event(scheduler.EventStarted, "b").attempt(occ, 2))
	j.waitFor(t, "b's attempt 2 succeeded", storeWaitBound, event(scheduler.EventSucceeded, "b").attempt(occ, 2))
	j.waitFor(t, "b released attempt 2, recording it", storeWaitBound, event(scheduler.EventReleased, "b").attempt(occ, 2))
	runs := fs.historyOf(t, spec.key(), occ)
	b := runOf(t, runs, "b", 2)
	afterKill, afterExpiry := b.Started.Sub(dead.Now), b.Started.Sub(dead.Holder.ExpiresAt)
	t.Logf("attempt 2 started on b %s after the kill (store's clock; %s on the wall clock), %s after the dead lease's expiry (it counts as live %s more); the lease had %s left at the kill",
		afterKill, second.At.Sub(kill), afterExpiry, lease.ExpiryTolerance, dead.Holder.ExpiresAt.Sub(dead.Now))
	assert.GreaterOrEqual(t, afterExpiry, lease.ExpiryTolerance, "b acquired only once a's lease was no longer live")

	assert.Equal(t, "succeeded", b.Outcome)
	t.Logf("history of the occurrence: %v", outcomes(runs))
	assert.Equal(t, []string{"/1/interrupted", "b/2/succeeded"}, outcomes(runs),
		"the store records the dead attempt interrupted (no replica did) when b takes over")
	assert.Equal(t, []effect{{Attempt: 2, Replica: "b", Fence: second.Fence}}, effectsOf(t, db, occ),
		"the effect committed once, by attempt 2")
	assert.Equal(t, []int{1, 2}, attemptsStarted(j, occ), "attempts of the occurrence")
}

// runOf returns the run of replica's attempt in runs.
func runOf(t *testing.T, runs []fleet.RunRecord, replica string, attempt int) fleet.RunRecord {
	t.Helper()
	for _, r := range runs {
		if r.Replica == replica && r.Attempt == attempt {
			return r
		}
	}
	t.Fatalf("no run of %s's attempt %d in %v", replica, attempt, outcomes(runs))
	return fleet.RunRecord{}
}

// A job whose attempt commits its effect and then dies (its process is
// killed once it said it committed) is attempted again: the next attempt
// finds the effect made (fencing.ErrDuplicate from AdvanceOnce) and
// succeeds, as its events and the history say, and no third attempt
// starts before the occurrence's deadline (the next occurrence, 10s
// later) has passed.
func TestCompletion_KillAfterCommit_DuplicateSucceedsOnce(t *testing.T) {
	srv := testutil.StartRedis(t)
	fs := newFleetStore(t, srv)
	pg, db := startDatabase(t)
	j := newJournal()
	const every = 10 * time.Second
	spec := jobSpec{Name: "report", TTL: ttl, Every: every}

	a := startChild(t, childConfig{Replica: "a", Redis: srv.Addr, DSN: pg.DSN, Job: spec, Does: commitThenHold, AlignToStart: true}, j)
	committed := j.waitFor(t, "a committed", childReadyBound, func(n note) bool { return n.Kind == kindCommitted })
	require.Equal(t, 1, committed.Attempt)
	occ := committed.Occurrence
	spec.Offset = time.Duration(occ.UnixMilli()%every.Milliseconds()) * time.Millisecond
	rb, _ := startReplica(t, srv, "b", spec, commitJob(db), j)
	fs.waitSubscribed(t, 2)

	kill := a.signal(t, syscall.SIGKILL)
	require.True(t, killed(a.wait(t, childStopBound)), "a was killed")
	dead := fs.jobState(t, spec.key())
	require.NotNil(t, dead.Holder, "a's lease outlives a")

	second := j.waitFor(t, "b's attempt 2", storeWaitBound, event(scheduler.EventStarted, "b").attempt(occ, 2))
	j.waitFor(t, "b's attempt 2 succeeded", storeWaitBound, event(scheduler.EventSucceeded, "b").attempt(occ, 2))
	j.waitFor(t, "b released attempt 2, recording it", storeWaitBound, event(scheduler.EventReleased, "b").attempt(occ, 2))
	b := runOf(t, fs.historyOf(t, spec.key(), occ), "b", 2)
	t.Logf("attempt 2 started on b %s after the kill (store's clock; %s on the wall clock), %s after the occurrence",
		b.Started.Sub(dead.Now), second.At.Sub(kill), b.Started.Sub(occ))

	// The deadline is the next occurrence: once b has started it, no
	// attempt of occ can start any more.
	j.waitFor(t, "the next occurrence started", every+storeWaitBound, event(scheduler.EventStarted, "b").of(occ.Add(every)))
	shutdown(t, rb)
	assert.Equal(t, []int{1, 2}, attemptsStarted(j, occ), "attempts of the occurrence")
	assert.Empty(t, j.all(event(scheduler.EventFailed, "").of(occ)))
	assert.Empty(t, j.all(event(scheduler.EventGivenUp, "")))
	assert.Len(t, j.all(event(scheduler.EventSucceeded, "").of(occ)), 1)
	assert.Equal(t, "succeeded", b.Outcome)
	t.Logf("history of the occurrence: %v", outcomes(fs.historyOf(t, spec.key(), occ)))
	assert.Equal(t, []string{"/1/interrupted", "b/2/succeeded"}, outcomes(fs.historyOf(t, spec.key(), occ)))
	assert.Equal(t, []effect{{Attempt: 1, Replica: "a", Fence: committed.Fence}}, effectsOf(t, db, occ),
		"the effect committed once, by attempt 1")
}

// attemptsStarted returns the attempts of occurrence occ that started, on
// any replica, in the order they started.
func attemptsStarted(j *journal, occ time.Time) []int {
	var out []int
	for _, n := range j.all(event(scheduler.EventStarted, "").of(occ)) {
		out = append(out, n.Attempt)
	}
	return out
}
