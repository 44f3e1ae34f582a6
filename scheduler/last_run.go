package scheduler

import (
	"math"
	"time"
)

// lastRun is the last run a job ran on this replica, as Jobs reports it
// (RunInfo), kept in 64 bytes instead of RunInfo's 112: every job that
// has run here keeps one for as long as it is registered. The occurrence
// is given back in the scheduler's location, as it was recorded; the
// start in the location it was recorded in (the store's). The error and
// the trigger, which most runs have not, are kept apart.
type lastRun struct {
	occurrence int64 // Unix ns
	started    int64 // Unix ns
	startedLoc *time.Location
	duration   time.Duration
	outcome    string
	rare       *lastRunRare // nil when the run had neither an error nor a trigger
}

// lastRunRare is what a last run seldom has.
type lastRunRare struct {
	err     string
	trigger string
}

// set records ri, in place.
func (l *lastRun) set(ri RunInfo) {
	l.occurrence, l.started, l.startedLoc = unixNano(ri.Occurrence), unixNano(ri.Started), ri.Started.Location()
	l.duration, l.outcome = ri.Duration, ri.Outcome
	switch {
	case ri.Error == "" && ri.Trigger == "":
		l.rare = nil
	case l.rare == nil:
		l.rare = &lastRunRare{err: ri.Error, trigger: ri.Trigger}
	default:
		l.rare.err, l.rare.trigger = ri.Error, ri.Trigger
	}
}

// info returns the run as a RunInfo, its occurrence in loc.
func (l *lastRun) info(loc *time.Location) *RunInfo {
	ri := &RunInfo{Occurrence: fromUnixNano(l.occurrence, loc), Started: fromUnixNano(l.started, l.startedLoc),
		Duration: l.duration, Outcome: l.outcome}
	if l.rare != nil {
		ri.Error, ri.Trigger = l.rare.err, l.rare.trigger
	}
	return ri
}

// noTime stands for the zero time.Time, whose UnixNano is undefined.
const noTime = math.MinInt64

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return noTime
	}
	return t.UnixNano()
}

func fromUnixNano(n int64, loc *time.Location) time.Time {
	if n == noTime {
		return time.Time{}
	}
	return time.Unix(0, n).In(loc)
}
