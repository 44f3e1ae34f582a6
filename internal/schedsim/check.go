package schedsim

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/scheduler"
)

// Violation is a property the history breaks.
type Violation struct {
	Check string // the property's name (see Checks)
	At    time.Time
	Job   string
	Msg   string
}

func (v Violation) String() string { return v.Check + ": " + v.Msg }

// Checks names every property the checker holds a history to, with what
// it means.
var Checks = map[string]string{
	"overlap":         "no two attempts of one job are guarded (called and their context not done) at once, unless the store lost its data between the first's claim and the second's start",
	"replica-overlap": "a replica never executes two attempts of one job at once",
	"guarded":         "an attempt's context is done by the time its lease stops being live in the store (unless a wipe took the lease)",
	"once":            "no attempt of an occurrence starts after an attempt of it succeeded and released its lease, and a trigger runs at most once (wipes excepted)",
	"reported-jump":   "as reported, for an occurrence before which the clock of a replica that had the job jumped",
	"reported":        "an occurrence due while a live, reachable replica had the job, unpaused, runs or is reported (EventMissed, a skip other than claimed, an acquire failure)",
	"catch-up":        "with WithCatchUp, a run that outlived later occurrences (on its replica's clock) is followed by a catch-up of the latest one while it is within the window and the job is free, unless a firing or a trigger claimed it (or a later round) before the run ended, or one claimed it while it was due",
	"trigger":         "an accepted trigger runs, unless no live replica that had the job, and neither claimed nor executed an attempt of it, found it free (and unpaused, the store up) before it expired",
	"fence":           "every lease of a job has a fence greater than the one before, across wipes; every attempt runs with its lease's fence",
	"pause":           "no scheduled acquire wins a paused job's lease",
	"pause-trigger":   "no trigger runs while its job is paused",
	"remove":          "no attempt of a registration starts after its Remove or its replica's Shutdown",
	"register":        "Register of a job not registered on the replica succeeds when no job registered there shares its concurrency limit",
	"write":           "a fenced write (fencing.AdvanceOnce) of a guarded attempt is never refused, wipes excepted",
	"shutdown":        "every Shutdown returns within its context's bound and a second",
	"completion":      "an occurrence with a completion record ends done (succeeded, or failed without WithRetry) or is reported given up; an open one is attempted again, or given up, within a few seconds of when it could be, while a replica that has the job is live (wipes, outages and the end of the simulation excepted)",
	"given-up-once":   "an occurrence is reported given up at most once, fleet-wide",
	"given-up-done":   "no occurrence is reported given up after an attempt of it succeeded and released its lease",
}

// slack is how long the checker allows for what happens "at once" in the
// scheduler: a reaction to a release, a message, a firing.
const slack = 2 * time.Second

// checker holds the history and its indexes.
type checker struct {
	h      *History
	out    []Violation
	lives  map[string]*Life
	specs  map[string]*JobSpec
	leases map[string][]*LeaseRec // by job name, in acquisition order
	events map[string][]EventRec  // by job name, live events only
	byOcc  map[string]map[int64][]EventRec
}

// Check holds h to every property and returns what it breaks, in order.
func Check(h *History) []Violation {
	c := &checker{h: h, lives: make(map[string]*Life), specs: make(map[string]*JobSpec),
		leases: make(map[string][]*LeaseRec), events: make(map[string][]EventRec), byOcc: make(map[string]map[int64][]EventRec)}
	for _, l := range h.Lives {
		c.lives[l.ID] = l
	}
	for i := range h.Jobs {
		c.specs[h.Jobs[i].Name] = &h.Jobs[i]
		c.byOcc[h.Jobs[i].Name] = make(map[int64][]EventRec)
	}
	for _, l := range h.Leases {
		name := strings.TrimPrefix(l.Key, scheduler.JobKeyPrefix)
		c.leases[name] = append(c.leases[name], l)
	}
	for _, e := range h.Events {
		if c.dead(e.E.Instance, e.At) {
			continue // a crashed process says nothing
		}
		c.events[e.E.Job] = append(c.events[e.E.Job], e)
		if m := c.byOcc[e.E.Job]; m != nil {
			m[e.E.Occurrence.UnixMilli()] = append(m[e.E.Occurrence.UnixMilli()], e)
		}
	}
	c.overlap()
	c.replicaOverlap()
	c.guarded()
	c.once()
	c.reported()
	c.catchUp()
	c.triggers()
	c.fences()
	c.pauses()
	c.removes()
	c.registers()
	c.writes()
	c.shutdowns()
	c.completion()
	sort.SliceStable(c.out, func(a, b int) bool { return c.out[a].At.Before(c.out[b].At) })
	return c.out
}

func (c *checker) fail(check string, at time.Time, job, format string, args ...any) {
	c.out = append(c.out, Violation{Check: check, At: at, Job: job, Msg: fmt.Sprintf("%s %s: ", c.rel(at), job) + fmt.Sprintf(format, args...)})
}

// rel formats t as an offset from the start of the simulation.
func (c *checker) rel(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return "+" + t.Sub(c.h.Start).String()
}

func (c *checker) dead(replica string, t time.Time) bool {
	l := c.lives[replica]
	return l != nil && l.How == "crash" && t.After(l.To)
}

// wipeIn reports whether a wipe happened in [a, b].
func (c *checker) wipeIn(a, b time.Time) bool {
	for _, w := range c.h.Wipes {
		if !w.Before(a) && !w.After(b) {
			return true
		}
	}
	return false
}

func (c *checker) outageIn(a, b time.Time) bool {
	for _, o := range c.h.Outages {
		if o.overlaps(a, b) {
			return true
		}
	}
	return false
}

func (c *checker) pausedIn(job string, a, b time.Time) bool {
	for _, p := range c.h.Pauses[job] {
		if p.overlaps(a, b.Add(time.Millisecond)) {
			return true
		}
	}
	return false
}

// far is a time after everything.
func (c *checker) far() time.Time { return c.h.End.Add(24 * time.Hour) }

func (c *checker) orFar(t time.Time) time.Time {
	if t.IsZero() {
		return c.far()
	}
	return t
}

func (c *checker) attemptsOf() map[string][]*Attempt {
	m := make(map[string][]*Attempt)
	for _, a := range c.h.Attempts {
		m[a.Job] = append(m[a.Job], a)
	}
	for _, as := range m {
		sort.SliceStable(as, func(i, j int) bool { return as[i].Start.Before(as[j].Start) })
	}
	return m
}

func (a *Attempt) String() string {
	s := fmt.Sprintf("attempt #%d on %s (occurrence %s, fence %d, %s", a.N, a.Replica, a.Occurrence.UTC().Format("15:04:05.000"), a.Fence, a.Behaviour)
	if a.Trigger != "" {
		s += ", triggered"
	}
	if a.CatchUp {
		s += ", catch-up"
	}
	return s + ")"
}

func (c *checker) overlap() {
	for job, as := range c.attemptsOf() {
		for i, a := range as {
			end := c.orFar(a.guardEnd())
			for _, b := range as[i+1:] {
				if !b.Start.Before(end) {
					break
				}
				if c.wipeIn(c.firstClaimed(a, b), b.Start) {
					continue
				}
				c.fail("overlap", b.Start, job, "%s started at %s while %s was guarded from %s to %s",
					b, c.rel(b.Start), a, c.rel(a.Start), c.rel(a.guardEnd()))
			}
		}
	}
}

func (c *checker) replicaOverlap() {
	for job, as := range c.attemptsOf() {
		for i, a := range as {
			end := c.orFar(a.execEnd())
			for _, b := range as[i+1:] {
				if !b.Start.Before(end) {
					break
				}
				if b.Replica == a.Replica {
					c.fail("replica-overlap", b.Start, job, "%s of registration %d started at %s while %s of registration %d still executed on the same replica (until %s)",
						b, b.Reg, c.rel(b.Start), a, a.Reg, c.rel(a.execEnd()))
				}
			}
		}
	}
}

// leaseOf returns the lease record of an attempt.
// claimed is when attempt a's lease was won: before a started when its
// claim went ahead of its occurrence (scheduler.WithClaimLead). A wipe
// after that takes the lease a holds, whenever a started.
// firstClaimed is when the first of attempts a and b was claimed: a wipe
// after it takes the lease that attempt holds, and the other may win its
// own. The attempt that starts first need not be the one claimed first: a
// claim ahead of its occurrence waits for it, and one claimed after the
// wipe at the occurrence may start before it.
func (c *checker) firstClaimed(a, b *Attempt) time.Time {
	ca, cb := c.claimed(a), c.claimed(b)
	if cb.Before(ca) {
		return cb
	}
	return ca
}

func (c *checker) claimed(a *Attempt) time.Time {
	if l := c.leaseOf(a); l != nil && l.Acquired.Before(a.Start) {
		return l.Acquired
	}
	return a.Start
}

func (c *checker) leaseOf(a *Attempt) *LeaseRec {
	for _, l := range c.leases[a.Job] {
		if l.Fence == a.Fence {
			return l
		}
	}
	return nil
}

// heldUntil is when l stopped being live in the store: released, expired
// (after the store's tolerance), or wiped.
func (c *checker) heldUntil(l *LeaseRec) time.Time {
	end := l.Expires.Add(lease.ExpiryTolerance)
	if !l.Released.IsZero() && l.Released.Before(end) {
		end = l.Released
	}
	for _, w := range c.h.Wipes {
		if w.After(l.Acquired) && w.Before(end) {
			end = w
		}
	}
	return end
}

func (c *checker) guarded() {
	for _, a := range c.h.Attempts {
		l := c.leaseOf(a)
		if l == nil {
			continue // reported by fences
		}
		held, end := c.heldUntil(l), c.orFar(a.guardEnd())
		if end.After(held) && !c.wipeIn(l.Acquired, end) {
			c.fail("guarded", held, a.Job, "%s was still guarded at %s, but its lease stopped being live in the store at %s", a, c.rel(end), c.rel(held))
		}
	}
}

// succeeded reports whether the attempt's end event says it succeeded. An
// attempt whose replica crashed while it ran did not: its function saw
// the crash and returned, and the dying scheduler's report of it is not
// the store's (its lease was never released, and its occurrence is open).
func (c *checker) succeeded(a *Attempt) bool {
	if !a.Crashed.IsZero() {
		return false
	}
	for _, e := range c.byOcc[a.Job][a.Occurrence.UnixMilli()] {
		if e.E.Kind == scheduler.EventSucceeded && e.E.Fence == a.Fence {
			return true
		}
	}
	return false
}

func (c *checker) once() {
	for job, as := range c.attemptsOf() {
		byOcc := make(map[int64][]*Attempt)
		byTrigger := make(map[string][]*Attempt)
		for _, a := range as {
			if a.Trigger != "" {
				byTrigger[a.Trigger] = append(byTrigger[a.Trigger], a)
			} else {
				byOcc[a.Occurrence.UnixMilli()] = append(byOcc[a.Occurrence.UnixMilli()], a)
			}
		}
		for _, list := range byOcc {
			for i, a := range list {
				if !c.succeeded(a) {
					continue
				}
				// A success whose release never reached the store left
				// the occurrence's record running: once its lease ran
				// out, the occurrence is resumed (its effect, already
				// committed, is refused as a duplicate).
				l := c.leaseOf(a)
				unreleased := l != nil && l.Released.IsZero()
				for _, b := range list[i+1:] {
					// After a success whose release never reached the
					// store, a later attempt is no second run as long as
					// its effect does not commit again.
					if unreleased && b.Attempt > 1 && !committed(b) {
						continue
					}
					if !c.wipeIn(c.firstClaimed(a, b), b.Start) {
						c.fail("once", b.Start, job, "%s started after %s had succeeded", b, a)
					}
				}
				break
			}
		}
		for id, list := range byTrigger {
			if len(list) > 1 && !c.wipeIn(list[0].Start, list[1].Start) {
				c.fail("once", list[1].Start, job, "trigger %s ran twice: %s and %s", shortID(id), list[0], list[1])
			}
		}
	}
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// covered reports whether some live, reachable replica had job over [a, b]
// for a scheduled occurrence in it: registered before a on its own clock
// too. A replica sets its timers on its clock, so one whose clock ran
// ahead past a when it registered the job fires nothing before its next
// point, whatever the simulation's clock said (seed 20583: a replica 2.55 s
// ahead registered a job 1.9 s before an occurrence by the simulation's
// clock, 0.6 s after it by its own).
func (c *checker) covered(job string, a, b time.Time) (string, bool) {
	return c.coveredBy(job, a, b, func(r *Reg) bool { return !c.clockOf(r.Replica, r.From).After(a) })
}

// coveredIdle reports whether some live, reachable replica had job over
// [a, b] and neither executed an attempt of it then nor claimed an
// occurrence it then ran: a replica never runs two of a job at once, so one
// still executing an attempt (past its timeout or its lease, say) cannot
// take a trigger until that attempt returns; and a trigger waits behind the
// claim in progress of a scheduled occurrence (it must claim a round after
// it), so one retrying that claim through a failing store takes the
// trigger only once the run it won returns.
func (c *checker) coveredIdle(job string, a, b time.Time) (string, bool) {
	return c.coveredBy(job, a, b, func(r *Reg) bool { return !c.executing(r.Replica, job, a, b) })
}

// executing reports whether replica claimed or executed an attempt of job
// at some instant of [a, b].
func (c *checker) executing(replica, job string, a, b time.Time) bool {
	for _, x := range c.h.Attempts {
		if x.Job == job && x.Replica == replica && !c.claimedFrom(x).After(b) && c.orFar(x.execEnd()).After(a) {
			return true
		}
	}
	return false
}

// claimedFrom returns when the claim of attempt x began, as far as the
// history shows it: the first retry its replica reported of x's occurrence
// (after the last failure it reported of it, which ended an earlier claim),
// or else x's start.
func (c *checker) claimedFrom(x *Attempt) time.Time {
	if x.Trigger != "" {
		return x.Start
	}
	var from time.Time
	for _, e := range c.byOcc[x.Job][x.Occurrence.UnixMilli()] {
		if e.E.Instance != x.Replica || e.At.After(x.Start) {
			continue
		}
		switch e.E.Kind {
		case scheduler.EventAcquireFailed:
			from = time.Time{}
		case scheduler.EventAcquireRetrying:
			if from.IsZero() {
				from = e.At
			}
		}
	}
	if from.IsZero() {
		return x.Start
	}
	return from
}

func (c *checker) coveredBy(job string, a, b time.Time, able func(r *Reg) bool) (string, bool) {
	for _, r := range c.h.Regs {
		if r.Job != job || r.Err != "" || r.From.After(a) || (!r.To.IsZero() && !r.To.After(b)) || !able(r) {
			continue
		}
		l := c.lives[r.Replica]
		if l == nil || !l.live(a, b) {
			continue
		}
		jumped := false
		for _, j := range l.Jumps {
			if !j.Before(a.Add(-slack)) && !j.After(b) {
				jumped = true
			}
		}
		if !jumped {
			return r.Replica, true
		}
	}
	return "", false
}

// reports reports whether an event accounts for occurrence occ of job: a
// missed report covering it, a skip other than "claimed", an acquire
// failure, the occurrence given up (one with attempts that no replica
// resumed by its deadline).
func (c *checker) reportedOcc(job string, occ time.Time) bool {
	for _, e := range c.byOcc[job][occ.UnixMilli()] {
		switch {
		case e.E.Kind == scheduler.EventSkipped && e.E.Reason != scheduler.SkipClaimed:
			return true
		case e.E.Kind == scheduler.EventAcquireFailed, e.E.Kind == scheduler.EventGivenUp:
			return true
		}
	}
	for _, e := range c.events[job] {
		if e.E.Kind == scheduler.EventMissed && !occ.Before(e.E.Missed.First) && !occ.After(e.E.Missed.Last) {
			return true
		}
	}
	return false
}

func (c *checker) reported() {
	// A triggered run counts for the occurrence whose round the store gave
	// it: at the store's time to the millisecond, the trigger's round is
	// that occurrence's, every claim of the occurrence hears "claimed", and
	// the job ran for it once (seed 83498 of the lighter fleet: a trigger
	// taken at 00:37:00.000 exactly).
	started := make(map[string]map[int64]bool)
	for _, a := range c.h.Attempts {
		if started[a.Job] == nil {
			started[a.Job] = make(map[int64]bool)
		}
		started[a.Job][a.Occurrence.UnixMilli()] = true
	}
	const pre, post = time.Second, 5 * time.Second
	for i := range c.h.Jobs {
		j := &c.h.Jobs[i]
		for _, occ := range j.occurrences(c.h.Start.Add(10*time.Second), c.h.End.Add(-time.Minute)) {
			a, b := occ.Add(-pre), occ.Add(post)
			if started[j.Name][occ.UnixMilli()] || c.outageIn(a, b) || c.wipeIn(a, b) || c.pausedIn(j.Name, a, b) {
				continue
			}
			replica, ok := c.covered(j.Name, a, b)
			if !ok || c.reportedOcc(j.Name, occ) || c.interrupted(j.Name, occ) || c.ledgerWiped(j.Name, occ) {
				continue
			}
			check := "reported"
			if c.jumpedBefore(j.Name, occ) {
				check = "reported-jump"
			}
			c.fail(check, occ, j.Name, "occurrence %s ran nowhere and nothing reported it, though %s had the job (events: %s)",
				occ.UTC().Format("15:04:05.000"), replica, c.describe(j.Name, occ))
		}
	}
}

// jumpedBefore reports whether the clock of a replica that had job jumped
// between the occurrence before occ and occ: its timer, set on the old
// clock, then fires early or late on the new one.
func (c *checker) jumpedBefore(job string, occ time.Time) bool {
	j := c.specs[job]
	from := occ.Add(-j.Gap - slack)
	for _, r := range c.h.Regs {
		if r.Job != job || r.Err != "" || r.From.After(occ) || (!r.To.IsZero() && r.To.Before(from)) {
			continue
		}
		for _, t := range c.lives[r.Replica].Jumps {
			if t.After(from) && !t.After(occ) {
				return true
			}
		}
	}
	return false
}

// interrupted reports whether a replica claimed occ and then crashed,
// was partitioned or shut down before it could start it.
func (c *checker) interrupted(job string, occ time.Time) bool {
	for _, l := range c.leases[job] {
		if l.Round != occ.UnixMilli() {
			continue
		}
		life := c.lives[l.Client]
		if life == nil {
			return true
		}
		if !life.To.IsZero() || !life.live(l.Acquired, l.Acquired.Add(c.specs[job].Gap+slack)) {
			return true
		}
	}
	return false
}

// ledgerWiped reports whether a wipe came between the job's last claim of
// a round before occ, which recorded the round, and its next claim after
// occ, which would have read it and reported occ missed: a wipe in
// between takes the recorded round, and the next claim finds none (a
// trigger's claim that superseded occ too).
func (c *checker) ledgerWiped(job string, occ time.Time) bool {
	prev, next := c.h.Start, c.far()
	for _, l := range c.leases[job] {
		switch {
		case l.Round > 0 && l.Round < occ.UnixMilli() && l.Acquired.Before(occ):
			if l.Acquired.After(prev) {
				prev = l.Acquired
			}
		case l.Round > occ.UnixMilli() && l.Acquired.After(occ):
			if l.Acquired.Before(next) {
				next = l.Acquired
			}
		}
	}
	return c.wipeIn(prev, next)
}

// describe lists the events of one occurrence, for a message.
func (c *checker) describe(job string, occ time.Time) string {
	var parts []string
	for _, e := range c.byOcc[job][occ.UnixMilli()] {
		s := e.E.Instance + " " + e.E.Kind.String()
		if e.E.Kind == scheduler.EventSkipped {
			s += " " + e.E.Reason.String()
		}
		parts = append(parts, s+" at "+c.rel(e.At))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// busyThrough reports whether job's lease was held at every instant of
// [a, b).
func (c *checker) busyThrough(job string, a, b time.Time) bool {
	t := a
	for progress := true; progress && t.Before(b); {
		progress = false
		for _, l := range c.leases[job] {
			if !l.Acquired.After(t) && c.heldUntil(l).After(t) {
				t, progress = c.heldUntil(l), true
			}
		}
	}
	return !t.Before(b)
}

// freeAt reports whether job's lease was free throughout [a, b).
func (c *checker) freeAt(job string, a, b time.Time) bool {
	for _, l := range c.leases[job] {
		if l.Acquired.Before(b) && c.heldUntil(l).After(a) {
			return false
		}
	}
	return true
}

func (c *checker) catchUp() {
	for _, a := range c.h.Attempts {
		j := c.specs[a.Job]
		e := a.Return
		if j.CatchUp <= 0 || e.IsZero() || !a.Crashed.IsZero() || !c.lives[a.Replica].live(e, e.Add(slack)) {
			continue
		}
		occ, ok := j.prev(e)
		if !ok || !occ.After(a.Occurrence) || e.Sub(occ) > j.CatchUp-slack {
			continue
		}
		end := j.next(occ)
		if end.IsZero() || occ.Add(j.CatchUp).Before(end) {
			end = occ.Add(j.CatchUp)
		}
		if !end.After(e.Add(2 * slack)) {
			continue
		}
		if !c.hasReg(a.Replica, a.Job, e, end) || c.pausedIn(a.Job, occ, end) || c.outageIn(e, end) || c.wipeIn(occ, end) {
			continue
		}
		if c.startedFrom(a.Job, occ, occ.Add(-scheduler.MaxOccurrenceSkew), end) || c.wonFrom(a.Job, occ, occ.Add(-scheduler.MaxOccurrenceSkew), end) ||
			c.refusedAfter(a.Job, occ, e) || c.busyThrough(a.Job, e.Add(slack), end.Add(-slack)) {
			continue
		}
		if c.claimedBefore(a.Job, occ, e) {
			// A replica's firing claimed occ (or a later occurrence), or
			// a trigger's acquire a round after it, before the run
			// returned: rounds increase, so a catch-up of occ can only
			// be refused (WithCatchUp: it wins only if no replica
			// claimed that occurrence or a later one). The firing's claim
			// ran it, reported it (a skip, say shutdown while it waited
			// for a slot) or died with it; the triggered run came after
			// it and reported it missed. The reported check holds both.
			continue
		}
		if life := c.lives[a.Replica]; life != nil && life.clockAt(e).Before(occ) {
			// The replica's clock (slow) had not reached occ when the run
			// returned: occ was not due there, so no catch-up was owed. Its
			// firing of occ came later and claimed it, reported it, or
			// (not the occurrence's preferred replica) left it to the
			// replicas chosen for it, which the reported check holds to.
			continue
		}
		if f := c.firstEventBy(a.Replica, a.Job, occ); !f.IsZero() && f.After(e) {
			// The replica's clock (slow) reached occ only after the run
			// returned: occ was not due there, so no catch-up was owed;
			// its firing claims occ or reports it (the reported check).
			continue
		}
		c.fail("catch-up", e, a.Job, "%s ended at %s after occurrence %s came due; it was not caught up before %s, though the job was free in between (events: %s)",
			a, c.rel(e), occ.UTC().Format("15:04:05.000"), c.rel(end), c.describe(a.Job, occ))
	}
}

// wonFrom reports whether a claim won job's lease for occurrence occ or a
// later one in [a, b]: its run may start later (after a slot of the job's
// concurrency limit freed up), and a catch-up of occ can only be refused.
func (c *checker) wonFrom(job string, occ, a, b time.Time) bool {
	for _, l := range c.leases[job] {
		if l.Round >= occ.UnixMilli() && !l.Acquired.Before(a) && !l.Acquired.After(b) {
			return true
		}
	}
	return false
}

// claimedBefore reports whether a claim won job's lease for round occ
// or a later one before t: a scheduled claim of occ or a later
// occurrence, or a trigger's acquire, whose round the store chose after
// every round claimed before it.
func (c *checker) claimedBefore(job string, occ, t time.Time) bool {
	for _, l := range c.leases[job] {
		if l.Round >= occ.UnixMilli() && l.Acquired.Before(t) {
			return true
		}
	}
	return false
}

// firstEventBy returns when replica first reported something of
// occurrence occ of job (its firing's claim or skip, say), or the zero
// time.
func (c *checker) firstEventBy(replica, job string, occ time.Time) time.Time {
	var first time.Time
	for _, e := range c.byOcc[job][occ.UnixMilli()] {
		if e.E.Instance == replica && (first.IsZero() || e.At.Before(first)) {
			first = e.At
		}
	}
	return first
}

// refusedAfter reports whether, at or after t, a replica reported that it
// could not run occurrence occ of job: the store refused it (clock skew),
// no slot of its limit freed up, it shut down, or the store failed.
func (c *checker) refusedAfter(job string, occ, t time.Time) bool {
	for _, e := range c.byOcc[job][occ.UnixMilli()] {
		if e.At.Before(t) {
			continue
		}
		switch {
		case e.E.Kind == scheduler.EventAcquireFailed:
			return true
		case e.E.Kind == scheduler.EventSkipped && (e.E.Reason == scheduler.SkipClockSkew || e.E.Reason == scheduler.SkipConcurrencyLimit ||
			e.E.Reason == scheduler.SkipShutdown || e.E.Reason == scheduler.SkipPaused):
			return true
		}
	}
	return false
}

// hasReg reports whether replica had job registered over [a, b].
func (c *checker) hasReg(replica, job string, a, b time.Time) bool {
	for _, r := range c.h.Regs {
		if r.Replica == replica && r.Job == job && r.Err == "" && !r.From.After(a) && (r.To.IsZero() || r.To.After(b)) {
			return true
		}
	}
	return false
}

// startedFrom reports whether a scheduled attempt of job for an
// occurrence at or after occ started in [a, b].
func (c *checker) startedFrom(job string, occ, a, b time.Time) bool {
	for _, x := range c.h.Attempts {
		if x.Job == job && x.Trigger == "" && !x.Occurrence.Before(occ) && !x.Start.Before(a) && !x.Start.After(b) {
			return true
		}
	}
	return false
}

func (c *checker) triggers() {
	ran := make(map[string]bool)
	for _, a := range c.h.Attempts {
		if a.Trigger != "" {
			ran[a.Trigger] = true
		}
	}
	for _, t := range c.h.Triggers {
		if ran[t.ID] || t.Expires.After(c.h.End) {
			continue
		}
		if l := c.consumed(t); l != nil {
			// A replica took it: it must run it, or say why not (a skip
			// of the run's occurrence), or have died before it gave the
			// lease up. The run's occurrence is the round the store chose
			// for the trigger's acquire (a round after every round claimed
			// before it, so 1 ms after a round just claimed), or its
			// acquire time when it chose none.
			life := c.lives[l.Client]
			occ := l.Acquired.UnixMilli()
			if l.Round > 0 {
				occ = l.Round
			}
			reported := false
			for _, e := range c.byOcc[t.Job][occ] {
				reported = reported || e.E.Kind == scheduler.EventSkipped || e.E.Kind == scheduler.EventAcquireFailed
			}
			// It owes the report by the time it gives the lease up: one
			// that died holding it (waiting for a slot of the job's limit,
			// say) owes none.
			owed := l.Acquired.Add(slack)
			if end := c.heldUntil(l); end.After(owed) {
				owed = end
			}
			if !reported && life != nil && life.live(l.Acquired, owed) {
				c.fail("trigger", l.Acquired, t.Job, "trigger %s was taken by %s at %s but never ran, and nothing reported it",
					shortID(t.ID), l.Client, c.rel(l.Acquired))
			}
			continue
		}
		// Instants at which a replica should find the trigger: its
		// arrival, and every moment the job's lease became free or a
		// replica, the store or the job became able to run it (a
		// replica's attempt of the job stopped executing).
		cands := []time.Time{t.At}
		for _, l := range c.leases[t.Job] {
			cands = append(cands, c.heldUntil(l))
		}
		for _, x := range c.h.Attempts {
			if x.Job == t.Job && !x.execEnd().IsZero() {
				cands = append(cands, x.execEnd())
			}
		}
		for _, r := range c.h.Regs {
			cands = append(cands, r.From)
		}
		for _, o := range c.h.Outages {
			cands = append(cands, o.To)
		}
		for _, p := range c.h.Pauses[t.Job] {
			cands = append(cands, p.To)
		}
		for _, l := range c.h.Lives {
			for _, s := range l.Severed {
				cands = append(cands, s.To)
			}
		}
		for _, at := range cands {
			a, b := at, at.Add(slack)
			if a.Before(t.At) || !b.Before(t.Expires) || c.wipeIn(t.At, b) || c.outageIn(a, b) || c.pausedIn(t.Job, a, b) || !c.freeAt(t.Job, a, b) {
				continue
			}
			if replica, ok := c.coveredIdle(t.Job, a, b); ok {
				c.fail("trigger", t.At, t.Job, "trigger %s (accepted at %s, expiring at %s) never ran, though the job was free at %s and %s had it, executing none of it",
					shortID(t.ID), c.rel(t.At), c.rel(t.Expires), c.rel(at), replica)
				break
			}
		}
	}
}

// consumed returns the lease whose acquire consumed trigger t, or nil.
func (c *checker) consumed(t TriggerRec) *LeaseRec {
	for _, l := range c.leases[t.Job] {
		if l.Trigger == t.ID {
			return l
		}
	}
	return nil
}

func (c *checker) fences() {
	for job, ls := range c.leases {
		for i := 1; i < len(ls); i++ {
			if ls[i].Fence <= ls[i-1].Fence {
				c.fail("fence", ls[i].Acquired, job, "lease won by %s has fence %d, not above the fence %d of the lease won by %s at %s",
					ls[i].Client, ls[i].Fence, ls[i-1].Fence, ls[i-1].Client, c.rel(ls[i-1].Acquired))
			}
		}
	}
	for _, a := range c.h.Attempts {
		if c.leaseOf(a) == nil {
			c.fail("fence", a.Start, a.Job, "%s ran with fence %d, which no lease of the job had", a, a.Fence)
		}
	}
}

func (c *checker) pauses() {
	for job, ls := range c.leases {
		for _, l := range ls {
			for _, p := range c.h.Pauses[job] {
				if !l.Acquired.After(p.From) || (!p.To.IsZero() && !l.Acquired.Before(p.To)) {
					continue
				}
				if l.Trigger != "" {
					c.fail("pause-trigger", l.Acquired, job, "%s won the lease for trigger %s at %s, while the job was paused (since %s)",
						l.Client, shortID(l.Trigger), c.rel(l.Acquired), c.rel(p.From))
				} else {
					c.fail("pause", l.Acquired, job, "%s won the lease for occurrence %s at %s, while the job was paused (since %s)",
						l.Client, time.UnixMilli(l.Round).UTC().Format("15:04:05.000"), c.rel(l.Acquired), c.rel(p.From))
				}
			}
		}
	}
}

func (c *checker) removes() {
	regs := make(map[int]*Reg)
	for _, r := range c.h.Regs {
		regs[r.N] = r
	}
	for _, a := range c.h.Attempts {
		r, l := regs[a.Reg], c.leaseOf(a)
		if r != nil && l != nil && !r.To.IsZero() && l.Acquired.After(r.To) {
			c.fail("remove", a.Start, a.Job, "%s of registration %d won its lease at %s, after the registration ended (Remove or Shutdown) at %s",
				a, r.N, c.rel(l.Acquired), c.rel(r.To))
		}
	}
}

// clockOf returns what replica's clock read at t (t itself for a replica
// the history does not know).
func (c *checker) clockOf(replica string, t time.Time) time.Time {
	if l := c.lives[replica]; l != nil {
		return l.clockAt(t)
	}
	return t
}

func (c *checker) registers() {
	for _, r := range c.h.Regs {
		if r.Err == "" || (!c.specs[r.Job].at.IsZero() && !c.clockOf(r.Replica, r.From).Before(c.specs[r.Job].at)) {
			continue // an At schedule whose time passed on the replica's clock is refused
		}
		limit := c.specs[r.Job].Limit
		shared := false
		for _, o := range c.h.Regs {
			if o.Replica == r.Replica && o.Job != r.Job && o.Err == "" && c.specs[o.Job].Limit == limit && limit != "" &&
				!o.From.After(r.From) && (o.To.IsZero() || o.To.After(r.From)) {
				shared = true
			}
		}
		if !shared {
			c.fail("register", r.From, r.Job, "Register on %s failed: %s", r.Replica, r.Err)
		}
	}
}

// committed reports whether attempt a committed a fenced write.
func committed(a *Attempt) bool {
	for _, w := range a.Writes {
		if w.Committed {
			return true
		}
	}
	return false
}

// committedBefore reports whether an attempt of a's job and occurrence
// other than a committed a fenced write at or before t.
func (c *checker) committedBefore(a *Attempt, t time.Time) bool {
	for _, b := range c.h.Attempts {
		if b == a || b.Job != a.Job || !b.Occurrence.Equal(a.Occurrence) {
			continue
		}
		for _, w := range b.Writes {
			if w.Committed && !w.At.After(t) { // at the same instant too: fencing ordered them
				return true
			}
		}
	}
	return false
}

func (c *checker) writes() {
	for _, a := range c.h.Attempts {
		for _, w := range a.Writes {
			// A later attempt of an occurrence whose earlier attempt
			// committed (and was interrupted, or its release lost) is
			// refused as a duplicate: the effect is done once.
			if w.Duplicate && c.committedBefore(a, w.At) {
				continue
			}
			if w.Guarded && !w.Committed && !c.wipeIn(c.h.Start, w.At) {
				c.fail("write", w.At, a.Job, "%s: its fenced write at %s, while it was guarded, was refused: %s", a, c.rel(w.At), w.Err)
			}
		}
	}
}

func (c *checker) shutdowns() {
	for _, s := range c.h.Shutdowns {
		switch {
		case s.Returned.IsZero():
			c.fail("shutdown", s.Begin, "", "Shutdown of %s (called at %s, bound %s) never returned", s.Replica, c.rel(s.Begin), s.Bound)
		case s.Returned.Sub(s.Begin) > s.Bound+time.Second:
			c.fail("shutdown", s.Begin, "", "Shutdown of %s (called at %s, bound %s) returned only after %s", s.Replica, c.rel(s.Begin), s.Bound, s.Returned.Sub(s.Begin))
		}
	}
}
