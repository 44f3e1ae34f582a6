package scheduler

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A replica whose earlier run still executes, its lease lost (Redis lost
// its data) before the heartbeat noticed, must not claim the next
// occurrence it cannot run: a claimed occurrence is one the other replicas
// skip and the ledger never reports missed, so it would run nowhere,
// silently. Here the lease of the first run is deleted under it; the
// occurrence that comes while it still runs is skipped as "running here"
// and, since no replica ran it, the next winner reports it missed.
func TestScheduler_RunningHere_LostLeaseDoesNotClaimTheNextOccurrence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		occ := newOccurrences()
		var first atomic.Bool
		job := func(ctx context.Context) error {
			if err := occ.record(ctx); err != nil {
				return err
			}
			if first.CompareAndSwap(false, true) {
				time.Sleep(300 * time.Millisecond)
				// The store loses the lease; the heartbeat (every 2s) has
				// not looked yet when the next occurrence comes.
				_, err := store.ForceRelease(context.Background(), JobKeyPrefix+"tick")
				require.NoError(t, err)
				time.Sleep(1200 * time.Millisecond) // ignores ctx: outlives the next occurrence
			}
			return nil
		}
		var ev events
		s := newScheduler(t, store, WithObserver(ev.observe))
		require.NoError(t, s.Register("tick", Every(time.Second), job, WithTTL(6*time.Second)))
		start := time.Now()
		require.NoError(t, s.Start())
		time.Sleep(3500 * time.Millisecond)
		shutdown(t, s)
		synctest.Wait()

		ran := occ.sorted("tick")
		require.NotEmpty(t, ran)
		accounted := make(map[int64]bool)
		for _, ms := range ran {
			accounted[ms] = true
		}
		for _, m := range ev.of(EventMissed) {
			for o := m.Missed.First; !o.After(m.Missed.Last); o = o.Add(time.Second) {
				accounted[o.UnixMilli()] = true
			}
		}
		var skippedHere []time.Time
		for _, e := range ev.of(EventSkipped) {
			if e.Reason == SkipRunning {
				skippedHere = append(skippedHere, e.Occurrence)
			}
		}
		require.NotEmpty(t, skippedHere, "the occurrence during the first run is skipped as running here")
		last := time.UnixMilli(ran[len(ran)-1])
		for o := time.UnixMilli(ran[0]); o.Before(last); o = o.Add(time.Second) {
			assert.True(t, accounted[o.UnixMilli()], "occurrence %s neither ran nor was reported missed (start %s)",
				o.UTC().Format(time.RFC3339Nano), start.UTC().Format(time.RFC3339Nano))
		}
	})
}
