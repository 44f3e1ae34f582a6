package cronexpr

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The DST tests compare Next with an oracle that applies the policy's
// definition to a minute-by-minute scan of the instants around each
// transition, independently of the package's period arithmetic.

// dstZones are the zones of the golden tests: northern and southern
// hemisphere, and a 30-minute shift.
var dstZones = []string{"America/New_York", "Europe/London", "Australia/Sydney", "Australia/Lord_Howe"}

// policyCase is an expression with an independent statement of the wall
// times it lists and of its policy.
type policyCase struct {
	expr  string
	fixed bool // fixed hour field: once per local day
	lists func(hour, minute int) bool
}

var policyCases = []policyCase{
	{expr: "30 2 * * *", fixed: true, lists: func(h, m int) bool { return h == 2 && m == 30 }},
	{expr: "30 1 * * *", fixed: true, lists: func(h, m int) bool { return h == 1 && m == 30 }},
	{expr: "0 * * * *", lists: func(_, m int) bool { return m == 0 }},
	{expr: "*/15 * * * *", lists: func(_, m int) bool { return m%15 == 0 }},
}

// transition is a change of a zone's UTC offset: at is the first instant
// with the new offset.
type transition struct {
	at            time.Time
	before, after int
}

func (tr transition) String() string {
	return fmt.Sprintf("%s (%+d -> %+d min)", tr.at.Format(time.RFC3339), tr.before/60, tr.after/60)
}

func offsetAt(loc *time.Location, at time.Time) int {
	_, off := at.In(loc).Zone()
	return off
}

// transitionsIn finds the offset changes of loc in a year by scanning
// hours, then the minutes of an hour that changed.
func transitionsIn(loc *time.Location, year int) []transition {
	var out []transition
	end := time.Date(year+1, 1, 1, 0, 0, 0, 0, time.UTC)
	for s := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC); s.Before(end); s = s.Add(time.Hour) {
		before := offsetAt(loc, s)
		if offsetAt(loc, s.Add(time.Hour)) == before {
			continue
		}
		for m := s.Add(time.Minute); ; m = m.Add(time.Minute) {
			if after := offsetAt(loc, m); after != before {
				out = append(out, transition{at: m, before: before, after: after})
				break
			}
		}
	}
	return out
}

// forEachTransition runs fn for each transition of the DST zones in
// 2024-2030, two a year.
func forEachTransition(t *testing.T, fn func(t *testing.T, loc *time.Location, tr transition)) {
	t.Helper()
	for _, name := range dstZones {
		loc := zone(t, name)
		for year := 2024; year <= 2030; year++ {
			trs := transitionsIn(loc, year)
			require.Len(t, trs, 2, "%s has two transitions in %d", name, year)
			for _, tr := range trs {
				t.Run(name+"/"+tr.at.Format("2006-01-02"), func(t *testing.T) { fn(t, loc, tr) })
			}
		}
	}
}

func TestExpr_Next_DSTGolden(t *testing.T) {
	forEachTransition(t, func(t *testing.T, loc *time.Location, tr transition) {
		from, to := tr.at.Add(-6*time.Hour), tr.at.Add(6*time.Hour)
		sc := scanAround(loc, from, to)
		for _, c := range policyCases {
			e := mustParse(t, c.expr, loc)
			require.Equal(t, !c.fixed, e.FollowsRealTime(), c.expr)
			want := expectedOccurrences(sc, c, from, to)
			got := occurrences(t, e, from.Add(-time.Nanosecond), to)
			assert.Equal(t, local(loc, want), local(loc, got), "%s around %s", c.expr, tr)
		}
	})
}

// TestExpr_Next_DSTReplicaStart: a replica starting at any minute around a
// transition computes exactly the occurrences after its start that a
// replica running all night computes.
func TestExpr_Next_DSTReplicaStart(t *testing.T) {
	forEachTransition(t, func(t *testing.T, loc *time.Location, tr transition) {
		end := tr.at.Add(4 * time.Hour)
		for _, c := range policyCases {
			e := mustParse(t, c.expr, loc)
			allNight := occurrences(t, e, tr.at.Add(-8*time.Hour), end)
			for start := tr.at.Add(-3 * time.Hour); !start.After(tr.at.Add(3 * time.Hour)); start = start.Add(time.Minute) {
				var want []time.Time
				var before time.Time
				for _, at := range allNight {
					if at.After(start) {
						want = append(want, at)
					} else {
						before = at
					}
				}
				got := occurrences(t, e, start, end)
				if !assert.Equal(t, local(loc, want), local(loc, got), "%s started at %s", c.expr, start.In(loc).Format(time.RFC3339)) {
					return
				}
				prev, ok := e.Prev(start)
				require.True(t, ok)
				if !before.IsZero() {
					assert.Equal(t, before, prev, "%s: Prev(%s)", c.expr, start.In(loc).Format(time.RFC3339))
				}
			}
		}
	})
}

// TestExpr_Next_DSTExtremeTransitions covers transitions the golden zones
// lack: a skipped day (Samoa, 2011), a gap at midnight (São Paulo, 2018),
// a two-hour shift (Troll station).
func TestExpr_Next_DSTExtremeTransitions(t *testing.T) {
	cases := append([]policyCase{
		{expr: "0 0 * * *", fixed: true, lists: func(h, m int) bool { return h == 0 && m == 0 }},
		{expr: "0 12 * * *", fixed: true, lists: func(h, m int) bool { return h == 12 && m == 0 }},
		{expr: "15,45 0-5 * * *", fixed: true, lists: func(h, m int) bool { return h <= 5 && (m == 15 || m == 45) }},
	}, policyCases...)
	for _, zy := range []struct {
		zone string
		year int
	}{{"Pacific/Apia", 2011}, {"America/Sao_Paulo", 2018}, {"Antarctica/Troll", 2025}} {
		loc := zone(t, zy.zone)
		trs := transitionsIn(loc, zy.year)
		require.NotEmpty(t, trs)
		for _, tr := range trs {
			from, to := tr.at.Add(-30*time.Hour), tr.at.Add(30*time.Hour)
			sc := scanAround(loc, from, to)
			for _, c := range cases {
				e := mustParse(t, c.expr, loc)
				want := expectedOccurrences(sc, c, from, to)
				got := occurrences(t, e, from.Add(-time.Nanosecond), to)
				assert.Equal(t, local(loc, want), local(loc, got), "%s in %s around %s", c.expr, zy.zone, tr)
			}
		}
	}
}

// TestExpr_Next_NewYorkNights states the policy on one pair of nights.
func TestExpr_Next_NewYorkNights(t *testing.T) {
	ny := zone(t, "America/New_York")
	edt := time.FixedZone("EDT", -4*3600)
	est := time.FixedZone("EST", -5*3600)
	springEve := time.Date(2025, 3, 8, 20, 0, 0, 0, est)
	springMorning := time.Date(2025, 3, 9, 8, 0, 0, 0, edt)
	fallEve := time.Date(2025, 11, 1, 20, 0, 0, 0, edt)
	fallMorning := time.Date(2025, 11, 2, 8, 0, 0, 0, est)
	tests := []struct {
		name     string
		expr     string
		from, to time.Time
		want     []time.Time
	}{
		{
			name: "spring: 02:30 runs once at the end of the gap", expr: "30 2 * * *",
			from: springEve, to: springMorning,
			want: []time.Time{time.Date(2025, 3, 9, 3, 0, 0, 0, edt)},
		},
		{
			name: "spring: 02:00 and 02:30 in the gap are one occurrence", expr: "0,30 2 * * *",
			from: springEve, to: springMorning,
			want: []time.Time{time.Date(2025, 3, 9, 3, 0, 0, 0, edt)},
		},
		{
			name: "spring: hourly has no 02:00", expr: "0 * * * *",
			from: time.Date(2025, 3, 9, 0, 30, 0, 0, est), to: time.Date(2025, 3, 9, 4, 30, 0, 0, edt),
			want: []time.Time{
				time.Date(2025, 3, 9, 1, 0, 0, 0, est),
				time.Date(2025, 3, 9, 3, 0, 0, 0, edt),
				time.Date(2025, 3, 9, 4, 0, 0, 0, edt),
			},
		},
		{
			name: "fall: 01:30 runs once, in the first instance", expr: "30 1 * * *",
			from: fallEve, to: fallMorning,
			want: []time.Time{time.Date(2025, 11, 2, 1, 30, 0, 0, edt)},
		},
		{
			name: "fall: hourly runs at both 01:00", expr: "0 * * * *",
			from: time.Date(2025, 11, 2, 0, 30, 0, 0, edt), to: time.Date(2025, 11, 2, 2, 30, 0, 0, est),
			want: []time.Time{
				time.Date(2025, 11, 2, 1, 0, 0, 0, edt),
				time.Date(2025, 11, 2, 1, 0, 0, 0, est),
				time.Date(2025, 11, 2, 2, 0, 0, 0, est),
			},
		},
		{
			name: "fall: every 15 minutes, 8 times from 01:00 EDT to 01:45 EST", expr: "*/15 * * * *",
			from: time.Date(2025, 11, 2, 1, 0, 0, 0, edt).Add(-time.Nanosecond), to: time.Date(2025, 11, 2, 1, 45, 0, 0, est).Add(time.Nanosecond),
			want: []time.Time{
				time.Date(2025, 11, 2, 1, 0, 0, 0, edt), time.Date(2025, 11, 2, 1, 15, 0, 0, edt),
				time.Date(2025, 11, 2, 1, 30, 0, 0, edt), time.Date(2025, 11, 2, 1, 45, 0, 0, edt),
				time.Date(2025, 11, 2, 1, 0, 0, 0, est), time.Date(2025, 11, 2, 1, 15, 0, 0, est),
				time.Date(2025, 11, 2, 1, 30, 0, 0, est), time.Date(2025, 11, 2, 1, 45, 0, 0, est),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustParse(t, tt.expr, ny)
			got := occurrences(t, e, tt.from, tt.to)
			want := make([]time.Time, len(tt.want))
			for i, w := range tt.want {
				want[i] = w.UTC()
			}
			assert.Equal(t, local(ny, want), local(ny, got))
			assert.Equal(t, want, got, "instants in UTC")
		})
	}
}

// midnightZones change their clocks at midnight, so a daily job at 00:00
// or 00:30 lands in a gap or a repeated hour: Cairo (00:00 -> 01:00 in
// spring; 24:00 -> 23:00 in autumn, repeating the last hour of the day),
// Santiago (the same, in the southern year), Havana (00:00 -> 01:00;
// 01:00 -> 00:00, repeating the first hour of the day). Lord Howe shifts
// by 30 minutes at 02:00.
var midnightZones = []string{"Africa/Cairo", "America/Santiago", "America/Havana", "Australia/Lord_Howe"}

var midnightCases = []policyCase{
	{expr: "0 0 * * *", fixed: true, lists: func(h, m int) bool { return h == 0 && m == 0 }},
	{expr: "30 0 * * *", fixed: true, lists: func(h, m int) bool { return h == 0 && m == 30 }},
	{expr: "30 23 * * *", fixed: true, lists: func(h, m int) bool { return h == 23 && m == 30 }},
	{expr: "0 * * * *", lists: func(_, m int) bool { return m == 0 }},
	{expr: "0 */2 * * *", lists: func(h, m int) bool { return h%2 == 0 && m == 0 }},
}

// TestExpr_Next_DSTMidnightZones: across every transition of 2024-2030 in
// the midnight zones, the occurrences are the oracle's (the documented rule
// applied to a minute-by-minute scan), a daily expression runs exactly once
// on every local day (none skipped, none doubled), and a replica starting
// at any point agrees.
func TestExpr_Next_DSTMidnightZones(t *testing.T) {
	for _, name := range midnightZones {
		loc := zone(t, name)
		for year := 2024; year <= 2030; year++ {
			trs := transitionsIn(loc, year)
			require.Len(t, trs, 2, "%s has two transitions in %d", name, year)
			for _, tr := range trs {
				t.Run(name+"/"+tr.at.Format("2006-01-02"), func(t *testing.T) {
					from, to := tr.at.Add(-30*time.Hour), tr.at.Add(30*time.Hour)
					sc := scanAround(loc, from, to)
					for _, c := range midnightCases {
						e := mustParse(t, c.expr, loc)
						require.Equal(t, !c.fixed, e.FollowsRealTime(), c.expr)
						want := expectedOccurrences(sc, c, from, to)
						got := occurrences(t, e, from.Add(-time.Nanosecond), to)
						assert.Equal(t, local(loc, want), local(loc, got), "%s around %s", c.expr, tr)
						checkStarts(t, e, want, tr.at.Add(-4*time.Hour), tr.at.Add(4*time.Hour))
						if c.fixed {
							assertOncePerLocalDay(t, e, tr)
						}
					}
				})
			}
		}
	}
}

// assertOncePerLocalDay checks that e, a daily expression listing one wall
// time, has exactly one occurrence on each local date from three days
// before tr to three days after, counted by the date each instant reads.
func assertOncePerLocalDay(t *testing.T, e *Expr, tr transition) {
	t.Helper()
	loc := e.Location()
	date := func(at time.Time) string { return at.In(loc).Format("2006-01-02") }
	l := tr.at.In(loc)
	midnight := time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, time.UTC)
	perDay := map[string]int{}
	for _, at := range occurrences(t, e, tr.at.Add(-5*24*time.Hour), tr.at.Add(5*24*time.Hour)) {
		perDay[date(at)]++
	}
	for d := -3; d <= 3; d++ {
		day := midnight.AddDate(0, 0, d).Format("2006-01-02")
		assert.Equal(t, 1, perDay[day], "%s on %s (transition %s)", e, day, tr)
	}
}
