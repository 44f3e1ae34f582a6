package redislease

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/testutil"
)

// acquireN acquires and releases key n times and returns the greatest
// fence, checking that fences grow.
func acquireN(t *testing.T, st *Store, key string, n int) fencing.Token {
	t.Helper()
	var highest fencing.Token
	for range n {
		l, err := st.Acquire(t.Context(), key, time.Second)
		require.NoError(t, err)
		require.Greater(t, l.Fence, highest)
		highest = l.Fence
		require.NoError(t, l.Release(t.Context()))
	}
	return highest
}

// Fences never go back when Redis loses its data: the fence floor
// (lease.FenceFloor) puts a wiped or rolled-back counter above every fence
// issued before, as long as the server's clock did not go back.
func TestStore_Acquire_FencesSurviveDataLoss(t *testing.T) {
	t.Parallel()
	t.Run("wiped", func(t *testing.T) {
		srv := testutil.StartRedis(t) // no persistence: a restart loses everything
		st, err := New(srv.Client(t), WithPrefix("app"))
		require.NoError(t, err)
		highest := acquireN(t, st, "report", 5)

		srv.Restart()
		n, err := srv.Client(t).Do(t.Context(), srv.Client(t).B().Dbsize().Build()).AsInt64()
		require.NoError(t, err)
		require.Zero(t, n, "the restart lost every key, the fence counter too")

		l, err := st.Acquire(t.Context(), "report", time.Second)
		require.NoError(t, err, "rueidis reconnects")
		assert.Greater(t, l.Fence, highest, "the fence is above all five issued before the wipe")
	})
	t.Run("rolled back", func(t *testing.T) {
		srv := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
		st, err := New(srv.Client(t), WithPrefix("app"))
		require.NoError(t, err)
		second := acquireN(t, st, "report", 2)
		older := filepath.Join(t.TempDir(), "aof")
		srv.CopyAOF(older) // the data after the 2nd acquire
		highest := acquireN(t, st, "report", 3)

		srv.RestartWith(testutil.RestoreAOF(t, older))
		ks, err := keysFor("app", "report")
		require.NoError(t, err)
		counter, err := srv.Client(t).Do(t.Context(), srv.Client(t).B().Get().Key(ks.fence).Build()).AsUint64()
		require.NoError(t, err)
		require.Equal(t, uint64(second), counter, "the restore put the fence counter back to the 2nd acquire's token")
		require.Less(t, counter, uint64(highest))
		l, err := st.Acquire(t.Context(), "report", time.Second)
		require.NoError(t, err)
		assert.Greater(t, l.Fence, highest, "the fence is above all five, though the counter went back to the 2nd")
		assert.Equal(t, lease.FenceFloor(l.AcquiredAt), l.Fence, "it came from the floor")
	})
}
