package scheduler

import (
	"sync/atomic"
	"time"

	"github.com/cronguard/cronguard/fencing"
)

// EventKind says what happened to a job at one firing.
type EventKind int

// The event kinds, in the order they can happen for one firing.
const (
	// EventSkipped: this replica did not run the occurrence; Reason says why.
	EventSkipped EventKind = iota + 1
	// EventAcquireFailed: the store could not be asked (unavailable,
	// timeout, ...); Err says why. The occurrence may run elsewhere.
	EventAcquireFailed
	// EventStarted: this replica won the lease and is calling the job.
	EventStarted
	// EventSucceeded: the job returned nil.
	EventSucceeded
	// EventFailed: the job returned an error (Err).
	EventFailed
	// EventPanicked: the job panicked; Err wraps ErrPanic and the value.
	EventPanicked
	// EventLeaseLost: the heartbeat cancelled the run's context because the
	// lease was lost or could not be confirmed; Err is the cause.
	EventLeaseLost
	// EventReleased: the lease was released after the run.
	EventReleased
)

// String returns the kind's name ("skipped", "started", ...).
func (k EventKind) String() string {
	switch k {
	case EventSkipped:
		return "skipped"
	case EventAcquireFailed:
		return "acquire failed"
	case EventStarted:
		return "started"
	case EventSucceeded:
		return "succeeded"
	case EventFailed:
		return "failed"
	case EventPanicked:
		return "panicked"
	case EventLeaseLost:
		return "lease lost"
	case EventReleased:
		return "released"
	default:
		return "unknown"
	}
}

// SkipReason says why a replica skipped an occurrence.
type SkipReason int

// The skip reasons.
const (
	// SkipLocked: the job's lease is held (by another replica, or by an
	// earlier occurrence still running here): overlap policy "skip".
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
)

// String returns the reason's name ("locked", "claimed", ...).
func (r SkipReason) String() string {
	switch r {
	case SkipLocked:
		return "locked"
	case SkipClaimed:
		return "claimed"
	case SkipClockSkew:
		return "clock skew"
	case SkipShutdown:
		return "shutdown"
	case SkipOverrun:
		return "overrun"
	default:
		return "none"
	}
}

// Event is what an observer (WithObserver) receives.
type Event struct {
	Kind       EventKind
	Job        string        // the job's name
	Instance   string        // this replica's instance ID
	Occurrence time.Time     // the scheduled time of the firing
	Reason     SkipReason    // for EventSkipped
	Fence      fencing.Token // the run's fencing token, once acquired
	LeaseID    string        // the lease ID in short form (lease.ShortID), once acquired
	Duration   time.Duration // for succeeded, failed and panicked: how long the job ran
	Err        error         // the error, for failed, panicked, lease lost, acquire failed, and skips the store answered (locked, claimed, clock skew)
}

// Stats are running totals of what this Scheduler did, since New.
type Stats struct {
	Started       uint64 // runs started (lease won)
	Succeeded     uint64 // runs whose job returned nil
	Failed        uint64 // runs whose job returned an error (panics included)
	Panicked      uint64 // runs whose job panicked
	LeaseLost     uint64 // runs whose lease was lost or unconfirmed
	Released      uint64 // leases released after a run
	SkipLocked    uint64 // occurrences skipped: the job's lease was held
	SkipClaimed   uint64 // occurrences skipped: another replica ran them
	SkipClockSkew uint64 // occurrences refused: this replica's clock runs fast
	SkipShutdown  uint64 // occurrences skipped: shutting down
	SkipOverrun   uint64 // occurrences skipped: this replica was still acquiring earlier ones
	AcquireFailed uint64 // occurrences not run: the store could not be asked
}

// counters keep Stats: one counter per event kind and per skip reason.
type counters struct {
	kinds   [EventReleased + 1]atomic.Uint64
	reasons [SkipOverrun + 1]atomic.Uint64
}

func (c *counters) count(e Event) {
	if e.Kind > 0 && int(e.Kind) < len(c.kinds) {
		c.kinds[e.Kind].Add(1)
	}
	if e.Kind == EventSkipped && e.Reason > 0 && int(e.Reason) < len(c.reasons) {
		c.reasons[e.Reason].Add(1)
	}
}

func (c *counters) snapshot() Stats {
	k := func(kind EventKind) uint64 { return c.kinds[kind].Load() }
	r := func(reason SkipReason) uint64 { return c.reasons[reason].Load() }
	return Stats{
		Started: k(EventStarted), Succeeded: k(EventSucceeded),
		Failed:   k(EventFailed) + k(EventPanicked), // panics count as failures too
		Panicked: k(EventPanicked), LeaseLost: k(EventLeaseLost), Released: k(EventReleased),
		SkipLocked: r(SkipLocked), SkipClaimed: r(SkipClaimed), SkipClockSkew: r(SkipClockSkew),
		SkipShutdown: r(SkipShutdown), SkipOverrun: r(SkipOverrun), AcquireFailed: k(EventAcquireFailed),
	}
}
