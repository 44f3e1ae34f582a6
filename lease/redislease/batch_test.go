package redislease

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

// TestStore_AcquireBatch_ScriptFlushed: a batch sent to a server whose
// script cache was flushed falls back to EVAL and answers every request.
func TestStore_AcquireBatch_ScriptFlushed(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st, err := New(srv.client, WithPrefix(uniquePrefix()))
	require.NoError(t, err)
	ctx := t.Context()
	l, err := st.Acquire(ctx, "warm", time.Minute)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	require.NoError(t, srv.client.Do(ctx, srv.client.B().ScriptFlush().Build()).Error())

	reqs := []lease.AcquireRequest{
		{Key: "a", TTL: time.Minute, Options: []lease.AcquireOption{lease.WithRound(3)}},
		{Key: "b", TTL: time.Minute},
	}
	res := make([]lease.AcquireResult, len(reqs))
	st.AcquireBatch(ctx, reqs, res)
	for i, r := range res {
		require.NoError(t, r.Err, "request %d", i)
		assert.Equal(t, reqs[i].Key, r.Lease.Key)
		require.NoError(t, r.Lease.Release(ctx))
	}
	rounds := make([]int64, 1)
	require.NoError(t, st.LastRounds(ctx, []string{"a"}, rounds))
	assert.Equal(t, int64(3), rounds[0])
}
