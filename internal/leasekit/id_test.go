package leasekit_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/internal/leasekit"
)

func TestValidateID(t *testing.T) {
	id := leasekit.NewID()
	tests := []struct {
		name, id, wantErr string
	}{
		{"new ID", id, ""},
		{"all alphabet classes", "AZaz09-_AZaz09-_AZaz09", ""},
		{"empty", "", "22 characters"},
		{"21 chars", id[:21], "22 characters"},
		{"23 chars", id + "A", "22 characters"},
		{"plus", id[:21] + "+", "only [A-Za-z0-9_-]"},
		{"slash", "/" + id[1:], "only [A-Za-z0-9_-]"},
		{"padding", id[:21] + "=", "only [A-Za-z0-9_-]"},
		{"NUL", id[:21] + "\x00", "only [A-Za-z0-9_-]"},
		{"multi-byte of 22 bytes", id[:20] + "é", "only [A-Za-z0-9_-]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := leasekit.ValidateID(tt.id)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, leasekit.ErrInvalidArgument)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestNewID_FormAndUniqueness(t *testing.T) {
	seen := make(map[string]bool)
	for range 1000 {
		id := leasekit.NewID()
		require.NoError(t, leasekit.ValidateID(id))
		require.False(t, seen[id], "duplicate ID %s", id)
		seen[id] = true
	}
}

func TestHash(t *testing.T) {
	h := leasekit.Hash("cronguard:job")
	assert.Len(t, h, 22)
	assert.Equal(t, h, leasekit.Hash("cronguard:job"), "deterministic")
	assert.NotEqual(t, h, leasekit.Hash("cronguard:job2"))
	assert.NoError(t, leasekit.ValidateID(h), "a hash uses the ID alphabet")
}

func TestNormalizePrefix(t *testing.T) {
	tests := []struct {
		name, prefix, want, wantErr string
	}{
		{"default", "cronguard", "cronguard", ""},
		{"nested", "app:prod", "app:prod", ""},
		{"trailing colons stripped", "app::", "app", ""},
		{"reserved word not last", "fence:app", "fence:app", ""},
		{"reserved word as part", "app:fencing", "app:fencing", ""},
		{"128 bytes", strings.Repeat("p", 128), strings.Repeat("p", 128), ""},
		{"empty", "", "", "must not be empty"},
		{"only colons", ":::", "", "must not be empty"},
		{"129 bytes", strings.Repeat("p", 129), "", "at most 128 bytes"},
		{"open brace", "app{x", "", "braces"},
		{"close brace", "app}", "", "braces"},
		{"space", "my app", "", "whitespace"},
		{"tab", "app\t", "", "whitespace"},
		{"DEL", "app\x7f", "", "control"},
		{"invalid UTF-8", "app\xff", "", "UTF-8"},
		{"reserved fence", "app:fence", "", `reserved segment "fence"`},
		{"reserved round", "round", "", `reserved segment "round"`},
		{"reserved id with colon", "app:id:", "", `reserved segment "id"`},
		{"reserved pause", "app:pause", "", `reserved segment "pause"`},
		{"reserved trigger", "trigger", "", `reserved segment "trigger"`},
		{"reserved status", "x:status", "", `reserved segment "status"`},
		{"reserved history", "x:history", "", `reserved segment "history"`},
		{"reserved fleet", "fleet", "", `reserved segment "fleet"`},
		{"reserved sem", "app:sem", "", `reserved segment "sem"`},
		{"reserved queue", "queue:", "", `reserved segment "queue"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := leasekit.NormalizePrefix(tt.prefix)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, leasekit.ErrInvalidArgument)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
