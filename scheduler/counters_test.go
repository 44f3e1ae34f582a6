package scheduler

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A job's compact counters give the Stats the full counters give, for any
// mix of events.
func TestJobCounters_Snapshot_EqualsFullCounters(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var full counters
	var compact jobCounters
	for range 5000 {
		e := Event{Kind: EventKind(1 + rng.IntN(int(numEventKinds)-1))}
		switch e.Kind {
		case EventSkipped:
			e.Reason = SkipReason(1 + rng.IntN(int(numSkipReasons)-1))
		case EventMissed:
			e.Missed = Missed{Count: 1 + rng.IntN(5)}
		case EventStarted:
			e.CatchUp = rng.IntN(5) == 0
			if rng.IntN(5) == 0 {
				e.Trigger = "t"
			}
		}
		full.count(e)
		compact.count(e)
	}
	assert.Equal(t, full.snapshot(), compact.snapshot())
	assert.NotNil(t, compact.rare.Load(), "rare events made the full set")
}

// A job that only runs, or only loses to other replicas, keeps no full set
// of counters.
func TestJobCounters_Count_HealthyJobKeepsNoFullSet(t *testing.T) {
	var c jobCounters
	for _, e := range []Event{{Kind: EventStarted}, {Kind: EventSucceeded}, {Kind: EventReleased},
		{Kind: EventSkipped, Reason: SkipClaimed}, {Kind: EventSkipped, Reason: SkipLocked}} {
		c.count(e)
	}
	assert.Nil(t, c.rare.Load())
	assert.Equal(t, Stats{Started: 1, Succeeded: 1, Released: 1, SkipClaimed: 1, SkipLocked: 1}, c.snapshot())
}
