package scheduler

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// steppingClock is a clock whose Now is the wrapped clock's plus an offset
// that a test steps, as NTP steps a wall clock. Timers keep the wrapped
// clock's pace, as a real timer keeps the monotonic clock's.
type steppingClock struct {
	clockwork.Clock
	off atomic.Int64
}

func (c *steppingClock) Now() time.Time                  { return c.Clock.Now().Add(time.Duration(c.off.Load())) }
func (c *steppingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *steppingClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }
func (c *steppingClock) step(d time.Duration)            { c.off.Add(int64(d)) }

// A replica whose clock steps back between two occurrences still claims
// the next one: gocron's timer, set on the old clock, fires when the new
// clock reads 300ms before the occurrence, and that firing is the
// occurrence's (gocron fires each scheduled time once), not a second one of
// the occurrence before it. Every occurrence runs, or is reported.
func TestScheduler_Fire_ClockSteppedBackStillClaimsTheNextOccurrence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil) // the bubble's clock is the store's
		clock := &steppingClock{Clock: clockwork.NewRealClock()}
		var evs events
		occ := newOccurrences()
		s := newScheduler(t, store, WithClock(clock), WithObserver(evs.observe))
		require.NoError(t, s.Register("report", Every(30*time.Second), occ.record))
		time.Sleep(time.Second) // off the grid: the first occurrence is at +30s
		start := time.Now().Truncate(30 * time.Second)
		require.NoError(t, s.Start())
		time.Sleep(44 * time.Second) // between the occurrences at +30s and +60s
		clock.step(-300 * time.Millisecond)
		time.Sleep(60 * time.Second) // past +90s
		shutdown(t, s)

		ms := occ.sorted("report")
		require.Len(t, ms, 3, "the occurrences at +30s, +60s and +90s")
		requireOncePerStep(t, "report", ms, 30*time.Second)
		assert.Equal(t, start.Add(90*time.Second).UnixMilli(), ms[2])
		assert.Empty(t, evs.of(EventMissed))
		assert.Empty(t, evs.of(EventSkipped))
	})
}
