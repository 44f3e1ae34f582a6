package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A replica that was stopped (SIGSTOP, a long GC pause, CPU throttling)
// gets gocron's late firings in a burst when it runs again. Only the first
// is the current occurrence's; the others are duplicates of it, not the
// next occurrences': mapped forward, each claim would be refused as too far
// ahead of the store's clock (an error that blames the replica's clock), the
// group's latest occurrence would run ahead of time, and every later firing
// would be mapped one occurrence ahead and refused in turn.
func TestGroup_Occurrence_LateBurstIsNotTheNextOccurrence(t *testing.T) {
	p, err := Every(500*time.Millisecond).compile(time.UTC, time.Now())
	require.NoError(t, err)
	g := &group{plan: p}
	base := time.Date(2026, 11, 25, 19, 39, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

	occ, _ := g.occurrence(at(16_501))
	require.Equal(t, at(16_500).UnixMilli(), occ.UnixMilli())
	// Stopped for 2.5 s: five late firings at once.
	for range 5 {
		occ, _ = g.occurrence(at(19_006))
		assert.Equal(t, at(19_000).UnixMilli(), occ.UnixMilli(), "a late firing maps to the current occurrence, never ahead of it")
	}
	occ, _ = g.occurrence(at(19_501))
	assert.Equal(t, at(19_500).UnixMilli(), occ.UnixMilli(), "the next firing is the next occurrence's")
}

// A firing a whole interval after the group's last one that maps to the
// occurrence already fired is the next occurrence's timer, set on a clock
// that has since stepped back: it claims the next occurrence.
func TestGroup_Occurrence_ClockSteppedBackMapsForward(t *testing.T) {
	p, err := Every(30*time.Second).compile(time.UTC, time.Now())
	require.NoError(t, err)
	g := &group{plan: p}
	base := time.Date(2026, 11, 25, 19, 0, 0, 0, time.UTC)
	occ, _ := g.occurrence(base.Add(30 * time.Second))
	require.Equal(t, base.Add(30*time.Second).UnixMilli(), occ.UnixMilli())
	// The clock stepped back 3 s; the timer fires 30 s after the last firing.
	occ, _ = g.occurrence(base.Add(57 * time.Second))
	assert.Equal(t, base.Add(60*time.Second).UnixMilli(), occ.UnixMilli())
}
