package lease_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

func TestStorageKey(t *testing.T) {
	const budget, reserve = lease.StorageKeyBudget, lease.StorageKeyReserve
	// fits is the longest key kept as is under prefix "p": 1+1+len+26 <= 1000.
	fits := strings.Repeat("k", budget-reserve-2)
	long30 := strings.Repeat("j", 30)
	tests := []struct {
		name            string
		prefix, key     string
		budget, reserve int
		want            string
		wantErr         string
	}{
		{"short key kept", "cronguard", "job", budget, reserve, "cronguard:job", ""},
		{"trailing colons stripped", "cronguard::", "job", budget, reserve, "cronguard:job", ""},
		{"key with colons kept", "p", "a:b:{c}", budget, reserve, "p:a:b:{c}", ""},
		{"exactly at budget kept", "p", fits, budget, reserve, "p:" + fits, ""},
		{"one byte over budget hashed", "p", fits + "k", budget, reserve, "p:" + lease.Hash("p:"+fits+"k"), ""},
		{"small budget hashes", "p", long30, 36, 5, "p:" + lease.Hash("p:"+long30), ""},
		{"hashed form exactly fits", "p", long30, 2 + 22 + 5, 5, "p:" + lease.Hash("p:"+long30), ""},
		{"hashed form one byte too long", "p", long30, 2 + 22 + 4, 5, "", "even hashed"},
		{"budget too small", "cronguard", "job", 10, 5, "", "even hashed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := lease.StorageKey(tt.prefix, tt.key, tt.budget, tt.reserve)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, lease.ErrInvalidArgument)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.LessOrEqual(t, len(got)+tt.reserve, tt.budget)
		})
	}
}

func TestStorageKey_LongKeysDistinct(t *testing.T) {
	a := strings.Repeat("a", lease.MaxKeyBytes) + "x"
	b := strings.Repeat("a", lease.MaxKeyBytes) + "y"
	ka, err := lease.StorageKey("p", a, 500, 26)
	require.NoError(t, err)
	kb, err := lease.StorageKey("p", b, 500, 26)
	require.NoError(t, err)
	assert.Len(t, ka, len("p:")+22)
	assert.NotEqual(t, ka, kb)
	kOther, err := lease.StorageKey("q", a, 500, 26)
	require.NoError(t, err)
	assert.NotEqual(t, ka[2:], kOther[2:], "the hash covers the prefix")
}
