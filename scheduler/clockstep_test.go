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

// The same before the group's first firing: a job registered (or a
// scheduler started) 20s before its first occurrence, whose clock steps
// back 300ms in between, still claims that occurrence. gocron's timer was
// set for it; with no firing before it, the group had nothing to tell it
// from a second firing of the occurrence before registration, and claimed
// that one, which had run: the occurrence ran nowhere and nothing
// reported it (the simulator's seed 2512 of the long mode from 1252).
func TestScheduler_Fire_ClockSteppedBackBeforeTheFirstFiring(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after bool // registered after Start (a group of its own), else before it
	}{{"registered before Start", false}, {"registered after Start", true}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := newMemoryStore(t, nil)
				clock := &steppingClock{Clock: clockwork.NewRealClock()}
				var evs events
				occ := newOccurrences()
				s := newScheduler(t, store, WithClock(clock), WithObserver(evs.observe))
				register := func() { require.NoError(t, s.Register("report", Every(30*time.Second), occ.record)) }
				time.Sleep(10 * time.Second) // 20s before the first occurrence
				first := time.Now().Truncate(30 * time.Second).Add(30 * time.Second)
				if !tc.after {
					register()
				}
				require.NoError(t, s.Start())
				if tc.after {
					register()
				}
				time.Sleep(5 * time.Second)
				clock.step(-300 * time.Millisecond)
				time.Sleep(time.Until(first.Add(30*time.Second)) + time.Second)
				shutdown(t, s)

				ms := occ.sorted("report")
				require.Len(t, ms, 2, "the first two occurrences")
				assert.Equal(t, first.UnixMilli(), ms[0])
				requireOncePerStep(t, "report", ms, 30*time.Second)
				assert.Empty(t, evs.of(EventMissed))
				assert.Empty(t, evs.of(EventSkipped))
			})
		})
	}
}

// The same with a claim lead, for a scheduler started within the lead
// before an occurrence: gocron's first timer is set for the occurrence
// after it (the one within the lead is past its claim time), and the
// group's first firing, early on a clock stepped back since, is that
// occurrence's. The floor of the first firing once ignored the lead: the
// firing mapped to the occurrence at the start, ran it a whole interval
// late, and its own ran nowhere, unreported (the simulator's seed 63653 of
// the lighter fleet).
func TestScheduler_Fire_ClockSteppedBackBeforeTheFirstFiringWithALead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		clock := &steppingClock{Clock: clockwork.NewRealClock()}
		var evs events
		occ := newOccurrences()
		s := newScheduler(t, store, WithClock(clock), WithObserver(evs.observe), WithClaimLead(100*time.Millisecond))
		require.NoError(t, s.Register("report", Every(30*time.Second), occ.record))
		first := time.Now().Truncate(30 * time.Second).Add(30 * time.Second)
		time.Sleep(time.Until(first) - 42*time.Millisecond) // within the lead of the first occurrence
		require.NoError(t, s.Start())
		time.Sleep(10 * time.Second)
		clock.step(-214 * time.Millisecond)
		time.Sleep(time.Until(first.Add(60*time.Second)) + time.Second)
		shutdown(t, s)

		ms := occ.sorted("report")
		require.NotEmpty(t, ms)
		assert.Equal(t, first.Add(60*time.Second).UnixMilli(), ms[len(ms)-1], "the last occurrence ran")
		requireOncePerStep(t, "report", ms, 30*time.Second)
		assert.Contains(t, ms, first.Add(30*time.Second).UnixMilli(), "the occurrence of the first firing ran")
		assert.Empty(t, evs.of(EventMissed))
	})
}
