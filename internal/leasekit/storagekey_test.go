package leasekit_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/internal/leasekit"
)

func TestStorageKey(t *testing.T) {
	const budget, reserve = leasekit.KeyBudget, leasekit.KeyReserve
	// fits is the longest key kept as is under prefix "p": 1+len+26 <= 1000.
	fits := strings.Repeat("k", budget-reserve-1)
	long30 := strings.Repeat("j", 30)
	tests := []struct {
		name            string
		prefix, key     string
		budget, reserve int
		want            string
		wantErr         string
	}{
		{"short key kept", "cronguard", "job", budget, reserve, "job", ""},
		{"trailing colons not counted", "p::", fits, budget, reserve, fits, ""},
		{"key with colons kept", "p", "a:b:{c}", budget, reserve, "a:b:{c}", ""},
		{"exactly at budget kept", "p", fits, budget, reserve, fits, ""},
		{"one byte over budget hashed", "p", fits + "k", budget, reserve, leasekit.Hash(fits + "k"), ""},
		{"small budget hashes", "p", long30, 35, 5, leasekit.Hash(long30), ""},
		{"hashed form exactly fits", "p", long30, 1 + 22 + 5, 5, leasekit.Hash(long30), ""},
		{"hashed form one byte too long", "p", long30, 1 + 22 + 4, 5, "", "even hashed"},
		{"budget too small", "cronguard", "job", 10, 5, "", "even hashed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := leasekit.StorageKey(tt.prefix, tt.key, tt.budget, tt.reserve)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, leasekit.ErrInvalidArgument)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.LessOrEqual(t, len(strings.TrimRight(tt.prefix, ":"))+len(got)+tt.reserve, tt.budget)
		})
	}
}

func TestStorageKey_LongKeysDistinct(t *testing.T) {
	a := strings.Repeat("a", 512) + "x"
	b := strings.Repeat("a", 512) + "y"
	ka, err := leasekit.StorageKey("p", a, 500, 26)
	require.NoError(t, err)
	kb, err := leasekit.StorageKey("p", b, 500, 26)
	require.NoError(t, err)
	assert.Len(t, ka, leasekit.IDLen)
	assert.NotEqual(t, ka, kb)
}

func FuzzStorageKey(f *testing.F) {
	f.Add("cronguard", "job", "job2", 1000, 26)
	f.Add("cronguard::", strings.Repeat("k", 512), strings.Repeat("k", 511)+"x", 1000, 26)
	f.Add("p", "a", "b", 30, 5)
	f.Add("", "", "x", 0, 0)
	f.Add("p", "k", "k", -5, 100)
	f.Fuzz(func(t *testing.T, prefix, key, other string, budget, reserve int) {
		got, err := leasekit.StorageKey(prefix, key, budget, reserve)
		if err != nil {
			return
		}
		if p := strings.TrimRight(prefix, ":"); len(p)+len(got) > budget-reserve {
			t.Fatalf("StorageKey(%q, %q, %d, %d) = %q: %d bytes with the prefix, over budget-reserve", prefix, key, budget, reserve, got, len(p)+len(got))
		}
		again, _ := leasekit.StorageKey(prefix, key, budget, reserve)
		if again != got {
			t.Fatalf("StorageKey is not deterministic: %q then %q", got, again)
		}
		if other == key {
			return
		}
		o, err := leasekit.StorageKey(prefix, other, budget, reserve)
		if err == nil && o == got {
			t.Fatalf("keys %q and %q share the storage key %q", key, other, got)
		}
	})
}
