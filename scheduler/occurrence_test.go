package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A firing maps to the latest schedule point at or before the replica's
// clock plus a small slack: gocron fires at a point or late, never early, so
// a late firing (up to an interval less the slack) keeps its occurrence.
func TestPlan_Occurrence_LatestPointAtFiring(t *testing.T) {
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err)
		return tm
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	tests := []struct {
		name     string
		sch      Schedule
		loc      *time.Location
		now      string
		want     string
		wantSkew time.Duration
	}{
		{"every exact", Every(time.Second), time.UTC, "2026-03-01T12:00:05Z", "2026-03-01T12:00:05Z", 500 * time.Millisecond},
		{"every a hair early", Every(time.Second), time.UTC, "2026-03-01T12:00:04.96Z", "2026-03-01T12:00:05Z", 500 * time.Millisecond},
		{"every late", Every(time.Second), time.UTC, "2026-03-01T12:00:05.9Z", "2026-03-01T12:00:05Z", 500 * time.Millisecond},
		{"every 200ms late", Every(200 * time.Millisecond), time.UTC, "2026-03-01T12:00:05.37Z", "2026-03-01T12:00:05.2Z", 100 * time.Millisecond},
		{"every hour capped skew", Every(time.Hour), time.UTC, "2026-03-01T12:00:02Z", "2026-03-01T12:00:00Z", MaxOccurrenceSkew},
		{"every offset", EveryWithOffset(time.Hour, 15*time.Minute), time.UTC, "2026-03-01T12:15:00.01Z", "2026-03-01T12:15:00Z", MaxOccurrenceSkew},
		{"every 1s just before next point", Every(time.Second), time.UTC, "2026-03-01T12:00:05.94Z", "2026-03-01T12:00:05Z", 500 * time.Millisecond},
		{"every 1s within slack of next point", Every(time.Second), time.UTC, "2026-03-01T12:00:05.96Z", "2026-03-01T12:00:06Z", 500 * time.Millisecond},
		{"every 1ms skew floor", Every(time.Millisecond), time.UTC, "2026-03-01T12:00:00.0004Z", "2026-03-01T12:00:00Z", time.Millisecond},
		{"cron seconds a hair early", Cron("* * * * * *"), time.UTC, "2026-03-01T12:00:04.97Z", "2026-03-01T12:00:05Z", 500 * time.Millisecond},
		{"cron seconds late", Cron("* * * * * *"), time.UTC, "2026-03-01T12:00:05.9Z", "2026-03-01T12:00:05Z", 500 * time.Millisecond},
		{"cron hourly late", Cron("0 * * * *"), time.UTC, "2026-03-01T12:00:03Z", "2026-03-01T12:00:00Z", MaxOccurrenceSkew},
		{"cron hourly exact", Cron("@hourly"), time.UTC, "2026-03-01T12:00:00Z", "2026-03-01T12:00:00Z", MaxOccurrenceSkew},
		{"cron every 2s late", Cron("*/2 * * * * *"), time.UTC, "2026-03-01T12:00:05.9Z", "2026-03-01T12:00:04Z", time.Second},
		{"cron location", Cron("0 9 * * *"), berlin, "2026-03-01T08:00:01Z", "2026-03-01T08:00:00Z", MaxOccurrenceSkew},
		{"cron zone prefix", Cron("CRON_TZ=Europe/Berlin 0 9 * * *"), time.UTC, "2026-03-01T08:00:01Z", "2026-03-01T08:00:00Z", MaxOccurrenceSkew},
		{"cron yearly late", Cron("0 0 1 1 *"), time.UTC, "2026-01-01T00:00:02Z", "2026-01-01T00:00:00Z", MaxOccurrenceSkew},
		{"at", At(at("2026-03-01T12:00:00.1234Z")), time.UTC, "2026-03-01T11:59:59.9Z", "2026-03-01T12:00:00.123Z", MaxOccurrenceSkew},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.sch.compile(tt.loc, at("2025-12-31T00:00:00Z"))
			require.NoError(t, err)
			occ, skew := p.occurrence(at(tt.now))
			assert.Equal(t, at(tt.want).UnixNano(), occ.UnixNano(), "occurrence %s", occ.UTC().Format(time.RFC3339Nano))
			assert.Equal(t, tt.wantSkew, skew)
		})
	}
}

// Every replica's gocron fires on the epoch grid, whenever it started.
func TestEveryPlan_Definition_StartsOnGrid(t *testing.T) {
	p := &everyPlan{d: 7 * time.Second, offset: 2 * time.Second}
	now := time.Unix(1_000_000_003, 0)
	_, opts, ok := p.definition(now, 0)
	require.True(t, ok)
	require.Len(t, opts, 1)
	last := p.point(floorDiv(now.UnixNano()-int64(p.offset), int64(p.d)))
	assert.False(t, last.After(now))
	assert.Zero(t, (last.UnixNano()-int64(p.offset))%int64(p.d))
	assert.Less(t, now.Sub(last), p.d)
}
