package console

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/fleet"
)

// How the pages write times: store times in UTC, a job's occurrences in
// its zone.
const (
	utcLayout  = "2006-01-02 15:04:05 UTC"
	zoneLayout = "2006-01-02 15:04:05 MST"
)

// utc writes t in UTC, or "-" for the zero time.
func utc(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(utcLayout)
}

// inZone writes t in loc.
func inZone(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(loc).Format(zoneLayout)
}

// span writes a duration for people: 850ms, 4.2s, 12s, 5m12s, 3h04m, 2d03h.
func span(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", math.Floor(d.Seconds()*10)/10)
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// relative says how far t is from now: "in 3.2s", "12s ago", "now".
func relative(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := t.Sub(now)
	switch {
	case d > -time.Millisecond && d < time.Millisecond:
		return "now"
	case d > 0:
		return "in " + span(d)
	}
	return span(d) + " ago"
}

// zoneOf returns the time zone in which a job's schedule spec reads its
// occurrences: a cron expression's (its TZ= or CRON_TZ= prefix, else the
// scheduler's location that the spec names), UTC for Every and At
// schedules and for specs it cannot read.
func zoneOf(spec string) *time.Location {
	kind, rest, _ := strings.Cut(spec, ":")
	if kind != "cron" {
		return time.UTC
	}
	name, expr, ok := strings.Cut(rest, ":")
	if !ok {
		return time.UTC
	}
	expr = strings.TrimSpace(expr)
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if strings.HasPrefix(expr, p) {
			if f := strings.Fields(strings.TrimPrefix(expr, p)); len(f) > 0 {
				name = f[0]
			}
			break
		}
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	return loc
}

// nextOccurrences returns up to n occurrences of spec after t.
func nextOccurrences(spec string, t time.Time, n int) []time.Time {
	var out []time.Time
	for len(out) < n {
		next, err := fleet.Next(spec, t)
		if err != nil || next.IsZero() {
			break
		}
		out = append(out, next)
		t = next
	}
	return out
}

// clean makes text from the store safe to show on one line: control
// characters become spaces. (html/template escapes the rest.)
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// shorten cuts s to at most n runes, marking the cut.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// shortFingerprint is the last characters of a registration's
// fingerprint, enough to tell two apart on a page.
func shortFingerprint(fp string) string {
	if len(fp) <= 8 {
		return fp
	}
	return "…" + fp[len(fp)-8:]
}

// fence writes a fencing token as the replicas' logs do: a plain number.
func fence(t fencing.Token) string { return strconv.FormatUint(uint64(t), 10) }

// took writes a short server time: 420µs, 12.3ms, 1.2s.
func took(d time.Duration) string {
	if d < time.Millisecond {
		return strconv.FormatInt(d.Microseconds(), 10) + "µs"
	}
	if d < time.Second {
		return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) + "ms"
	}
	return span(d)
}
