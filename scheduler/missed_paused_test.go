package scheduler

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
)

// An occurrence that ran nowhere while its job was not paused is reported
// missed even when the next occurrence is refused as paused: the refusal
// that records that occurrence's round as handled tells the round before
// it, and the pause's time. Occurrences due after the pause was set, which
// no replica saw either, were paused, not missed. Before, the refusal
// recorded the round and told nothing, so no later claim's ledger could
// report the gap (the simulator's seed 67606 of the lighter fleet: the
// replicas chosen for the occurrence had died together).
func TestScheduler_Missed_ReportedByTheRefusalOfAPausedOccurrence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		base := time.Now() // a whole minute
		at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
		occ := newOccurrences()

		// The first replica runs the occurrence at +30s, and is gone by +60s.
		first := newScheduler(t, store)
		require.NoError(t, first.Register("report", Every(30*time.Second), occ.record))
		time.Sleep(10 * time.Second)
		require.NoError(t, first.Start())
		time.Sleep(time.Until(at(45)))
		shutdown(t, first)

		// +60s runs nowhere; the job is paused at +75s; +90s comes due
		// while paused, with no replica to see it.
		time.Sleep(time.Until(at(75)))
		require.NoError(t, store.SetPause(t.Context(), "job:report", fleet.Pause{By: "ops"}))
		time.Sleep(time.Until(at(100)))

		var evs events
		second := newScheduler(t, store, WithObserver(evs.observe))
		require.NoError(t, second.Register("report", Every(30*time.Second), occ.record))
		require.NoError(t, second.Start())
		time.Sleep(time.Until(at(160))) // +120s and +150s refused as paused
		synctest.Wait()
		shutdown(t, second)

		assert.Equal(t, []int64{at(30).UnixMilli()}, occ.sorted("report"))
		skipped := evs.of(EventSkipped)
		require.Len(t, skipped, 2, "+120s and +150s skipped as paused")
		for _, e := range skipped {
			assert.Equal(t, SkipPaused, e.Reason)
		}
		missed := evs.of(EventMissed)
		require.Len(t, missed, 1, "reported once, by the refusal that recorded +120s")
		assert.Equal(t, Missed{Count: 1, First: at(60).UTC(), Last: at(60).UTC()}, missed[0].Missed, "+60s; +90s was paused")
		assert.Equal(t, at(120).UnixMilli(), missed[0].Occurrence.UnixMilli())
	})
}
