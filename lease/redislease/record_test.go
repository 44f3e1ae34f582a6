package redislease

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// sampleRecord builds a record the way acquire.lua does.
// recordTail is the client-built end of a record (writeRecordTail) as a
// string.
func recordTail(key, owner string) string {
	var b strings.Builder
	writeRecordTail(&b, key, jsonString(owner))
	return b.String()
}

// recordHead is the record head of the lease with id (recordHeadOpen,
// recordHeadClose), as the keyed scripts compare it.
func recordHead(id string) string {
	return recordHeadOpen + id + recordHeadClose
}

func sampleRecord(id string, exp, acq int64, fence uint64, key, owner string) string {
	return fmt.Sprintf(`{"lockId":"%s","expiresAtMs":%13d,"acquiredAtMs":%13d,"fence":"%015d",`, id, exp, acq, fence) + recordTail(key, owner)
}

func TestRecord_LayoutMatchesScripts(t *testing.T) {
	id := leasekit.NewID()
	r := sampleRecord(id, 1712345678901, 1712345670000, 7, `we"ird{key}`, "o")
	// Offsets the Lua scripts rely on (1-based in Lua, 0-based here).
	assert.Equal(t, `{"lockId":"`, r[0:11])
	assert.Equal(t, id, r[11:33])
	assert.Equal(t, `","expiresAtMs":`, r[33:49])
	assert.Equal(t, "1712345678901", r[49:62])
	assert.Equal(t, r[:49], recordHead(id), "the keyed scripts compare bytes 1-49 with recordHead")
	require.True(t, json.Valid([]byte(r)), r)

	p, err := parseRecord(r)
	require.NoError(t, err)
	assert.Equal(t, id, p.id)
	assert.Equal(t, `we"ird{key}`, p.key)
	assert.Equal(t, "o", p.owner)
	assert.Equal(t, fencing.Token(7), p.fence)
	assert.Equal(t, int64(1712345678901), p.expiresAt.UnixMilli())
	assert.Equal(t, int64(1712345670000), p.acquiredAt.UnixMilli())
}

func TestParseRecord_Garbage(t *testing.T) {
	id := leasekit.NewID()
	good := sampleRecord(id, 1712345678901, 1712345670000, 7, "k", "o")
	tests := map[string]struct {
		raw  string
		want string
	}{
		"not JSON":          {"hello", "not JSON"},
		"empty":             {"", "not JSON"},
		"no lockId":         {`{"expiresAtMs":1,"acquiredAtMs":1,"fence":"000000000000001","key":"k"}`, "no lockId"},
		"no expiresAtMs":    {`{"lockId":"` + id + `","acquiredAtMs":1,"fence":"000000000000001","key":"k"}`, "no expiresAtMs"},
		"no fence":          {`{"lockId":"` + id + `","expiresAtMs":1,"acquiredAtMs":1,"key":"k"}`, "no fence"},
		"no key":            {`{"lockId":"` + id + `","expiresAtMs":1,"acquiredAtMs":1,"fence":"000000000000001"}`, "no key"},
		"bad id":            {strings.Replace(good, id, "short", 1), "malformed lockId"},
		"fence not digits":  {strings.Replace(good, "000000000000007", "00000000000000x", 1), "decimal digits"},
		"fence wrong width": {strings.Replace(good, "000000000000007", "7", 1), "15 digits"},
		"fence overflow":    {strings.Replace(good, "000000000000007", "900000000000001", 1), "overflow"},
		"array":             {`[1,2]`, "not JSON"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := parseRecord(tt.raw)
			require.ErrorIs(t, err, lease.ErrInternal)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestParseFence_Thresholds(t *testing.T) {
	tests := []struct {
		in      string
		want    fencing.Token
		wantErr string
	}{
		{"000000000000001", 1, ""},
		{"090000000000000", 90_000_000_000_000, ""},
		{"090000000000001", 90_000_000_000_001, ""}, // past the warning: still valid
		{"900000000000000", 900_000_000_000_000, ""},
		{"900000000000001", 0, "overflow"},
		{"999999999999999", 0, "overflow"},
		{"000000000000000", 0, "positive"},
		{"00000000000001", 0, "15 digits"},
		{"-00000000000001", 0, "decimal digits"},
		{"+00000000000001", 0, "decimal digits"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseFence(tt.in)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, lease.ErrInternal)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.in, got.String(), "the stored form round-trips")
		})
	}
}

func TestCheckFence_Thresholds(t *testing.T) {
	_, err := checkFence(fenceMax + 1)
	require.ErrorIs(t, err, lease.ErrInternal)
	_, err = checkFence(0)
	require.ErrorIs(t, err, lease.ErrInternal)
	got, err := checkFence(fenceMax)
	require.NoError(t, err)
	assert.Equal(t, fencing.Token(fenceMax), got)
}

// FuzzParseFence: parsing never panics; what parses is in range and
// round-trips to the same 15 characters.
func FuzzParseFence(f *testing.F) {
	for _, s := range []string{"000000000000001", "900000000000000", "900000000000001", "999999999999999", "", "x", "-00000000000001", "0000000000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := parseFence(s)
		if err != nil {
			return
		}
		if tok == 0 || tok > fenceMax {
			t.Fatalf("parseFence(%q) = %d, out of range", s, tok)
		}
		if tok.String() != s {
			t.Fatalf("parseFence(%q) = %s, does not round-trip", s, tok)
		}
	})
}

// FuzzParseRecord: no input panics; errors always wrap lease.ErrInternal.
func FuzzParseRecord(f *testing.F) {
	f.Add(sampleRecord(leasekit.NewID(), 1712345678901, 1712345670000, 7, "k", "o"))
	f.Add(`{"lockId":null}`)
	f.Add(`{"lockId":"AAAAAAAAAAAAAAAAAAAAAA","expiresAtMs":1e99,"acquiredAtMs":-1,"fence":"000000000000001","key":""}`)
	f.Fuzz(func(t *testing.T, raw string) {
		if _, err := parseRecord(raw); err != nil && !errors.Is(err, lease.ErrInternal) {
			t.Fatalf("parseRecord(%q): %v does not wrap lease.ErrInternal", raw, err)
		}
	})
}
