package lease_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

func TestNormalizeKey(t *testing.T) {
	tests := []struct {
		name, key, want string
		wantErr         string // substring of the error; "" for success
	}{
		{"plain", "job", "job", ""},
		{"colons slashes braces", "a:b/{c}", "a:b/{c}", ""},
		{"emoji", "🔒", "🔒", ""},
		{"decomposed becomes NFC", "cafe\u0301", "caf\u00e9", ""},
		{"exactly 512 bytes", strings.Repeat("k", 512), strings.Repeat("k", 512), ""},
		{"513 bytes, 512 after NFC", strings.Repeat("k", 510) + "e\u0301", strings.Repeat("k", 510) + "\u00e9", ""},
		{"empty", "", "", "must not be empty"},
		{"513 bytes", strings.Repeat("k", 513), "", "at most 512 bytes"},
		{"invalid UTF-8", "a\xffb", "", "valid UTF-8"},
		{"NFC grows past 512", strings.Repeat("k", 510) + "\u0958", "", "at most 512 bytes"}, // U+0958 -> 2 code points, 6 bytes
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := lease.NormalizeKey(tt.key)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, lease.ErrInvalidArgument)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Empty(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestValidateTTL(t *testing.T) {
	tests := []struct {
		ttl     time.Duration
		wantErr string
	}{
		{time.Millisecond, ""},
		{30 * time.Second, ""},
		{lease.MaxTTL, ""},
		{0, "must be positive"},
		{-time.Second, "must be positive"},
		{time.Nanosecond, "whole number of milliseconds"},
		{500 * time.Microsecond, "whole number of milliseconds"},
		{1500 * time.Microsecond, "whole number of milliseconds"},
		{lease.MaxTTL + time.Millisecond, "at most"},
	}
	for _, tt := range tests {
		t.Run(tt.ttl.String(), func(t *testing.T) {
			err := lease.ValidateTTL(tt.ttl)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, lease.ErrInvalidArgument)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestShortID(t *testing.T) {
	assert.Equal(t, "…qrstuv", lease.ShortID("abcdefghijklmnopqrstuv"))
	assert.Equal(t, "abc", lease.ShortID("abc"))
	l := &lease.Lease{ID: "abcdefghijklmnopqrstuv"}
	assert.Equal(t, "…qrstuv", lease.ShortID(l.ID))
}

func TestResolveAcquireOptions(t *testing.T) {
	occ := time.UnixMilli(1_700_000_000_000)
	tests := []struct {
		name    string
		opts    []lease.AcquireOption
		want    lease.AcquireOptions
		wantErr string
	}{
		{"none", nil, lease.AcquireOptions{}, ""},
		{"nil option", []lease.AcquireOption{nil}, lease.AcquireOptions{}, "acquire option must not be nil"},
		{"round", []lease.AcquireOption{lease.WithRound(7)}, lease.AcquireOptions{Round: 7}, ""},
		{"round time", []lease.AcquireOption{lease.WithRoundTime(occ, time.Second)},
			lease.AcquireOptions{Round: occ.UnixMilli(), MaxSkew: time.Second}, ""},
		{"round replaces round time", []lease.AcquireOption{lease.WithRoundTime(occ, time.Second), lease.WithRound(3)},
			lease.AcquireOptions{Round: 3}, ""},
		{"owner", []lease.AcquireOption{lease.WithOwner("host/1")}, lease.AcquireOptions{Owner: "host/1"}, ""},
		{"owner at limit", []lease.AcquireOption{lease.WithOwner(strings.Repeat("o", lease.MaxOwnerLen))},
			lease.AcquireOptions{Owner: strings.Repeat("o", lease.MaxOwnerLen)}, ""},
		{"zero round", []lease.AcquireOption{lease.WithRound(0)}, lease.AcquireOptions{}, "round must be positive"},
		{"negative round", []lease.AcquireOption{lease.WithRound(-5)}, lease.AcquireOptions{}, "round must be positive"},
		{"round time before epoch", []lease.AcquireOption{lease.WithRoundTime(time.Unix(-1, 0), time.Second)},
			lease.AcquireOptions{}, "round must be positive"},
		{"negative skew", []lease.AcquireOption{lease.WithRoundTime(occ, -time.Second)}, lease.AcquireOptions{}, "must not be negative"},
		{"zero skew", []lease.AcquireOption{lease.WithRoundTime(occ, 0)}, lease.AcquireOptions{}, "at least 1ms"},
		{"sub-ms skew", []lease.AcquireOption{lease.WithRoundTime(occ, time.Microsecond)}, lease.AcquireOptions{}, "at least 1ms"},
		{"owner too long", []lease.AcquireOption{lease.WithOwner(strings.Repeat("o", lease.MaxOwnerLen+1))},
			lease.AcquireOptions{}, "owner must be at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := lease.ResolveAcquireOptions(tt.opts)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, lease.ErrInvalidArgument)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want.Round, got.Round)
			assert.Equal(t, tt.want.MaxSkew, got.MaxSkew)
			assert.Equal(t, tt.want.Owner, got.Owner)
		})
	}
}

func TestDrift_LocalDeadline(t *testing.T) {
	assert.Equal(t, 2*time.Millisecond+300*time.Millisecond, leasekit.Drift(30*time.Second))
	sent := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	assert.Equal(t, sent.Add(30*time.Second-302*time.Millisecond), lease.LocalDeadline(sent, 30*time.Second))
}
