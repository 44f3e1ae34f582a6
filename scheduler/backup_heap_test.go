package scheduler

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBackupHeap_PopsInOrderOfDue: tasks pushed in any order, some due at
// once, come out in order of their due time, interleaved pushes and pops
// included.
func TestBackupHeap_PopsInOrderOfDue(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for round := range 200 {
		var h backupHeap
		var want []time.Time
		n := r.IntN(64)
		for range n {
			due := base.Add(time.Duration(r.IntN(20)) * time.Millisecond)
			h.push(backupTask{due: due})
			want = append(want, due)
			if r.IntN(4) == 0 && len(h) > 0 { // a pop between pushes takes the earliest so far
				got := h.pop()
				first := slices.MinFunc(want, func(a, b time.Time) int { return a.Compare(b) })
				require.True(t, got.due.Equal(first), "round %d: popped %s, earliest %s", round, got.due, first)
				want = slices.Delete(want, slices.IndexFunc(want, first.Equal), slices.IndexFunc(want, first.Equal)+1)
			}
		}
		slices.SortFunc(want, func(a, b time.Time) int { return a.Compare(b) })
		for i, w := range want {
			require.NotEmpty(t, h, "round %d: %d of %d popped", round, i, len(want))
			assert.True(t, h.pop().due.Equal(w), "round %d, pop %d", round, i)
		}
		assert.Empty(t, h)
	}
}

// TestQueues_DoNotKeepALargeFiringsCapacity: once drained, the claim and
// backup queues keep at most keptQueueCap tasks' capacity.
func TestQueues_DoNotKeepALargeFiringsCapacity(t *testing.T) {
	q := newClaimQueue()
	for range 3 * keptQueueCap {
		require.True(t, q.push(claimTask{}))
	}
	for {
		ts, ok := q.popBatch(nil, 100, 1000)
		require.True(t, ok)
		q.done(len(ts))
		if q.head == 0 && len(q.items) == 0 {
			break
		}
	}
	assert.LessOrEqual(t, cap(q.items), keptQueueCap, "claim queue")

	b := newBackupQueue()
	now := time.Now()
	for range 3 * keptQueueCap {
		b.items.push(backupTask{due: now})
	}
	due, _, _ := b.take(now, nil)
	require.Len(t, due, 3*keptQueueCap)
	assert.LessOrEqual(t, cap(b.items), keptQueueCap, "backup queue")

	r := &releaseBatcher{}
	r.cond.L = &r.mu
	for range 3 * keptQueueCap {
		r.items = append(r.items, releaseTask{})
	}
	for taken := 0; taken < 3*keptQueueCap; {
		ts, ok := r.pop(nil)
		require.True(t, ok)
		taken += len(ts)
	}
	assert.LessOrEqual(t, cap(r.items), keptQueueCap, "release queue")
}

// A release queue that never drains (a task comes for each one taken)
// moves what is left to the front once half of it is taken: it does not
// grow with the tasks that went through it.
func TestReleaseBatcher_Pop_AQueueThatNeverDrainsStaysItsSize(t *testing.T) {
	r := &releaseBatcher{}
	r.cond.L = &r.mu
	for range 1000 {
		r.items = append(r.items, releaseTask{})
	}
	for range 1000 {
		ts, ok := r.pop(nil)
		require.True(t, ok)
		for range ts {
			r.items = append(r.items, releaseTask{})
		}
	}
	assert.Equal(t, 1000, len(r.items)-r.head, "as many queued as at the start")
	assert.LessOrEqual(t, len(r.items), 2000, "the tasks taken are not kept in front of them")
}

// TestBackupQueue_Add_ScheduledWaitsFromTheOccurrence: a scheduled
// firing that reaches its job late (the last jobs of a large firing
// group) is due the wait after its occurrence, not after it reached the
// job; one that reaches the backup pass a grace or more after its
// occurrence (it waited behind the job's previous claim) and a trigger
// wait from when they came.
func TestBackupQueue_Add_ScheduledWaitsFromTheOccurrence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(t, newMemoryStore(t, nil))
		require.NoError(t, s.Register("j", Every(time.Second), func(context.Context) error { return nil }))
		j := s.jobs["job:j"]
		require.NotNil(t, j)
		occ := time.Now().Truncate(time.Second).Add(time.Second)
		time.Sleep(time.Until(occ) + 40*time.Millisecond) // the firing reaches the job 40ms late
		q := newBackupQueue()
		q.add(s, claimTask{job: j, f: newFiring(occ, time.Second, firedBySchedule, j.registered())}, choice{})
		trig := time.Now()
		q.add(s, claimTask{job: j, f: newFiring(time.Time{}, 0, firedByTrigger, j.registered())}, choice{})
		time.Sleep(2 * time.Second)
		waited := time.Now()
		q.add(s, claimTask{job: j, f: newFiring(occ, time.Second, firedBySchedule, j.registered())}, choice{})
		due, _, _ := q.take(occ.Add(time.Hour), nil)
		require.Len(t, due, 3)
		assert.True(t, occ.Add(BackupGrace).Equal(due[0].due), "scheduled: the grace from the occurrence, due %s", due[0].due)
		assert.True(t, trig.Add(BackupGrace).Equal(due[1].due), "trigger: the grace from when it came, due %s", due[1].due)
		assert.True(t, waited.Add(BackupGrace).Equal(due[2].due), "scheduled, 2s after its occurrence: the grace from when it came, due %s", due[2].due)
	})
}
