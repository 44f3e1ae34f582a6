package heartbeat

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease/memory"
)

// A heartbeat of a group has no goroutine until its first renewal is due:
// it waits in the group's queue, and the group starts it then.
func TestGroup_Start_WaitsInTheQueueUntilTheFirstRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, err := memory.New()
		require.NoError(t, err)
		g := NewGroup(nil)
		defer g.Close()
		const ttl = 3 * time.Second
		l, err := store.Acquire(t.Context(), "job", ttl)
		require.NoError(t, err)
		_, stop, err := g.Start(t.Context(), store, l, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		require.NoError(t, err)
		queued := func() (n int, state uint8) {
			g.mu.Lock()
			defer g.mu.Unlock()
			if len(g.queue) > 0 {
				state = g.queue[0].state
			}
			return len(g.queue), state
		}

		time.Sleep(ttl/DefaultIntervalDivisor - time.Millisecond)
		n, state := queued()
		assert.Equal(t, 1, n, "waits in the queue before its first renewal")
		assert.Equal(t, stateWaiting, state)

		time.Sleep(2 * time.Millisecond)
		n, _ = queued()
		assert.Zero(t, n, "started when its first renewal came due")
		require.NoError(t, stop())
	})
}

// Stop of a waiting heartbeat takes it out of the queue: nothing of it is
// left for the group to start.
func TestGroup_Stop_TakesAWaitingHeartbeatOutOfTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, err := memory.New()
		require.NoError(t, err)
		g := NewGroup(nil)
		defer g.Close()
		var stops []Stop
		for _, key := range []string{"a", "b", "c"} {
			l, err := store.Acquire(t.Context(), key, 3*time.Second)
			require.NoError(t, err)
			_, stop, err := g.Start(context.Background(), store, l, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
			require.NoError(t, err)
			stops = append(stops, stop)
		}
		require.NoError(t, stops[1]())
		g.mu.Lock()
		assert.Len(t, g.queue, 2)
		for i, h := range g.queue {
			assert.Equal(t, i, h.index, "each knows its place")
		}
		g.mu.Unlock()
		require.NoError(t, stops[0]())
		require.NoError(t, stops[2]())
		g.mu.Lock()
		assert.Empty(t, g.queue)
		g.mu.Unlock()
	})
}
