package scheduler

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

// A one-off occurrence (At) whose first choice and backup are both gone
// (two replicas that died together, their registry entries not lapsed
// yet) still runs: a recurring job's occurrence that ran nowhere is
// reported missed by the claim of its next one, but a one-off has no next
// one, so every replica that has the job claims it, and the round lets
// one win. Before, the replica left was chosen for nothing and the
// occurrence ran nowhere, unreported: seed 60034 of the simulator.
func TestScheduler_At_RunsWhenItsFirstChoiceAndBackupAreGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		ids := []string{"gone1", "gone2", "live"}
		at := time.Now().Truncate(time.Second).Add(time.Minute)
		name := jobNameWhere(t, "live", ids, func(v *fleetView, key string) bool {
			first, backup := ranked(v, key, at.UnixMilli())
			return first != "live" && backup != "live"
		})

		ran := newRanBy(t)
		var scheds []*Scheduler
		for _, id := range ids {
			var st lease.Store = store
			if id != "live" {
				st = crashedStore{store} // leaves its registry entry behind
			}
			s := newScheduler(t, st, WithInstanceID(id), WithRegistryRefresh(time.Hour))
			require.NoError(t, s.Register(name, At(at), ran.record))
			require.NoError(t, s.Start())
			scheds = append(scheds, s)
		}
		time.Sleep(10 * time.Second)
		shutdown(t, scheds[0])
		shutdown(t, scheds[1])
		setView(scheds[2], ids, "job:"+name) // both still in its view: their entries lapse in 3 hours
		time.Sleep(time.Until(at) + 2*BackupGrace + time.Second)
		require.Len(t, scheds[2].view.Load().jobs["job:"+name].ids, 3)
		shutdown(t, scheds[2])

		ran.mu.Lock()
		defer ran.mu.Unlock()
		assert.Equal(t, "l", ran.runs[name][at.UnixMilli()], "the one-off occurrence ran on the replica left (its first letter)")
	})
}
