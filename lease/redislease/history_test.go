package redislease

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// The history is a list in the job's slot, beside its status, with no
// expiry, holding the status JSON as recorded (no lease ID), trimmed by the
// release itself (with slack: TestStore_History_TrimmedWithSlack); History
// answers the Store's limit of runs.
func TestStore_History_ListInTheJobsSlot(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t, WithHistoryLimit(3))
	ctx := t.Context()
	var ids []string
	for i := range 5 {
		l, err := st.Acquire(ctx, "job:h", time.Minute, lease.WithOwner("r1/h"))
		require.NoError(t, err)
		ids = append(ids, l.ID)
		_, err = st.ReleaseWithStatus(ctx, l, fleet.Status{Occurrence: time.UnixMilli(int64(i + 1)), Owner: l.Owner,
			Replica: "r1", Attempt: 1, Fence: l.Fence, Started: l.AcquiredAt, Outcome: fleet.OutcomeSucceeded,
			Missed: i / 4}) // the newest run missed one
		require.NoError(t, err)
	}
	ks, err := keysFor(st.prefix, "job:h")
	require.NoError(t, err)
	hk := ks.history(st.prefix)
	assert.Equal(t, st.prefix+":history:{job:h}", hk)
	raw, err := srv.client.Do(ctx, srv.client.B().Lrange().Key(hk).Start(0).Stop(-1).Build()).AsStrSlice()
	require.NoError(t, err)
	require.Len(t, raw, 5, "within the limit and its slack, nothing is trimmed yet")
	status, err := srv.client.Do(ctx, srv.client.B().Get().Key(ks.status(st.prefix)).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, status, raw[0], "the newest entry is the status as recorded")
	assert.Contains(t, raw[0], `"replica":"r1","attempt":1`)
	assert.Contains(t, raw[0], `"missed":1`, "the missed count rides in the status JSON")
	assert.NotContains(t, raw[1], `missed`, "omitted when 0")
	for _, entry := range raw {
		for _, id := range ids {
			assert.NotContains(t, entry, id, "no lease ID")
		}
	}
	ttl, err := srv.client.Do(ctx, srv.client.B().Pttl().Key(hk).Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(-1), ttl, "no expiry")
	assert.Equal(t, st.prefix+":{job:h}", ks.data, "the same hash tag as the lease: the same slot")

	runs, total, err := st.History(ctx, "job:h", 0, 10)
	require.NoError(t, err)
	assert.Equal(t, 3, total)
	require.Len(t, runs, 3)
	assert.Equal(t, []int64{5, 4, 3}, []int64{runs[0].Occurrence.UnixMilli(), runs[1].Occurrence.UnixMilli(), runs[2].Occurrence.UnixMilli()})
	assert.Equal(t, []int{1, 0, 0}, []int{runs[0].Missed, runs[1].Missed, runs[2].Missed})
}

// A release trims the history only once it holds more than the limit and
// its slack, back to the limit: the list never holds more than limit +
// historySlack(limit) entries, and History never shows more than the limit,
// as if each release had trimmed.
func TestStore_History_TrimmedWithSlack(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	const limit = 3
	st := srv.store(t, WithHistoryLimit(limit))
	ctx := t.Context()
	most := limit + historySlack(limit)
	require.Equal(t, 11, most, "a slack of 8 at least")
	ks, err := keysFor(st.prefix, "job:slack")
	require.NoError(t, err)
	hk := ks.history(st.prefix)
	want := 0 // the list's length as the rule says
	for i := range 2*most + 3 {
		l, err := st.Acquire(ctx, "job:slack", time.Minute)
		require.NoError(t, err)
		_, err = st.ReleaseWithStatus(ctx, l, fleet.Status{Occurrence: time.UnixMilli(int64(i + 1)), Owner: l.Owner,
			Replica: "r1", Attempt: 1, Fence: l.Fence, Started: l.AcquiredAt, Outcome: fleet.OutcomeSucceeded})
		require.NoError(t, err)
		if want++; want > most {
			want = limit
		}
		n, err := srv.client.Do(ctx, srv.client.B().Llen().Key(hk).Build()).AsInt64()
		require.NoError(t, err)
		require.EqualValues(t, want, n, "release %d", i+1)

		runs, total, err := st.History(ctx, "job:slack", 0, 100)
		require.NoError(t, err)
		assert.Equal(t, min(i+1, limit), total, "release %d: the total counts the limit at most", i+1)
		require.Len(t, runs, min(i+1, limit), "release %d", i+1)
		assert.Equal(t, int64(i+1), runs[0].Occurrence.UnixMilli(), "release %d: newest first", i+1)
		// A page that reaches past the limit stops at it, though the list
		// holds more.
		page, total, err := st.History(ctx, "job:slack", 2, 5)
		require.NoError(t, err)
		assert.Equal(t, min(i+1, limit), total)
		assert.Len(t, page, min(max(i+1-2, 0), limit-2), "release %d: offset 2", i+1)
		page, _, err = st.History(ctx, "job:slack", limit, 5)
		require.NoError(t, err)
		assert.Empty(t, page, "release %d: nothing past the limit", i+1)
	}
}

// An entry that is not JSON is reported as the store's internal error, not
// skipped.
func TestStore_History_Unreadable(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	ks, err := keysFor(st.prefix, "job:bad")
	require.NoError(t, err)
	require.NoError(t, srv.client.Do(t.Context(), srv.client.B().Lpush().Key(ks.history(st.prefix)).Element("{not json").Build()).Error())
	_, _, err = st.History(t.Context(), "job:bad", 0, 10)
	assert.True(t, errors.Is(err, lease.ErrInternal), "%v", err)

	ks2, err := keysFor(st.prefix, "job:str")
	require.NoError(t, err)
	require.NoError(t, srv.client.Do(t.Context(), srv.client.B().Set().Key(ks2.history(st.prefix)).Value("v").Build()).Error())
	_, _, err = st.History(t.Context(), "job:str", 0, 10)
	assert.Error(t, err, "a key of another type")
}

func TestWithHistoryLimit_Validates(t *testing.T) {
	for _, n := range []int{0, -1, fleet.MaxHistoryLimit + 1} {
		_, err := resolve([]Option{WithHistoryLimit(n)})
		assert.True(t, errors.Is(err, lease.ErrInvalidArgument), "%d: %v", n, err)
		assert.ErrorContains(t, err, "n must be from 1 to 10000")
	}
	c, err := resolve(nil)
	require.NoError(t, err)
	assert.Equal(t, fleet.DefaultHistoryLimit, c.historyLimit)
}
