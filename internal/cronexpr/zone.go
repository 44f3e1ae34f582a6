package cronexpr

import (
	"math"
	"time"
)

// Zone periods. Within one period of a location (an interval of instants
// with one UTC offset, as time.Time.ZoneBounds reports it) the wall time is
// the instant plus the offset: linear, no gap, no repeat. Both policies
// walk periods, so each step costs a zone lookup rather than a scan.

// maxShift bounds how far a wall time can be from the instant it reads at
// (the largest UTC offset, in either direction) and how far back a
// fall-back transition can still matter. Real offsets stay within ±16
// hours; Parse refuses a location with an offset beyond ±maxShift/2 (only
// a time.FixedZone can have one).
const maxShift = 48 * 60 * 60

// Unbounded ends of a period (before the first transition, after the last
// one, or a location without transitions).
const (
	minInstant = math.MinInt64 / 4
	maxInstant = math.MaxInt64 / 4
)

// period returns the zone period of loc containing instant s (Unix
// seconds): [start, end) and its offset in seconds.
func period(loc *time.Location, s int64) (start, end, offset int64) {
	t := time.Unix(s, 0).In(loc)
	_, off := t.Zone()
	first, next := t.ZoneBounds()
	start, end = minInstant, maxInstant
	if !first.IsZero() {
		start = first.Unix()
	}
	if !next.IsZero() {
		end = next.Unix()
	}
	return start, end, int64(off)
}

// wallAt returns the wall time instant s reads at.
func wallAt(loc *time.Location, s int64) int64 {
	_, off := time.Unix(s, 0).In(loc).Zone()
	return s + int64(off)
}

// maxWallBy returns the latest wall time read at any instant at or before
// s. It is s's own wall time unless a fall-back transition shortly before
// s set the clock back: then the clock read later times just before it.
func maxWallBy(loc *time.Location, s int64) int64 {
	start, _, off := period(loc, s)
	latest := s + off
	for start > minInstant && start > s-maxShift {
		prevStart, _, prevOff := period(loc, start-1)
		latest = max(latest, start-1+prevOff)
		start = prevStart
	}
	return latest
}

// firstReaching returns the first instant at or after from whose wall time
// is w or later. Before a fall-back that is the first of the two instants
// reading w; inside a spring-forward gap it is the transition (the end of
// the gap). The caller guarantees that no instant before from reads w or
// later, so the result is the first such instant of all.
func firstReaching(loc *time.Location, w, from int64) int64 {
	cursor := from
	for {
		_, end, off := period(loc, cursor)
		s := max(cursor, w-off)
		if s < end {
			return s
		}
		cursor = end
	}
}

// nextReading returns the first instant after s whose wall time is listed,
// before the wall time limit: every instant counts, so a repeated wall time
// is listed twice and a skipped one never.
func (f *fieldSet) nextReading(loc *time.Location, s, limit int64) (int64, bool) {
	cursor := s + 1
	for {
		_, end, off := period(loc, cursor)
		w, ok := f.nextWall(cursor+off-1, limit)
		if !ok {
			return 0, false
		}
		if at := w - off; at < end {
			return at, true
		}
		cursor = end
	}
}

// prevReading returns the last instant at or before s whose wall time is
// listed, at or after the wall time limit.
func (f *fieldSet) prevReading(loc *time.Location, s, limit int64) (int64, bool) {
	cursor := s
	for {
		start, _, off := period(loc, cursor)
		w, ok := f.prevWall(cursor+off, limit)
		if !ok {
			return 0, false
		}
		if at := w - off; at >= start {
			return at, true
		}
		cursor = start - 1
	}
}

// nextFixed returns the first occurrence after s of the listed wall times,
// each mapped to the first instant reading it or later (firstReaching),
// before the wall time limit. The mapping is monotone, and a listed wall
// time maps after s exactly when no instant up to s read it or later, so
// the answer is the mapping of the first listed wall time after the latest
// wall time read by s.
func (f *fieldSet) nextFixed(loc *time.Location, s, limit int64) (int64, bool) {
	w, ok := f.nextWall(maxWallBy(loc, s), limit)
	if !ok {
		return 0, false
	}
	return firstReaching(loc, w, max(s+1, w-maxShift)), true
}

// prevFixed returns the last occurrence at or before s under the mapping of
// nextFixed, at or after the wall time limit.
func (f *fieldSet) prevFixed(loc *time.Location, s, limit int64) (int64, bool) {
	w, ok := f.prevWall(maxWallBy(loc, s), limit)
	if !ok {
		return 0, false
	}
	return firstReaching(loc, w, w-maxShift), true
}
