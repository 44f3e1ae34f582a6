package fleet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

func TestNext(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	tests := []struct {
		spec string
		want time.Time
	}{
		{"every:60000000000+0", time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC)},
		{"every:3600000000000+900000000000", time.Date(2026, 3, 1, 12, 15, 0, 0, time.UTC)},
		{"cron:UTC:0 2 * * *", time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)},
		{"cron:America/New_York:30 2 * * *", time.Date(2026, 3, 2, 7, 30, 0, 0, time.UTC)},
		{"at:1772366460000", time.UnixMilli(1772366460000)},
		{"at:1000", time.Time{}},
	}
	for _, tt := range tests {
		got, err := Next(tt.spec, at)
		require.NoError(t, err, tt.spec)
		assert.True(t, tt.want.Equal(got), "%s: got %s, want %s", tt.spec, got, tt.want)
	}
	for _, bad := range []string{"", "every:0+0", "every:10+10", "every:x", "cron:Nowhere/Zone:* * * * *", "cron:UTC:@every 5m", "at:soon", "weekly:1"} {
		_, err := Next(bad, at)
		assert.ErrorIs(t, err, lease.ErrInvalidArgument, "%q", bad)
	}
}

// TestNext_LocalZone: a cron spec in "Local" (the zone of the replica that
// registered it) is refused, not read in the zone of the machine reading it.
func TestNext_LocalZone(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	for _, spec := range []string{"cron:Local:0 2 * * *", "cron:Local:@hourly"} {
		got, err := Next(spec, at)
		require.ErrorIs(t, err, ErrLocalZone, spec)
		assert.ErrorIs(t, err, lease.ErrInvalidArgument, spec)
		assert.True(t, got.IsZero(), spec)
	}
}
