package redislease

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// The hot path builds keys, IDs and record parts with few allocations. These
// tests pin each fast helper to the plain definition it replaces.

// crc16Bitwise is CRC-16/XMODEM a bit at a time: the definition the table
// in crc16 is computed from.
func crc16Bitwise(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

func FuzzCRC16_TableMatchesBitwise(f *testing.F) {
	for _, s := range []string{"", "123456789", "cg:job:a", "\x00\xff", "日本語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := crc16(s), crc16Bitwise(s); got != want {
			t.Fatalf("crc16(%q) = %#04x, bitwise %#04x", s, got, want)
		}
	})
}

func FuzzJSONString_MatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{"", "job:a", `q"uote`, `back\slash`, "<b>&", "tab\t", "\x7f", "é", "\xff", "\u2028", "host-1/42"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		if got := jsonString(s); got != string(want) {
			t.Fatalf("jsonString(%q) = %s, encoding/json %s", s, got, want)
		}
	})
}

func TestRecordTail_IsJSONOfKeyAndOwner(t *testing.T) {
	for _, kv := range [][2]string{{"job:a", "host/1"}, {`a"b`, ""}, {"日本", "<o>"}} {
		tail := recordTail(kv[0], kv[1])
		var got struct{ Key, Owner string }
		require.NoError(t, json.Unmarshal([]byte("{"+tail), &got), tail)
		assert.Equal(t, kv[0], got.Key)
		assert.Equal(t, kv[1], got.Owner)
	}
}

func TestHeldKeys_AgreeWithKeysForAndIndexKey(t *testing.T) {
	for _, key := range []string{"job:a", "a{b}c", "日本語", strings.Repeat("z", lease.MaxKeyBytes)} {
		ks, err := keysFor("cg", key)
		require.NoError(t, err)
		id, ik := newLeaseID("cg", ks.slot)
		require.NoError(t, leasekit.ValidateID(id))
		want, ok := indexKey("cg", id)
		require.True(t, ok)
		assert.Equal(t, want, ik, "newLeaseID's index key")

		data, index, head, ok := heldKeys("cg", key, id)
		require.True(t, ok, key)
		assert.Equal(t, ks.data, data)
		assert.Equal(t, ik, index)
		assert.Equal(t, recordHead(id), head)
	}
}

func TestHeldKeys_RefusesAnIDOfAnotherSlot(t *testing.T) {
	ks, err := keysFor("cg", "job:a")
	require.NoError(t, err)
	other := (ks.slot + 1) % slotCount
	_, _, _, ok := heldKeys("cg", "job:a", newID(other))
	assert.False(t, ok, "ID routed to another slot")
	_, _, _, ok = heldKeys("cg", "job:a", "not-an-id")
	assert.False(t, ok, "malformed ID")
}

func TestAcquireKeysArgs_Layout(t *testing.T) {
	ks, err := keysFor("cg", "job:a")
	require.NoError(t, err)
	id, ik := newLeaseID("cg", ks.slot)
	o := lease.AcquireOptions{Round: 1700000000000, MaxSkew: 1500e6}
	keys, args := acquireKeysArgs(ks, ik, "", id, 30e9, "job:a", jsonString("me"), o)
	assert.Equal(t, []string{ks.data, ik, ks.fence, ks.round}, keys, "no pause key when the acquire ignores a pause")
	assert.Equal(t, []string{id, "30000", "31000", "41000", `"key":"job:a","owner":"me"}`, "1700000000000", "1500"}, args)
	keys, args = acquireKeysArgs(ks, ik, ks.pause("cg"), id, 30e9, "job:a", jsonString("me"), o)
	assert.Equal(t, []string{ks.data, ik, ks.fence, ks.round, ks.pause("cg")}, keys, "the pause key last when the acquire honours a pause")
	assert.Len(t, args, 7)
}
