package memory

import (
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
)

// TestStore_AddTrigger_ExpiredAreSwept checks that triggers nobody
// consumes or counts do not pile up: the queues hold at most about twice
// the live triggers, and empty queues are deleted.
func TestStore_AddTrigger_ExpiredAreSwept(t *testing.T) {
	ctx := t.Context()
	clock := clockwork.NewFakeClock()
	s, err := New(WithClock(clock))
	require.NoError(t, err)
	_, err = s.AddTrigger(ctx, "kept", "ops", time.Hour)
	require.NoError(t, err)
	for i := range 20_000 {
		_, err := s.AddTrigger(ctx, fmt.Sprintf("k%d", i), "ops", time.Millisecond)
		require.NoError(t, err)
		clock.Advance(time.Millisecond)
	}
	s.mu.Lock()
	queued, keys := s.triggers.queued, len(s.triggers.queues)
	s.mu.Unlock()
	assert.LessOrEqual(t, queued, 2*minSweep, "expired triggers were dropped")
	assert.Equal(t, queued, keys, "one trigger per queue here: empty queues were deleted")
	n, err := s.PendingTriggers(ctx, "kept")
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the live trigger survived the sweeps")
}

// TestStore_PublishReplica_LapsedAreDropped checks that the entries of
// replicas that died do not pile up: each publish drops the lapsed ones.
func TestStore_PublishReplica_LapsedAreDropped(t *testing.T) {
	ctx := t.Context()
	clock := clockwork.NewFakeClock()
	s, err := New(WithClock(clock))
	require.NoError(t, err)
	for i := range 1000 {
		_, err := s.PublishReplica(ctx, fleet.Replica{ID: fmt.Sprintf("r%d", i)}, 10*time.Millisecond)
		require.NoError(t, err)
		clock.Advance(time.Millisecond)
	}
	s.mu.Lock()
	entries := len(s.registry.entries)
	s.mu.Unlock()
	assert.Equal(t, 10, entries, "only the entries of the last 10ms remain")
}
