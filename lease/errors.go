package lease

import (
	"errors"
	"fmt"
	"time"

	"github.com/cronguard/cronguard/internal/leasekit"
)

// Sentinel errors. Every error returned by a Store wraps exactly one of them
// (and its cause), so callers branch with errors.Is.
var (
	// ErrLocked: the key is held by another lease. Errors that wrap it are
	// *LockedError values, which say when the key is free unless renewed.
	ErrLocked = errors.New("lease: locked")
	// ErrRoundClaimed: the acquire carried a round that is not newer than the
	// highest round already recorded for the key.
	ErrRoundClaimed = errors.New("lease: round already claimed")
	// ErrNotHeld: Extend or Release named a lease that is not held by that ID.
	// Errors that wrap it are *NotHeldError values that give the reason.
	ErrNotHeld = errors.New("lease: not held")
	// ErrNotFound: Lookup or LookupID found no live lease.
	ErrNotFound = errors.New("lease: not found")
	// ErrClockSkew: the acquire carried a time round further ahead of the
	// server's clock than its maximum skew allows; nothing was recorded.
	ErrClockSkew = errors.New("lease: round too far ahead of server time")
	// ErrInvalidArgument: a key, TTL, ID, round or option broke a rule; the
	// message names the rule. No I/O was done.
	ErrInvalidArgument = leasekit.ErrInvalidArgument
	// ErrUnavailable: the backend could not be reached or refused to serve
	// (connection refused or reset, EOF, BUSY, LOADING, READONLY, MASTERDOWN,
	// CLUSTERDOWN, TRYAGAIN, client closed). Usually transient.
	ErrUnavailable = errors.New("lease: backend unavailable")
	// ErrAuth: the backend refused the credentials or the command
	// (NOAUTH, WRONGPASS, NOPERM).
	ErrAuth = errors.New("lease: not authorized")
	// ErrTimeout: the operation's deadline passed or the network timed out.
	// The operation may still have taken effect on the server.
	ErrTimeout = errors.New("lease: timeout")
	// ErrAborted: the caller's context was canceled.
	ErrAborted = errors.New("lease: aborted")
	// ErrPaused: the acquire carried WithPauseCheck and the key is paused.
	ErrPaused = errors.New("lease: paused")
	// ErrNoTrigger: the acquire carried WithTrigger and no live trigger was
	// pending for the key.
	ErrNoTrigger = errors.New("lease: no trigger pending")
	// ErrGivenUp: a resume (WithResume) found the occurrence out of attempts
	// or past its deadline; the store marked it given up. Errors that wrap
	// it are *GivenUpError values.
	ErrGivenUp = errors.New("lease: occurrence given up")
	// ErrNotDue: a resume (WithResume) came before the occurrence's backoff
	// passed. Errors that wrap it are *NotDueError values.
	ErrNotDue = errors.New("lease: attempt not due")
	// ErrAcquireTimeout: Lock waited as long as it was allowed to and the key
	// stayed locked.
	ErrAcquireTimeout = errors.New("lease: acquire timed out")
	// ErrInternal: anything else: an unexpected reply, a corrupt value, a
	// fence counter past its maximum.
	ErrInternal = errors.New("lease: internal error")
)

// NotHeldReason says why a lease is not held.
type NotHeldReason int

// The reasons a lease is not held.
const (
	ReasonNotFound NotHeldReason = iota + 1 // no lease with that ID exists
	ReasonExpired                           // the lease existed but its TTL has passed
	ReasonNotOwner                          // the key is held under another ID
)

// String returns "not found", "expired" or "not owner".
func (r NotHeldReason) String() string {
	switch r {
	case ReasonNotFound:
		return "not found"
	case ReasonExpired:
		return "expired"
	case ReasonNotOwner:
		return "not owner"
	default:
		return fmt.Sprintf("reason(%d)", int(r))
	}
}

// NotHeldError is the error Extend and Release return when the lease is not
// held. errors.Is(err, ErrNotHeld) is true for it.
type NotHeldError struct {
	Op     string        // "extend" or "release"
	Reason NotHeldReason // why the lease is not held
}

// Error returns "lease: <op>: not held: <reason>".
func (e *NotHeldError) Error() string {
	return fmt.Sprintf("lease: %s: not held: %s", e.Op, e.Reason)
}

// Is reports whether target is ErrNotHeld.
func (e *NotHeldError) Is(target error) bool { return target == ErrNotHeld }

// LockedError is the error Acquire returns when another lease holds the key.
// errors.Is(err, ErrLocked) is true for it.
type LockedError struct {
	// Remaining is how long until the key can be taken if the holder does
	// not extend or release it (its ExpiresAt + ExpiryTolerance), as the
	// server saw it; zero when unknown. lease.Lock waits no longer than this.
	Remaining time.Duration
}

// Error says the key is locked and, when known, when it is free unless renewed.
func (e *LockedError) Error() string {
	if e.Remaining > 0 {
		return fmt.Sprintf("lease: acquire: locked (free in %s unless renewed)", e.Remaining)
	}
	return "lease: acquire: locked"
}

// Is reports whether target is ErrLocked.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// GivenUpError is the error a resume (WithResume) returns when its
// occurrence has no attempt left, its deadline has passed, or a later round
// was recorded while it was open (Superseded). The store
// marks the occurrence given up in the same step, so First is true for
// exactly one caller: the one that should report it.
// errors.Is(err, ErrGivenUp) is true for it.
type GivenUpError struct {
	Round   int64 // the occurrence's round
	Attempt int   // the last attempt made
	First   bool  // this call marked the occurrence given up
	// Superseded is set when a later round was recorded while the
	// occurrence was open: no attempt can claim it any more, whatever
	// attempts and time it had left (see WithResume).
	Superseded bool
}

// Error says which occurrence was given up after how many attempts.
func (e *GivenUpError) Error() string {
	return fmt.Sprintf("lease: acquire: round %d given up after attempt %d", e.Round, e.Attempt)
}

// Is reports whether target is ErrGivenUp.
func (e *GivenUpError) Is(target error) bool { return target == ErrGivenUp }

// PausedError is the error of an acquire refused as paused
// (WithPauseCheck) that recorded its round as handled: the first refusal
// of that round. It tells what the ledger of a won acquire would tell
// (Lease.PrevRound), so that the occurrences strictly between PrevRound
// and the refused round that came due before PausedAt, which no acquire
// claimed, can be reported missed; those from PausedAt on were paused.
// errors.Is(err, ErrPaused) is true for it. A refusal that recorded
// nothing returns ErrPaused itself.
type PausedError struct {
	// PrevRound is the round recorded before this acquire's (0: none).
	PrevRound int64
	// PausedAt is when the pause was set, on the store's clock (the zero
	// time if the pause holds no readable time).
	PausedAt time.Time
}

// Error says the key is paused.
func (e *PausedError) Error() string { return ErrPaused.Error() }

// Is reports whether target is ErrPaused.
func (e *PausedError) Is(target error) bool { return target == ErrPaused }

// NotDueError is the error a resume (WithResume) returns before the
// occurrence's backoff has passed. errors.Is(err, ErrNotDue) is true for
// it.
type NotDueError struct {
	// Remaining is how long until the next attempt may start, as the
	// store saw it (at least 1ms).
	Remaining time.Duration
}

// Error says how long until the next attempt is due.
func (e *NotDueError) Error() string {
	return fmt.Sprintf("lease: acquire: next attempt not due for %s", e.Remaining)
}

// Is reports whether target is ErrNotDue.
func (e *NotDueError) Is(target error) bool { return target == ErrNotDue }

// invalid returns an ErrInvalidArgument error naming the broken rule.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// Class names the sentinel err wraps with a short, stable word, for
// metrics and logs: "locked", "claimed", "not_held", "not_found",
// "clock_skew", "paused", "no_trigger", "given_up", "not_due", "invalid",
// "acquire_timeout",
// "unavailable", "auth",
// "timeout", "aborted" or "internal"; "" for nil and "other" for an error
// that wraps none of them.
func Class(err error) string {
	if err == nil {
		return ""
	}
	for _, c := range classes {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "other"
}

// classes are the sentinels Class knows, most specific first (Lock's
// errors wrap both ErrAcquireTimeout and ErrLocked).
var classes = []struct {
	err  error
	name string
}{
	{ErrAcquireTimeout, "acquire_timeout"},
	{ErrLocked, "locked"},
	{ErrRoundClaimed, "claimed"},
	{ErrNotHeld, "not_held"},
	{ErrNotFound, "not_found"},
	{ErrClockSkew, "clock_skew"},
	{ErrPaused, "paused"},
	{ErrNoTrigger, "no_trigger"},
	{ErrGivenUp, "given_up"},
	{ErrNotDue, "not_due"},
	{ErrInvalidArgument, "invalid"},
	{ErrUnavailable, "unavailable"},
	{ErrAuth, "auth"},
	{ErrTimeout, "timeout"},
	{ErrAborted, "aborted"},
	{ErrInternal, "internal"},
}
