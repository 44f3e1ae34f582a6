package checker

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cronguard/cronguard/faults/history"
)

// Completion (7): every occurrence is done once.
//
// An attempt at an occurrence ends succeeded, failed or interrupted; an
// occurrence left open is attempted again (same round, a greater fence)
// until it is done, or until its attempts or its window run out, when it
// is reported given up. For a job with completion the checker reads, for
// every occurrence a recorded lease acquired (a claim):
//
//   - completed: exactly one accepted write of the occurrence (a second
//     one is (2));
//   - given up: a replica's scheduler reported it (history.GivenUp);
//
// and requires one of the two, never both, and never an end the store was
// told of that the writes contradict:
//
//   - an occurrence with an accepted write is not reported given up, nor
//     attempted again after an attempt was released done (the store then
//     knows it is done);
//   - one without an accepted write is not reported done: no attempt of it
//     succeeded by having its write refused as a duplicate (there was
//     nothing to duplicate), and it is not attempted again after it was
//     reported given up;
//   - a given up occurrence is reported once: the store marks it for
//     exactly one caller.
//
// The exceptions, each counted with its class and explanation:
//
//   - data_lost: Redis lost its data (a wipe or a rollback) after the
//     occurrence was claimed and before it was resolved or should have
//     been: its completion record, which says that it is open or done, may
//     be gone or old;
//   - open_at_end: the replicas began to shut down before the occurrence
//     had to be resolved (see resolveBy);
//   - report_lost: the store marked it given up for a replica (recorded by
//     the replica's store wrapper) that was killed before its scheduler
//     could report it;
//   - commit_unreported: it was committed and reported given up, but the
//     attempt that committed it never told the store that it succeeded (no
//     release of it closed the occurrence done: its replica was killed or
//     paused, its lease was lost, or its release failed) and no later
//     attempt did: the store, which cannot see the effect, gave up an
//     occurrence whose effect was committed. Fencing keeps the effect
//     single; this is the limit of what a store that does not see the
//     effect can know.

// Exception is an occurrence of a job with completion that was neither
// completed nor reported given up, or reported both, for a reason the
// checker accepts.
type Exception struct {
	Job         string
	Occurrence  int64  // Unix ms
	Reason      string // data_lost, open_at_end, report_lost, commit_unreported
	Explanation string
}

// Completion are the figures of (7).
type Completion struct {
	Claimed     int // occurrences of jobs with completion that a recorded lease acquired
	Completed   int // of those, with an accepted write
	GivenUp     int // of those, reported given up (and not completed)
	Interrupted int // interrupted attempts the schedulers reported
	Resumed     int // runs of attempt > 1 after an interrupted attempt (or one that had not ended when it was acquired: its holder was dead or paused)
	Retried     int // runs of attempt > 1 after a failed attempt that ended before it was acquired
	Exceptions  []Exception
}

// checkCompletion is (7).
func checkCompletion(in Input, ix *indexed, r *Report) {
	end := ix.shutdown / 1e6
	writes := map[key][]history.Write{}
	for _, w := range in.Writes {
		k := key{w.Job, w.Occurrence}
		writes[k] = append(writes[k], w)
	}
	for _, job := range in.Jobs {
		if !job.Completion {
			continue
		}
		for _, k := range ix.claimed(job.Name) {
			r.Completion.Claimed++
			ix.countAttempts(k, &r.Completion)
			c := occurrenceCheck{ix: ix, in: in, job: job, k: k, leases: ix.leasesOf[k], writes: writes[k], end: end}
			c.run(r)
		}
	}
}

// claimed returns the occurrences of job that a recorded lease acquired,
// in order.
func (ix *indexed) claimed(job string) []key {
	var out []key
	for k := range ix.leasesOf {
		if k.job == job {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].occ < out[j].occ })
	return out
}

// countAttempts counts the interrupted attempts of occurrence k, and its
// runs of a later attempt: resumed after an interruption, retried after a
// failure.
func (ix *indexed) countAttempts(k key, c *Completion) {
	c.Interrupted += len(ix.interrupted[k])
	byAttempt := map[int]*leaseRec{}
	for _, l := range ix.leasesOf[k] {
		if _, ok := byAttempt[l.attempt]; !ok {
			byAttempt[l.attempt] = l
		}
	}
	for _, l := range distinctLeases(ix.runs[k]) {
		if l.attempt <= 1 {
			continue
		}
		if prev := byAttempt[l.attempt-1]; prev != nil && prev.failed(ix.interrupted[k]) && prev.runEnd < l.mono {
			c.Retried++
		} else {
			c.Resumed++
		}
	}
}

// releasedDone reports whether a release of l that succeeded told the
// store that the occurrence is done: its Close says so, or, in a history
// that does not record the Close, its run returned nil.
func (l *leaseRec) releasedDone() bool {
	if l.releasedOK == 0 {
		return false
	}
	return l.close == history.CloseDone || (l.close == "" && l.runEnd != 0 && l.runErr == "")
}

// failed reports whether l's run ended by itself with an error: it
// returned one, and its scheduler did not report the attempt interrupted.
func (l *leaseRec) failed(interrupted []history.Event) bool {
	if l.runEnd == 0 || l.runErr == "" {
		return false
	}
	for _, e := range interrupted {
		if e.Replica == l.replica && attemptOf(e) == l.attempt {
			return false
		}
	}
	return true
}

// occurrenceCheck is (7) for one claimed occurrence.
type occurrenceCheck struct {
	ix     *indexed
	in     Input
	job    Job
	k      key
	leases []*leaseRec     // its recorded leases, in acquire order
	writes []history.Write // its accepted writes
	end    int64           // when the replicas began to shut down, Unix ms (0: never)
}

func (c *occurrenceCheck) violation(r *Report, format string, args ...any) {
	r.Violations = append(r.Violations, Violation{Check: 7, Job: c.k.job, Occurrence: c.k.occ, Detail: fmt.Sprintf(format, args...)})
}

func (c *occurrenceCheck) except(r *Report, reason, format string, args ...any) {
	r.Completion.Exceptions = append(r.Completion.Exceptions, Exception{Job: c.k.job, Occurrence: c.k.occ, Reason: reason,
		Explanation: fmt.Sprintf(format, args...)})
}

func (c *occurrenceCheck) run(r *Report) {
	ix := c.ix
	claim := c.leases[0].ops[0].sent
	reports := ix.givenUp[c.k]
	// The given up reports: one, unless data loss let the store mark it
	// again.
	for _, g := range reports[min(1, len(reports)):] {
		if d := ix.lossBetween(claim, g.Wall/1e6); d == nil {
			c.violation(r, "reported given up twice: by %s at %s and by %s at %s; the store marks it for exactly one caller",
				reports[0].Replica, ms(reports[0].Wall/1e6), g.Replica, ms(g.Wall/1e6))
		}
	}
	c.attemptsAfterEnd(r)
	switch {
	case len(c.writes) > 0 && len(reports) > 0:
		c.committedAndGivenUp(r, reports[0])
	case len(c.writes) > 0:
		r.Completion.Completed++
	default:
		if c.doneWithoutEffect(r) {
			return
		}
		if len(reports) > 0 {
			r.Completion.GivenUp++
			return
		}
		c.unresolved(r)
	}
}

// committedAndGivenUp: an occurrence whose effect was committed (w) was
// reported given up (g). Explained only if the store never learned of the
// success (commit_unreported) or lost it with its data (data_lost): before
// the report, or after it, by a wipe or a rollback to a copy older than the
// report, and before an attempt that the lost report let start and that
// released it done.
func (c *occurrenceCheck) committedAndGivenUp(r *Report, g history.Event) {
	ix := c.ix
	w := c.writes[0]
	gAt := g.Wall / 1e6
	if d := ix.lossBetween(c.leases[0].ops[0].sent, gAt); d != nil {
		c.except(r, "data_lost", "committed by write %d (lease %d of %s) and reported given up by %s at %s: %s may have lost its record",
			w.ID, w.Fence, w.Replica, g.Replica, ms(gAt), d)
		return
	}
	for _, l := range c.leases {
		if !l.releasedDone() || l.acquiredAt <= gAt {
			continue
		}
		if d := ix.lossUndoing(gAt, l.acquiredAt); d != nil {
			c.except(r, "data_lost", "committed by write %d (lease %d of %s) and reported given up by %s at %s; %s lost the report, and lease %d of %s attempted it again and released it done at %s",
				w.ID, w.Fence, w.Replica, g.Replica, ms(gAt), d, l.fence, l.replica, ms(l.releasedOK/1e6))
			return
		}
	}
	for _, l := range c.leases {
		if l.releasedDone() {
			c.violation(r, "committed by write %d (lease %d of %s), released done by lease %d of %s at %s, and reported given up by %s at %s",
				w.ID, w.Fence, w.Replica, l.fence, l.replica, ms(l.releasedOK/1e6), g.Replica, ms(g.Wall/1e6))
			return
		}
	}
	c.except(r, "commit_unreported", "committed by write %d (lease %d of %s), whose attempt never told the store it succeeded (%s); reported given up by %s at %s",
		w.ID, w.Fence, w.Replica, c.whyUnreported(w.Fence), g.Replica, ms(g.Wall/1e6))
}

// whyUnreported says why the attempt of lease fence did not release its
// occurrence done.
func (c *occurrenceCheck) whyUnreported(fence uint64) string {
	for _, l := range c.leases {
		if l.fence != fence {
			continue
		}
		switch {
		case l.releasedOK != 0:
			return fmt.Sprintf("its release closed it %q", l.close)
		case l.releaseSeen:
			return "its release failed"
		case l.cause == history.CauseLost || l.cause == history.CauseUnconfirmed:
			return "its lease was " + l.cause
		default:
			return "no release recorded: killed or paused"
		}
	}
	return "its lease is not recorded"
}

// doneWithoutEffect: an occurrence without an accepted write was taken
// for done: an attempt released it done, or had its write refused as a
// duplicate (an error wrapping fencing.ErrDuplicate is a success), though
// nothing of it was committed. Only a later occurrence's write can refuse
// it then, which an attempt at an earlier occurrence must never meet
// unless data loss let an old round be claimed again. It reports the
// first such end and whether there was one.
func (c *occurrenceCheck) doneWithoutEffect(r *Report) bool {
	claim := c.leases[0].ops[0].sent
	for _, e := range c.ix.dupRejects[c.k] {
		if c.ix.lossBetween(claim, e.Wall/1e6) == nil {
			c.violation(r, "its write by %s (token %d) was refused as a duplicate at %s, a success for the scheduler, but no write of it was accepted",
				e.Replica, e.Fence, ms(e.Wall/1e6))
			return true
		}
	}
	for _, l := range c.leases {
		if l.releasedDone() && c.ix.lossBetween(claim, l.releasedOK/1e6) == nil {
			c.violation(r, "lease %d of %s released it done at %s, but no write of it was accepted", l.fence, l.replica, ms(l.releasedOK/1e6))
			return true
		}
	}
	return false
}

// attemptsAfterEnd: no attempt is acquired after the occurrence was
// released done or reported given up, unless data loss put back an
// older record. A report of a give-up rests on the records its replica's
// lease of that attempt wrote from its acquire on: its scheduler reports
// the give-up once its release is done, or once a release tried again
// finds the lease gone after a try whose reply was lost (that try, it
// takes it, released it). A loss after that acquire may have taken the
// lease with it and put back an older record, whenever the report came.
func (c *occurrenceCheck) attemptsAfterEnd(r *Report) {
	ix := c.ix
	type ending struct {
		at   int64 // Unix ms
		from int64 // Unix ms: a data loss after it may have undone the end
		what string
	}
	var ends []ending
	for _, l := range c.leases {
		if l.releasedDone() {
			at := l.releasedOK / 1e6
			ends = append(ends, ending{at, at, fmt.Sprintf("lease %d of %s released it done", l.fence, l.replica)})
		}
	}
	for _, g := range ix.givenUp[c.k] {
		at := g.Wall / 1e6
		from := at
		for _, l := range c.leases {
			if l.replica == g.Replica && l.attempt == g.Attempt && l.acquiredAt < from {
				from = l.acquiredAt
			}
		}
		ends = append(ends, ending{at, from, g.Replica + " reported it given up"})
	}
	for _, e := range ends {
		for _, l := range c.leases {
			if l.acquiredAt <= e.at || ix.lossBetween(e.from, l.acquiredAt) != nil {
				continue
			}
			c.violation(r, "attempt %d acquired by lease %d of %s at %s after %s at %s",
				l.attempt, l.fence, l.replica, ms(l.acquiredAt), e.what, ms(e.at))
		}
	}
}

// unresolved: an occurrence neither completed nor reported given up.
func (c *occurrenceCheck) unresolved(r *Report) {
	ix := c.ix
	for _, m := range ix.marks[c.k] {
		if f := ix.killedAfter(m); f != nil {
			c.except(r, "report_lost", "the store marked it given up for %s at %s (%s), which was killed at %s before reporting it",
				m.Replica, ms(m.Wall/1e6), markName(m), ms(f.startWall/1e6))
			return
		}
	}
	if len(ix.marks[c.k]) > 0 {
		m := ix.marks[c.k][0]
		c.violation(r, "the store marked it given up for %s at %s (%s), which never reported it", m.Replica, ms(m.Wall/1e6), markName(m))
		return
	}
	by := c.resolveBy()
	if d := ix.lossBetween(c.leases[0].ops[0].sent, by); d != nil {
		c.except(r, "data_lost", "claimed at %s; %s may have lost its record before it had to be resolved (%s)",
			ms(c.leases[0].acquiredAt), d, ms(by))
		return
	}
	if c.end == 0 || by >= c.end {
		c.except(r, "open_at_end", "claimed at %s, open when the replicas began to shut down at %s; it had until %s (attempts: %s)",
			ms(c.leases[0].acquiredAt), ms(c.end), ms(by), c.attemptsSummary())
		return
	}
	c.violation(r, "neither completed nor reported given up by %s (claimed at %s; attempts: %s)",
		ms(by), ms(c.leases[0].acquiredAt), c.attemptsSummary())
}

// resolveBy is when the occurrence must have been resolved (Unix ms): its
// window ends at its deadline (Job.Window after it), or when its last
// recorded lease stops blocking if that is later (an attempt started
// before the deadline runs on); a replica then gives it up at the latest
// when it claims the job's next occurrence (a round acquire supersedes
// it), one interval later, plus the slack. A restart of Redis or a stall
// of the machine that overlaps that time pushes it past the recovery by
// as much.
func (c *occurrenceCheck) resolveBy() int64 {
	deadline := c.k.occ + c.job.window().Milliseconds()
	for _, l := range c.leases {
		deadline = max(deadline, l.blocksUntil(c.job.TTL))
	}
	extra := c.job.Every.Milliseconds() + c.in.Slack.Milliseconds()
	by := deadline + extra
	for _, f := range c.ix.faults {
		if (f.redisDown() || f.kind == history.FaultStall) && f.startWall/1e6 <= by && recovered(f)/1e6 >= deadline {
			by = max(by, recovered(f)/1e6+extra)
		}
	}
	return by
}

// attemptsSummary lists the occurrence's recorded leases: attempt,
// replica, how the run ended.
func (c *occurrenceCheck) attemptsSummary() string {
	parts := make([]string, 0, len(c.leases))
	for _, l := range c.leases {
		end := "no run"
		switch {
		case l.runEnd != 0 && l.runErr == "":
			end = "succeeded"
		case l.runEnd != 0:
			end = "failed: " + shorten(l.runErr)
		case l.runStart != 0:
			end = "no end"
		}
		parts = append(parts, fmt.Sprintf("#%d %s lease %d %s", l.attempt, l.replica, l.fence, end))
	}
	return strings.Join(parts, "; ")
}

// killedAfter returns a kill of m's replica that began after m and
// within the slack, or nil.
func (ix *indexed) killedAfter(m history.Event) *fault {
	for _, f := range ix.faultsOn(m.Replica) {
		if f.kind == history.FaultKill && f.startMono >= m.Mono && f.startMono <= m.Mono+DefaultSlack.Nanoseconds() {
			return f
		}
	}
	return nil
}

// markName says how the store marked an occurrence given up.
func markName(m history.Event) string {
	switch {
	case m.Kind == history.Acquire:
		return fmt.Sprintf("superseded by lease %d of occurrence %s", m.Fence, ms(m.Occurrence))
	case m.Kind == history.AcquireError:
		return "a resume told given up first"
	case m.Kind == history.GiveUpMarked:
		return "its GiveUp"
	default:
		return "a release that closed it given up"
	}
}
