package checker

import (
	"fmt"
	"strings"
	"time"

	"github.com/cronguard/cronguard/faults/history"
)

// Requests in flight across a pause or a kill.
//
// A replica paused (SIGSTOP) or killed while one of its requests is in
// flight does not learn the request's outcome in time, or at all, yet Redis
// may run it: a request written before a kill reaches Redis until the
// kernel tears the connection down, and one written before a pause sits in
// the socket (or in the client's write buffer, to be written on SIGCONT)
// while the replica is stopped. Such a request may have run at any instant
// from its send to the latest moment it could still reach Redis: the kill,
// or for a pause the later of the resume and the moment the replica
// recorded the request's failure.
//
// An acquire that ran then may have won: it claimed its round and held the
// job's lease, and since its replica never learned that it won, no
// heartbeat renewed the lease and no run released it, so the lease lived
// until the instant the acquire ran plus the TTL and the server's
// tolerance. An Extend that ran then may have moved a recorded lease's
// expiry past its last confirmed one, to the instant it ran plus the TTL,
// but only while the lease was still live (the extend script refuses an
// expired lease).
//
// The rule is narrow on purpose. An acquire whose outcome the replica
// learned (it recorded the lease, locked, claimed or skew, or an error
// before the pause) explains nothing here, nor does one sent after the
// replica resumed.

// maxFiringSlack is the scheduler's firing slack cap: a firing up to
// min(interval/10, 50ms) early on the local clock maps to the coming
// occurrence, so a replica may acquire an occurrence o from o - slack.
const maxFiringSlack = 50 * time.Millisecond

// firingSlack is the scheduler's firing slack for an interval, in ms.
func firingSlack(every time.Duration) int64 {
	return min(every/10, maxFiringSlack).Milliseconds()
}

// Reasons of an acquire_error: a live lease held the key (locked), or the
// outcome is unknown (error: not locked, claimed or skew).
const (
	reasonLocked = "locked"
	acquireError = "error"
)

// flight is an acquire whose outcome its replica never learned because the
// replica was paused or killed while it was in flight. If it ran and won,
// it claimed one round in [first, last] and held the job's lease from the
// instant it ran, some time in [sent, latest], for the TTL plus the
// server's tolerance.
type flight struct {
	first, last int64 // the occurrences it may be for, Unix ms
	sent        int64 // the earliest it may have run, server ms
	latest      int64 // the latest it may have run, server ms
	what        string
}

// flights returns job's acquires that were in flight when their replica
// was paused or killed and whose outcome the replica never learned.
func (ix *indexed) flights(job Job) []flight {
	var out []flight
	step, slack := job.Every.Milliseconds(), firingSlack(job.Every)
	for _, f := range ix.faults {
		switch f.kind {
		case history.FaultStop:
			out = append(out, ix.pausedAcquires(job, f, f.target)...)
		case history.FaultStall:
			for _, name := range ix.replicaNames() {
				out = append(out, ix.pausedAcquires(job, f, name)...)
			}
		case history.FaultKill:
			if fl, ok := ix.killedAcquire(job, f, step, slack); ok {
				out = append(out, fl)
			}
		}
	}
	return out
}

// pausedAcquires returns the acquires of job sent by replica before the
// pause f (a SIGSTOP of it, or a stall) began whose failure (an unknown
// outcome) was recorded only after it began: the replica resumed and found
// the acquire failed, most often with a deadline that passed while it was
// stopped.
func (ix *indexed) pausedAcquires(job Job, f *fault, replica string) []flight {
	var out []flight
	for _, e := range ix.history[replica] {
		if e.Kind != history.AcquireError || e.Job != job.Name || e.Reason != acquireError || !pausedAcross(e, f) {
			continue
		}
		out = append(out, flight{
			first: e.Occurrence, last: e.Occurrence,
			sent: wallAt(e, e.Sent) / 1e6, latest: pausedUntil(e, f) / 1e6,
			what: fmt.Sprintf("acquire by %s for %s, sent at %s, was in flight when %s was paused at %s (%s, resumed %s, failed %s)",
				replica, ms(e.Occurrence), ms(wallAt(e, e.Sent)/1e6), replica, ms(f.startWall/1e6), f.kind, ms(f.endWall/1e6), ms(e.Wall/1e6)),
		})
	}
	return out
}

// killedAcquire returns the acquire of job that f's target may have had in
// flight when f killed it: a killed replica records no outcome. A replica
// acquires one job's occurrences one at a time and in order, and records
// each outcome before it sends the next acquire, so the one in flight is
// for an occurrence after the last one whose outcome the killed process
// recorded (or after its start) and fired before the kill, or, when that
// outcome was an error, a retry of the same occurrence (the scheduler
// retries within the occurrence). If there is no such occurrence, nothing
// was in flight.
func (ix *indexed) killedAcquire(job Job, f *fault, step, slack int64) (flight, bool) {
	var (
		readyWall int64
		ready     bool
		lastOcc   int64
		lastWall  int64
		recorded  bool
		retry     bool // the last outcome was an error: a retry may follow
	)
	for _, e := range ix.history[f.target] {
		if e.Mono >= f.startMono {
			break
		}
		switch {
		case e.Kind == history.Boot:
			ready, recorded = false, false // a new process
		case e.Kind == history.Ready:
			ready, readyWall, recorded = true, e.Wall, false
		case e.Job == job.Name && (e.Kind == history.Acquire || e.Kind == history.AcquireError):
			lastOcc, lastWall, recorded = e.Occurrence, e.Wall, true
			retry = e.Kind == history.AcquireError && e.Reason == acquireError
		}
	}
	if !ready {
		return flight{}, false // the killed process had not started its scheduler
	}
	first := ceilTo(readyWall/1e6-slack, step)
	sent := readyWall / 1e6
	if recorded {
		first, sent = lastOcc+step, lastWall/1e6
		if retry {
			first = lastOcc
		}
	}
	kill := f.startWall / 1e6
	last := floorTo(kill+slack, step)
	if first > last {
		return flight{}, false // no occurrence fired after the last outcome
	}
	return flight{
		first: first, last: last,
		sent: max(sent, first-slack), latest: kill,
		what: fmt.Sprintf("%s was killed at %s with an acquire for %s..%s in flight", f.target, ms(kill), ms(first), ms(last)),
	}, true
}

// explainFlight returns why a flight explains the miss of occurrence o of
// job, or "" if none does: the acquire may have claimed o's round, or its
// lease may have been live when the other replicas acquired o (from o less
// the firing slack, and only if the flight was sent by the time they fire o).
func explainFlight(flights []flight, job Job, o int64) string {
	step, slack := job.Every.Milliseconds(), firingSlack(job.Every)
	for _, fl := range flights {
		until := fl.latest + job.TTL.Milliseconds() + Tolerance.Milliseconds()
		switch {
		case o >= fl.first && o <= fl.last:
			return fmt.Sprintf("%s: it may have claimed this round", fl.what)
		case o > fl.last && fl.sent <= o+step/2 && o-slack < until:
			return fmt.Sprintf("%s: it may have held the lease until %s", fl.what, ms(until))
		}
	}
	return ""
}

// unrecordedExtends sets extendMayRunUntil on the leases whose heartbeat
// may have extended them without its replica learning it:
//
//   - an Extend whose reply was lost (its failure has an unknown outcome: a
//     timeout, a broken connection) may have run from its send to its
//     failure, plus slack for a request already delivered when the
//     connection broke, as for a lost acquire reply;
//   - an Extend in flight when its replica was paused (an extend_error
//     recorded after a pause that began after it was sent) may have run
//     until the later of the resume and its failure;
//   - one in flight at a kill (the first after the acquire) while the
//     heartbeat was going on (the run had neither returned nor had its
//     context ended) may have run until the kill.
//
// An Extend runs only on a live lease: by the latest expiry the lease may
// have had (confirmed, or set by an earlier such Extend) plus the
// tolerance.
func (ix *indexed) unrecordedExtends(slack time.Duration) {
	tol := Tolerance.Milliseconds()
	// mayRun records an Extend of l sent at sent that may have run until
	// latest (server ms), if the lease may have been live by then.
	mayRun := func(l *leaseRec, sent, latest int64) {
		exp := l.expiresAt
		if l.extendMayRunUntil != 0 {
			exp = max(exp, l.extendMayRunUntil+l.ttl())
		}
		if sent > exp+tol {
			return // the lease was gone before it was sent
		}
		l.extendMayRunUntil = max(l.extendMayRunUntil, min(latest, exp+tol))
	}
	for _, e := range ix.extendErrors { // in send order: a replica renews a lease one Extend at a time
		l := ix.byFence[e.Job][e.Fence]
		if l == nil || e.Sent == 0 {
			continue
		}
		var latest int64
		if outcomeUnknown(e) {
			latest = e.Wall/1e6 + slack.Milliseconds()
		}
		for _, f := range ix.faultsOn(e.Replica) {
			if pausedAcross(e, f) {
				latest = max(latest, pausedUntil(e, f)/1e6)
			}
		}
		if latest != 0 {
			mayRun(l, sentMs(e), latest)
		}
	}
	for _, l := range ix.acquires {
		for _, f := range ix.faultsOn(l.replica) {
			if f.kind != history.FaultKill || f.startMono < l.mono {
				continue
			}
			if done := firstNonZero(l.ctxDone, l.runEnd); done == 0 || done > f.startMono {
				mayRun(l, 0, f.startWall/1e6)
			}
			break // the first kill after the acquire ended its process
		}
	}
}

// outcomeUnknown reports whether e, a failed Extend or Release, may have
// run on the server: its reason says so, or, in a history recorded before
// extends had reasons, its error is not the server's "not held".
func outcomeUnknown(e history.Event) bool {
	if e.Reason != "" {
		return e.Reason == history.OutcomeUnknown
	}
	return !strings.Contains(e.Err, "not held")
}

// pausedAcross reports whether f paused the replica that recorded e, a
// failed request, while the request was in flight: f is a pause of that
// replica (a SIGSTOP, or a stall) that began after the request was sent
// and before its failure was recorded. FaultStart is recorded just before
// SIGSTOP, so "before" takes in the few microseconds before the signal
// landed.
func pausedAcross(e history.Event, f *fault) bool {
	return f.pauses(e.Replica) && e.Sent != 0 && e.Sent <= f.startMono && f.startMono <= e.Mono
}

// pausedUntil is the latest a request in flight across the pause f may have
// run, in wall ns: the later of the resume and e, its recorded failure.
func pausedUntil(e history.Event, f *fault) int64 {
	if !f.ended {
		return e.Wall
	}
	return max(e.Wall, f.endWall)
}

// pausedRequest reports whether a pause of e's replica began while the
// request e records was in flight.
func (ix *indexed) pausedRequest(e history.Event) bool {
	for _, f := range ix.faultsOn(e.Replica) {
		if pausedAcross(e, f) {
			return true
		}
	}
	return false
}

// wallAt converts a CLOCK_MONOTONIC reading near e to wall ns, through the
// offset between e's two clocks.
func wallAt(e history.Event, mono int64) int64 { return e.Wall - (e.Mono - mono) }

// ceilTo rounds t up to a multiple of step; floorTo rounds it down.
func ceilTo(t, step int64) int64 { return floorTo(t+step-1, step) }

func floorTo(t, step int64) int64 {
	q := t / step
	if t%step != 0 && t < 0 {
		q--
	}
	return q * step
}
