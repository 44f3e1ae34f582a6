package scheduler

import "time"

// lastRun is the last run a job ran on this replica, as Jobs reports it
// (RunInfo), kept in 64 bytes instead of RunInfo's 112: every job that
// has run here keeps one for as long as it is registered. The occurrence
// is given back in the scheduler's location, as it was recorded; the
// start in the location it was recorded in (the store's). The error and
// the trigger, which most runs have not, are kept apart. Times are kept
// as Unix seconds and nanoseconds, which hold any time.Time (UnixNano
// does not before 1678 or after 2262).
type lastRun struct {
	occurrenceSec  int64
	startedSec     int64
	occurrenceNsec int32
	startedNsec    int32
	startedLoc     *time.Location
	duration       time.Duration
	outcome        string
	rare           *lastRunRare // nil when the run had neither an error nor a trigger
}

// lastRunRare is what a last run seldom has.
type lastRunRare struct {
	err     string
	trigger string
}

// set records ri, in place.
func (l *lastRun) set(ri RunInfo) {
	l.occurrenceSec, l.occurrenceNsec = ri.Occurrence.Unix(), int32(ri.Occurrence.Nanosecond())
	l.startedSec, l.startedNsec, l.startedLoc = ri.Started.Unix(), int32(ri.Started.Nanosecond()), ri.Started.Location()
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
	ri := &RunInfo{Occurrence: fromUnix(l.occurrenceSec, l.occurrenceNsec, loc),
		Started: fromUnix(l.startedSec, l.startedNsec, l.startedLoc), Duration: l.duration, Outcome: l.outcome}
	if l.rare != nil {
		ri.Error, ri.Trigger = l.rare.err, l.rare.trigger
	}
	return ri
}

// zeroUnix is the zero time.Time's Unix seconds.
var zeroUnix = time.Time{}.Unix()

// fromUnix returns the time sec and nsec after the Unix epoch in loc, or
// the zero time.Time for its own seconds.
func fromUnix(sec int64, nsec int32, loc *time.Location) time.Time {
	if sec == zeroUnix && nsec == 0 {
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).In(loc)
}
