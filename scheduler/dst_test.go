package scheduler

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The scheduler fires through gocron on the same daylight-saving rules it
// maps occurrences with (internal/cronexpr), in America/New_York: on the
// fall-back night an hourly job runs at both 01:00s, a job at 01:30 runs
// once, and a replica started inside the repeated hour agrees; on the
// spring-forward night the hourly job has no 02:00 and a job at 02:30 runs
// at 03:00.
func TestScheduler_DST_NewYork(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	edt := time.FixedZone("EDT", -4*3600)
	est := time.FixedZone("EST", -5*3600)
	tests := []struct {
		name      string
		from, to  time.Time // the window the replicas run in
		lateStart time.Time // a second replica starts here
		expr      string
		want      []time.Time
	}{
		{
			name: "fall back, hourly", expr: "0 * * * *",
			from: time.Date(2024, 11, 2, 23, 30, 0, 0, edt), to: time.Date(2024, 11, 3, 3, 30, 0, 0, est),
			lateStart: time.Date(2024, 11, 3, 1, 20, 0, 0, est),
			want: []time.Time{
				time.Date(2024, 11, 3, 0, 0, 0, 0, edt), time.Date(2024, 11, 3, 1, 0, 0, 0, edt),
				time.Date(2024, 11, 3, 1, 0, 0, 0, est), time.Date(2024, 11, 3, 2, 0, 0, 0, est),
				time.Date(2024, 11, 3, 3, 0, 0, 0, est),
			},
		},
		{
			name: "fall back, 01:30 daily", expr: "30 1 * * *",
			from: time.Date(2024, 11, 2, 23, 30, 0, 0, edt), to: time.Date(2024, 11, 3, 3, 30, 0, 0, est),
			lateStart: time.Date(2024, 11, 3, 1, 20, 0, 0, est),
			want:      []time.Time{time.Date(2024, 11, 3, 1, 30, 0, 0, edt)},
		},
		{
			name: "spring forward, hourly", expr: "0 * * * *",
			from: time.Date(2025, 3, 8, 23, 30, 0, 0, est), to: time.Date(2025, 3, 9, 4, 30, 0, 0, edt),
			lateStart: time.Date(2025, 3, 9, 3, 10, 0, 0, edt),
			want: []time.Time{
				time.Date(2025, 3, 9, 0, 0, 0, 0, est), time.Date(2025, 3, 9, 1, 0, 0, 0, est),
				time.Date(2025, 3, 9, 3, 0, 0, 0, edt), time.Date(2025, 3, 9, 4, 0, 0, 0, edt),
			},
		},
		{
			name: "spring forward, 02:30 daily", expr: "30 2 * * *",
			from: time.Date(2025, 3, 8, 23, 30, 0, 0, est), to: time.Date(2025, 3, 9, 4, 30, 0, 0, edt),
			lateStart: time.Date(2025, 3, 9, 1, 50, 0, 0, est),
			want:      []time.Time{time.Date(2025, 3, 9, 3, 0, 0, 0, edt)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				time.Sleep(time.Until(tt.from)) // nothing runs yet: the bubble jumps
				store := newMemoryStore(t, nil)
				occ := newOccurrences()
				var ev events
				early := newScheduler(t, store, WithInstanceID("early"), WithLocation(ny), WithObserver(ev.observe))
				require.NoError(t, early.Register("dst", Cron(tt.expr), occ.record))
				require.NoError(t, early.Start())
				time.Sleep(time.Until(tt.lateStart))
				late := newScheduler(t, store, WithInstanceID("late"), WithLocation(ny), WithObserver(ev.observe))
				require.NoError(t, late.Register("dst", Cron(tt.expr), occ.record))
				require.NoError(t, late.Start())
				time.Sleep(time.Until(tt.to))
				synctest.Wait()
				shutdown(t, early)
				shutdown(t, late)

				want := make([]int64, len(tt.want))
				for i, w := range tt.want {
					want[i] = w.UnixMilli()
				}
				assert.Equal(t, want, occ.sorted("dst"), "each occurrence of the policy ran once")
				assert.Empty(t, ev.of(EventMissed))
				for _, e := range ev.of(EventSkipped) {
					assert.Contains(t, []SkipReason{SkipClaimed}, e.Reason, "the late replica only lost races: %s", e.Occurrence)
				}
			})
		})
	}
}
