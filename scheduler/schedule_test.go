package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// embedded is a Schedule of another package's kind: it embeds one, and
// holds what == cannot compare.
type embedded struct {
	Schedule
	tags []string
}

// TestSameSchedule: equal schedules of this package's kinds are the same,
// and a Schedule of another kind is never compared (== would panic on
// one that holds a slice).
func TestSameSchedule(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	assert.True(t, sameSchedule(Every(time.Second), Every(time.Second)))
	assert.True(t, sameSchedule(EveryWithOffset(time.Minute, time.Second), EveryWithOffset(time.Minute, time.Second)))
	assert.True(t, sameSchedule(Cron("*/5 * * * *"), Cron("*/5 * * * *")))
	assert.True(t, sameSchedule(At(at), At(at)))
	assert.False(t, sameSchedule(Every(time.Second), Every(2*time.Second)))
	assert.False(t, sameSchedule(Every(time.Minute), Cron("* * * * *")))
	assert.False(t, sameSchedule(Cron("0 * * * *"), Cron("@hourly")))
	a, b := embedded{Schedule: Every(time.Second), tags: []string{"a"}}, embedded{Schedule: Every(time.Second), tags: []string{"a"}}
	assert.NotPanics(t, func() { assert.False(t, sameSchedule(a, b)) })
	assert.False(t, sameSchedule(Every(time.Second), a))
}

// TestScheduler_Register_SchedulesOfAnotherKindInOneGroup: two jobs on
// schedules of another package's kind that compile to one plan share a
// firing group; registering the second does not compare the two.
func TestScheduler_Register_SchedulesOfAnotherKindInOneGroup(t *testing.T) {
	s := newScheduler(t, newMemoryStore(t, nil))
	nop := func(ctx context.Context) error { return nil }
	assert.NotPanics(t, func() {
		assert.NoError(t, s.Register("a", embedded{Schedule: Every(time.Minute), tags: []string{"x"}}, nop))
		assert.NoError(t, s.Register("b", embedded{Schedule: Every(time.Minute), tags: []string{"y"}}, nop))
	})
}
