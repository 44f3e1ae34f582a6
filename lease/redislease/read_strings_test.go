package redislease

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStore_LastRounds_OneMGETPerChunk: on a server that is not a Cluster,
// the round records of many keys are read with one MGET per mgetChunk
// keys, not a GET each, and every key gets its own answer, in order.
func TestStore_LastRounds_OneMGETPerChunk(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	ctx := t.Context()
	st := srv.store(t, WithLogger(quietLogger()))
	n := 2*mgetChunk + 7
	keys := make([]string, n)
	var kv []string
	for i := range keys {
		keys[i] = fmt.Sprintf("job:%d", i)
		if i%3 == 0 {
			continue // no round recorded
		}
		ks, err := keysFor(st.prefix, keys[i])
		require.NoError(t, err)
		kv = append(kv, ks.round, strconv.Itoa(1000+i))
	}
	mset := srv.client.B().Mset().KeyValue()
	for i := 0; i < len(kv); i += 2 {
		mset = mset.KeyValue(kv[i], kv[i+1])
	}
	require.NoError(t, srv.client.Do(ctx, mset.Build()).Error())
	require.NoError(t, srv.client.Do(ctx, srv.client.B().ConfigResetstat().Build()).Error())

	rounds := make([]int64, n)
	require.NoError(t, st.LastRounds(ctx, keys, rounds))
	for i, r := range rounds {
		if i%3 == 0 {
			assert.Zero(t, r, "key %d has no round", i)
		} else {
			assert.Equal(t, int64(1000+i), r, "key %d", i)
		}
	}
	stats, err := commandStats(ctx, srv.client)
	require.NoError(t, err)
	assert.EqualValues(t, 3, stats["mget"].calls, "%d keys in chunks of %d", n, mgetChunk)
	assert.Zero(t, stats["get"].calls)
}
