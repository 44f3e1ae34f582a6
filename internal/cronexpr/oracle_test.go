package cronexpr

import (
	"sort"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The oracle applies the DST policy's definition to a minute-by-minute
// scan of instants. It works for expressions whose occurrences are whole
// minutes, in zones whose transitions are whole minutes.

// reading is an instant and the wall time it reads, as a UTC time.Time.
type reading struct{ at, wall time.Time }

// wallScan is every minute of an interval with its wall time.
type wallScan struct {
	readings []reading
	first    map[time.Time]time.Time // wall time -> first instant reading it
	jumps    []int                   // i where the wall time jumps forward between readings i and i+1
}

func scanWalls(loc *time.Location, from, to time.Time) *wallScan {
	sc := &wallScan{first: map[time.Time]time.Time{}}
	for s := from; s.Before(to); s = s.Add(time.Minute) {
		l := s.In(loc)
		w := time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), 0, 0, time.UTC)
		if n := len(sc.readings); n > 0 && w.Sub(sc.readings[n-1].wall) > time.Minute {
			sc.jumps = append(sc.jumps, n-1)
		}
		if _, ok := sc.first[w]; !ok {
			sc.first[w] = s
		}
		sc.readings = append(sc.readings, reading{at: s, wall: w})
	}
	return sc
}

// firstReadingOf returns the first instant reading w or, if none does,
// the instant the clock jumps over w.
func (sc *wallScan) firstReadingOf(w time.Time) (time.Time, bool) {
	if at, ok := sc.first[w]; ok {
		return at, true
	}
	for _, i := range sc.jumps {
		if sc.readings[i].wall.Before(w) && sc.readings[i+1].wall.After(w) {
			return sc.readings[i+1].at, true
		}
	}
	return time.Time{}, false
}

// scanAround scans the minutes of [from, to) and two days either side,
// enough for expectedOccurrences to see every wall time that can map into
// [from, to).
func scanAround(loc *time.Location, from, to time.Time) *wallScan {
	return scanWalls(loc, from.Add(-48*time.Hour), to.Add(48*time.Hour))
}

// expectedOccurrences returns the occurrences in [from, to) by the
// policy's definition, for an expression listing the wall times
// lists(hour, minute) (every day), fixed or following real time. sc is
// scanAround(loc, from, to).
func expectedOccurrences(sc *wallScan, c policyCase, from, to time.Time) []time.Time {
	inWindow := func(at time.Time) bool { return !at.Before(from) && at.Before(to) }
	var out []time.Time
	if !c.fixed {
		// Real time: every instant whose wall time is listed.
		for _, r := range sc.readings {
			if inWindow(r.at) && c.lists(r.wall.Hour(), r.wall.Minute()) {
				out = append(out, r.at)
			}
		}
		return out
	}
	// Fixed: each listed wall time of each local day runs once, at the
	// first instant reading it; one no instant reads (a gap) runs where
	// the clock jumps over it. Equal instants are one occurrence.
	seen := map[time.Time]bool{}
	first := sc.readings[0].wall.AddDate(0, 0, 1).Truncate(24 * time.Hour)
	last := sc.readings[len(sc.readings)-1].wall.AddDate(0, 0, -1)
	for day := first; !day.After(last); day = day.AddDate(0, 0, 1) {
		for h := range 24 {
			for m := range 60 {
				if !c.lists(h, m) {
					continue
				}
				at, ok := sc.firstReadingOf(day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute))
				if ok && inWindow(at) && !seen[at] {
					seen[at] = true
					out = append(out, at)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// TestExpr_Next_MatchesOracle compares Next with the oracle for many
// minute and hour fields around transitions; the listed wall times come
// from robfig/cron's bitsets, the policy from the hour field's form.
func TestExpr_Next_MatchesOracle(t *testing.T) {
	minutes := []string{"0", "30", "59", "*/15", "*", "0,30", "15-45/15", "1-59/29"}
	hours := []struct {
		field    string
		wildcard bool
	}{
		{"*", true}, {"*/2", true}, {"0-23", true}, {"0/3", true}, {"?", true},
		{"0", false}, {"1", false}, {"2", false}, {"3", false}, {"1,2", false},
		{"1-3", false}, {"0-5/2", false}, {"2/2", false}, {"22-23", false}, {"0-11,12-23", false},
	}
	places := []struct {
		zone string
		year int
	}{
		{"America/New_York", 2025}, {"Europe/London", 2026}, {"Australia/Sydney", 2027},
		{"Australia/Lord_Howe", 2028}, {"Pacific/Apia", 2011}, {"Antarctica/Troll", 2025},
		{"America/Sao_Paulo", 2018}, {"Europe/Dublin", 2029},
	}
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
	for _, p := range places {
		loc := zone(t, p.zone)
		trs := transitionsIn(loc, p.year)
		require.NotEmpty(t, trs, "%s has transitions in %d", p.zone, p.year)
		scans := make([]*wallScan, len(trs))
		for i, tr := range trs {
			scans[i] = scanAround(loc, tr.at.Add(-26*time.Hour), tr.at.Add(26*time.Hour))
		}
		for _, minute := range minutes {
			for _, hour := range hours {
				expr := minute + " " + hour.field + " * * *"
				parsed, err := parser.Parse(expr)
				require.NoError(t, err)
				spec := parsed.(*cron.SpecSchedule)
				c := policyCase{expr: expr, fixed: !hour.wildcard, lists: func(h, m int) bool {
					return spec.Hour&(1<<uint(h)) != 0 && spec.Minute&(1<<uint(m)) != 0
				}}
				e := mustParse(t, expr, loc)
				require.Equal(t, hour.wildcard, e.FollowsRealTime(), expr)
				for i, tr := range trs {
					from, to := tr.at.Add(-26*time.Hour), tr.at.Add(26*time.Hour)
					want := expectedOccurrences(scans[i], c, from, to)
					got := occurrences(t, e, from.Add(-time.Nanosecond), to)
					assert.Equal(t, local(loc, want), local(loc, got), "%s in %s around %s", expr, p.zone, tr)
					checkStarts(t, e, want, tr.at.Add(-4*time.Hour), tr.at.Add(4*time.Hour))
				}
			}
		}
	}
}

// checkStarts checks that Next from starts spread over [from, to), as a
// replica starting there would call it, gives the first of want after the
// start, and Prev the last at or before it.
func checkStarts(t *testing.T, e *Expr, want []time.Time, from, to time.Time) {
	t.Helper()
	loc := e.Location()
	for start := from; start.Before(to); start = start.Add(7*time.Minute + 30*time.Second) {
		i := sort.Search(len(want), func(i int) bool { return want[i].After(start) })
		if i == 0 || i == len(want) {
			continue // the neighbours lie outside the oracle's window
		}
		if !assert.Equal(t, want[i], e.Next(start), "%s: Next(%s)", e, start.In(loc).Format(time.RFC3339)) {
			return
		}
		prev, ok := e.Prev(start)
		assert.True(t, ok)
		assert.Equal(t, want[i-1], prev, "%s: Prev(%s)", e, start.In(loc).Format(time.RFC3339))
	}
}
