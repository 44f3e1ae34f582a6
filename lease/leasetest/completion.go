package leasetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

// RunCompletion runs the completion records' contract (lease.WithAttempts,
// lease.WithResume): attempts of one occurrence, resumes, the deadline,
// superseded occurrences and the options' validation. newEnv is as for
// Run. A store keeps a completion record only where it keeps a job's
// history (a "given_up" entry is pushed on it), so this is a suite of its
// own, as are the semaphore's and the fair queue's.
func RunCompletion(t *testing.T, newEnv func(t *testing.T) Env) {
	t.Helper()
	runConcurrently(t, newEnv, completionTests, func(*testing.T, Env) {})
}

var completionTests = []subtest{
	{"FirstAttempt", testCompletionFirstAttempt},
	{"ResumeAfterRelease", testCompletionResumeAfterRelease},
	{"ResumeAfterHolderDied", testCompletionResumeAfterExpiry},
	{"ResumeClaimed", testCompletionResumeClaimed},
	{"GivenUpAtDeadline", testCompletionDeadline},
	{"SupersededOnce", testCompletionSuperseded},
	{"Validation", testCompletionValidation},
}

// storeNow returns the store's time, read from a lease on a key of its
// own (the store's clock is the only one policies are judged on).
func storeNow(t *testing.T, env Env) time.Time {
	t.Helper()
	l := acquire(t, env, testKey(t, "clock"), longTTL)
	require.NoError(t, env.Store.Release(t.Context(), l.ID))
	return l.AcquiredAt
}

// requireGivenUp checks that err is a *lease.GivenUpError for round after
// attempt, reported first.
func requireGivenUp(t *testing.T, err error, round int64, attempt int) {
	t.Helper()
	require.ErrorIs(t, err, lease.ErrGivenUp)
	var gu *lease.GivenUpError
	require.ErrorAs(t, err, &gu)
	assert.Equal(t, round, gu.Round, "GivenUpError.Round")
	assert.Equal(t, attempt, gu.Attempt, "GivenUpError.Attempt")
	assert.True(t, gu.First, "the resume that gives the occurrence up reports it")
}

// testCompletionFirstAttempt: an acquire without attempts is attempt 1
// with no record; a round acquire with attempts records the policy.
func testCompletionFirstAttempt(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	plain := acquire(t, env, key, longTTL, lease.WithRound(5))
	assert.Equal(t, 1, plain.Attempt, "an acquire without attempts is attempt 1")
	assert.Zero(t, plain.Attempts.Max, "no completion record without WithAttempts")
	assert.Nil(t, plain.Superseded)
	require.NoError(t, env.Store.Release(ctx, plain.ID))

	deadline := storeNow(t, env).Add(time.Hour).Add(123456 * time.Microsecond)
	l := acquire(t, env, key, longTTL, lease.WithRound(10), lease.WithAttempts(lease.Attempts{Max: 3, Deadline: deadline}))
	assert.Equal(t, 1, l.Attempt)
	assert.Equal(t, 3, l.Attempts.Max)
	assert.True(t, l.Attempts.Deadline.Equal(time.UnixMilli(deadline.UnixMilli())), "the deadline is kept to the millisecond: %s", l.Attempts.Deadline)
	assert.Equal(t, int64(10), l.Round)
	assert.Equal(t, int64(5), l.PrevRound)
	assert.Nil(t, l.Superseded, "the round before had no record")
	require.NoError(t, env.Store.Release(ctx, l.ID))
}

// testCompletionResumeAfterRelease: an attempt that ended without closing
// its record (a plain release: interrupted) leaves the occurrence open;
// each resume is the next attempt of the same round, with a greater
// fence, refused while the lease is live, until none remains.
func testCompletionResumeAfterRelease(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	deadline := storeNow(t, env).Add(time.Hour)
	first := acquire(t, env, key, longTTL, lease.WithRound(20), lease.WithAttempts(lease.Attempts{Max: 3, Deadline: deadline}))

	_, err := env.Store.Acquire(ctx, key, longTTL, lease.WithResume(20))
	le := requireLocked(t, err, "resume while the first attempt holds the lease")
	assert.Positive(t, le.Remaining)
	require.NoError(t, env.Store.Release(ctx, first.ID))

	prev := first
	for attempt := 2; attempt <= 3; attempt++ {
		l := acquire(t, env, key, longTTL, lease.WithResume(20), lease.WithOwner("o"))
		assert.Equal(t, attempt, l.Attempt)
		assert.Equal(t, int64(20), l.Round)
		assert.Equal(t, int64(20), l.PrevRound, "a resume claims no new round")
		assert.Greater(t, l.Fence, prev.Fence, "a resume issues a new, greater fence")
		assert.Equal(t, 3, l.Attempts.Max, "a resume reports the recorded policy")
		assert.True(t, l.Attempts.Deadline.Equal(time.UnixMilli(deadline.UnixMilli())))
		assert.Equal(t, "o", l.Owner)
		assert.Nil(t, l.Superseded)
		requireLockedState(t, env, key, true, "a resume takes the lease")
		_, err = env.Store.Acquire(ctx, key, longTTL, lease.WithResume(20))
		requireLocked(t, err, "a second resume while the first holds the lease")
		require.NoError(t, env.Store.Release(ctx, l.ID))
		prev = l
	}
	_, err = env.Store.Acquire(ctx, key, longTTL, lease.WithResume(20))
	requireGivenUp(t, err, 20, 3)
	requireLockedState(t, env, key, false, "a given-up resume takes nothing")
	_, err = env.Store.Acquire(ctx, key, longTTL, lease.WithResume(20))
	require.ErrorIs(t, err, lease.ErrRoundClaimed, "a given-up occurrence has nothing to resume")
	require.NotErrorIs(t, err, lease.ErrGivenUp, "given up is reported once")

	l := acquire(t, env, key, longTTL, lease.WithRound(21))
	assert.Greater(t, l.Fence, prev.Fence)
	require.NoError(t, env.Store.Release(ctx, l.ID))
}

// testCompletionResumeAfterExpiry: a holder that died (its lease expired
// without a release) leaves its occurrence open.
func testCompletionResumeAfterExpiry(t *testing.T, env Env) {
	key := testKey(t, "k")
	deadline := storeNow(t, env).Add(time.Hour)
	acquire(t, env, key, shortTTL, lease.WithRound(30), lease.WithAttempts(lease.Attempts{Max: 2, Deadline: deadline}))
	expire(env, shortTTL)
	l := acquire(t, env, key, longTTL, lease.WithResume(30))
	assert.Equal(t, 2, l.Attempt)
	require.NoError(t, env.Store.Release(t.Context(), l.ID))
}

// testCompletionResumeClaimed: nothing to resume without a record of the
// round, for another round, or once a newer round was claimed; an
// occurrence still open when a newer round was claimed without attempts
// is given up by the resume that finds it so.
func testCompletionResumeClaimed(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	_, err := env.Store.Acquire(ctx, key, longTTL, lease.WithResume(1))
	require.ErrorIs(t, err, lease.ErrRoundClaimed, "a key never claimed")

	l := acquire(t, env, key, longTTL, lease.WithRound(40))
	require.NoError(t, env.Store.Release(ctx, l.ID))
	_, err = env.Store.Acquire(ctx, key, longTTL, lease.WithResume(40))
	require.ErrorIs(t, err, lease.ErrRoundClaimed, "a round acquired without attempts has no record")

	deadline := storeNow(t, env).Add(time.Hour)
	l = acquire(t, env, key, longTTL, lease.WithRound(41), lease.WithAttempts(lease.Attempts{Max: 5, Deadline: deadline}))
	require.NoError(t, env.Store.Release(ctx, l.ID))
	for _, r := range []int64{40, 42} {
		_, err = env.Store.Acquire(ctx, key, longTTL, lease.WithResume(r))
		require.ErrorIs(t, err, lease.ErrRoundClaimed, "round %d is not the recorded one", r)
	}
	l = acquire(t, env, key, longTTL, lease.WithRound(42)) // a newer round, without attempts
	require.NoError(t, env.Store.Release(ctx, l.ID))
	// Round 41 was left open (a plain release) and can never be claimed
	// again: the resume that finds it so gives it up, once.
	_, err = env.Store.Acquire(ctx, key, longTTL, lease.WithResume(41))
	requireGivenUp(t, err, 41, 1)
	var gu *lease.GivenUpError
	require.ErrorAs(t, err, &gu)
	assert.True(t, gu.Superseded, "given up because round 42 was recorded")
	_, err = env.Store.Acquire(ctx, key, longTTL, lease.WithResume(41))
	require.ErrorIs(t, err, lease.ErrRoundClaimed, "round 41 is no longer the last claimed round")
	requireLockedState(t, env, key, false, "a refused resume takes nothing")
}

// testCompletionDeadline: no attempt starts at or after the deadline; the
// resume that finds it passed gives the occurrence up.
func testCompletionDeadline(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	deadline := storeNow(t, env).Add(2 * margin)
	l := acquire(t, env, key, longTTL, lease.WithRound(50), lease.WithAttempts(lease.Attempts{Max: 10, Deadline: deadline}))
	require.NoError(t, env.Store.Release(ctx, l.ID))
	env.Wait(3 * margin)
	_, err := env.Store.Acquire(ctx, key, longTTL, lease.WithResume(50))
	requireGivenUp(t, err, 50, 1)
	_, err = env.Store.Acquire(ctx, key, longTTL, lease.WithResume(50))
	require.ErrorIs(t, err, lease.ErrRoundClaimed)
}

// testCompletionSuperseded: a round acquire with attempts that finds the
// previous occurrence still open gives it up and reports it, once.
func testCompletionSuperseded(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	a := lease.Attempts{Max: 3, Deadline: storeNow(t, env).Add(time.Hour)}
	l := acquire(t, env, key, longTTL, lease.WithRound(60), lease.WithAttempts(a))
	require.NoError(t, env.Store.Release(ctx, l.ID))
	l = acquire(t, env, key, longTTL, lease.WithResume(60))
	require.NoError(t, env.Store.Release(ctx, l.ID))

	next := acquire(t, env, key, longTTL, lease.WithRound(61), lease.WithAttempts(a))
	require.NotNil(t, next.Superseded, "round 60 was still open")
	assert.Equal(t, lease.Superseded{Round: 60, Attempt: 2}, *next.Superseded)
	assert.Equal(t, 1, next.Attempt)
	_, err := env.Store.Acquire(ctx, key, longTTL, lease.WithResume(60))
	require.ErrorIs(t, err, lease.ErrRoundClaimed, "a superseded occurrence is not resumed")
	require.NoError(t, env.Store.Release(ctx, next.ID))

	plain := acquire(t, env, key, longTTL, lease.WithRound(62))
	assert.Nil(t, plain.Superseded, "an acquire without attempts reads no record")
	require.NoError(t, env.Store.Release(ctx, plain.ID))
	again := acquire(t, env, key, longTTL, lease.WithRound(63), lease.WithAttempts(a))
	require.NotNil(t, again.Superseded, "round 61 was left running with no live lease")
	assert.Equal(t, lease.Superseded{Round: 61, Attempt: 1}, *again.Superseded)
	require.NoError(t, env.Store.Release(ctx, again.ID))
}

// testCompletionValidation: the completion options' rules, checked before
// any I/O.
func testCompletionValidation(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	ok := lease.Attempts{Max: 2, Deadline: time.UnixMilli(1_900_000_000_000)}
	cases := map[string][]lease.AcquireOption{
		"attempts without a round":  {lease.WithAttempts(ok)},
		"attempts with a trigger":   {lease.WithTrigger(), lease.WithAttempts(ok)},
		"attempts with a resume":    {lease.WithResume(5), lease.WithAttempts(ok)},
		"attempts max 0":            {lease.WithRound(5), lease.WithAttempts(lease.Attempts{Max: 0, Deadline: ok.Deadline})},
		"attempts max too large":    {lease.WithRound(5), lease.WithAttempts(lease.Attempts{Max: lease.MaxAttempts + 1, Deadline: ok.Deadline})},
		"attempts without deadline": {lease.WithRound(5), lease.WithAttempts(lease.Attempts{Max: 2})},
		"attempts deadline before 1970": {lease.WithRound(5),
			lease.WithAttempts(lease.Attempts{Max: 2, Deadline: time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC)})},
		"resume round 0":        {lease.WithResume(0)},
		"resume negative round": {lease.WithResume(-1)},
		"resume with a round":   {lease.WithRound(5), lease.WithResume(5)},
		"resume with a trigger": {lease.WithTrigger(), lease.WithResume(5)},
	}
	for name, opts := range cases {
		l, err := env.Store.Acquire(ctx, key, longTTL, opts...)
		assert.Nil(t, l, name)
		requireInvalid(t, err, name)
	}
	requireLockedState(t, env, key, false, "an invalid acquire takes nothing")
}
