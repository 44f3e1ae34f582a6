package cronexpr

import "time"

// Horizon, in years of wall time: Next looks no further ahead than the end
// of the fifth year after the one it starts in, Prev no further back than
// the start of the fifth year before (robfig/cron's Next has the same
// bound ahead).
const horizonYears = 5

// Next returns the first occurrence strictly after t, in UTC, or the zero
// time if there is none within the horizon (about five years).
// Occurrences are whole seconds.
func (e *Expr) Next(t time.Time) time.Time {
	s := t.Unix() // occurrences are whole seconds: after t means after its second
	limit := yearStart(wallAt(e.loc, s+1), horizonYears+1)
	var at int64
	var ok bool
	if e.realTime {
		at, ok = e.fields.nextReading(e.loc, s, limit)
	} else {
		at, ok = e.fields.nextFixed(e.loc, s, limit)
	}
	if !ok {
		return time.Time{}
	}
	return time.Unix(at, 0).UTC()
}

// Prev returns the last occurrence at or before t, in UTC, and true; or
// false if there is none within the horizon (about five years).
func (e *Expr) Prev(t time.Time) (time.Time, bool) {
	s := t.Unix()
	limit := yearStart(wallAt(e.loc, s), -horizonYears)
	var at int64
	var ok bool
	if e.realTime {
		at, ok = e.fields.prevReading(e.loc, s, limit)
	} else {
		at, ok = e.fields.prevFixed(e.loc, s, limit)
	}
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(at, 0).UTC(), true
}

// Gaps returns the time from the last occurrence before occ to occ, and
// from occ to the first occurrence after it. occ is normally an
// occurrence; a gap is zero when there is no such neighbour within the
// horizon. A round's clock-skew bound that protects both neighbours is
// min(before, after)/2.
func (e *Expr) Gaps(occ time.Time) (before, after time.Duration) {
	if prev, ok := e.Prev(occ.Add(-time.Nanosecond)); ok {
		before = occ.Sub(prev)
	}
	if next := e.Next(occ); !next.IsZero() {
		after = next.Sub(occ)
	}
	return before, after
}

// Between counts the occurrences strictly after a and strictly before b,
// stopping at limit: n is the count, at most limit, and capped reports
// that there are more. first and last are the first and last of all of
// them (last found with Prev when capped), zero when there are none. It
// costs about min(count, limit)+1 calls of Next.
func (e *Expr) Between(a, b time.Time, limit int) (n int, first, last time.Time, capped bool) {
	for at := e.Next(a); !at.IsZero() && at.Before(b); at = e.Next(at) {
		if n == 0 {
			first = at
		}
		if n >= limit {
			last = at
			if end, ok := e.Prev(b.Add(-time.Nanosecond)); ok {
				last = end
			}
			return n, first, last, true
		}
		last = at
		n++
	}
	return n, first, last, false
}
