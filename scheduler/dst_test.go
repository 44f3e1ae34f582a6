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
	tests := []dstCase{
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
	runDSTCases(t, ny, tests)
}

// dstCase is a cron job run by two replicas through a transition.
type dstCase struct {
	name      string
	from, to  time.Time // the window the replicas run in
	lateStart time.Time // a second replica starts here
	expr      string
	want      []time.Time
}

// runDSTCases runs each case in a synctest bubble: one replica from the
// start of the window, a second from lateStart, both with location loc;
// the occurrences run must be exactly want, none missed.
func runDSTCases(t *testing.T, loc *time.Location, tests []dstCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				time.Sleep(time.Until(tt.from)) // nothing runs yet: the bubble jumps
				store := newMemoryStore(t, nil)
				occ := newOccurrences()
				var ev events
				early := newScheduler(t, store, WithInstanceID("early"), WithLocation(loc), WithObserver(ev.observe))
				require.NoError(t, early.Register("dst", Cron(tt.expr), occ.record))
				require.NoError(t, early.Start())
				time.Sleep(time.Until(tt.lateStart))
				late := newScheduler(t, store, WithInstanceID("late"), WithLocation(loc), WithObserver(ev.observe))
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

// The scheduler fires through gocron in zones whose clocks change at
// midnight, where a daily job at 00:00 or 00:30 (or 23:30) lands in a gap
// or a repeated hour: each local day runs once (at the end of a gap, in the
// first instance of a repeated hour), an hourly job follows real time, and
// a second replica starting in the middle agrees. The expected instants are
// worked out by hand from the zones' rules.
func TestScheduler_DST_MidnightZones(t *testing.T) {
	at := func(loc *time.Location, month time.Month, day, hour, min int) time.Time {
		return time.Date(2025, month, day, hour, min, 0, 0, loc)
	}
	// Santiago: 2025-04-06 00:00 -03 becomes 2025-04-05 23:00 -04;
	// 2025-09-07 00:00 -04 becomes 01:00 -03.
	clt, clst := time.FixedZone("-04", -4*3600), time.FixedZone("-03", -3*3600)
	// Havana: 2025-03-09 00:00 CST becomes 01:00 CDT; 2025-11-02 01:00 CDT
	// becomes 00:00 CST.
	cst, cdt := time.FixedZone("CST", -5*3600), time.FixedZone("CDT", -4*3600)
	// Cairo: 2025-04-25 00:00 EET becomes 01:00 EEST; 2025-10-30 24:00
	// EEST becomes 23:00 EET.
	eet, eest := time.FixedZone("EET", 2*3600), time.FixedZone("EEST", 3*3600)
	zones := []struct {
		zone  string
		cases []dstCase
	}{
		{"America/Santiago", []dstCase{
			{name: "spring, 00:00 daily runs at 01:00", expr: "0 0 * * *",
				from: at(clt, 9, 6, 22, 30), to: at(clst, 9, 7, 3, 30), lateStart: at(clt, 9, 6, 23, 50),
				want: []time.Time{at(clst, 9, 7, 1, 0)}},
			{name: "spring, 00:30 daily runs at 01:00", expr: "30 0 * * *",
				from: at(clt, 9, 6, 22, 30), to: at(clst, 9, 7, 3, 30), lateStart: at(clst, 9, 7, 1, 10),
				want: []time.Time{at(clst, 9, 7, 1, 0)}},
			{name: "spring, hourly has no 00:00", expr: "0 * * * *",
				from: at(clt, 9, 6, 22, 30), to: at(clst, 9, 7, 3, 30), lateStart: at(clst, 9, 7, 1, 20),
				want: []time.Time{at(clt, 9, 6, 23, 0), at(clst, 9, 7, 1, 0), at(clst, 9, 7, 2, 0), at(clst, 9, 7, 3, 0)}},
			{name: "spring, every 2 hours has no 00:00", expr: "0 */2 * * *",
				from: at(clt, 9, 6, 22, 30), to: at(clst, 9, 7, 3, 30), lateStart: at(clt, 9, 6, 23, 50),
				want: []time.Time{at(clst, 9, 7, 2, 0)}},
			{name: "fall, 23:30 daily runs in the first 23:30", expr: "30 23 * * *",
				from: at(clst, 4, 5, 22, 0), to: at(clt, 4, 6, 1, 0), lateStart: at(clt, 4, 5, 23, 10),
				want: []time.Time{at(clst, 4, 5, 23, 30)}},
			{name: "fall, 00:00 daily runs once", expr: "0 0 * * *",
				from: at(clst, 4, 5, 22, 0), to: at(clt, 4, 6, 1, 0), lateStart: at(clt, 4, 5, 23, 10),
				want: []time.Time{at(clt, 4, 6, 0, 0)}},
			{name: "fall, hourly runs at both 23:00", expr: "0 * * * *",
				from: at(clst, 4, 5, 22, 30), to: at(clt, 4, 6, 1, 30), lateStart: at(clt, 4, 5, 23, 20),
				want: []time.Time{at(clst, 4, 5, 23, 0), at(clt, 4, 5, 23, 0), at(clt, 4, 6, 0, 0), at(clt, 4, 6, 1, 0)}},
		}},
		{"America/Havana", []dstCase{
			{name: "spring, 00:30 daily runs at 01:00", expr: "30 0 * * *",
				from: at(cst, 3, 8, 23, 0), to: at(cdt, 3, 9, 2, 30), lateStart: at(cst, 3, 8, 23, 50),
				want: []time.Time{at(cdt, 3, 9, 1, 0)}},
			{name: "spring, every 2 hours has no 00:00", expr: "0 */2 * * *",
				from: at(cst, 3, 8, 23, 0), to: at(cdt, 3, 9, 2, 30), lateStart: at(cdt, 3, 9, 1, 10),
				want: []time.Time{at(cdt, 3, 9, 2, 0)}},
			{name: "fall, 00:00 daily runs in the first 00:00", expr: "0 0 * * *",
				from: at(cdt, 11, 1, 23, 0), to: at(cst, 11, 2, 2, 0), lateStart: at(cst, 11, 2, 0, 10),
				want: []time.Time{at(cdt, 11, 2, 0, 0)}},
			{name: "fall, 00:30 daily runs in the first 00:30", expr: "30 0 * * *",
				from: at(cdt, 11, 1, 23, 0), to: at(cst, 11, 2, 2, 0), lateStart: at(cst, 11, 2, 0, 10),
				want: []time.Time{at(cdt, 11, 2, 0, 30)}},
			{name: "fall, every 2 hours runs at both 00:00", expr: "0 */2 * * *",
				from: at(cdt, 11, 1, 23, 0), to: at(cst, 11, 2, 1, 30), lateStart: at(cdt, 11, 2, 0, 40),
				want: []time.Time{at(cdt, 11, 2, 0, 0), at(cst, 11, 2, 0, 0)}},
		}},
		{"Africa/Cairo", []dstCase{
			{name: "spring, 00:00 daily runs at 01:00", expr: "0 0 * * *",
				from: at(eet, 4, 24, 23, 0), to: at(eest, 4, 25, 2, 30), lateStart: at(eet, 4, 24, 23, 50),
				want: []time.Time{at(eest, 4, 25, 1, 0)}},
			{name: "spring, 00:30 daily runs at 01:00", expr: "30 0 * * *",
				from: at(eet, 4, 24, 23, 0), to: at(eest, 4, 25, 2, 30), lateStart: at(eest, 4, 25, 1, 10),
				want: []time.Time{at(eest, 4, 25, 1, 0)}},
			{name: "spring, every 2 hours has no 00:00", expr: "0 */2 * * *",
				from: at(eet, 4, 24, 23, 0), to: at(eest, 4, 25, 2, 30), lateStart: at(eet, 4, 24, 23, 50),
				want: []time.Time{at(eest, 4, 25, 2, 0)}},
			{name: "fall, 23:30 daily runs in the first 23:30", expr: "30 23 * * *",
				from: at(eest, 10, 30, 22, 0), to: at(eet, 10, 31, 0, 45), lateStart: at(eet, 10, 30, 23, 10),
				want: []time.Time{at(eest, 10, 30, 23, 30)}},
			{name: "fall, 00:00 daily runs once", expr: "0 0 * * *",
				from: at(eest, 10, 30, 22, 0), to: at(eet, 10, 31, 0, 45), lateStart: at(eest, 10, 30, 23, 40),
				want: []time.Time{at(eet, 10, 31, 0, 0)}},
			{name: "fall, hourly runs at both 23:00", expr: "0 * * * *",
				from: at(eest, 10, 30, 22, 30), to: at(eet, 10, 31, 0, 45), lateStart: at(eet, 10, 30, 23, 20),
				want: []time.Time{at(eest, 10, 30, 23, 0), at(eet, 10, 30, 23, 0), at(eet, 10, 31, 0, 0)}},
		}},
	}
	for _, z := range zones {
		t.Run(z.zone, func(t *testing.T) {
			loc, err := time.LoadLocation(z.zone)
			require.NoError(t, err)
			runDSTCases(t, loc, z.cases)
		})
	}
}
