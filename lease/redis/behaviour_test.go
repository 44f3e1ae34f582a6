package redis

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

func TestStore_Acquire_RoundOrder(t *testing.T) {
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
	assert.EqualValues(t, 1, l.Fence)
}

func TestStore_Acquire_RoundTooLargeIsInvalid(t *testing.T) {
	st, err := New(startServer(t).client)
	require.NoError(t, err)
	_, err = st.Acquire(t.Context(), "k", time.Second, lease.WithRound(maxRound+1))
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
}

func TestStore_ExtendRelease_ExpiredIsReasonExpired(t *testing.T) {
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

func TestStore_IsLocked_CleanupDeletesOnlyExpiredRecord(t *testing.T) {
	srv := startServer(t)
	ctx := t.Context()
	prefix := uniquePrefix()
	readOnly, err := New(srv.client, WithPrefix(prefix))
	require.NoError(t, err)
	cleaning, err := New(srv.client, WithPrefix(prefix), WithCleanup(true))
	require.NoError(t, err)

	l, err := cleaning.Acquire(ctx, "k", 50*time.Millisecond, lease.WithRound(3))
	require.NoError(t, err)
	ks, _ := keysFor(prefix, "k")
	ik, _ := indexKey(prefix, l.ID)
	exists := func() int64 {
		n, err := srv.client.Do(ctx, srv.client.B().Exists().Key(ks.data, ik).Build()).AsInt64()
		require.NoError(t, err)
		return n
	}

	locked, err := cleaning.IsLocked(ctx, "k")
	require.NoError(t, err)
	require.True(t, locked)
	assert.EqualValues(t, 2, exists(), "a live lease is never cleaned")

	time.Sleep(50*time.Millisecond + lease.ExpiryTolerance + 100*time.Millisecond)
	locked, err = readOnly.IsLocked(ctx, "k")
	require.NoError(t, err)
	assert.False(t, locked)
	assert.EqualValues(t, 2, exists(), "read-only IsLocked deletes nothing")

	locked, err = cleaning.IsLocked(ctx, "k")
	require.NoError(t, err)
	assert.False(t, locked)
	assert.EqualValues(t, 0, exists(), "cleanup deletes data and index")
	n, err := srv.client.Do(ctx, srv.client.B().Exists().Key(ks.fence, ks.round).Build()).AsInt64()
	require.NoError(t, err)
	assert.EqualValues(t, 2, n, "fence and round survive cleanup")
}

func TestStore_UnroutableID_NoIO(t *testing.T) {
	st, err := New(startServer(t).client)
	require.NoError(t, err)
	id := "___" + lease.NewID()[:19]
	var nh *lease.NotHeldError
	require.ErrorAs(t, st.Release(t.Context(), id), &nh)
	assert.Equal(t, lease.ReasonNotFound, nh.Reason)
	_, err = st.Extend(t.Context(), id, time.Second)
	require.ErrorAs(t, err, &nh)
	_, err = st.LookupID(t.Context(), id)
	require.ErrorIs(t, err, lease.ErrNotFound)
}

func TestStore_Acquire_FenceWarningLogged(t *testing.T) {
	srv := startServer(t)
	var buf bytes.Buffer
	st := srv.store(t, WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	ks, _ := keysFor(st.prefix, "secret-key")
	require.NoError(t, srv.client.Do(t.Context(), srv.client.B().Set().Key(ks.fence).Value("90000000000000").Build()).Error())
	l, err := st.Acquire(t.Context(), "secret-key", time.Second)
	require.NoError(t, err)
	assert.EqualValues(t, 90_000_000_000_001, l.Fence)
	assert.Contains(t, buf.String(), "fence counter nearing its limit")
	assert.NotContains(t, buf.String(), "secret-key", "raw keys are not logged")
	assert.NotContains(t, buf.String(), l.ID, "raw IDs are not logged")
}

func TestNew_Options(t *testing.T) {
	client := startServer(t).client
	tests := map[string]Option{
		"nil option":      nil,
		"reserved prefix": WithPrefix("app:fence"),
		"brace prefix":    WithPrefix("a{b}"),
		"empty prefix":    WithPrefix(":"),
		"owner too long":  WithOwner(string(make([]byte, lease.MaxOwnerLen+1))),
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
	clock := clockwork.NewFakeClockAt(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	st := startServer(t).store(t, WithClock(clock))
	l, err := st.Acquire(t.Context(), "k", 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, lease.LocalDeadline(clock.Now(), 10*time.Second), l.Deadline)
	assert.Equal(t, clock.Now().Add(10*time.Second-lease.Drift(10*time.Second)), l.Deadline)
}
