package scheduler

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A release tried again after its first try failed, and answered "not
// found", was taken for released by the first try whose reply was lost.
// That holds only while the store would still remember the lease had it
// expired instead (lease.ExpiredRetention past its expiry, when it answers
// "expired"): past that, "not found" is as likely the lease that expired
// and was forgotten while the replica was cut off. Taken for released, the
// run's end reported a release that never happened, and the close its
// release never wrote (an occurrence given up twice: the simulator's seed
// 2499 of the long mode from 1252).
func TestScheduler_Release_NotFoundAfterTheLeaseWasForgottenIsNoRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &mortalStore{Store: newMemoryStore(t, nil)}
		var evs events
		returns := make(chan struct{})
		s := newScheduler(t, store, WithInstanceID("a"), WithObserver(evs.observe))
		require.NoError(t, s.Register("report", Every(time.Hour), func(ctx context.Context) error {
			<-returns // outlives its lease
			return nil
		}, WithTTL(10*time.Second)))
		time.Sleep(time.Second) // off the hourly grid
		require.NoError(t, s.Start())
		time.Sleep(time.Until(time.Now().Truncate(time.Hour).Add(time.Hour)) + time.Second)
		started := evs.of(EventStarted)
		require.Len(t, started, 1)

		store.kill() // cut off: the lease expires, and is forgotten 11s later
		time.Sleep(40 * time.Second)
		close(returns) // its release fails, and is tried again
		time.Sleep(2 * time.Second)
		store.dead.Store(false) // back: the next try finds no such lease
		time.Sleep(10 * time.Second)
		shutdown(t, s)

		for _, e := range evs.of(EventReleased) {
			assert.NotEqual(t, started[0].Fence, e.Fence, "the run's lease expired: it was not released")
		}
	})
}
