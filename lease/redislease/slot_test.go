package redislease

import (
	"strings"
	"testing"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKeySlot_KnownValues(t *testing.T) {
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	tests := []struct {
		tag  string
		want int
	}{
		{"123456789", 0x31C3 & 16383}, // CRC16/XMODEM check value 0x31C3
		{"foo", 12182},
		{"bar", 5061},
		{"", 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, keySlot(tt.tag), "keySlot(%q)", tt.tag)
	}
}

func TestSlotTag_CoversEverySlotWithShortTags(t *testing.T) {
	longest := 0
	for s := range slotCount {
		tag := slotTag(s)
		require.NotEmpty(t, tag, "slot %d has no tag", s)
		require.Equal(t, s, keySlot(tag), "tag %q of slot %d", tag, s)
		require.False(t, strings.ContainsAny(tag, "{}"), "tag %q", tag)
		longest = max(longest, len(tag))
	}
	assert.LessOrEqual(t, longest, 3, "tags stay short")
}

func TestSlotTag_ShortestFirst(t *testing.T) {
	// Every one-character string is the tag of its own slot.
	for i := 0; i < len(tagAlphabet); i++ {
		c := tagAlphabet[i : i+1]
		assert.Equal(t, c, slotTag(keySlot(c)))
	}
}

func TestAppendSlot_RoundTripsEverySlot(t *testing.T) {
	for s := range slotCount {
		enc := string(appendSlot(nil, s))
		require.Len(t, enc, 3)
		got, ok := decodeSlot(enc + strings.Repeat("A", 19))
		require.True(t, ok, "slot %d", s)
		require.Equal(t, s, got)
	}
}

func TestDecodeSlot_Invalid(t *testing.T) {
	tests := map[string]string{
		"first character past D": "EAA" + strings.Repeat("A", 19),
		"highest value":          "___" + strings.Repeat("A", 19),
		"not base64url":          "A.A" + strings.Repeat("A", 19),
		"too short":              "AA",
		"empty":                  "",
	}
	for name, id := range tests {
		t.Run(name, func(t *testing.T) {
			_, ok := decodeSlot(id)
			assert.False(t, ok)
		})
	}
}

func TestNewID_RoutesToSlotAndIsValid(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range []int{0, 1, 4095, 4096, 12182, slotCount - 1} {
		id := newID(s)
		require.NoError(t, leasekit.ValidateID(id))
		got, ok := decodeSlot(id)
		require.True(t, ok)
		assert.Equal(t, s, got)
		assert.False(t, seen[id[3:]], "random part repeats")
		seen[id[3:]] = true
	}
}

// FuzzDecodeSlot: decoding never panics, accepts only slots in range, and
// agrees with appendSlot.
func FuzzDecodeSlot(f *testing.F) {
	for _, s := range []string{"AAA", "D__", "EAA", "___", "", "A", "{}x", "\xff\xfe\xfd", newID(12182)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		s, ok := decodeSlot(id)
		if !ok {
			return
		}
		if s < 0 || s >= slotCount {
			t.Fatalf("decodeSlot(%q) = %d, out of range", id, s)
		}
		if string(appendSlot(nil, s)) != id[:3] {
			t.Fatalf("appendSlot(%d) = %q, want %q", s, string(appendSlot(nil, s)), id[:3])
		}
	})
}
