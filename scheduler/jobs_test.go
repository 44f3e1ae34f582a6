package scheduler

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Remove on one replica: it never runs the job again, a run in progress
// finishes and releases, and the other replica goes on running the job.
func TestScheduler_Remove_OneReplicaStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var mu sync.Mutex
		startedOn := map[string][]time.Time{}
		job := func(ctx context.Context) error {
			r, _ := RunFromContext(ctx)
			mu.Lock()
			startedOn[r.Replica] = append(startedOn[r.Replica], time.Now())
			mu.Unlock()
			time.Sleep(300 * time.Millisecond)
			return nil
		}
		// The replicas race (no preferred replica): a, ahead, wins while it
		// has the job.
		a := newScheduler(t, store, WithInstanceID("a"), ahead(100*time.Millisecond), WithoutControlPlane())
		b := newScheduler(t, store, WithInstanceID("b"), WithoutControlPlane())
		time.Sleep(500 * time.Millisecond)
		for _, s := range []*Scheduler{a, b} {
			require.NoError(t, s.Register("report", Every(time.Second), job))
			require.NoError(t, s.Register("other", Every(time.Second), func(context.Context) error { return nil }))
			require.NoError(t, s.Start())
		}
		time.Sleep(2600 * time.Millisecond) // a runs 1s, 2s and, from 2.9s, 3s
		removedAt := time.Now()
		require.NoError(t, a.Remove("report")) // 3s is still running on a
		require.ErrorIs(t, a.Remove("report"), ErrUnknownJob)
		time.Sleep(5400 * time.Millisecond)
		synctest.Wait()

		mu.Lock()
		defer mu.Unlock()
		require.Len(t, startedOn["a"], 3, "a ran 1s, 2s and 3s")
		for _, at := range startedOn["a"] {
			assert.True(t, at.Before(removedAt), "a started nothing after Remove")
		}
		assert.GreaterOrEqual(t, len(startedOn["b"]), 5, "b went on from 4s: %v", startedOn["b"])
		locked, err := store.IsLocked(t.Context(), "job:report")
		require.NoError(t, err)
		assert.False(t, locked, "leases released")
		assert.Len(t, a.Jobs(), 1, "a has only 'other' left")
		assert.Positive(t, a.Stats().Started, "a still runs 'other'")
		require.NoError(t, a.Register("report", Every(time.Second), job), "the name can be registered again")
	})
}

// Jobs tells, per job, the schedule, the next occurrence, whether it runs
// here and the last run this replica ran.
func TestScheduler_Jobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		release := make(chan struct{})
		s := newScheduler(t, store)
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, s.Register("fails", Every(time.Second), func(context.Context) error { return errors.New("disk full") }))
		require.NoError(t, s.Register("slow", Every(time.Minute), func(context.Context) error { <-release; return nil }))
		require.NoError(t, s.Start())
		time.Sleep(time.Minute)
		synctest.Wait()

		jobs := s.Jobs()
		require.Len(t, jobs, 2)
		assert.Equal(t, "fails", jobs[0].Name)
		assert.Equal(t, "every(1s)", jobs[0].Schedule)
		assert.False(t, jobs[0].Running)
		require.NotNil(t, jobs[0].LastRun)
		assert.Equal(t, "failed", jobs[0].LastRun.Outcome)
		assert.Equal(t, "disk full", jobs[0].LastRun.Error)
		assert.True(t, jobs[0].Next.After(time.Now()))
		assert.Equal(t, "slow", jobs[1].Name)
		assert.True(t, jobs[1].Running)
		assert.Nil(t, jobs[1].LastRun)
		assert.True(t, time.Now().Truncate(time.Minute).Add(time.Minute).Equal(jobs[1].Next))
		close(release)
	})
}
