package redislease

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// TestStore_ReleaseWithStatusBatch_ScriptFlushed: a batch sent to a
// server whose script cache was flushed falls back to EVAL and answers
// every release, the index command of a lease with attempts included.
func TestStore_ReleaseWithStatusBatch_ScriptFlushed(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st, err := New(srv.client, WithPrefix(uniquePrefix()))
	require.NoError(t, err)
	ctx := t.Context()
	probe, err := st.Acquire(ctx, "probe", time.Minute)
	require.NoError(t, err)
	require.NoError(t, probe.Release(ctx))

	plain, err := st.Acquire(ctx, "plain", time.Minute, lease.WithRound(3))
	require.NoError(t, err)
	_, err = st.AddTrigger(ctx, "plain", "ops", time.Minute)
	require.NoError(t, err)
	open, err := st.Acquire(ctx, "open", time.Minute, lease.WithRound(4),
		lease.WithAttempts(lease.Attempts{Max: 2, Deadline: probe.AcquiredAt.Add(time.Hour)}))
	require.NoError(t, err)
	require.NoError(t, srv.client.Do(ctx, srv.client.B().ScriptFlush().Build()).Error())

	leases := []*lease.Lease{plain, open}
	sts := []fleet.Status{
		{Occurrence: time.UnixMilli(3), Outcome: fleet.OutcomeSucceeded},
		{Occurrence: time.UnixMilli(4), Outcome: fleet.OutcomeFailed, Close: fleet.CloseOpen},
	}
	triggers := make([]int, len(leases))
	errs := make([]error, len(leases))
	st.ReleaseWithStatusBatch(ctx, leases, sts, triggers, errs)
	for i := range leases {
		require.NoError(t, errs[i], "entry %d", i)
	}
	assert.Equal(t, []int{1, 0}, triggers)
	for i, l := range leases {
		got, found, err := st.LastStatus(ctx, l.Key)
		require.NoError(t, err)
		require.True(t, found, l.Key)
		assert.Equal(t, sts[i].Outcome, got.Outcome)
	}
	due, err := st.DueOccurrences(ctx, 10)
	require.NoError(t, err)
	require.Len(t, due, 1, "the index command went with the script sent again")
	assert.Equal(t, "open", due[0].Key)
	assert.Equal(t, int64(4), due[0].Round)
}
