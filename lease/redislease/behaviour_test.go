package redislease

import (
	"bytes"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

func TestStore_Acquire_RoundOrder(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	ctx := t.Context()

	l, err := st.Acquire(ctx, "k", 5*time.Second, lease.WithRound(10))
	require.NoError(t, err)
	_, err = st.Acquire(ctx, "k", time.Second, lease.WithRound(11))
	require.ErrorIs(t, err, lease.ErrLocked, "a live lease wins over a newer round")
	require.NoError(t, l.Release(ctx))

	_, err = st.Acquire(ctx, "k", time.Second, lease.WithRound(10))
	require.ErrorIs(t, err, lease.ErrRoundClaimed)
	ks, _ := keysFor(st.prefix, "k")
	round, err := srv.client.Do(ctx, srv.client.B().Get().Key(ks.round).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "10", round)
}

func TestStore_Acquire_ClockSkewRecordsNothing(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	ctx := t.Context()
	ks, _ := keysFor(st.prefix, "k")

	_, err := st.Acquire(ctx, "k", time.Second, lease.WithRoundTime(time.Now().Add(time.Hour), 5*time.Second))
	require.ErrorIs(t, err, lease.ErrClockSkew)
	n, err := srv.client.Do(ctx, srv.client.B().Exists().Key(ks.round, ks.fence, ks.data).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "nothing recorded")

	l, err := st.Acquire(ctx, "k", time.Second, lease.WithRoundTime(time.Now().Add(time.Second), 5*time.Second))
	require.NoError(t, err, "a round within the skew is accepted")
	assert.Equal(t, lease.FenceFloor(l.AcquiredAt), l.Fence, "the first fence is the floor: the refusal took none")
}

func TestStore_Acquire_RoundTooLargeIsInvalid(t *testing.T) {
	t.Parallel()
	st, err := New(startServer(t).client)
	require.NoError(t, err)
	_, err = st.Acquire(t.Context(), "k", time.Second, lease.WithRound(maxRound+1))
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
}

func TestStore_ExtendRelease_ExpiredIsReasonExpired(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	ctx := t.Context()
	l, err := st.Acquire(ctx, "k", 50*time.Millisecond)
	require.NoError(t, err)
	time.Sleep(50*time.Millisecond + lease.ExpiryTolerance + 100*time.Millisecond) // real server: its clock must pass

	var nh *lease.NotHeldError
	_, err = l.Extend(ctx, time.Second)
	require.ErrorAs(t, err, &nh)
	assert.Equal(t, lease.ReasonExpired, nh.Reason)
	require.ErrorAs(t, l.Release(ctx), &nh)
	assert.Equal(t, lease.ReasonExpired, nh.Reason)
	_, err = st.LookupID(ctx, l.ID)
	require.ErrorIs(t, err, lease.ErrNotFound)
}

// TestStore_ExpiredLease_RecordGoesIndexStays: the record's PX ends with
// the lease's liveness and the ID index outlives it by the retention, so an
// expired lease leaves no record to block or to clean up, yet Release and
// Extend still say "expired". Fence and round never expire.
func TestStore_ExpiredLease_RecordGoesIndexStays(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	ctx := t.Context()
	prefix := uniquePrefix()
	st, err := New(srv.client, WithPrefix(prefix))
	require.NoError(t, err)

	const ttl = 50 * time.Millisecond
	l, err := st.Acquire(ctx, "k", ttl, lease.WithRound(3))
	require.NoError(t, err)
	ks, _ := keysFor(prefix, "k")
	ik, _ := indexKey(prefix, l.ID)
	pttl := func(key string) time.Duration {
		ms, err := srv.client.Do(ctx, srv.client.B().Pttl().Key(key).Build()).AsInt64()
		require.NoError(t, err)
		return time.Duration(ms) * time.Millisecond
	}
	assert.LessOrEqual(t, pttl(ks.data), ttl+lease.ExpiryTolerance, "record lives as long as the lease is live")
	assert.Greater(t, pttl(ik), ttl+lease.ExpiryTolerance, "index outlives the record")
	assert.LessOrEqual(t, pttl(ik), ttl+lease.ExpiryTolerance+lease.ExpiredRetention)

	_, err = l.Extend(ctx, ttl)
	require.NoError(t, err)
	assert.LessOrEqual(t, pttl(ks.data), ttl+lease.ExpiryTolerance, "extend keeps the record's PX at ttl + tolerance")
	assert.Greater(t, pttl(ik), ttl+lease.ExpiryTolerance, "extend keeps the index past the record")

	// Redis expires keys on its own clock; there is no fake clock to move.
	time.Sleep(ttl + lease.ExpiryTolerance + 100*time.Millisecond)
	count := func(keys ...string) int64 {
		n, err := srv.client.Do(ctx, srv.client.B().Exists().Key(keys...).Build()).AsInt64()
		require.NoError(t, err)
		return n
	}
	assert.EqualValues(t, 0, count(ks.data), "the record left with the lease's liveness")
	assert.EqualValues(t, 1, count(ik), "the index is retained")
	assert.EqualValues(t, 2, count(ks.fence, ks.round), "fence and round never expire")

	locked, err := st.IsLocked(ctx, "k")
	require.NoError(t, err)
	assert.False(t, locked)
	var nh *lease.NotHeldError
	_, err = l.Extend(ctx, ttl)
	require.ErrorAs(t, err, &nh)
	assert.Equal(t, lease.ReasonExpired, nh.Reason, "keyed extend")
	_, err = st.Extend(ctx, l.ID, ttl)
	require.ErrorAs(t, err, &nh)
	assert.Equal(t, lease.ReasonExpired, nh.Reason, "extend by ID")
	require.ErrorAs(t, st.Release(ctx, l.ID), &nh)
	assert.Equal(t, lease.ReasonExpired, nh.Reason, "release by ID")
	require.ErrorAs(t, l.Release(ctx), &nh)
	assert.Equal(t, lease.ReasonExpired, nh.Reason, "keyed release")
}

func TestStore_UnroutableID_NoIO(t *testing.T) {
	t.Parallel()
	st, err := New(startServer(t).client)
	require.NoError(t, err)
	id := "___" + leasekit.NewID()[:19]
	var nh *lease.NotHeldError
	require.ErrorAs(t, st.Release(t.Context(), id), &nh)
	assert.Equal(t, lease.ReasonNotFound, nh.Reason)
	_, err = st.Extend(t.Context(), id, time.Second)
	require.ErrorAs(t, err, &nh)
	_, err = st.LookupID(t.Context(), id)
	require.ErrorIs(t, err, lease.ErrNotFound)
}

func TestStore_Acquire_FenceWarningLogged(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	var buf bytes.Buffer
	st := srv.store(t, WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	ks, _ := keysFor(st.prefix, "secret-key")
	require.NoError(t, srv.client.Do(t.Context(), srv.client.B().Set().Key(ks.fence).Value("850000000000000").Build()).Error())
	l, err := st.Acquire(t.Context(), "secret-key", time.Second)
	require.NoError(t, err)
	assert.EqualValues(t, 850_000_000_000_001, l.Fence)
	assert.Contains(t, buf.String(), "fence counter nearing its limit")
	assert.NotContains(t, buf.String(), "secret-key", "raw keys are not logged")
	assert.NotContains(t, buf.String(), l.ID, "raw IDs are not logged")
}

// A counter far ahead of the server clock's floor is logged: if the store
// lost it, fences would resume below it.
func TestStore_Acquire_FenceAheadOfFloorLogged(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	var buf bytes.Buffer
	st := srv.store(t, WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	ks, _ := keysFor(st.prefix, "k")
	ahead := lease.FenceFloor(time.Now().Add(24 * time.Hour))
	require.NoError(t, srv.client.Do(t.Context(), srv.client.B().Set().Key(ks.fence).Value(fmt.Sprint(uint64(ahead))).Build()).Error())
	l, err := st.Acquire(t.Context(), "k", time.Second)
	require.NoError(t, err)
	assert.Equal(t, ahead+1, l.Fence, "the counter, not the floor: fences never go back")
	assert.Contains(t, buf.String(), "fence counter runs ahead of the server clock's floor")
}

// A fence counter that is not a number is unreadable: the acquire fails
// and takes nothing, rather than restart the counter.
func TestStore_Acquire_GarbledFenceCounterIsInternal(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	ks, _ := keysFor(st.prefix, "k")
	require.NoError(t, srv.client.Do(t.Context(), srv.client.B().Set().Key(ks.fence).Value("not-a-number").Build()).Error())
	_, err := st.Acquire(t.Context(), "k", time.Second)
	require.ErrorIs(t, err, lease.ErrInternal)
	locked, err := st.IsLocked(t.Context(), "k")
	require.NoError(t, err)
	assert.False(t, locked)
}

func TestNew_Options(t *testing.T) {
	t.Parallel()
	client := startServer(t).client
	tests := map[string]Option{
		"nil option":      nil,
		"reserved prefix": WithPrefix("app:fence"),
		"brace prefix":    WithPrefix("a{b}"),
		"empty prefix":    WithPrefix(":"),
		"nil logger":      WithLogger(nil),
		"nil clock":       WithClock(nil),
	}
	for name, opt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := New(client, opt)
			require.ErrorIs(t, err, lease.ErrInvalidArgument)
		})
	}
	_, err := New(nil)
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
	st, err := New(client, WithPrefix("app::"))
	require.NoError(t, err)
	assert.Equal(t, "app", st.prefix)
}

func TestStore_Acquire_DeadlineFromSendTime(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	st := startServer(t).store(t, WithClock(clock))
	l, err := st.Acquire(t.Context(), "k", 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, lease.LocalDeadline(clock.Now(), 10*time.Second), l.Deadline)
	assert.Equal(t, clock.Now().Add(10*time.Second-leasekit.Drift(10*time.Second)), l.Deadline)
}
