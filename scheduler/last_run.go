package scheduler

import (
	"math"
	"time"
)

// lastRun is the last run a job ran on this replica, as Jobs reports it
// (RunInfo), kept in 80 bytes instead of RunInfo's 112: every job that
// has run here keeps one for as long as it is registered. The occurrence
// is given back in the scheduler's location, as it was recorded; the
// start in the location it was recorded in (the store's).
type lastRun struct {
	occurrence int64 // Unix ns
	started    int64 // Unix ns
	startedLoc *time.Location
	duration   time.Duration
	outcome    string
	err        string
	trigger    string
}

// set records ri.
func (l *lastRun) set(ri RunInfo) {
	*l = lastRun{occurrence: unixNano(ri.Occurrence), started: unixNano(ri.Started), startedLoc: ri.Started.Location(),
		duration: ri.Duration, outcome: ri.Outcome, err: ri.Error, trigger: ri.Trigger}
}

// info returns the run as a RunInfo, its occurrence in loc.
func (l *lastRun) info(loc *time.Location) *RunInfo {
	return &RunInfo{Occurrence: fromUnixNano(l.occurrence, loc), Started: fromUnixNano(l.started, l.startedLoc),
		Duration: l.duration, Outcome: l.outcome, Error: l.err, Trigger: l.trigger}
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
