package scheduler

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A trigger queued while a run goes waits for its end; the release tells
// the run's replica that it waits, and that replica claims it at once,
// even when it is not the trigger's first choice (the first choice found
// the job locked, or heard of nothing, and does not look again by
// itself). Held back a backup's grace, a trigger whose time to live ends
// just after the run lapses.
func TestScheduler_Trigger_TakenAtOnceByTheReplicaItWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		ids := []string{"a", "b"}
		start := time.Now()
		firstOcc := start.Truncate(time.Hour).Add(time.Hour)
		// A job whose second hourly occurrence falls to b and whose
		// triggers fall to a.
		name := jobNameWhere(t, "b", ids, func(v *fleetView, key string) bool {
			return v.choose(key, firstOcc.UnixMilli()).role == roleFirst && v.choose(key, 0).role == roleBackup
		})

		var rs runStarts
		var ended time.Time
		job := func(ctx context.Context) error {
			if r := rs.record(ctx); r.Trigger == "" {
				time.Sleep(10 * time.Second)
				ended = time.Now()
			}
			return nil
		}
		var scheds []*Scheduler
		for _, id := range ids {
			s := newScheduler(t, store, WithInstanceID(id))
			require.NoError(t, s.Register(name, Every(time.Hour), job, WithTTL(time.Minute)))
			require.NoError(t, s.Start())
			scheds = append(scheds, s)
		}
		time.Sleep(time.Until(firstOcc) + time.Second) // b runs the occurrence
		_, err := store.AddTrigger(t.Context(), "job:"+name, "ops", time.Minute)
		require.NoError(t, err)
		time.Sleep(20 * time.Second)
		for _, s := range scheds {
			shutdown(t, s)
		}

		runs := rs.all()
		require.Len(t, runs, 3, "the first occurrence, the second, then the trigger")
		assert.Equal(t, "b", runs[1].replica)
		assert.False(t, runs[1].trigger)
		assert.True(t, runs[2].trigger)
		assert.Equal(t, "b", runs[2].replica, "the replica whose run the trigger waited for runs it")
		assert.Less(t, runs[2].at.Sub(ended), BackupGrace/2, "claimed at once, not after a backup's grace")
	})
}
