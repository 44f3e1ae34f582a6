package heartbeat_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// Time-driven tests run in a testing/synctest bubble: the heartbeat's default
// real clock reads the bubble's fake time, and time.Sleep in the test moves
// it forward as soon as every goroutine in the bubble is blocked.

const (
	ttl      = 3 * time.Second
	interval = ttl / heartbeat.DefaultIntervalDivisor   // 1s
	margin   = ttl / heartbeat.DefaultStopMarginDivisor // 500ms
)

func TestStart_Renewals_KeepLeaseAliveForTenTTLs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFakeStore(clockwork.NewRealClock())
		l := acquire(t, store, "job", ttl)
		ctx, stop, rec := startRecorded(t, t.Context(), store, l)

		time.Sleep(10 * ttl)
		synctest.Wait()

		require.NoError(t, ctx.Err(), "heartbeat context must stay alive while renewals succeed")
		_, err := store.LookupID(t.Context(), l.ID)
		assert.NoError(t, err, "lease must still be live in the store")
		ext := rec.of(heartbeat.EventRenewed)
		assert.Len(t, ext, int(10*ttl/interval), "one renewal per interval")
		for i, e := range ext {
			assert.Equal(t, 1, e.Try, "renewal %d", i)
			assert.Equal(t, l.Fence, e.Fence)
			assert.Equal(t, lease.ShortID(l.ID), e.ShortLeaseID)
		}
		assert.Empty(t, rec.of(heartbeat.EventRetrying))

		require.NoError(t, stop())
		assert.ErrorIs(t, context.Cause(ctx), heartbeat.ErrStopped)
		stopped := rec.of(heartbeat.EventStopped)
		require.Len(t, stopped, 1)
		assert.NoError(t, stopped[0].Err)
	})
}

func TestStart_ReleasedBehindBack_CancelsWithLeaseLostWithinInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFakeStore(clockwork.NewRealClock())
		l := acquire(t, store, "job", ttl)
		ctx, stop, rec := startRecorded(t, t.Context(), store, l)
		doneAt := watchDone(ctx)

		time.Sleep(interval + interval/2)
		require.NoError(t, store.Release(t.Context(), l.ID), "release from outside, by ID")
		releasedAt := time.Now()

		done := doneAt()
		assert.LessOrEqual(t, done.Sub(releasedAt), interval, "loss must be noticed within one interval")
		cause := context.Cause(ctx)
		assert.ErrorIs(t, cause, heartbeat.ErrLeaseLost)
		assert.ErrorIs(t, cause, lease.ErrNotHeld, "cause must wrap the store error")
		var nh *lease.NotHeldError
		require.ErrorAs(t, cause, &nh)
		assert.Equal(t, lease.ReasonNotFound, nh.Reason)

		assert.Equal(t, cause, stop(), "stop returns the loss cause")
		lost := rec.of(heartbeat.EventLost)
		require.Len(t, lost, 1)
		assert.Equal(t, cause, lost[0].Err)
		all := rec.all()
		assert.Equal(t, heartbeat.EventStopped, all[len(all)-1].Kind, "stopped is the last event")
	})
}

func TestStart_TransientErrors_RecoverWithoutCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFakeStore(clockwork.NewRealClock())
		const failures = 4
		store.setExtendHook(func(_ context.Context, n int) error {
			if n >= 2 && n < 2+failures { // the second renewal and its first retries fail
				return errUnavailable
			}
			return nil
		})
		l := acquire(t, store, "job", ttl)
		ctx, stop, rec := startRecorded(t, t.Context(), store, l)

		time.Sleep(10 * ttl)
		synctest.Wait()

		require.NoError(t, ctx.Err(), "transient errors followed by recovery must not cancel")
		retries := rec.of(heartbeat.EventRetrying)
		require.Len(t, retries, failures, "every failed attempt is reported")
		for i, e := range retries {
			assert.Equal(t, i+1, e.Try)
			assert.ErrorIs(t, e.Err, lease.ErrUnavailable)
		}
		var recovered bool
		for _, e := range rec.of(heartbeat.EventRenewed) {
			if e.Try == failures+1 {
				recovered = true
			}
		}
		assert.True(t, recovered, "the extend after the failures reports how many attempts it took")
		require.NoError(t, stop())
	})
}

func TestStart_PersistentErrors_CancelUnconfirmedBeforeDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFakeStore(clockwork.NewRealClock())
		store.setExtendHook(func(_ context.Context, n int) error {
			if n >= 2 {
				return errUnavailable
			}
			return nil
		})
		l := acquire(t, store, "job", ttl)
		ctx, stop, rec := startRecorded(t, t.Context(), store, l)
		doneAt := watchDone(ctx)

		done := doneAt()
		deadline := rec.lastDeadline(l.Deadline)
		require.Len(t, rec.of(heartbeat.EventRenewed), 1)
		assert.True(t, done.Before(deadline), "ctx done at %s, not before the local deadline %s", done, deadline)
		assert.Equal(t, deadline.Add(-margin), done, "cancelled at deadline - margin")
		cause := context.Cause(ctx)
		assert.ErrorIs(t, cause, heartbeat.ErrLeaseUnconfirmed)
		assert.ErrorIs(t, cause, lease.ErrUnavailable, "cause must wrap the last store error")
		assert.GreaterOrEqual(t, len(rec.of(heartbeat.EventRetrying)), 4, "retries keep coming until the cut-off")
		assert.Equal(t, cause, stop())
	})
}

func TestStart_HangingExtend_CancelsAtCutoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFakeStore(clockwork.NewRealClock())
		store.setExtendHook(func(ctx context.Context, n int) error {
			if n >= 2 {
				return hang(ctx, n)
			}
			return nil
		})
		l := acquire(t, store, "job", ttl)
		ctx, stop, rec := startRecorded(t, t.Context(), store, l)
		doneAt := watchDone(ctx)

		done := doneAt()
		deadline := rec.lastDeadline(l.Deadline)
		assert.Equal(t, deadline.Add(-margin), done, "the cut-off fires while Extend hangs")
		assert.ErrorIs(t, context.Cause(ctx), heartbeat.ErrLeaseUnconfirmed)
		assert.Equal(t, 2, store.extendCalls(), "one renewal, then the hanging one")
		assert.ErrorIs(t, stop(), heartbeat.ErrLeaseUnconfirmed)
		// The bubble ends only when the hanging Extend's goroutine has returned.
	})
}

func TestStart_ParentCancelled_StopsWithoutLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFakeStore(clockwork.NewRealClock())
		l := acquire(t, store, "job", ttl)
		parent, cancel := context.WithCancelCause(t.Context())
		ctx, stop, rec := startRecorded(t, parent, store, l)

		time.Sleep(interval + interval/2)
		shutdown := errors.New("shutting down")
		cancel(shutdown)
		synctest.Wait()
		calls := store.extendCalls()
		time.Sleep(10 * ttl)
		synctest.Wait()

		assert.Equal(t, calls, store.extendCalls(), "no renewals after the parent is cancelled")
		assert.Equal(t, shutdown, context.Cause(ctx), "ctx carries the parent's cause")
		assert.NoError(t, stop(), "parent cancellation is not a loss")
		assert.Empty(t, rec.of(heartbeat.EventLost))
		stopped := rec.of(heartbeat.EventStopped)
		require.Len(t, stopped, 1)
		assert.NoError(t, stopped[0].Err)
	})
}

func TestStop_Idempotent(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			store := newFakeStore(clockwork.NewRealClock())
			l := acquire(t, store, "job", ttl)
			ctx, stop, rec := startRecorded(t, t.Context(), store, l)
			time.Sleep(interval + interval/2)

			var wg sync.WaitGroup
			errs := make([]error, 8)
			for i := range errs {
				wg.Go(func() { errs[i] = stop() })
			}
			wg.Wait()
			for i, err := range errs {
				assert.NoError(t, err, "concurrent stop %d", i)
			}
			assert.NoError(t, stop(), "stop after stop")
			assert.ErrorIs(t, context.Cause(ctx), heartbeat.ErrStopped)
			assert.Len(t, rec.of(heartbeat.EventStopped), 1, "the heartbeat ends once")
			calls := store.extendCalls()
			time.Sleep(10 * ttl)
			assert.Equal(t, calls, store.extendCalls(), "no renewals after stop")
		})
	})
	t.Run("after loss", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			store := newFakeStore(clockwork.NewRealClock())
			l := acquire(t, store, "job", ttl)
			ctx, stop, err := heartbeat.Start(t.Context(), store, l, heartbeat.WithLogger(discard))
			require.NoError(t, err)
			require.NoError(t, store.Release(t.Context(), l.ID))
			<-ctx.Done()

			first := stop()
			require.ErrorIs(t, first, heartbeat.ErrLeaseLost)
			assert.Equal(t, first, stop(), "every call returns the same cause")
			assert.Equal(t, first, context.Cause(ctx), "stop does not overwrite the loss cause")
		})
	})
}

func TestStart_DeadlinePassed_CancelsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFakeStore(clockwork.NewRealClock())
		l := acquire(t, store, "job", ttl)
		time.Sleep(ttl) // the caller started the heartbeat too late
		start := time.Now()
		ctx, stop, err := heartbeat.Start(t.Context(), store, l, heartbeat.WithLogger(discard))
		require.NoError(t, err)
		<-ctx.Done()
		assert.Equal(t, start, time.Now(), "cancelled without waiting")
		assert.ErrorIs(t, context.Cause(ctx), heartbeat.ErrLeaseUnconfirmed)
		assert.ErrorIs(t, stop(), heartbeat.ErrLeaseUnconfirmed)
	})
}

// TestStart_WithClock_FakeClockDrivesRenewals drives the heartbeat with a
// clockwork fake clock instead of a bubble, and checks that no goroutine
// outlives stop.
func TestStart_WithClock_FakeClockDrivesRenewals(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	clock := clockwork.NewFakeClock()
	store := newFakeStore(clock)
	l := acquire(t, store, "job", ttl)
	ctx, stop, rec := startRecorded(t, t.Context(), store, l, heartbeat.WithClock(clock))

	const step = interval / 4 // renewals fall on steps
	for range 10 * ttl / step {
		// The heartbeat waits for its clock.
		require.NoError(t, idle(t.Context(), clock, l))
		clock.Advance(step)
	}
	require.NoError(t, idle(t.Context(), clock, l))

	require.NoError(t, ctx.Err())
	assert.Len(t, rec.of(heartbeat.EventRenewed), int(10*ttl/interval))
	_, err := store.LookupID(t.Context(), l.ID)
	assert.NoError(t, err)
	require.NoError(t, stop())
	goleak.VerifyNone(t, ignore)
}

// TestStart_WithClock_PersistentErrorsCancelBeforeDeadline checks the
// cut-off on a clockwork fake clock: the context is done before the local
// deadline, as that clock tells time.
func TestStart_WithClock_PersistentErrorsCancelBeforeDeadline(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	clock := clockwork.NewFakeClock()
	store := newFakeStore(clock)
	store.setExtendHook(func(context.Context, int) error { return errUnavailable })
	l := acquire(t, store, "job", ttl)
	ctx, stop, err := heartbeat.Start(t.Context(), store, l, heartbeat.WithClock(clock),
		heartbeat.WithLogger(discard))
	require.NoError(t, err)

	// Wait for the heartbeat to wait for its clock
	// or done, whichever comes first.
	idleOrDone, cancel := context.WithCancel(t.Context())
	defer cancel()
	context.AfterFunc(ctx, cancel)
	const step = 10 * time.Millisecond
	for clock.Now().Before(l.Deadline) {
		if idle(idleOrDone, clock, l) != nil {
			break
		}
		clock.Advance(step)
	}
	require.Error(t, ctx.Err(), "cancelled before the local deadline")
	assert.True(t, clock.Now().Before(l.Deadline), "done at %s, deadline %s", clock.Now(), l.Deadline)
	assert.ErrorIs(t, context.Cause(ctx), heartbeat.ErrLeaseUnconfirmed)
	assert.ErrorIs(t, stop(), lease.ErrUnavailable)
	goleak.VerifyNone(t, ignore)
}

// TestStop_DuringExtend_NoRetryNoLoss: stopping (or cancelling the parent)
// while an Extend is in flight ends that Extend's context; its error must
// not be reported as a retry or a loss. Repeated, since the heartbeat may
// see the Extend's result or the stop first.
func TestStop_DuringExtend_NoRetryNoLoss(t *testing.T) {
	for _, how := range []string{"stop", "parent"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := newFakeStore(clockwork.NewRealClock())
				store.setExtendHook(hang)
				for range 20 {
					l := acquire(t, store, leasekit.NewID(), ttl)
					parent, cancel := context.WithCancel(t.Context())
					_, stop, rec := startRecorded(t, parent, store, l)
					time.Sleep(interval + interval/2) // the first renewal hangs
					if how == "parent" {
						cancel()
					}
					assert.NoError(t, stop())
					cancel()
					assert.Empty(t, rec.of(heartbeat.EventRetrying))
					assert.Empty(t, rec.of(heartbeat.EventLost))
				}
			})
		})
	}
}

// TestStop_BeforeFirstRenewal_NoExtendOneStoppedEvent: a heartbeat stopped
// (or whose parent ends) before its first renewal is due never calls
// Extend, ends once with EventStopped, and reports no loss.
func TestStop_BeforeFirstRenewal_NoExtendOneStoppedEvent(t *testing.T) {
	for _, how := range []string{"stop", "parent"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := newFakeStore(clockwork.NewRealClock())
				l := acquire(t, store, "job", ttl)
				parent, cancel := context.WithCancel(t.Context())
				defer cancel()
				ctx, stop, rec := startRecorded(t, parent, store, l)
				time.Sleep(interval / 2)
				if how == "parent" {
					cancel()
					time.Sleep(10 * ttl) // past the first renewal's time
					synctest.Wait()
				}

				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() { assert.NoError(t, stop()) })
				}
				wg.Wait()
				require.Error(t, ctx.Err())
				assert.Zero(t, store.extendCalls(), "no renewal was due")
				stopped := rec.of(heartbeat.EventStopped)
				require.Len(t, stopped, 1, "the heartbeat ends once")
				assert.NoError(t, stopped[0].Err)
				assert.Equal(t, l.Deadline, stopped[0].Deadline)
				assert.Equal(t, l.Fence, stopped[0].Fence)
				assert.Len(t, rec.all(), 1, "nothing but the stop")
			})
		})
	}
}
