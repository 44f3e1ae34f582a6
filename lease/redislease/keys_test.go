package redislease

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

func TestKeysFor_Layout(t *testing.T) {
	ks, err := keysFor("cg", "job:a")
	require.NoError(t, err)
	assert.Equal(t, "job:a", ks.storage)
	assert.Equal(t, "job:a", ks.tag)
	assert.Equal(t, "cg:{job:a}", ks.data)
	assert.Equal(t, "cg:fence:{job:a}", ks.fence)
	assert.Equal(t, "cg:round:{job:a}", ks.round)
	assert.Equal(t, keySlot("job:a"), ks.slot)
}

func TestKeysFor_BracesAreHashedOutOfTheTag(t *testing.T) {
	for _, key := range []string{"a{b}c", "{x}", "}", "{", "emoji 🚀 {tag}"} {
		t.Run(key, func(t *testing.T) {
			ks, err := keysFor("cg", key)
			require.NoError(t, err)
			assert.Equal(t, key, ks.storage)
			assert.Equal(t, leasekit.Hash(key), ks.tag)
			assert.False(t, strings.ContainsAny(ks.tag, "{}"))
			assert.Equal(t, "cg:{"+ks.tag+"}", ks.data)
			assert.Equal(t, keySlot(ks.tag), ks.slot)
		})
	}
}

func TestKeysFor_LongKeyIsHashed(t *testing.T) {
	key := strings.Repeat("k", lease.MaxKeyBytes)
	ks, err := keysFor(strings.Repeat("p", 128), key)
	require.NoError(t, err)
	assert.Equal(t, key, ks.storage, "fits the 1000-byte budget")

	long := strings.Repeat("é", lease.MaxKeyBytes/2)
	ks, err = keysFor(strings.Repeat("p", 128), long+long)
	require.NoError(t, err)
	assert.Len(t, ks.storage, 22, "past the budget the key is hashed")
}

// TestIndexKey_SameSlotAsData: for keys with and without braces, the ID
// index key that an issued ID routes to lies in the data key's slot.
func TestIndexKey_SameSlotAsData(t *testing.T) {
	for _, key := range []string{"job:a", "a{b}c", "{x}", "日本語", strings.Repeat("z", 512)} {
		ks, err := keysFor("cg", key)
		require.NoError(t, err)
		id := newID(ks.slot)
		ik, ok := indexKey("cg", id)
		require.True(t, ok)
		assert.True(t, strings.HasPrefix(ik, "cg:id:{"), ik)
		assert.True(t, strings.HasSuffix(ik, "}:"+id), ik)
		assert.Equal(t, clusterSlot(ks.data), clusterSlot(ik), "key %q", key)
		assert.Equal(t, clusterSlot(ks.data), clusterSlot(ks.fence))
		assert.Equal(t, clusterSlot(ks.data), clusterSlot(ks.round))
		assert.Equal(t, "cg:id:{"+slotTag(ks.slot)+"}:"+id, ik)
	}
}

func TestIndexKey_UnroutableID(t *testing.T) {
	_, ok := indexKey("cg", "_"+strings.Repeat("A", 21))
	assert.False(t, ok)
}

// clusterSlot computes a full Redis key's slot the way Redis Cluster does:
// the hash tag between the first { and the next }, if non-empty.
func clusterSlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return keySlot(key[i+1 : i+1+j])
		}
	}
	return keySlot(key)
}
