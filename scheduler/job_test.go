package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

// testJob returns a job owner on a 1s schedule whose clock reads now (Unix
// ms), outside any Scheduler's registry: its transitions are called
// directly.
func testJob(t *testing.T, now int64, catchUp time.Duration) *job {
	t.Helper()
	s := newScheduler(t, newMemoryStore(t, nil), WithClock(clockwork.NewFakeClockAt(time.UnixMilli(now))))
	j := &job{s: s, name: "j", key: "job:j"}
	j.st.reg = &registration{plan: &everyPlan{d: time.Second}, jobConfig: &jobConfig{overlap: OverlapSkip, ttl: time.Second, catchUp: catchUp}}
	return j
}

func fireAt(ms int64) input { return input{kind: inFiring, f: firing{ms: ms}} }

// claimedAt is the store's answer to the claim of occurrence ms of j:
// claimed elsewhere.
func claimedAt(j *job, ms int64) input {
	return input{kind: inClaimed, f: firing{ms: ms, reg: j.st.reg}, err: lease.ErrRoundClaimed}
}

// only returns the one act of as, failing unless there is exactly one.
func only(t *testing.T, as acts) act {
	t.Helper()
	require.Equal(t, 1, as.n, "acts: %v", as.a[:as.n])
	return as.a[0]
}

// gocron can fire one scheduled time twice; the second firing is dropped
// before it reaches the store, as is an older one.
func TestJob_Transition_DropsRepeats(t *testing.T) {
	j := testJob(t, 0, 0)
	require.Equal(t, actClaim, only(t, j.decide(fireAt(1000))).kind)
	require.Equal(t, actSkip, only(t, j.decide(claimedAt(j, 1000))).kind)
	require.False(t, j.busy())
	for _, ms := range []int64{1000, 999} {
		a := only(t, j.decide(fireAt(ms)))
		assert.Equal(t, actNote, a.kind, "occurrence %d after 1000", ms)
		assert.Contains(t, a.msg, "duplicate")
	}
	assert.Equal(t, actClaim, only(t, j.decide(fireAt(2000))).kind)
}

// While a firing is being claimed, the next one waits; a third replaces
// the waiting one, which is skipped as an overrun; the claim's answer
// hands over the waiting firing, then the job goes idle.
func TestJob_Transition_OneClaimingOneWaiting(t *testing.T) {
	j := testJob(t, 0, 0)
	require.Equal(t, actClaim, only(t, j.decide(fireAt(1000))).kind)
	require.Zero(t, j.decide(fireAt(2000)).n, "2000 waits; nothing was waiting")
	a := only(t, j.decide(fireAt(3000)))
	require.Equal(t, actSkip, a.kind)
	assert.Equal(t, SkipOverrun, a.reason)
	assert.Equal(t, int64(2000), a.f.ms, "2000 is superseded")
	assert.True(t, j.busy())

	as := j.decide(claimedAt(j, 1000))
	require.Equal(t, 2, as.n)
	assert.Equal(t, actSkip, as.a[0].kind, "1000 was claimed elsewhere")
	assert.Equal(t, actClaim, as.a[1].kind)
	assert.Equal(t, int64(3000), as.a[1].f.ms)
	assert.True(t, j.busy(), "3000 is now the claim")
	only(t, j.decide(claimedAt(j, 3000)))
	assert.False(t, j.busy())
}

// A catch-up is no duplicate of a gocron firing, whatever its occurrence;
// while the job is busy with another claim it waits for the job to go
// idle (it is not dropped), and is then claimed.
func TestJob_Transition_CatchUp(t *testing.T) {
	j := testJob(t, 5500, time.Hour)
	require.Equal(t, actClaim, only(t, j.decide(fireAt(6000))).kind)
	assert.Zero(t, j.decide(input{kind: inCatchUp}).n, "the job is busy with 6000: the catch-up waits")
	as := j.decide(claimedAt(j, 6000))
	require.Equal(t, 2, as.n)
	assert.Equal(t, actClaim, as.a[1].kind, "idle: the catch-up is claimed")
	assert.Equal(t, firedByCatchUp, as.a[1].f.kind)
	assert.Equal(t, int64(5000), as.a[1].f.ms, "the latest occurrence at or before now")
	only(t, j.decide(claimedAt(j, 5000)))
	a := only(t, j.decide(fireAt(6000)))
	assert.Equal(t, actNote, a.kind, "the catch-up did not reset the gocron dedup")
}

// A claim that waits for the job's lease elsewhere (OverlapBufferOne)
// waits under a context of its own; once the wait has answered, that
// context is cancelled, so that it does not stay among claimCtx's
// children until Shutdown (one per wait, for as long as the replica runs).
func TestJob_Transition_ABufferOneWaitEndsItsContext(t *testing.T) {
	j := testJob(t, 0, 0)
	j.st.reg.overlap = OverlapBufferOne
	require.Equal(t, actClaim, only(t, j.decide(fireAt(1000))).kind)
	wait := only(t, j.decide(input{kind: inClaimed, f: firing{ms: 1000, reg: j.st.reg}, err: &lease.LockedError{}}))
	require.Equal(t, actWait, wait.kind)
	require.NotNil(t, wait.ctx)
	require.NoError(t, wait.ctx.Err(), "the wait goes on")

	f := wait.f
	require.True(t, f.waited)
	j.decide(input{kind: inClaimed, f: f, err: &lease.LockedError{}}) // the wait answered: still locked
	assert.False(t, j.busy())
	assert.ErrorIs(t, wait.ctx.Err(), context.Canceled, "the wait's context ended with its answer")
}
