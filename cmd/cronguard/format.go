package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
)

// clean makes text from Redis safe to print on a terminal, on one line:
// control characters (escape sequences, tabs, newlines) become spaces.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// oneLine is clean for error messages, with runs of spaces squeezed.
func oneLine(s string) string {
	return strings.Join(strings.Fields(clean(s)), " ")
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
	d := t.Sub(now)
	switch {
	case d > -time.Millisecond && d < time.Millisecond:
		return "now"
	case d > 0:
		return "in " + span(d)
	}
	return span(d) + " ago"
}

// clock writes t in local time: 15:04:05, with the date when it is not
// now's date.
func clock(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	if t.Year() == now.Year() && t.YearDay() == now.YearDay() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}

// at writes t absolute and relative to now: "12:00:05 (in 3.2s)".
func at(t, now time.Time) string {
	return clock(t, now) + " (" + relative(t, now) + ")"
}

// table writes rows aligned in columns, two spaces apart, without
// trailing spaces.
type table struct {
	w   io.Writer
	buf strings.Builder
	tw  *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{w: w}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = clean(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	lines := strings.SplitAfter(t.buf.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \n")
		if strings.HasSuffix(l, "\n") {
			lines[i] += "\n"
		}
	}
	t.buf.Reset()
	_, err := io.WriteString(t.w, strings.Join(lines, ""))
	return err
}

// plural writes n and the noun, with an s when n is not 1.
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
