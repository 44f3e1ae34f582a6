package scheduler

import (
	"sync/atomic"
	"time"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/fleet"
)

// EventKind says what happened to a job at one firing.
type EventKind int

// The event kinds, in the order they can happen for one firing.
const (
	// EventSkipped: this replica did not run the occurrence; Reason says why.
	EventSkipped EventKind = iota + 1
	// EventAcquireRetrying: an acquire failed with a transient error (Err;
	// the store unavailable or timed out); it is tried again (Try is the
	// try that failed) while the occurrence is current.
	EventAcquireRetrying
	// EventAcquireFailed: the store could not be asked (unavailable,
	// timeout, ...) before the occurrence stopped being current; Err says
	// why. The occurrence may run elsewhere; if it runs nowhere, the next
	// winner reports it missed.
	EventAcquireFailed
	// EventMissed: this replica won Occurrence and the ledger shows
	// occurrences before it that ran nowhere (Missed).
	EventMissed
	// EventStarted: this replica won the lease and is calling the job;
	// Lateness is how long after the occurrence it started, CatchUp says
	// whether it is a catch-up run. It is emitted on the goroutine that then
	// calls the job (and its middleware), just before the call, so an
	// observer and a middleware can pair them. The run's events carry
	// ShortLeaseID, the short form of Run.LeaseID, which identifies the run.
	EventStarted
	// EventRenewed: the heartbeat renewed the run's lease; Latency is how
	// long the renewal took (from just before it was sent to its answer).
	EventRenewed
	// EventSucceeded: the job returned nil within its timeout.
	EventSucceeded
	// EventFailed: the job returned an error (Err), or ended with
	// runtime.Goexit (Err wraps ErrGoexit).
	EventFailed
	// EventPanicked: the job panicked; Err wraps ErrPanic and the value.
	EventPanicked
	// EventTimedOut: the job returned after its WithTimeout had passed,
	// whatever it returned; Err wraps ErrTimeout (and the job's error).
	EventTimedOut
	// EventCancelled: while the job ran, its context was cancelled by its
	// timeout (Err wraps ErrTimeout; the lease is no longer renewed) or by
	// Shutdown (Err is ErrShutdown). The run ends with its own event.
	EventCancelled
	// EventLeaseLost: while the job ran, the heartbeat cancelled its context
	// because the lease was lost or could not be confirmed; Err is the cause
	// (heartbeat.ErrLeaseLost or heartbeat.ErrLeaseUnconfirmed) and
	// Remaining the time the lease had left to its local deadline. The run
	// ends with its own event.
	EventLeaseLost
	// EventReleased: the lease was released after the run.
	EventReleased
	// EventConflict: another live replica registered this job with a
	// different schedule or options (Conflict): the two disagree on when
	// or how it runs. Logged as an error; reported once per conflict.
	EventConflict
	// EventInterrupted: the run did not end by itself: Shutdown cancelled
	// it, or its lease was lost (Err says which), and the job returned an
	// error. Its occurrence stays open: another attempt (Attempt+1) may
	// resume it (see WithAttempts). Logged as a warning; not a failure.
	EventInterrupted
	// EventGivenUp: the occurrence ran out of attempts or of time (its
	// deadline, WithAttemptWindow) without succeeding, or a later
	// occurrence was claimed while it was still open; it will not be
	// attempted again. Attempt is the last attempt made. Reported once
	// fleet-wide, by the replica that recorded it; logged as a warning.
	EventGivenUp

	numEventKinds // one past the last kind
)

// String returns the kind's name in snake case ("skipped", "started",
// "timed_out", ...), as logs, metrics and JSON spell it.
func (k EventKind) String() string {
	switch k {
	case EventSkipped:
		return "skipped"
	case EventAcquireRetrying:
		return "acquire_retrying"
	case EventAcquireFailed:
		return "acquire_failed"
	case EventMissed:
		return "missed"
	case EventStarted:
		return "started"
	case EventRenewed:
		return "renewed"
	case EventSucceeded:
		return "succeeded"
	case EventFailed:
		return "failed"
	case EventPanicked:
		return "panicked"
	case EventTimedOut:
		return "timed_out"
	case EventCancelled:
		return "cancelled"
	case EventLeaseLost:
		return "lease_lost"
	case EventReleased:
		return "released"
	case EventConflict:
		return "conflict"
	case EventInterrupted:
		return "interrupted"
	case EventGivenUp:
		return "given_up"
	default:
		return "unknown"
	}
}

// SkipReason says why a replica skipped an occurrence.
type SkipReason int

// The skip reasons.
const (
	// SkipLocked: the job's lease is held by another replica (or by a run
	// here that ended without releasing it, a release that failed):
	// overlap policy "skip".
	SkipLocked SkipReason = iota + 1
	// SkipClaimed: another replica already ran (claimed) this occurrence.
	SkipClaimed
	// SkipClockSkew: the store refused the round as too far ahead of its
	// clock: this replica's clock runs fast. Logged as an error.
	SkipClockSkew
	// SkipShutdown: the scheduler was shutting down.
	SkipShutdown
	// SkipOverrun: this replica had not finished acquiring the job's
	// previous occurrence when two later ones were due (the store is slow
	// or the process overloaded); the earlier of the two was dropped. The
	// occurrence may still run on another replica.
	SkipOverrun
	// SkipRunning: an earlier run of the job still executes on this
	// replica: a replica never runs two of a job at once, and does not
	// claim an occurrence it cannot run. No store round trip was made; the
	// occurrence runs on another replica if its lease is free there, and
	// is otherwise reported missed by the next run's ledger.
	SkipRunning
	// SkipPaused: the job is paused fleet-wide (package fleet, inspect).
	// The occurrence is recorded as handled: not missed, not caught up.
	SkipPaused
	// SkipConcurrencyLimit: this replica won the occurrence, but no slot
	// of the job's concurrency limit (WithConcurrencyLimit) freed up before
	// the job's next occurrence. The occurrence runs nowhere: its round is
	// claimed, so the ledger does not report it missed.
	SkipConcurrencyLimit
	// SkipLeaseLost: this replica won the occurrence, but the job's lease
	// was lost (or could not be confirmed) before the job was called, while
	// the run waited for a slot of its concurrency limit; EventLeaseLost
	// says why. The occurrence did not run here: its round is claimed, so
	// the ledger does not report it missed; this skip does.
	SkipLeaseLost

	numSkipReasons // one past the last reason
)

// String returns the reason's name in snake case ("locked", "claimed",
// "running_here", ...), as logs, metrics and JSON spell it.
func (r SkipReason) String() string {
	switch r {
	case SkipLocked:
		return "locked"
	case SkipClaimed:
		return "claimed"
	case SkipClockSkew:
		return "clock_skew"
	case SkipShutdown:
		return "shutdown"
	case SkipOverrun:
		return "overrun"
	case SkipRunning:
		return "running_here"
	case SkipPaused:
		return "paused"
	case SkipConcurrencyLimit:
		return "concurrency_limit"
	case SkipLeaseLost:
		return "lease_lost"
	default:
		return "none"
	}
}

// Event is what an observer (WithObserver) receives.
type Event struct {
	Kind         EventKind
	Job          string         // the job's name
	Instance     string         // this replica's instance ID
	Occurrence   time.Time      // the scheduled time of the firing
	Reason       SkipReason     // for EventSkipped
	Fence        fencing.Token  // the run's fencing token, once acquired
	ShortLeaseID string         // the lease ID in short form (lease.ShortID), once acquired; never the full ID
	CatchUp      bool           // the run is a catch-up (WithCatchUp), once acquired
	Lateness     time.Duration  // for started: how long after the occurrence the run started
	Duration     time.Duration  // for the end of a run (succeeded, failed, panicked, timed out): how long the job ran
	Remaining    time.Duration  // for lease lost: how long the lease had left to its local deadline
	Latency      time.Duration  // for renewed: how long the renewal took
	Try          int            // for acquire retrying: the try of the claim that failed (1 for the first)
	Missed       Missed         // for missed: the occurrences that ran nowhere
	Trigger      string         // the trigger the run consumed (a run now), once acquired; "" for a scheduled run
	Attempt      int            // the run's attempt at its occurrence, once acquired (1 for the first); for given up, the last attempt made
	Conflict     fleet.Conflict // for conflict: the two registrations
	Err          error          // the error, for failed, panicked, timed out, cancelled, lease lost, acquire retrying and failed, and skips the store answered (locked, claimed, clock skew)
}

// Missed describes occurrences of a job that ran nowhere, as the ledger
// tells: the winner of an occurrence learns the occurrence claimed before
// it, and every occurrence of the schedule strictly between the two was
// claimed by no replica.
type Missed struct {
	Count  int       // how many occurrences ran nowhere: at least Count when Capped
	First  time.Time // the first of them
	Last   time.Time // the last of them
	Capped bool      // there were more than MaxMissedCount; Count is MaxMissedCount
}

// Stats are running totals of what this Scheduler did, since New.
type Stats struct {
	Started       uint64 // runs started (lease won)
	Succeeded     uint64 // runs whose job returned nil within its timeout, or an error wrapping fencing.ErrDuplicate
	Failed        uint64 // runs that did not succeed: errors, Goexit, panics (also in Panicked), timeouts (also in TimedOut)
	Panicked      uint64 // runs whose job panicked
	TimedOut      uint64 // runs whose job returned after its timeout
	LeaseLost     uint64 // runs whose lease was lost or unconfirmed
	Released      uint64 // leases released after a run
	SkipLocked    uint64 // occurrences skipped: the job's lease was held
	SkipClaimed   uint64 // occurrences skipped: another replica ran them
	SkipClockSkew uint64 // occurrences refused: this replica's clock runs fast
	SkipShutdown  uint64 // occurrences skipped: shutting down
	SkipOverrun   uint64 // occurrences skipped: this replica was still acquiring earlier ones
	SkipRunning   uint64 // occurrences skipped: an earlier run still executed on this replica
	SkipPaused    uint64 // occurrences skipped: the job was paused
	// SkipConcurrencyLimit: occurrences won here but not run: no slot of
	// the job's concurrency limit freed up in time.
	SkipConcurrencyLimit uint64
	// SkipLeaseLost: occurrences won here but not run: the job's lease
	// was lost while the run waited for a slot of its concurrency limit.
	SkipLeaseLost uint64
	AcquireFailed uint64 // occurrences not run here: the store could not be asked while they were current
	Retries       uint64 // acquires retried after a transient error
	Renewals      uint64 // lease renewals confirmed while jobs ran
	Missed        uint64 // occurrences that ran nowhere, reported by this replica's wins (see EventMissed)
	CatchUps      uint64 // catch-up runs started (WithCatchUp)
	Triggered     uint64 // runs started for a trigger (a run now)
	Conflicts     uint64 // conflicts with other replicas' registrations, reported
	// Interrupted: runs that did not end by itself (Shutdown, a lost
	// lease); their occurrences stay open for another attempt. Not in
	// Failed.
	Interrupted uint64
	// Resumed: runs started as a later attempt (Attempt > 1) of an open
	// occurrence: a resumed interruption or a retried failure.
	Resumed uint64
	// GivenUp: occurrences this replica reported given up (EventGivenUp):
	// out of attempts or of time. Each is reported by one replica only.
	GivenUp uint64
}

// emit counts e, for the Scheduler and for job j, and hands it to the
// observers in order.
func (s *Scheduler) emit(j *job, e Event) {
	e.Instance = s.cfg.instanceID
	s.stats.count(e)
	if j != nil { // nil: a job this replica does not have (a given-up occurrence found in the fleet's index)
		j.stats.count(e)
	}
	for _, o := range s.cfg.observers {
		o(e)
	}
}

// counters keep Stats: one counter per event kind and per skip reason.
type counters struct {
	kinds     [numEventKinds - 1]atomic.Uint64  // by kind - 1: kinds start at 1
	reasons   [numSkipReasons - 1]atomic.Uint64 // by reason - 1
	missed    atomic.Uint64
	catchUps  atomic.Uint64
	triggered atomic.Uint64
	resumed   atomic.Uint64
}

func (c *counters) count(e Event) {
	if e.Kind > 0 && e.Kind < numEventKinds {
		c.kinds[e.Kind-1].Add(1)
	}
	switch {
	case e.Kind == EventSkipped && e.Reason > 0 && e.Reason < numSkipReasons:
		c.reasons[e.Reason-1].Add(1)
	case e.Kind == EventMissed:
		c.missed.Add(uint64(e.Missed.Count))
	case e.Kind == EventStarted && e.CatchUp:
		c.catchUps.Add(1)
	case e.Kind == EventStarted && e.Trigger != "":
		c.triggered.Add(1)
	}
	if e.Kind == EventStarted && e.Attempt > 1 {
		c.resumed.Add(1)
	}
}

// jobCounters keep a job's Stats with less memory than counters: a
// scheduler with 10,000 jobs keeps 10,000 of them. The events a healthy
// job has at every occurrence (started, succeeded, released, skipped as
// claimed or locked by another replica) count in place; the rest (renewals,
// failures, retries, other skips, missed, ...) in a full set of counters
// made at the job's first such event.
type jobCounters struct {
	started, succeeded, released atomic.Uint64
	skipClaimed, skipLocked      atomic.Uint64
	rare                         atomic.Pointer[counters]
}

func (c *jobCounters) count(e Event) {
	switch {
	case e.Kind == EventStarted && !e.CatchUp && e.Trigger == "":
		c.started.Add(1)
	case e.Kind == EventSucceeded:
		c.succeeded.Add(1)
	case e.Kind == EventReleased:
		c.released.Add(1)
	case e.Kind == EventSkipped && e.Reason == SkipClaimed:
		c.skipClaimed.Add(1)
	case e.Kind == EventSkipped && e.Reason == SkipLocked:
		c.skipLocked.Add(1)
	default:
		r := c.rare.Load()
		if r == nil {
			r = &counters{}
			if !c.rare.CompareAndSwap(nil, r) {
				r = c.rare.Load()
			}
		}
		r.count(e)
	}
}

func (c *jobCounters) snapshot() Stats {
	var st Stats
	if r := c.rare.Load(); r != nil {
		st = r.snapshot()
	}
	st.Started += c.started.Load()
	st.Succeeded += c.succeeded.Load()
	st.Released += c.released.Load()
	st.SkipClaimed += c.skipClaimed.Load()
	st.SkipLocked += c.skipLocked.Load()
	return st
}

func (c *counters) snapshot() Stats {
	k := func(kind EventKind) uint64 { return c.kinds[kind-1].Load() }
	r := func(reason SkipReason) uint64 { return c.reasons[reason-1].Load() }
	return Stats{
		Started: k(EventStarted), Succeeded: k(EventSucceeded),
		Failed:   k(EventFailed) + k(EventPanicked) + k(EventTimedOut),
		Panicked: k(EventPanicked), TimedOut: k(EventTimedOut), LeaseLost: k(EventLeaseLost), Released: k(EventReleased),
		SkipLocked: r(SkipLocked), SkipClaimed: r(SkipClaimed), SkipClockSkew: r(SkipClockSkew),
		SkipShutdown: r(SkipShutdown), SkipOverrun: r(SkipOverrun), SkipRunning: r(SkipRunning), SkipPaused: r(SkipPaused),
		SkipConcurrencyLimit: r(SkipConcurrencyLimit), SkipLeaseLost: r(SkipLeaseLost),
		AcquireFailed: k(EventAcquireFailed), Retries: k(EventAcquireRetrying), Renewals: k(EventRenewed),
		Missed: c.missed.Load(), CatchUps: c.catchUps.Load(), Triggered: c.triggered.Load(), Conflicts: k(EventConflict),
		Interrupted: k(EventInterrupted), Resumed: c.resumed.Load(), GivenUp: k(EventGivenUp),
	}
}
