package lease

import (
	"time"
	"unicode"
	"unicode/utf8"
)

// AcquireOptions is the resolved form of a list of AcquireOption values.
// Store implementations read it through ResolveAcquireOptions.
type AcquireOptions struct {
	// Round, when positive, makes the acquire succeed only if it is greater
	// than every round recorded for the key, and records it.
	Round int64
	// MaxSkew, when positive, says Round is a time in Unix milliseconds and
	// must not lie further ahead of the server's clock than MaxSkew.
	MaxSkew time.Duration
	// Owner is the holder label stored with the lease; empty stores no
	// label. Stores apply no default of their own.
	Owner string
	// PauseCheck makes the acquire fail with ErrPaused while the key is
	// paused (WithPauseCheck).
	PauseCheck bool
	// Trigger makes the acquire consume a pending trigger of the key, and
	// fail with ErrNoTrigger when none is pending (WithTrigger).
	Trigger bool
	// Attempts is the completion policy recorded with a round acquire's
	// first attempt (WithAttempts); Attempts.Max is 0 without it.
	Attempts Attempts
	// Resume, when positive, makes the acquire claim the next attempt of
	// that round (WithResume).
	Resume int64

	roundSet    bool // a round option was given (so a zero round is an error)
	timeRound   bool // the round came from WithRoundTime (so it needs a max skew)
	attemptsSet bool // WithAttempts was given (so a zero policy is an error)
	resumeSet   bool // WithResume was given (so a zero round is an error)
}

// Attempts is an occurrence's completion policy, recorded with its first
// attempt (WithAttempts) and enforced by the store on every later one
// (WithResume).
type Attempts struct {
	// Max is the number of attempts in total, from 1 (never attempted
	// again) to MaxAttempts.
	Max int
	// Deadline is the store time at or after which no further attempt
	// starts (a resume finds the occurrence given up). It bounds resumes
	// only: the first attempt is the round acquire itself.
	Deadline time.Time
}

// MaxAttempts bounds Attempts.Max.
const MaxAttempts = 10_000

// ValidateAttempts checks a completion policy: Max from 1 to MaxAttempts,
// and a Deadline after the Unix epoch (a time a store keeps in Unix
// milliseconds). It returns an ErrInvalidArgument error naming the rule.
func ValidateAttempts(a Attempts) error {
	if a.Max < 1 || a.Max > MaxAttempts {
		return invalid("attempts max must be from 1 to %d, got %d", MaxAttempts, a.Max)
	}
	if a.Deadline.IsZero() {
		return invalid("attempts deadline must be set")
	}
	if ms := a.Deadline.UnixMilli(); ms <= 0 || ms > maxDeadlineMs {
		return invalid("attempts deadline must lie between the Unix epoch and the year 2255, got %s", a.Deadline.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// maxDeadlineMs is the latest deadline accepted, in Unix ms: the year the
// 15-digit fence floor runs out (lease.FenceFloor), well inside what a
// Lua number holds exactly.
const maxDeadlineMs = 9_000_000_000_000

// AcquireOption configures one Acquire call.
type AcquireOption func(*AcquireOptions)

// WithRound makes the acquire once-per-round: it succeeds only if round is
// greater than the highest round ever recorded for the key, and records
// round in the same atomic step. A lower or equal round fails with
// ErrRoundClaimed. round must be positive. Round records are never deleted.
func WithRound(round int64) AcquireOption {
	return func(o *AcquireOptions) {
		o.Round, o.roundSet = round, true
		o.MaxSkew, o.timeRound = 0, false
	}
}

// WithRoundTime is WithRound(t.UnixMilli()) for rounds that are times (a
// scheduled occurrence), with a bound: a round more than maxSkew ahead of the
// server's clock is refused with ErrClockSkew and nothing is recorded, so a
// replica whose clock runs fast cannot claim future rounds. maxSkew must be
// at least 1ms. A later WithRound replaces both the round and the bound.
func WithRoundTime(t time.Time, maxSkew time.Duration) AcquireOption {
	return func(o *AcquireOptions) {
		o.Round, o.roundSet = t.UnixMilli(), true
		o.MaxSkew, o.timeRound = maxSkew, true
	}
}

// WithOwner stores a free-text holder label with the lease (for example
// "host/pid/job"), shown by Lookup. It is not a proof of ownership. The
// label must pass ValidateOwner. Default: none. An acquire without it, or
// with the empty label, stores no label, in every Store (Lease.Owner and
// Info.Owner are ""); a later WithOwner in one acquire's options replaces
// an earlier one. The scheduler labels its leases itself
// (scheduler.WithOwner, default "<instance ID>/<job>").
func WithOwner(owner string) AcquireOption {
	return func(o *AcquireOptions) { o.Owner = owner }
}

// WithPauseCheck makes the acquire honour a pause of the key (see package
// fleet): while the key is paused it fails with ErrPaused, before any other
// check, and records its round as handled, if it has one, it is newer than
// the recorded one and within the skew bound of WithRoundTime, so that a
// paused occurrence is neither reported missed nor caught up later. The
// acquire that records its round fails with a *PausedError (which is
// ErrPaused) telling the round recorded before it and the pause's time. The
// scheduler's acquires use it. A trigger acquire (WithTrigger) with it
// fails with ErrPaused while the key is paused and keeps its triggers
// queued.
func WithPauseCheck() AcquireOption {
	return func(o *AcquireOptions) { o.PauseCheck = true }
}

// WithTrigger makes the acquire one that runs a trigger (see package
// fleet): it succeeds only if a trigger is pending for the key and the key
// is free, consumes the oldest live trigger in the same atomic step
// (Lease.Trigger is its ID), and fails with ErrNoTrigger when none is
// pending (expired triggers are dropped). It claims the round of the
// run's occurrence itself (Lease.Round): the store's time in Unix ms, or
// the millisecond after the recorded round when that is not earlier, so
// every run's occurrence follows every round claimed before it, and a
// later acquire of a round at or before it fails with ErrRoundClaimed; it
// cannot be combined with WithRound. An earlier occurrence whose
// completion record (WithAttempts) is still open or running with no live
// lease can then never be resumed: the acquire marks it given up and
// reports it in Lease.Superseded, once. It checks a pause only with
// WithPauseCheck (package inspect refuses to trigger a paused job; the
// scheduler's trigger acquires honour a pause that came after the
// trigger).
func WithTrigger() AcquireOption {
	return func(o *AcquireOptions) { o.Trigger = true }
}

// WithAttempts makes a round acquire (WithRound or WithRoundTime) record
// its occurrence as attempt 1, running, under policy a, so that the
// occurrence can be attempted again (WithResume) until it is done. It is
// invalid without a round, with WithTrigger or with WithResume, and a
// policy that fails ValidateAttempts is invalid. A successful acquire that
// finds an earlier round's occurrence still open or running (its holder
// gone) marks that occurrence given up and reports it in Lease.Superseded,
// once. Leases acquired without it write no completion record.
func WithAttempts(a Attempts) AcquireOption {
	return func(o *AcquireOptions) { o.Attempts, o.attemptsSet = a, true }
}

// WithResume makes the acquire claim the next attempt of round, which must
// be the key's last claimed round: it succeeds only if the round's
// completion record says the occurrence is open (released open, or running
// with no live lease: its holder died), attempts remain, its deadline has
// not passed and its backoff has. Its answers, in order of checks:
// ErrPaused (with WithPauseCheck); ErrRoundClaimed (no completion record of
// round, no claimed round at or after it, or the occurrence done or given
// up); *LockedError (a live lease holds the key); *GivenUpError (no attempt
// remains, the deadline passed, or, with GivenUpError.Superseded, a later
// round was recorded while the occurrence was open: a round refused as
// paused, or one claimed without WithAttempts; the store marks the
// occurrence given up in the same step); *NotDueError (its backoff has not
// passed). A success issues a new, greater fence, with Lease.Round and
// Lease.PrevRound equal to round and Lease.Attempt the next attempt. It
// combines with WithOwner and WithPauseCheck only; round must be positive.
func WithResume(round int64) AcquireOption {
	return func(o *AcquireOptions) { o.Resume, o.resumeSet = round, true }
}

// MaxOwnerLen is the longest owner label accepted, in bytes.
const MaxOwnerLen = 256

// ValidateOwner checks an owner label: valid UTF-8, at most MaxOwnerLen
// bytes, and no control characters (C0, DEL or C1: no tabs, newlines or
// NULs), so that a label reads the same in every store, log line and
// terminal. The empty label is valid: it stores no label (see WithOwner).
func ValidateOwner(owner string) error {
	if len(owner) > MaxOwnerLen {
		return invalid("owner must be at most %d bytes, got %d", MaxOwnerLen, len(owner))
	}
	if !utf8.ValidString(owner) {
		return invalid("owner must be valid UTF-8")
	}
	for i, r := range owner {
		if unicode.IsControl(r) {
			return invalid("owner must not contain control characters, found %U at byte %d", r, i)
		}
	}
	return nil
}

// ResolveAcquireOptions applies opts in order and validates the result.
func ResolveAcquireOptions(opts []AcquireOption) (AcquireOptions, error) {
	if len(opts) == 0 {
		return AcquireOptions{}, nil // no allocation on the plain acquire
	}
	var o AcquireOptions
	for _, opt := range opts {
		if opt == nil {
			return o, invalid("acquire option must not be nil")
		}
		opt(&o)
	}
	if o.roundSet && o.Round <= 0 {
		return o, invalid("round must be positive, got %d", o.Round)
	}
	if o.MaxSkew < 0 {
		return o, invalid("max skew must not be negative, got %s", o.MaxSkew)
	}
	if o.MaxSkew > 0 && o.Round == 0 {
		return o, invalid("max skew needs a round")
	}
	if o.Trigger && o.roundSet {
		return o, invalid("a trigger acquire claims no round: WithTrigger and WithRound do not combine")
	}
	if o.attemptsSet {
		if o.resumeSet {
			return o, invalid("a resume continues the recorded policy: WithAttempts and WithResume do not combine")
		}
		if o.Trigger {
			return o, invalid("a trigger acquire records no attempts: WithAttempts and WithTrigger do not combine")
		}
		if !o.roundSet {
			return o, invalid("attempts need a round: WithAttempts needs WithRound or WithRoundTime")
		}
		if err := ValidateAttempts(o.Attempts); err != nil {
			return o, err
		}
	}
	if o.resumeSet {
		if o.Resume <= 0 {
			return o, invalid("resume round must be positive, got %d", o.Resume)
		}
		if o.roundSet || o.Trigger {
			return o, invalid("a resume claims no new round: WithResume combines with WithOwner and WithPauseCheck only")
		}
	}
	if o.timeRound && o.MaxSkew < time.Millisecond {
		return o, invalid("max skew must be at least 1ms, got %s", o.MaxSkew)
	}
	if err := ValidateOwner(o.Owner); err != nil {
		return o, err
	}
	return o, nil
}
