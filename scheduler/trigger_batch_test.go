package scheduler

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease/memory"
)

// triggerCountingStore counts how the scheduler asks for waiting
// triggers: one key at a time, or in batches (fleet.TriggerCounter).
type triggerCountingStore struct {
	*memory.Store
	perKey, batches, batchKeys atomic.Int64
}

func (s *triggerCountingStore) PendingTriggers(ctx context.Context, key string) (int, error) {
	s.perKey.Add(1)
	return s.Store.PendingTriggers(ctx, key)
}

func (s *triggerCountingStore) PendingTriggersBatch(ctx context.Context, keys []string, counts []int) error {
	s.batches.Add(1)
	s.batchKeys.Add(int64(len(keys)))
	return s.Store.PendingTriggersBatch(ctx, keys, counts)
}

// A replica looks for the triggers that wait for its jobs, queued before
// it subscribed, in one round trip per triggerBatch jobs, not one per
// job: at 10,000 jobs on a loaded Redis the reads one by one held the
// control loop, and with it the fleet's announcements and the registry's
// refresh, for 6 to 7 seconds after the start. The trigger queued before
// Start still runs.
func TestScheduler_ControlPlane_LooksForTriggersInBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const jobs = 2*triggerBatch + 1
		store := &triggerCountingStore{Store: newMemoryStore(t, nil)}
		rs := &runStarts{}
		time.Sleep(30 * time.Minute) // off the hourly grid: only the trigger runs
		s := newScheduler(t, store)
		for i := range jobs {
			require.NoError(t, s.Register(fmt.Sprintf("j%d", i), Every(time.Hour), func(ctx context.Context) error {
				rs.record(ctx)
				return nil
			}))
		}
		_, err := store.AddTrigger(t.Context(), "job:j17", "ops", time.Minute)
		require.NoError(t, err)
		require.NoError(t, s.Start())
		time.Sleep(time.Second)
		synctest.Wait()

		runs := rs.all()
		require.Equal(t, 1, len(runs), "the trigger queued before Start ran, and nothing else")
		assert.True(t, runs[0].trigger)
		assert.Zero(t, store.perKey.Load(), "no read of one job's triggers")
		assert.Equal(t, int64(3), store.batches.Load(), "one read per %d jobs", triggerBatch)
		assert.Equal(t, int64(jobs), store.batchKeys.Load(), "every job looked at once")
	})
}

// A trigger that waits for a job no replica has at the moment (its only
// replica removed it while its run went on, and handed the trigger on to
// nobody) runs when a replica registers the job: a job registered after
// Start looks for its waiting triggers, as every job does when its replica
// starts. Without that, nothing announced it again, and it lapsed:
// seed 2059 of the simulator's long mode from seed 1252.
func TestScheduler_Trigger_TakenByAJobRegisteredAfterStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		time.Sleep(30 * time.Second) // off the hourly grid: only the trigger runs
		var rs runStarts
		a := newScheduler(t, store, WithInstanceID("a"))
		require.NoError(t, a.Register("other", Every(time.Hour), func(context.Context) error { return nil }))
		require.NoError(t, a.Start())
		synctest.Wait()
		_, err := store.AddTrigger(t.Context(), "job:report", "ops", time.Minute) // announced to nobody with the job
		require.NoError(t, err)
		synctest.Wait()
		time.Sleep(10 * time.Second)

		registered := time.Now()
		require.NoError(t, a.Register("report", Every(time.Hour), func(ctx context.Context) error {
			rs.record(ctx)
			return nil
		}))
		time.Sleep(5 * time.Second)
		shutdown(t, a)

		runs := rs.all()
		require.Len(t, runs, 1, "the trigger ran within its time to live")
		assert.True(t, runs[0].trigger)
		assert.Less(t, runs[0].at.Sub(registered), time.Second, "looked for when the job was registered")
	})
}
