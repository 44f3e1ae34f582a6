package redislease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/testutil"
)

// failoverGrace bounds how long the tests retry an acquire after a
// failover while the rueidis sentinel client learns of the new primary
// (+switch-master) and reconnects. Only lease.ErrUnavailable and
// lease.ErrTimeout are retried, and only within this window: it is time
// for the client to reconnect, not a way to hide a wrong answer.
const failoverGrace = 10 * time.Second

// TestStore_Sentinel runs the Store through Sentinel discovery, one
// primary, one replica and three sentinels started once for all subtests.
// The subtests run in order: two of them fail over.
func TestStore_Sentinel(t *testing.T) {
	t.Parallel()
	sn := testutil.StartSentinel(t)
	client := sn.Client(t)

	t.Run("AcquireAcrossFailover", func(t *testing.T) {
		ctx := t.Context()
		st, err := New(client, WithPrefix(uniquePrefix()))
		require.NoError(t, err)

		l, err := st.Acquire(ctx, "before", 30*time.Second)
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))

		sn.Failover(t)

		l2 := acquireAfterFailover(t, st, "after", 30*time.Second)
		assert.Positive(t, l2.Fence)
		locked, err := st.IsLocked(ctx, "after")
		require.NoError(t, err)
		assert.True(t, locked)
		require.NoError(t, l2.Release(ctx))
	})

	t.Run("ReplicaAckFenceNeverMovesBack", func(t *testing.T) {
		ctx := t.Context()
		st, err := New(client, WithPrefix(uniquePrefix()), WithReplicaAck(1, 500*time.Millisecond))
		require.NoError(t, err)

		var highest fencing.Token
		for range 5 {
			l, err := st.Acquire(ctx, "report", 30*time.Second)
			require.NoError(t, err)
			require.Greater(t, l.Fence, highest)
			highest = l.Fence
			require.NoError(t, l.Release(ctx))
		}

		sn.Failover(t)

		l := acquireAfterFailover(t, st, "report", 30*time.Second)
		assert.Greater(t, l.Fence, highest, "a fence handed out after the failover is above every fence handed out before it")
		require.NoError(t, l.Release(ctx))
	})

	t.Run("ReplicaAckShortfallIsUnavailable", func(t *testing.T) {
		ctx := t.Context()
		prefix := uniquePrefix()
		st, err := New(client, WithPrefix(prefix), WithReplicaAck(1, 300*time.Millisecond))
		require.NoError(t, err)
		plain, err := New(client, WithPrefix(prefix))
		require.NoError(t, err)

		first, err := plain.Acquire(ctx, "report", 30*time.Second, lease.WithRound(50))
		require.NoError(t, err)
		require.NoError(t, first.Release(ctx))

		resume := sn.PauseReplica(t)
		_, err = st.Acquire(ctx, "report", 30*time.Second, lease.WithRound(100))
		resume()
		require.ErrorIs(t, err, lease.ErrUnavailable)
		assert.Contains(t, err.Error(), "0 of 1 replicas within 300ms")
		assert.False(t, errors.Is(err, lease.ErrInternal))

		locked, err := plain.IsLocked(ctx, "report")
		require.NoError(t, err)
		assert.False(t, locked, "the unacknowledged lease was released")
		again, err := plain.Acquire(ctx, "report", 30*time.Second, lease.WithRound(100))
		require.NoError(t, err, "the round of the unacknowledged acquire was given back: its occurrence can still run")
		assert.Equal(t, int64(50), again.PrevRound, "the round record was set back to the one before")
		require.NoError(t, again.Release(ctx))

		// Once the replica is back, acks arrive again (the replica catches
		// up on resume; allow it a moment to reconnect).
		var l *lease.Lease
		require.Eventually(t, func() bool {
			l, err = st.Acquire(ctx, "report", 30*time.Second)
			return err == nil
		}, failoverGrace, 50*time.Millisecond, "acquire with a live replica: %v", err)
		require.NoError(t, l.Release(ctx))
	})

	t.Run("WithReplicaAckValidation", func(t *testing.T) {
		for _, tc := range []struct {
			replicas int
			timeout  time.Duration
		}{{0, time.Second}, {-1, time.Second}, {1, 0}, {1, -time.Second}, {1, 1500 * time.Microsecond}} {
			_, err := New(client, WithReplicaAck(tc.replicas, tc.timeout))
			assert.ErrorIs(t, err, lease.ErrInvalidArgument, "WithReplicaAck(%d, %s)", tc.replicas, tc.timeout)
		}
	})
}

// acquireAfterFailover acquires key, retrying lease.ErrUnavailable and
// lease.ErrTimeout for at most failoverGrace while the client follows the
// failover. Any other error fails the test at once.
func acquireAfterFailover(t *testing.T, st *Store, key string, ttl time.Duration) *lease.Lease {
	t.Helper()
	deadline := time.Now().Add(failoverGrace)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		l, err := st.Acquire(ctx, key, ttl)
		cancel()
		if err == nil {
			return l
		}
		transient := errors.Is(err, lease.ErrUnavailable) || errors.Is(err, lease.ErrTimeout)
		require.True(t, transient, "acquire after failover: %v", err)
		require.True(t, time.Now().Before(deadline), "acquire still failing %s after the failover: %v", failoverGrace, err)
		time.Sleep(50 * time.Millisecond)
	}
}
