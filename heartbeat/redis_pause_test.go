package heartbeat_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/testutil"
)

// TestStart_Redis_PausedServerCancelsUnconfirmed: redis-server is paused
// (SIGSTOP) for longer than the TTL. The holder is cancelled with
// ErrLeaseUnconfirmed before its local deadline; after the server resumes,
// the old lease is not held any more.
func TestStart_Redis_PausedServerCancelsUnconfirmed(t *testing.T) {
	srv := testutil.StartRedis(t)
	store := newRedisStore(t, srv.Client(t), uniqueRedisPrefix())
	l, err := store.Acquire(t.Context(), "job", redisTTL)
	require.NoError(t, err)
	ctx, stop, rec := startRecorded(t, t.Context(), store, l)
	doneAt := watchDone(ctx)

	time.Sleep(redisTTL / 2)
	require.NoError(t, ctx.Err())
	srv.Pause()
	pausedAt := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()

	done := doneAt()
	assert.True(t, done.Before(rec.lastDeadline(l.Deadline)), "cancelled before the local deadline")
	assert.ErrorIs(t, context.Cause(ctx), heartbeat.ErrLeaseUnconfirmed)
	assert.ErrorIs(t, stop(), heartbeat.ErrLeaseUnconfirmed)

	// Keep the server paused until the lease has expired on its clock, even
	// counting the tolerance, so that an Extend queued before the pause
	// cannot revive it when the server resumes.
	time.Sleep(redisTTL + lease.ExpiryTolerance + 200*time.Millisecond - time.Since(pausedAt))
	srv.Resume()
	resumed = true

	ectx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err = store.Extend(ectx, l.ID, redisTTL)
	require.ErrorIs(t, err, lease.ErrNotHeld, "the old lease must not be held after the pause")
	var nh *lease.NotHeldError
	require.ErrorAs(t, err, &nh)
	assert.Equal(t, lease.ReasonExpired, nh.Reason)
}
