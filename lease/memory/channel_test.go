package memory_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

func done(key string, i int) fleet.Message {
	return fleet.Message{Kind: fleet.MessageDone, Key: key, Outcome: string(rune('a' + i%26))}
}

// TestStore_Subscribe_StopWaitsForLastCall checks that stop returns only
// after fn's call in progress returns, that fn is not called after stop,
// and that stop may be called again, also concurrently.
func TestStore_Subscribe_StopWaitsForLastCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s, err := memory.New()
		require.NoError(t, err)
		entered, unblock := make(chan struct{}), make(chan struct{})
		var calls atomic.Int32
		stop, err := s.Subscribe(ctx, func(fleet.Message) {
			if calls.Add(1) == 1 {
				close(entered)
				<-unblock
			}
		})
		require.NoError(t, err)
		require.NoError(t, s.Publish(ctx, done("k", 0)))
		require.NoError(t, s.Publish(ctx, done("k", 1)))
		<-entered

		var stopped atomic.Int32
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				stop()
				stopped.Add(1)
			})
		}
		synctest.Wait()
		assert.Zero(t, stopped.Load(), "stop waits while fn runs")
		close(unblock)
		wg.Wait()
		assert.Equal(t, int32(2), stopped.Load())
		assert.Equal(t, int32(1), calls.Load(), "the message pending at stop is not delivered")

		require.NoError(t, s.Publish(ctx, done("k", 2)))
		synctest.Wait()
		assert.Equal(t, int32(1), calls.Load(), "nothing after stop")
		stop() // once more, after the end
	})
}

// TestStore_Subscribe_InOrderToEverySubscriber checks that every
// subscription receives every message, in publish order.
func TestStore_Subscribe_InOrderToEverySubscriber(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s, err := memory.New()
		require.NoError(t, err)
		const n = 500
		var got [3][]fleet.Message
		for i := range got {
			stop, err := s.Subscribe(ctx, func(m fleet.Message) { got[i] = append(got[i], m) })
			require.NoError(t, err)
			defer stop()
		}
		var want []fleet.Message
		for i := range n {
			m := done("k", i)
			m.Trigger = string(rune('A' + i/26%26))
			want = append(want, m)
			require.NoError(t, s.Publish(ctx, m))
		}
		synctest.Wait()
		for i := range got {
			assert.Equal(t, want, got[i], "subscriber %d", i)
		}
	})
}

// TestStore_Subscribe_OverflowResyncs checks that a subscriber that falls
// MaxPendingMessages behind loses the newest messages and then receives a
// MessageResync, before anything published after it caught up.
func TestStore_Subscribe_OverflowResyncs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s, err := memory.New()
		require.NoError(t, err)
		unblock := make(chan struct{})
		var got []fleet.Message
		stop, err := s.Subscribe(ctx, func(m fleet.Message) {
			if len(got) == 0 {
				<-unblock
			}
			got = append(got, m)
		})
		require.NoError(t, err)
		defer stop()

		require.NoError(t, s.Publish(ctx, done("first", 0)))
		synctest.Wait() // fn is blocked on the first message
		for i := range memory.MaxPendingMessages + 10 {
			require.NoError(t, s.Publish(ctx, done("backlog", i)), "publish never blocks")
		}
		close(unblock)
		synctest.Wait()
		require.NoError(t, s.Publish(ctx, done("after", 0)))
		synctest.Wait()

		require.Len(t, got, 1+memory.MaxPendingMessages+2)
		assert.Equal(t, "first", got[0].Key)
		assert.Equal(t, done("backlog", memory.MaxPendingMessages-1), got[memory.MaxPendingMessages])
		assert.Equal(t, fleet.Message{Kind: fleet.MessageResync}, got[memory.MaxPendingMessages+1])
		assert.Equal(t, "after", got[memory.MaxPendingMessages+2].Key)
	})
}

// TestStore_Subscribe_OnlySameStore checks that the control channel is the
// Store value's own: another Store's subscribers hear nothing.
func TestStore_Subscribe_OnlySameStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		a, err := memory.New()
		require.NoError(t, err)
		b, err := memory.New()
		require.NoError(t, err)
		var heard atomic.Int32
		stop, err := b.Subscribe(ctx, func(fleet.Message) { heard.Add(1) })
		require.NoError(t, err)
		defer stop()
		_, err = a.AddTrigger(ctx, "k", "ops", time.Minute)
		require.NoError(t, err)
		require.NoError(t, a.Publish(ctx, done("k", 0)))
		synctest.Wait()
		assert.Zero(t, heard.Load())
	})
}

// TestStore_Subscribe_OutlivesContext checks that a subscription lasts
// until stop, not until the context given to Subscribe ends.
func TestStore_Subscribe_OutlivesContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := memory.New()
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		got := make(chan fleet.Message, 1)
		stop, err := s.Subscribe(ctx, func(m fleet.Message) { got <- m })
		require.NoError(t, err)
		defer stop()
		cancel()
		require.NoError(t, s.Publish(t.Context(), done("k", 0)))
		assert.Equal(t, done("k", 0), <-got)
	})
}

func TestStore_Subscribe_Validation(t *testing.T) {
	s, _ := newStore(t)
	stop, err := s.Subscribe(t.Context(), nil)
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
	assert.Nil(t, stop)
	assert.Contains(t, err.Error(), "memory: subscribe: ")
}

func TestStore_Publish_Validation(t *testing.T) {
	s, _ := newStore(t)
	for _, kind := range []fleet.MessageKind{"", fleet.MessageResync} {
		err := s.Publish(t.Context(), fleet.Message{Kind: kind, Key: "k"})
		require.ErrorIs(t, err, lease.ErrInvalidArgument, "kind %q", kind)
	}
	require.NoError(t, s.Publish(t.Context(), fleet.Message{Kind: "custom"}), "other kinds pass, as on Redis")
}
