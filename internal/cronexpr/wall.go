package cronexpr

import (
	"math/bits"
	"time"
)

// Wall times. A wall time is a reading of a clock in the expression's
// location, with no zone attached: here, whole seconds counted as if that
// reading were UTC ("naive" Unix seconds). The matching of an expression
// against wall times is plain calendar arithmetic, with no daylight saving
// time in it; zone.go maps wall times to instants.

// starBit is robfig/cron's mark of a field written as "*" or "?": when the
// day-of-month or day-of-week field carries it, both must match (AND);
// otherwise either may (OR).
const starBit = 1 << 63

const (
	secondsPerDay    = 24 * 60 * 60
	valueMask60      = 1<<60 - 1 // bits 0-59: seconds and minutes
	valueMask24      = 1<<24 - 1 // bits 0-23: hours
	unixEpochWeekday = 4         // 1 January 1970 was a Thursday
)

// fieldSet is a parsed expression as robfig/cron's bitsets: bit v of a
// field is set when value v is listed.
type fieldSet struct {
	second, minute, hour, dom, month, dow uint64
}

// civil is a wall time taken apart.
type civil struct {
	dayStart       int64 // wall second of the day's midnight
	year           int
	month          time.Month
	day            int
	weekday        int
	hour, min, sec int
}

func split(w int64) civil {
	days := floorDiv(w, secondsPerDay)
	into := w - days*secondsPerDay
	y, m, d := time.Unix(days*secondsPerDay, 0).UTC().Date()
	return civil{
		dayStart: days * secondsPerDay,
		year:     y,
		month:    m,
		day:      d,
		weekday:  int(floorMod(days+unixEpochWeekday, 7)),
		hour:     int(into / 3600),
		min:      int(into / 60 % 60),
		sec:      int(into % 60),
	}
}

// wallOf returns the wall second of midnight on the given date (which may
// be out of range: time.Date normalizes it).
func wallOf(year int, month time.Month, day int) int64 {
	return time.Date(year, month, day, 0, 0, 0, 0, time.UTC).Unix()
}

// dayMatches is robfig/cron's rule for the day fields.
func (f *fieldSet) dayMatches(c civil) bool {
	domMatch := f.dom&(1<<uint(c.day)) != 0
	dowMatch := f.dow&(1<<uint(c.weekday)) != 0
	if f.dom&starBit != 0 || f.dow&starBit != 0 {
		return domMatch && dowMatch
	}
	return domMatch || dowMatch
}

// nextWall returns the first listed wall time after w and before limit.
func (f *fieldSet) nextWall(w, limit int64) (int64, bool) {
	t := w + 1
	for t < limit {
		c := split(t)
		if f.month&(1<<uint(c.month)) == 0 {
			t = wallOf(c.year, c.month+1, 1)
			continue
		}
		if !f.dayMatches(c) {
			t = c.dayStart + secondsPerDay
			continue
		}
		h, ok := nextBit(f.hour&valueMask24, c.hour)
		if !ok {
			t = c.dayStart + secondsPerDay
			continue
		}
		if h != c.hour {
			t = c.dayStart + int64(h)*3600
			continue
		}
		hourStart := c.dayStart + int64(h)*3600
		m, ok := nextBit(f.minute&valueMask60, c.min)
		if !ok {
			t = hourStart + 3600
			continue
		}
		if m != c.min {
			t = hourStart + int64(m)*60
			continue
		}
		s, ok := nextBit(f.second&valueMask60, c.sec)
		if !ok {
			t = hourStart + int64(m)*60 + 60
			continue
		}
		return hourStart + int64(m)*60 + int64(s), true
	}
	return 0, false
}

// prevWall returns the last listed wall time at or before w and at or
// after limit.
func (f *fieldSet) prevWall(w, limit int64) (int64, bool) {
	t := w
	for t >= limit {
		c := split(t)
		if f.month&(1<<uint(c.month)) == 0 {
			t = wallOf(c.year, c.month, 1) - 1
			continue
		}
		if !f.dayMatches(c) {
			t = c.dayStart - 1
			continue
		}
		h, ok := prevBit(f.hour&valueMask24, c.hour)
		if !ok {
			t = c.dayStart - 1
			continue
		}
		if h != c.hour {
			t = c.dayStart + int64(h)*3600 + 3599
			continue
		}
		hourStart := c.dayStart + int64(h)*3600
		m, ok := prevBit(f.minute&valueMask60, c.min)
		if !ok {
			t = hourStart - 1
			continue
		}
		if m != c.min {
			t = hourStart + int64(m)*60 + 59
			continue
		}
		s, ok := prevBit(f.second&valueMask60, c.sec)
		if !ok {
			t = hourStart + int64(m)*60 - 1
			continue
		}
		return hourStart + int64(m)*60 + int64(s), true
	}
	return 0, false
}

// nextBit returns the lowest set bit of set at or above from.
func nextBit(set uint64, from int) (int, bool) {
	rest := set &^ (1<<uint(from) - 1)
	if rest == 0 {
		return 0, false
	}
	return bits.TrailingZeros64(rest), true
}

// prevBit returns the highest set bit of set at or below from (from < 63).
func prevBit(set uint64, from int) (int, bool) {
	rest := set & (2<<uint(from) - 1)
	if rest == 0 {
		return 0, false
	}
	return 63 - bits.LeadingZeros64(rest), true
}

// yearStart returns the wall second of 1 January of the year w falls in,
// shifted by years.
func yearStart(w int64, years int) int64 {
	return wallOf(split(w).year+years, time.January, 1)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }
