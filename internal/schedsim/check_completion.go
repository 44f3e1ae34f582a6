package schedsim

import (
	"sort"
	"time"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/scheduler"
)

// resumeBound is how long after its occurrence became resumable (its last
// attempt's lease released, or run out plus the store's tolerance, plus
// any retry backoff) the fleet owes it another attempt or a given-up
// report: the control loop reads the fleet's index every second, and a
// release announces an open occurrence at once; the rest is slack.
const resumeBound = time.Second + 2*slack

// attemptOcc is one occurrence of a job that its first claim gave a
// completion record (lease.Attempts), with every lease of it.
type attemptOcc struct {
	job    string
	round  int64
	leases []*LeaseRec // in acquisition order: attempt 1, 2, ...
}

// completionOccs returns the occurrences with completion records, by job
// and round, in the order of their first claim.
func (c *checker) completionOccs() []*attemptOcc {
	byKey := make(map[string]map[int64]*attemptOcc)
	var out []*attemptOcc
	for job, ls := range c.leases {
		for _, l := range ls {
			if l.Trigger != "" || l.Round == 0 {
				continue
			}
			if byKey[job] == nil {
				byKey[job] = make(map[int64]*attemptOcc)
			}
			o := byKey[job][l.Round]
			if o == nil {
				if l.Max == 0 {
					continue // claimed without a record: one attempt, nothing to complete
				}
				o = &attemptOcc{job: job, round: l.Round}
				byKey[job][l.Round] = o
				out = append(out, o)
			}
			o.leases = append(o.leases, l)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].leases[0].Acquired.Before(out[b].leases[0].Acquired) })
	return out
}

// endOf returns the end event of the attempt that held l, if its replica
// reported one.
func (c *checker) endOf(job string, l *LeaseRec) (scheduler.EventKind, bool) {
	for _, a := range c.h.Attempts {
		if a.Job == job && a.Fence == l.Fence && !a.Crashed.IsZero() {
			return 0, false // what a crashing replica said of it does not count
		}
	}
	for _, e := range c.byOcc[job][l.Round] {
		if e.E.Fence != l.Fence {
			continue
		}
		switch e.E.Kind {
		case scheduler.EventSucceeded, scheduler.EventFailed, scheduler.EventPanicked, scheduler.EventTimedOut, scheduler.EventInterrupted:
			return e.E.Kind, true
		}
	}
	return 0, false
}

// givenUps returns the given-up reports of occurrence round of job.
func (c *checker) givenUps(job string, round int64) []EventRec {
	var out []EventRec
	for _, e := range c.byOcc[job][round] {
		if e.E.Kind == scheduler.EventGivenUp {
			out = append(out, e)
		}
	}
	return out
}

// anyLive reports whether some replica was live and reached the store over
// [a, b).
func (c *checker) anyLive(a, b time.Time) bool {
	for _, l := range c.h.Lives {
		if l.live(a, b) {
			return true
		}
	}
	return false
}

// laterClaim returns the first lease of a later round of job acquired at
// or after t, if any.
func (c *checker) laterClaim(job string, round int64, t time.Time) *LeaseRec {
	for _, l := range c.leases[job] {
		if l.Round > round && !l.Acquired.Before(t) {
			return l
		}
	}
	return nil
}

// completion holds every occurrence with a completion record to DESIGN.md
// section 16: it ends done (an attempt succeeded, or failed while the job
// does not retry failures), or it is reported given up, once; an open
// occurrence (an attempt interrupted, its replica dead, or failed with
// WithRetry) is attempted again or given up within resumeBound of the
// moment it could be, while some replica that has the job is live and
// the store is up and kept its data (wipes and outages excepted, and an
// occurrence still open when the simulation ends). A given-up report for
// an occurrence whose attempt succeeded and released its lease is a lie.
func (c *checker) completion() {
	for _, o := range c.completionOccs() {
		spec := c.specs[o.job]
		first, last := o.leases[0], o.leases[len(o.leases)-1]
		occ := time.UnixMilli(o.round).UTC().Format("15:04:05.000")
		given := c.givenUps(o.job, o.round)
		if len(given) > 1 && !c.wipeIn(first.Acquired, given[1].At) {
			c.fail("given-up-once", given[1].At, o.job, "occurrence %s was reported given up %d times (by %s and %s)",
				occ, len(given), given[0].E.Instance, given[1].E.Instance)
		}
		done := false
		for _, l := range o.leases {
			kind, ok := c.endOf(o.job, l)
			switch {
			case !ok:
			case kind == scheduler.EventSucceeded:
				done = true
				// A wipe between the attempt and the give-up, in either
				// order, took the record that would have refused one or
				// the other: after it the store knows neither.
				if len(given) > 0 && !l.Released.IsZero() && !c.wipeIn(minTime(l.Acquired, given[0].At), maxTime(l.Acquired, given[0].At)) {
					c.fail("given-up-done", given[0].At, o.job, "occurrence %s was reported given up by %s, but attempt %d (fence %d) succeeded and released its lease at %s",
						occ, given[0].E.Instance, l.Attempt, l.Fence, c.rel(l.Released))
				}
			case kind != scheduler.EventInterrupted && !spec.Retry:
				done = true // failed, and failures are not retried: closed, reported failed
			}
		}
		if done || len(given) > 0 {
			continue
		}
		// Open: when could it be attempted again, and by when is it owed?
		from := last.Released
		if from.IsZero() {
			from = last.Expires.Add(lease.ExpiryTolerance)
		}
		if kind, ok := c.endOf(o.job, last); ok && kind != scheduler.EventInterrupted && spec.Retry {
			from = from.Add(spec.RetryAfter)
		}
		owed := from.Add(resumeBound)
		if !first.Deadline.After(from) || !c.canResume(o.job, from, owed) {
			// No attempt is owed, or no replica able to make it: a
			// replica's control loop gives it up once its deadline has
			// passed.
			owed = maxTime(from, first.Deadline).Add(resumeBound)
			if !c.anyLive(owed.Add(-resumeBound), owed) {
				continue
			}
		}
		if owed.After(c.h.End) || c.wipeIn(first.Acquired, owed) || c.outageIn(from, owed) {
			continue
		}
		if l := c.laterClaim(o.job, o.round, first.Acquired); l != nil && c.dead(l.Client, l.Acquired.Add(slack)) {
			continue // the later claim gave it up, and its replica died before it could say so
		}
		c.fail("completion", owed, o.job, "occurrence %s is open after attempt %d of %d (%s), resumable from %s, deadline %s: neither attempted again nor reported given up by %s (events: %s)",
			occ, last.Attempt, first.Max, c.describeEnd(o.job, last), c.rel(from), c.rel(first.Deadline), c.rel(owed), c.describe(o.job, time.UnixMilli(o.round)))
	}
}

// canResume reports whether some live, reachable replica had job over
// [a, b], the job not paused then, and was able to attempt it: executing
// no attempt of the job then (a replica never runs two of a job at once,
// so one whose attempt outlives its timeout or lease resumes the
// occurrence only once that attempt returns), nor claiming an occurrence
// it then ran (coveredIdle).
func (c *checker) canResume(job string, a, b time.Time) bool {
	_, ok := c.coveredIdle(job, a, b)
	return ok && !c.pausedIn(job, a, b)
}

// describeEnd says how the attempt that held l ended.
func (c *checker) describeEnd(job string, l *LeaseRec) string {
	if kind, ok := c.endOf(job, l); ok {
		return kind.String()
	}
	if c.dead(l.Client, c.orFar(l.Released)) {
		return "its replica died"
	}
	return "no end reported"
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
