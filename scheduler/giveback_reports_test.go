package scheduler

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

// A claim that wins after Remove gives its lease back unrun; what its win
// told is still reported, as a run reports it: the occurrences between
// the round claimed before and this one ran nowhere (EventMissed), and an
// earlier occurrence the claim found open was given up by it
// (EventGivenUp). Before, the give-back reported neither, and no later
// claim could: the store had recorded this round over both (the
// simulator's seed 80319 of the lighter fleet: an open occurrence,
// superseded by a claim that won after its job was removed, was never
// reported given up).
func TestScheduler_Remove_AClaimGivenBackReportsWhatItsWinTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMemoryStore(t, nil)
		base := time.Now() // a whole minute
		// Attempt 1 of the occurrence at -2m, released open (its holder
		// interrupted), and nothing claimed at -1m.
		l, err := mem.Acquire(t.Context(), JobKeyPrefix+"report", time.Minute, lease.WithRoundTime(base.Add(-2*time.Minute), time.Second),
			lease.WithAttempts(lease.Attempts{Max: 3, Deadline: base.Add(time.Hour)}))
		require.NoError(t, err)
		require.NoError(t, l.Release(t.Context()))

		gate := make(chan struct{})
		store := &gatedFleetStore{Store: mem, key: JobKeyPrefix + "report", gate: gate, entered: make(chan struct{}, 1)}
		var ev events
		var calls atomic.Int32
		s := newScheduler(t, store, WithObserver(ev.observe))
		require.NoError(t, s.Register("report", Every(time.Minute), func(context.Context) error {
			calls.Add(1)
			return nil
		}))
		time.Sleep(time.Minute - time.Second)
		require.NoError(t, s.Start())
		<-store.entered // the claim of the occurrence at +1m waits at the store
		require.NoError(t, s.Remove("report"))
		close(gate)
		synctest.Wait()
		shutdown(t, s)

		assert.Zero(t, calls.Load(), "the removed job is not called")
		missed := ev.of(EventMissed)
		require.Len(t, missed, 1, "the claim's ledger: the occurrences at -1m and 0 ran nowhere")
		assert.Equal(t, Missed{Count: 2, First: base.Add(-time.Minute).UTC(), Last: base.UTC()}, missed[0].Missed)
		givenUp := ev.of(EventGivenUp)
		require.Len(t, givenUp, 1, "the open occurrence the claim superseded")
		assert.True(t, givenUp[0].Occurrence.Equal(base.Add(-2*time.Minute)))
	})
}
