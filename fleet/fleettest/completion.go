package fleettest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// margin is the slack around the completion tests' time-based
// expectations on a real server.
const margin = 250 * time.Millisecond

// withAttempts acquires round of key with a policy of max attempts and a
// deadline an hour after the store's now.
func withAttempts(t *testing.T, env Env, key string, round int64, max int) *lease.Lease {
	t.Helper()
	probe, err := env.Store.Acquire(t.Context(), key+"/clock", ttl)
	require.NoError(t, err)
	require.NoError(t, env.Store.Release(t.Context(), probe.ID))
	l, err := env.Store.Acquire(t.Context(), key, ttl, lease.WithRound(round),
		lease.WithAttempts(lease.Attempts{Max: max, Deadline: probe.AcquiredAt.Add(time.Hour)}))
	require.NoError(t, err)
	return l
}

// release ends l's attempt with close and returns the status it recorded.
func release(t *testing.T, env Env, l *lease.Lease, close fleet.CloseKind, retryAfter time.Duration) fleet.Status {
	t.Helper()
	st := fleet.Status{Occurrence: time.UnixMilli(l.Round), Owner: l.Owner, Replica: "r1", Attempt: l.Attempt,
		Fence: l.Fence, Started: l.AcquiredAt, Duration: 10 * time.Millisecond, Outcome: fleet.OutcomeFailed,
		Close: close, RetryAfter: retryAfter}
	_, err := env.Store.ReleaseWithStatus(t.Context(), l, st)
	require.NoError(t, err)
	return st
}

// due returns the index entries of key that are due.
func due(t *testing.T, env Env, key string) []fleet.Due {
	t.Helper()
	all, err := env.Store.DueOccurrences(t.Context(), 1000)
	require.NoError(t, err)
	var mine []fleet.Due
	for _, d := range all {
		if d.Key == key {
			mine = append(mine, d)
		}
	}
	return mine
}

// testCompletionOpenThenDone: an attempt released open is resumed at once
// when it asks no backoff, and listed in the index; the attempt released
// done closes the occurrence and leaves the index.
func testCompletionOpenThenDone(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:completion-open"
	l := withAttempts(t, env, key, 100, 3)
	release(t, env, l, fleet.CloseOpen, 0)
	env.Wait(margin) // the index's time is the store's estimate of its now
	got := due(t, env, key)
	require.Len(t, got, 1, "an occurrence released open is in the index")
	assert.Equal(t, int64(100), got[0].Round)
	assert.True(t, got[0].Deadline.Equal(l.Attempts.Deadline), "the entry names the deadline: %s, want %s", got[0].Deadline, l.Attempts.Deadline)

	second, err := env.Store.Acquire(ctx, key, ttl, lease.WithResume(100))
	require.NoError(t, err)
	assert.Equal(t, 2, second.Attempt)
	release(t, env, second, fleet.CloseDone, 0)
	assert.Empty(t, due(t, env, key), "a done occurrence leaves the index")
	_, err = env.Store.Acquire(ctx, key, ttl, lease.WithResume(100))
	require.ErrorIs(t, err, lease.ErrRoundClaimed, "a done occurrence has nothing to resume")

	runs, _, err := env.Store.History(ctx, key, 0, 10)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	assert.Equal(t, 2, runs[0].Attempt, "each attempt's run is in the history")
	assert.Equal(t, 1, runs[1].Attempt)

	next, err := env.Store.Acquire(ctx, key, ttl, lease.WithRound(101),
		lease.WithAttempts(lease.Attempts{Max: 3, Deadline: l.Attempts.Deadline}))
	require.NoError(t, err)
	assert.Nil(t, next.Superseded, "a done occurrence is not superseded")
	require.NoError(t, next.Release(ctx))
}

// testCompletionBackoff: an attempt released open with a backoff is not
// due before it.
func testCompletionBackoff(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:completion-backoff"
	l := withAttempts(t, env, key, 200, 3)
	release(t, env, l, fleet.CloseOpen, time.Hour)
	_, err := env.Store.Acquire(ctx, key, ttl, lease.WithResume(200))
	require.ErrorIs(t, err, lease.ErrNotDue)
	var nd *lease.NotDueError
	require.ErrorAs(t, err, &nd)
	assert.Greater(t, nd.Remaining, time.Hour-margin)
	assert.LessOrEqual(t, nd.Remaining, time.Hour)
	assert.Empty(t, due(t, env, key), "not due in the index either")
	locked, err := env.Store.IsLocked(ctx, key)
	require.NoError(t, err)
	assert.False(t, locked)
}

// testCompletionReleaseGivenUp: an attempt released given up closes the
// occurrence, with a "given_up" entry after its run in the history.
func testCompletionReleaseGivenUp(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:completion-release-given-up"
	l := withAttempts(t, env, key, 300, 3)
	release(t, env, l, fleet.CloseOpen, 0)
	l, err := env.Store.Acquire(ctx, key, ttl, lease.WithResume(300))
	require.NoError(t, err)
	release(t, env, l, fleet.CloseGivenUp, 0)
	assert.Empty(t, due(t, env, key), "a given-up occurrence leaves the index")
	_, err = env.Store.Acquire(ctx, key, ttl, lease.WithResume(300))
	require.ErrorIs(t, err, lease.ErrRoundClaimed)
	runs, _, err := env.Store.History(ctx, key, 0, 10)
	require.NoError(t, err)
	require.Len(t, runs, 3)
	assert.Equal(t, fleet.OutcomeGivenUp, runs[0].Outcome)
	assert.Equal(t, 2, runs[0].Attempt)
	assert.Equal(t, fleet.OutcomeFailed, runs[1].Outcome)
	ok, err := env.Store.GiveUp(ctx, key, 300)
	require.NoError(t, err)
	assert.False(t, ok, "given up once")
}

// testCompletionGiveUp: GiveUp gives an occurrence up only when it is
// open, its holder gone, and out of attempts or time; exactly once.
func testCompletionGiveUp(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:completion-give-up"
	ok, err := env.Store.GiveUp(ctx, key, 400)
	require.NoError(t, err)
	assert.False(t, ok, "no record")

	l := withAttempts(t, env, key, 400, 2)
	require.NoError(t, env.Store.IndexOccurrence(ctx, key, 400, l.Attempts.Deadline, l.AcquiredAt))
	ok, err = env.Store.GiveUp(ctx, key, 400)
	require.NoError(t, err)
	assert.False(t, ok, "a live lease holds it")
	require.NoError(t, l.Release(ctx)) // interrupted
	ok, err = env.Store.GiveUp(ctx, key, 400)
	require.NoError(t, err)
	assert.False(t, ok, "an attempt remains and the deadline is an hour away")
	assert.Len(t, due(t, env, key), 1, "an occurrence that may still complete stays in the index")

	l, err = env.Store.Acquire(ctx, key, ttl, lease.WithResume(400))
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx)) // interrupted again: no attempt remains
	ok, err = env.Store.GiveUp(ctx, key, 400)
	require.NoError(t, err)
	assert.True(t, ok, "out of attempts")
	ok, err = env.Store.GiveUp(ctx, key, 400)
	require.NoError(t, err)
	assert.False(t, ok, "exactly one caller gives it up")
	assert.Empty(t, due(t, env, key), "GiveUp removes the entry")
	_, err = env.Store.Acquire(ctx, key, ttl, lease.WithResume(400))
	require.ErrorIs(t, err, lease.ErrRoundClaimed)

	runs, _, err := env.Store.History(ctx, key, 0, 10)
	require.NoError(t, err)
	require.Len(t, runs, 3, "attempts released without a status (no replica recorded their end) are recorded interrupted by the store, then the give-up")
	assert.Equal(t, fleet.OutcomeGivenUp, runs[0].Outcome)
	assert.Equal(t, 2, runs[0].Attempt)
	assert.True(t, runs[0].Occurrence.Equal(time.UnixMilli(400)))
	assert.Equal(t, fleet.OutcomeInterrupted, runs[1].Outcome)
	assert.Equal(t, 2, runs[1].Attempt)
	assert.Equal(t, fleet.OutcomeInterrupted, runs[2].Outcome)
	assert.Equal(t, 1, runs[2].Attempt)
}

// testCompletionIndex: the index lists what is due at the store's now,
// oldest first, up to a limit; entries move and leave.
func testCompletionIndex(t *testing.T, env Env) {
	ctx := t.Context()
	l := withAttempts(t, env, "job:completion-index", 1, 1)
	require.NoError(t, l.Release(ctx))
	now := l.AcquiredAt
	dl := now.Add(time.Hour)
	keys := []string{"job:index/a:b", "job:index/c", "job:index/d"}
	require.NoError(t, env.Store.IndexOccurrence(ctx, keys[0], 7, dl, now.Add(-2*time.Second)))
	require.NoError(t, env.Store.IndexOccurrence(ctx, keys[1], 8, dl, now.Add(-3*time.Second)))
	require.NoError(t, env.Store.IndexOccurrence(ctx, keys[2], 9, dl, now.Add(time.Hour)))

	all, err := env.Store.DueOccurrences(ctx, 1000)
	require.NoError(t, err)
	require.Len(t, all, 2, "the entry due in an hour is not listed")
	assert.Equal(t, fleet.Due{Key: keys[1], Round: 8, Deadline: time.UnixMilli(dl.UnixMilli()), At: time.UnixMilli(now.Add(-3 * time.Second).UnixMilli())}, all[0])
	assert.Equal(t, keys[0], all[1].Key, "oldest first; a key may hold colons")
	first, err := env.Store.DueOccurrences(ctx, 1)
	require.NoError(t, err)
	require.Len(t, first, 1)
	assert.Equal(t, keys[1], first[0].Key)

	require.NoError(t, env.Store.IndexOccurrence(ctx, keys[1], 8, dl, now.Add(time.Hour)))
	require.NoError(t, env.Store.UnindexOccurrence(ctx, keys[0], 7, dl))
	require.NoError(t, env.Store.UnindexOccurrence(ctx, keys[0], 7, dl), "removing an absent entry is not an error")
	all, err = env.Store.DueOccurrences(ctx, 1000)
	require.NoError(t, err)
	assert.Empty(t, all, "one entry moved later, one removed")

	for name, err := range map[string]error{
		"limit 0":          func() error { _, err := env.Store.DueOccurrences(ctx, 0); return err }(),
		"index round 0":    env.Store.IndexOccurrence(ctx, keys[0], 0, dl, now),
		"index no time":    env.Store.IndexOccurrence(ctx, keys[0], 1, dl, time.Time{}),
		"index no dl":      env.Store.IndexOccurrence(ctx, keys[0], 1, time.Time{}, now),
		"index empty key":  env.Store.IndexOccurrence(ctx, "", 1, dl, now),
		"unindex round -1": env.Store.UnindexOccurrence(ctx, keys[0], -1, dl),
		"give up round 0":  func() error { _, err := env.Store.GiveUp(ctx, keys[0], 0); return err }(),
	} {
		assert.ErrorIs(t, err, lease.ErrInvalidArgument, name)
	}
}

// testCompletionResumePaused: a resume honours a pause with
// lease.WithPauseCheck, before anything else.
func testCompletionResumePaused(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:completion-paused"
	l := withAttempts(t, env, key, 500, 3)
	release(t, env, l, fleet.CloseOpen, 0)
	require.NoError(t, env.Store.SetPause(ctx, key, fleet.Pause{By: "ops"}))
	_, err := env.Store.Acquire(ctx, key, ttl, lease.WithResume(500), lease.WithPauseCheck())
	require.ErrorIs(t, err, lease.ErrPaused)
	_, err = env.Store.ClearPause(ctx, key)
	require.NoError(t, err)
	l, err = env.Store.Acquire(ctx, key, ttl, lease.WithResume(500), lease.WithPauseCheck())
	require.NoError(t, err, "the paused resume used no attempt")
	assert.Equal(t, 2, l.Attempt)
	require.NoError(t, l.Release(ctx))
}

// testCompletionCloseValidation: a release's close is checked before any
// I/O; a close is ignored for a lease without attempts.
func testCompletionCloseValidation(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:completion-close-validation"
	l, err := env.Store.Acquire(ctx, key, ttl, lease.WithRound(600))
	require.NoError(t, err)
	for name, st := range map[string]fleet.Status{
		"unknown close":       {Close: fleet.CloseGivenUp + 1},
		"negative close":      {Close: -1},
		"negative retryAfter": {Close: fleet.CloseOpen, RetryAfter: -time.Second},
	} {
		_, err := env.Store.ReleaseWithStatus(ctx, l, st)
		assert.ErrorIs(t, err, lease.ErrInvalidArgument, name)
	}
	release(t, env, l, fleet.CloseOpen, 0)
	_, err = env.Store.Acquire(ctx, key, ttl, lease.WithResume(600))
	require.ErrorIs(t, err, lease.ErrRoundClaimed, "a lease without attempts writes no record")
	assert.Empty(t, due(t, env, key))
}

// testCompletionDeadHolder: an attempt whose holder died (its lease ran
// out, never released) is recorded "interrupted" in the history by the
// store when the next attempt takes over, since no replica recorded its
// end; and so is the last attempt of an occurrence given up after its
// holder died.
func testCompletionDeadHolder(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:completion-dead-holder"
	short := 200 * time.Millisecond
	probe, err := env.Store.Acquire(ctx, key+"/clock", ttl)
	require.NoError(t, err)
	require.NoError(t, env.Store.Release(ctx, probe.ID))
	_, err = env.Store.Acquire(ctx, key, short, lease.WithRound(500),
		lease.WithAttempts(lease.Attempts{Max: 2, Deadline: probe.AcquiredAt.Add(time.Hour)}))
	require.NoError(t, err)
	env.Wait(short + lease.ExpiryTolerance + margin)

	second, err := env.Store.Acquire(ctx, key, short, lease.WithResume(500))
	require.NoError(t, err)
	assert.Equal(t, 2, second.Attempt)
	runs, _, err := env.Store.History(ctx, key, 0, 10)
	require.NoError(t, err)
	require.Len(t, runs, 1, "the dead attempt is in the history")
	assert.Equal(t, fleet.OutcomeInterrupted, runs[0].Outcome)
	assert.Equal(t, 1, runs[0].Attempt)
	assert.NotEmpty(t, runs[0].Error, "the entry says why")

	env.Wait(short + lease.ExpiryTolerance + margin) // the second holder dies too: out of attempts
	ok, err := env.Store.GiveUp(ctx, key, 500)
	require.NoError(t, err)
	require.True(t, ok)
	runs, _, err = env.Store.History(ctx, key, 0, 10)
	require.NoError(t, err)
	require.Len(t, runs, 3)
	assert.Equal(t, fleet.OutcomeGivenUp, runs[0].Outcome)
	assert.Equal(t, fleet.OutcomeInterrupted, runs[1].Outcome)
	assert.Equal(t, 2, runs[1].Attempt)
}

// testCompletionSupersededByTrigger: a trigger's run claims a round after
// every claimed one, so an occurrence still open (released open, or
// running with no live lease) can never be resumed: the trigger's acquire
// gives it up and reports it (Lease.Superseded), once, with a "given_up"
// entry on the job's history.
func testCompletionSupersededByTrigger(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:completion-superseded-by-trigger"
	trigger := func() *lease.Lease {
		t.Helper()
		_, err := env.Store.AddTrigger(ctx, key, "ops", time.Minute)
		require.NoError(t, err)
		l, err := env.Store.Acquire(ctx, key, ttl, lease.WithTrigger())
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
		return l
	}

	l := withAttempts(t, env, key, 700, 3)
	release(t, env, l, fleet.CloseOpen, 0)
	first := trigger()
	require.NotNil(t, first.Superseded, "round 700 was released open")
	assert.Equal(t, lease.Superseded{Round: 700, Attempt: 1}, *first.Superseded)
	_, err := env.Store.Acquire(ctx, key, ttl, lease.WithResume(700))
	require.ErrorIs(t, err, lease.ErrRoundClaimed, "a superseded occurrence is not resumed")
	ok, err := env.Store.GiveUp(ctx, key, 700)
	require.NoError(t, err)
	assert.False(t, ok, "the trigger's acquire gave it up")
	assert.Nil(t, trigger().Superseded, "given up once")

	runs, _, err := env.Store.History(ctx, key, 0, 10)
	require.NoError(t, err)
	require.Len(t, runs, 2, "the attempt's run, then its give-up")
	assert.Equal(t, fleet.OutcomeGivenUp, runs[0].Outcome)
	assert.Equal(t, 1, runs[0].Attempt)
	assert.True(t, runs[0].Occurrence.Equal(time.UnixMilli(700)))

	// Running with no live lease: its holder died (here: released without
	// a status, as a holder that never ended the attempt).
	round := first.Round + 1_000
	l = withAttempts(t, env, key, round, 3)
	resumed := func() *lease.Lease {
		t.Helper()
		require.NoError(t, l.Release(ctx))
		r, err := env.Store.Acquire(ctx, key, ttl, lease.WithResume(round))
		require.NoError(t, err)
		return r
	}()
	require.NoError(t, resumed.Release(ctx))
	sup := trigger().Superseded
	require.NotNil(t, sup, "round %d was left running with no live lease", round)
	assert.Equal(t, lease.Superseded{Round: round, Attempt: 2}, *sup)
	assert.Nil(t, trigger().Superseded, "given up once")
}

// testCompletionSupersededWhilePaused: a paused key records the rounds it
// refuses (testPause), so an occurrence still open when a later round is
// recorded so can never be claimed again. The resume that finds it so
// gives it up and reports it (lease.GivenUpError with Superseded), once,
// with a "given_up" entry on the job's history, rather than answer
// ErrRoundClaimed and leave it open, never attempted nor given up. An
// attempt that still holds its live lease is left to end first.
func testCompletionSupersededWhilePaused(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:completion-superseded-while-paused"
	skipPaused := func(round int64) {
		t.Helper()
		require.NoError(t, env.Store.SetPause(ctx, key, fleet.Pause{By: "ops"}))
		_, err := env.Store.Acquire(ctx, key, ttl, lease.WithPauseCheck(), lease.WithRound(round))
		require.ErrorIs(t, err, lease.ErrPaused)
		_, err = env.Store.ClearPause(ctx, key)
		require.NoError(t, err)
	}
	requireSuperseded := func(round int64, attempt int) {
		t.Helper()
		_, err := env.Store.Acquire(ctx, key, ttl, lease.WithResume(round), lease.WithPauseCheck())
		require.ErrorIs(t, err, lease.ErrGivenUp, "round %d was open when a later round was recorded", round)
		var gu *lease.GivenUpError
		require.ErrorAs(t, err, &gu)
		assert.Equal(t, lease.GivenUpError{Round: round, Attempt: attempt, First: true, Superseded: true}, *gu)
		_, err = env.Store.Acquire(ctx, key, ttl, lease.WithResume(round), lease.WithPauseCheck())
		require.ErrorIs(t, err, lease.ErrRoundClaimed, "given up once")
		require.NotErrorIs(t, err, lease.ErrGivenUp, "given up once")
		ok, err := env.Store.GiveUp(ctx, key, round)
		require.NoError(t, err)
		assert.False(t, ok, "the resume gave it up")
		runs, _, err := env.Store.History(ctx, key, 0, 1)
		require.NoError(t, err)
		require.Len(t, runs, 1)
		assert.Equal(t, fleet.OutcomeGivenUp, runs[0].Outcome)
		assert.Equal(t, attempt, runs[0].Attempt)
		assert.True(t, runs[0].Occurrence.Equal(time.UnixMilli(round)))
	}

	// Released open, then a later round refused as paused.
	l := withAttempts(t, env, key, 800, 3)
	release(t, env, l, fleet.CloseOpen, 0)
	skipPaused(801)
	requireSuperseded(800, 1)

	// Running, its lease live, when the later round is recorded: the
	// attempt goes on, and its occurrence is given up once it ends open.
	l = withAttempts(t, env, key, 900, 3)
	skipPaused(901)
	_, err := env.Store.Acquire(ctx, key, ttl, lease.WithResume(900))
	var locked *lease.LockedError
	require.ErrorAs(t, err, &locked, "the attempt still holds its lease")
	release(t, env, l, fleet.CloseOpen, 0)
	requireSuperseded(900, 1)
}
