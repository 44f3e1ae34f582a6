package scheduler

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Five replicas share one store; their clocks are spread over 40% of the
// interval, some ahead of the store and some behind. Over 210 simulated
// seconds every occurrence of a 1s Every job and of a per-second cron job
// runs exactly once.
func TestScheduler_Run_OncePerOccurrenceUnderClockSkew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil) // the bubble's clock is the "server" clock
		offsets := []time.Duration{-200 * time.Millisecond, -90 * time.Millisecond, 0, 130 * time.Millisecond, 200 * time.Millisecond}
		occ := newOccurrences()
		var replicas []*Scheduler
		for i, off := range offsets {
			s, err := New(store,
				WithLogger(discardLogger()),
				WithInstanceID(fmt.Sprintf("replica-%d", i)),
				WithClock(skewedClock{clockwork.NewRealClock(), off}),
				WithoutControlPlane()) // every replica claims every occurrence (no preferred replica)
			require.NoError(t, err)
			require.NoError(t, s.Register("every", Every(time.Second), occ.record))
			require.NoError(t, s.Register("cron", Cron("* * * * * *"), occ.record))
			require.NoError(t, s.Start())
			replicas = append(replicas, s)
		}
		start := time.Now()
		time.Sleep(210 * time.Second)
		for _, s := range replicas {
			shutdown(t, s)
		}
		synctest.Wait()

		var skipped uint64
		for _, s := range replicas {
			st := s.Stats()
			assert.Zero(t, st.SkipClockSkew, "no replica is skewed beyond half the interval")
			assert.Zero(t, st.AcquireFailed)
			skipped += st.SkipClaimed + st.SkipLocked
		}
		for _, job := range []string{"every", "cron"} {
			ms := occ.sorted(job)
			require.GreaterOrEqual(t, len(ms), 200, job)
			requireOncePerStep(t, job, ms, time.Second)
			// The first occurrence is the first whole second after start
			// reached by the fastest clock; the last is within the window.
			assert.LessOrEqual(t, ms[0], start.Add(time.Second).UnixMilli(), job)
		}
		assert.Greater(t, skipped, uint64(4*200), "the other replicas skipped their firings")
	})
}
