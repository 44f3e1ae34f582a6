package heartbeat_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/lease/memory"
)

// groupStart starts a heartbeat of g on l, with a recorder as its observer
// and a discarding logger (plus opts), and fails the test if Start does.
func groupStart(t *testing.T, g *heartbeat.Group, parent context.Context, store *memory.Store, key string, opts ...heartbeat.Option) (context.Context, heartbeat.Stop, *recorder) {
	t.Helper()
	rec := &recorder{}
	l := acquire(t, store, key, ttl)
	ctx, stop, err := g.Start(parent, store, l,
		append([]heartbeat.Option{heartbeat.WithObserver(rec.observe), heartbeat.WithLogger(discard)}, opts...)...)
	require.NoError(t, err)
	return ctx, stop, rec
}

// newGroup returns an in-process store and a Group on the real clock (the
// bubble's), closed when the test ends.
func newGroup(t *testing.T) (*memory.Store, *heartbeat.Group) {
	t.Helper()
	store, err := memory.New()
	require.NoError(t, err)
	g := heartbeat.NewGroup(nil)
	t.Cleanup(g.Close)
	return store, g
}

// A heartbeat of a group renews its lease as Start's does, once its first
// renewal is due, and ends cleanly with Stop.
func TestGroup_Start_RenewalsKeepLeaseAliveForTenTTLs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, g := newGroup(t)
		ctx, stop, rec := groupStart(t, g, t.Context(), store, "job")

		time.Sleep(10*ttl + interval/2)
		require.NoError(t, ctx.Err())
		assert.Len(t, rec.of(heartbeat.EventRenewed), int(10*ttl/interval))
		require.NoError(t, stop())
		assert.ErrorIs(t, context.Cause(ctx), heartbeat.ErrStopped)
		assert.Len(t, rec.of(heartbeat.EventStopped), 1)
	})
}

// A lease released behind a group heartbeat's back is found lost at its
// first renewal, within one interval.
func TestGroup_Start_ReleasedBehindBackCancelsWithLeaseLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, g := newGroup(t)
		l := acquire(t, store, "job", ttl)
		ctx, stop, err := g.Start(t.Context(), store, l, heartbeat.WithLogger(discard))
		require.NoError(t, err)
		doneAt := watchDone(ctx)

		time.Sleep(interval / 2)
		require.NoError(t, store.Release(t.Context(), l.ID))
		releasedAt := time.Now()

		assert.LessOrEqual(t, doneAt().Sub(releasedAt), interval)
		assert.ErrorIs(t, context.Cause(ctx), heartbeat.ErrLeaseLost)
		assert.ErrorIs(t, stop(), heartbeat.ErrLeaseLost)
	})
}

// Work that ends before the first renewal is due stops its heartbeat
// without one: Stop returns nil at once, with the stopped event, and the
// store sees no Extend (the lease's expiry is the acquire's).
func TestGroup_Stop_BeforeTheFirstRenewalExtendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, g := newGroup(t)
		ctx, stop, rec := groupStart(t, g, t.Context(), store, "job")
		time.Sleep(interval / 2)
		require.NoError(t, stop())
		assert.ErrorIs(t, context.Cause(ctx), heartbeat.ErrStopped)
		evs := rec.all()
		require.Len(t, evs, 1)
		assert.Equal(t, heartbeat.EventStopped, evs[0].Kind)
		assert.NoError(t, stop(), "Stop is idempotent")

		time.Sleep(2 * interval) // its due time passes: nothing starts
		assert.Len(t, rec.all(), 1)
	})
}

// Heartbeats stopped out of order leave the others due at their time.
func TestGroup_Stop_OutOfOrderLeavesTheOthersRenewing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, g := newGroup(t)
		var stops []heartbeat.Stop
		var recs []*recorder
		for _, key := range []string{"a", "b", "c", "d"} {
			_, stop, rec := groupStart(t, g, t.Context(), store, key)
			stops, recs = append(stops, stop), append(recs, rec)
			time.Sleep(interval / 10)
		}
		require.NoError(t, stops[2]())
		require.NoError(t, stops[0]())
		time.Sleep(interval + interval/2)
		for i, rec := range recs {
			if i == 0 || i == 2 {
				assert.Empty(t, rec.of(heartbeat.EventRenewed), "heartbeat %d was stopped", i)
				continue
			}
			assert.Len(t, rec.of(heartbeat.EventRenewed), 1, "heartbeat %d renews", i)
		}
		require.NoError(t, stops[1]())
		require.NoError(t, stops[3]())
	})
}

// A parent cancelled while the heartbeat waits cancels its context at once
// (a child context), and Stop reports no loss.
func TestGroup_Start_ParentCancelledWhileWaitingStopsWithoutLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, g := newGroup(t)
		parent, cancel := context.WithCancel(t.Context())
		ctx, stop, rec := groupStart(t, g, parent, store, "job")
		time.Sleep(interval / 2)
		cancel()
		synctest.Wait()
		require.ErrorIs(t, ctx.Err(), context.Canceled)
		time.Sleep(interval)
		require.NoError(t, stop())
		assert.Empty(t, rec.of(heartbeat.EventRenewed))
	})
}

// Close starts the heartbeats still waiting: they renew and end with
// their Stop; a Start after Close runs at once.
func TestGroup_Close_StartsTheWaitingHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, err := memory.New()
		require.NoError(t, err)
		g := heartbeat.NewGroup(nil)
		ctx, stop, rec := groupStart(t, g, t.Context(), store, "before")
		time.Sleep(interval / 2)
		g.Close()
		g.Close() // idempotent
		ctx2, stop2, rec2 := groupStart(t, g, t.Context(), store, "after")

		time.Sleep(2*interval + interval/4)
		require.NoError(t, ctx.Err())
		require.NoError(t, ctx2.Err())
		assert.Len(t, rec.of(heartbeat.EventRenewed), 2)
		assert.Len(t, rec2.of(heartbeat.EventRenewed), 2)
		require.NoError(t, stop())
		require.NoError(t, stop2())
	})
}

// A group's heartbeats keep the group's clock: another is refused, by the
// rule's name; the group's own is accepted.
func TestGroup_Start_AnotherClockIsRejected(t *testing.T) {
	clock := clockwork.NewFakeClock()
	g := heartbeat.NewGroup(clock)
	defer g.Close()
	store, err := memory.New(memory.WithClock(clock))
	require.NoError(t, err)
	l := acquire(t, store, "job", ttl)

	_, _, err = g.Start(t.Context(), store, l, heartbeat.WithClock(clockwork.NewFakeClock()))
	require.ErrorIs(t, err, heartbeat.ErrInvalidOption)
	assert.Contains(t, err.Error(), "group's clock")

	ctx, stop, err := g.Start(t.Context(), store, l, heartbeat.WithClock(clock), heartbeat.WithLogger(discard))
	require.NoError(t, err)
	require.NoError(t, stop())
	assert.True(t, errors.Is(context.Cause(ctx), heartbeat.ErrStopped))
}
