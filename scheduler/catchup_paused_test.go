package scheduler

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
)

// An occurrence buffered behind a long run (OverlapBufferOne) while the
// job is paused is reported skipped as paused: another replica's catch-up
// claim (it registered the job) was refused as paused, and a paused key
// records the round it refuses as handled, so the buffered claim, when
// the run ends, hears "claimed". Before, the catch-up's refusal was a
// debug line and the occurrence, which ran nowhere, was reported only as
// claimed: seed 54722 of the simulator.
func TestScheduler_CatchUp_RefusedAsPausedReportsTheOccurrence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var (
			mu      sync.Mutex
			skipped = map[SkipReason][]string{}
		)
		observe := func(e Event) {
			if e.Kind == EventSkipped {
				mu.Lock()
				skipped[e.Reason] = append(skipped[e.Reason], e.Occurrence.UTC().Format("15:04:05"))
				mu.Unlock()
			}
		}
		release := make(chan struct{})
		job := func(ctx context.Context) error {
			if r, _ := RunFromContext(ctx); r.Occurrence.Minute() == 1 {
				<-release // the run of 00:01 outlasts 00:02
			}
			return nil
		}
		opts := []JobOption{WithOverlap(OverlapBufferOne), WithCatchUp(5 * time.Minute), WithTTL(30 * time.Second), WithAttempts(1)}

		time.Sleep(30 * time.Second)
		a := newScheduler(t, store, WithInstanceID("a"), WithObserver(observe))
		require.NoError(t, a.Register("report", Every(time.Minute), job, opts...))
		require.NoError(t, a.Start())
		b := newScheduler(t, store, WithInstanceID("b"), WithObserver(observe))
		require.NoError(t, b.Start())

		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute + 30*time.Second))) // 00:01:30: a runs 00:01
		time.Sleep(time.Minute)                                                                    // 00:02:30: 00:02 waits for that run on a
		require.NoError(t, store.SetPause(t.Context(), "job:report", fleet.Pause{By: "ops"}))
		require.NoError(t, b.Register("report", Every(time.Minute), job, opts...)) // its catch-up of 00:02 is refused: paused
		synctest.Wait()
		close(release)
		time.Sleep(5 * time.Second)
		shutdown(t, a)
		shutdown(t, b)

		mu.Lock()
		defer mu.Unlock()
		assert.Contains(t, skipped[SkipPaused], "00:02:00", "00:02 ran nowhere: it is reported skipped as paused (skipped: %v)", skipped)
	})
}
