package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/lease"
)

// Replica is a scheduler's entry in the registry.
type Replica struct {
	// ID is the replica's instance ID (scheduler.WithInstanceID).
	ID string
	// Version is the cronguard version the replica runs.
	Version string
	// Started is when the replica's scheduler started, on its clock.
	Started time.Time
	// Refresh is how often the replica refreshes its entry; the entry
	// lapses after a few missed refreshes (Store.PublishReplica's ttl).
	Refresh time.Duration
	// Jobs are the jobs the replica has registered.
	Jobs []Job
	// ClockOffset is the replica's clock minus the store's, as the
	// replica last measured it (to the millisecond; 0 when not measured).
	// The replicas that back one another up on an occurrence (the
	// scheduler's preferred replica) read it to wait for a first choice
	// whose clock runs behind theirs.
	ClockOffset time.Duration
	// ReadsIndex says the replica can read the fleet's index of open
	// occurrences for the whole fleet and announce what is due (the
	// scheduler: two replicas chosen among those that can read it each
	// second, not every replica). Replicas of earlier versions leave it
	// false, and are never chosen.
	ReadsIndex bool
	// Expires is when the entry lapses unless refreshed, in the store's
	// time. Set by the store on read; ignored on publish.
	Expires time.Time
}

// Job is a job as a replica registered it.
type Job struct {
	// Name is the job's name.
	Name string
	// Key is the job's lease key: the scheduler's key prefix plus Name.
	Key string
	// Schedule describes the schedule (scheduler.Schedule's String).
	Schedule string
	// Spec is the schedule in a form Next reads: "every:<ns>+<offset ns>",
	// "cron:<location>:<expression>" or "at:<Unix ms>".
	Spec string
	// Fingerprint identifies the job's schedule and options: replicas that
	// register one name with different fingerprints are in conflict.
	Fingerprint string
}

// Conflict is one job name registered with different fingerprints by two
// live replicas.
type Conflict struct {
	// Job is the job's name; Key its lease key.
	Job, Key string
	// Replicas are the two replicas and Jobs their registrations, in the
	// same order.
	Replicas [2]string
	Jobs     [2]Job
}

// Status is the last run of a job, as recorded by the replica that ran it
// when it released the lease.
type Status struct {
	// Occurrence is the run's occurrence (for a triggered run, the round
	// the store claimed for it).
	Occurrence time.Time
	// Owner is the holder label of the run's lease (replica and job).
	Owner string
	// Replica is the instance ID of the replica that ran it
	// (scheduler.WithInstanceID); "" when not given.
	Replica string
	// Attempt is the run's attempt at its occurrence: 1 for the first (0
	// is read as 1).
	Attempt int
	// Fence is the run's fencing token.
	Fence fencing.Token
	// Started is when the lease was acquired, in the store's time.
	Started time.Time
	// Duration is how long the job ran, on the replica's clock.
	Duration time.Duration
	// Outcome is "succeeded", "failed", "panicked" or "timed_out" (the
	// Outcome constants).
	Outcome string
	// Error is the run's error cut to one line and MaxErrorBytes, with
	// credentials in URLs removed (SanitizeError), or only its class when
	// the job asked for that; empty on success.
	Error string
	// Trigger is the ID of the trigger the run consumed, if any.
	Trigger string
	// Missed is how many occurrences before this one ran nowhere, as the
	// ledger reported when this run won its occurrence (the scheduler's
	// EventMissed); 0 when none did.
	Missed int
	// Close is what the release does to the occurrence's completion record
	// (ignored when the lease was acquired without lease.WithAttempts).
	// Not stored with the status.
	Close CloseKind
	// RetryAfter, with CloseOpen: the next attempt may start this long
	// after the release, in the store's time; 0: at once. Not stored with
	// the status.
	RetryAfter time.Duration
}

// CloseKind is what a release does to its occurrence's completion record
// (Status.Close).
type CloseKind int

// The kinds of close.
const (
	// CloseDone: the occurrence is done; no attempt follows. The zero
	// value.
	CloseDone CloseKind = iota
	// CloseOpen: the occurrence stays open for another attempt, after
	// Status.RetryAfter.
	CloseOpen
	// CloseGivenUp: the occurrence is given up; no attempt follows.
	CloseGivenUp
)

// String returns "done", "open" or "given_up".
func (k CloseKind) String() string {
	switch k {
	case CloseDone:
		return "done"
	case CloseOpen:
		return "open"
	case CloseGivenUp:
		return "given_up"
	default:
		return fmt.Sprintf("close(%d)", int(k))
	}
}

// Due is an occurrence that may be attempted again, as the index of open
// and running occurrences says (Store.DueOccurrences). The index is a
// hint: the occurrence's completion record decides (lease.WithResume).
type Due struct {
	Key      string    // the job's lease key
	Round    int64     // the occurrence's round
	Deadline time.Time // its attempts' deadline (lease.Attempts.Deadline)
	At       time.Time // when it may be attempted, in the store's time
}

// Pause says a job is paused fleet-wide.
type Pause struct {
	By   string    // who paused it (free text, e.g. an operator's name)
	Note string    // why
	At   time.Time // when, in the store's time; set by the store
}

// Trigger is a request to run a job now, once.
type Trigger struct {
	ID      string    // unique; reported back in the run's Status and Message
	Key     string    // the job's lease key
	By      string    // who asked (free text)
	At      time.Time // when it was queued, in the store's time; set by the store
	Expires time.Time // when it lapses unless consumed; set by the store
}

// Store is the control plane's storage: a lease store that also keeps the
// registry, run status and history, pauses and triggers, in the slots of the jobs they
// concern where that matters (lease/redislease). Its methods are safe for
// concurrent use and validate their arguments before any I/O
// (lease.ErrInvalidArgument); other errors wrap lease's sentinels.
type Store interface {
	lease.Store

	// PublishReplica writes r's entry, living ttl unless refreshed, and
	// checks its jobs against the fleet's: it returns the conflicts with
	// other live replicas. Call it when r's jobs change; RefreshReplica
	// otherwise. When some other entries cannot be read, r's entry is
	// still written, and the conflicts with the readable ones come with a
	// *UnreadableError.
	PublishReplica(ctx context.Context, r Replica, ttl time.Duration) ([]Conflict, error)
	// RefreshReplica keeps the entry of replica id alive for ttl more and
	// returns the fleet's generation, a number that changes whenever any
	// replica's jobs change (so a replica knows when to look for new
	// conflicts), and whether the entry was still there (false: publish
	// it again). It does a constant amount of work whatever the number of
	// jobs.
	RefreshReplica(ctx context.Context, id string, ttl time.Duration) (generation int64, found bool, err error)
	// DropReplica removes replica id's entry (a clean stop).
	DropReplica(ctx context.Context, id string) error
	// Replicas returns the live replicas' entries, by ID. Replicas with
	// the same jobs may share one Jobs slice (lease/redislease stores one
	// job list for them): callers read it and do not modify it. Entries
	// that cannot be read are left out, and the others come with a
	// *UnreadableError that names them.
	Replicas(ctx context.Context) ([]Replica, error)
	// Conflicts returns the conflicts among live replicas (among the
	// readable ones, with a *UnreadableError, as Replicas).
	Conflicts(ctx context.Context) ([]Conflict, error)

	// ReleaseWithStatus releases l as lease.Release does and, if it was
	// still held, records st as its key's last run, in one atomic step. It
	// also returns how many triggers wait for the key (a store may count
	// expired ones that a trigger acquire will drop).
	ReleaseWithStatus(ctx context.Context, l *lease.Lease, st Status) (triggers int, err error)
	// LastStatus returns the last run recorded for key, and false if none.
	LastStatus(ctx context.Context, key string) (Status, bool, error)
	// History returns key's recorded runs, newest first, skipping offset
	// and returning at most limit (0: none, only the total), and how many
	// the history holds in all. ReleaseWithStatus records each run there
	// as well, in the same step; the history keeps the store's history
	// limit (DefaultHistoryLimit unless configured) of the newest runs,
	// survives the lease's release and does not expire. A key with no
	// runs has an empty history. offset and limit must not be negative;
	// a limit above the store's history limit reads up to that limit.
	History(ctx context.Context, key string, offset, limit int) (runs []RunRecord, total int, err error)

	// SetPause pauses key fleet-wide (acquires with lease.WithPauseCheck
	// fail with lease.ErrPaused); a second call replaces the note.
	SetPause(ctx context.Context, key string, p Pause) error
	// ClearPause resumes key and reports whether it was paused.
	ClearPause(ctx context.Context, key string) (bool, error)
	// PauseOf returns key's pause, and false if it is not paused.
	PauseOf(ctx context.Context, key string) (Pause, bool, error)

	// AddTrigger queues a trigger for key, living ttl unless consumed, and
	// tells the replicas (a Message of kind MessageTrigger).
	AddTrigger(ctx context.Context, key, by string, ttl time.Duration) (Trigger, error)
	// PendingTriggers returns how many live triggers wait for key.
	PendingTriggers(ctx context.Context, key string) (int, error)

	// JobState reads what the store holds about key, in one operation:
	// at one instant, or as reads of plain commands one after the other
	// (lease/redislease: no script, so that read-only users can run it),
	// as the store documents.
	JobState(ctx context.Context, key string) (JobState, error)
	// ForceRelease deletes the live lease on key whoever holds it, and
	// returns what it was (lease.ErrNotFound when none is live). The holder
	// is not told until its next renewal, and may still be running: only
	// fenced writes are safe from it. For operators; never automatic.
	ForceRelease(ctx context.Context, key string) (lease.Info, error)

	// IndexOccurrence adds or moves key's occurrence round in the index of
	// open and running occurrences, to be looked at from at (store time).
	// The scheduler calls it once a run with attempts has started (at =
	// its lease's expiry + lease.ExpiryTolerance, so that a dead holder is
	// found), and when a resume found the lease still live (at = now +
	// Remaining). deadline is the occurrence's lease.Attempts.Deadline.
	IndexOccurrence(ctx context.Context, key string, round int64, deadline, at time.Time) error
	// DueOccurrences returns up to limit index entries due at the store's
	// now (At at or before it), oldest first: one command whatever the
	// number of jobs. limit must be positive.
	DueOccurrences(ctx context.Context, limit int) ([]Due, error)
	// UnindexOccurrence removes one entry from the index (done, given up,
	// superseded, or not a job of this fleet any more). Removing an entry
	// that is not there is not an error.
	UnindexOccurrence(ctx context.Context, key string, round int64, deadline time.Time) error
	// GiveUp marks key's occurrence round given up if its completion
	// record is still open, or running with no live lease, and its
	// deadline has passed or no attempt remains; it then pushes a
	// "given_up" entry on the key's history, and reports whether this
	// call did it (exactly one caller gets true). It removes the index
	// entry unless the occurrence may still be attempted (deadline not
	// passed, attempts remain, or a live lease holds the key).
	GiveUp(ctx context.Context, key string, round int64) (bool, error)

	// Publish sends m on the control channel.
	Publish(ctx context.Context, m Message) error
	// Subscribe calls fn with every Message on the control channel until
	// stop is called; stop waits for fn's last call. fn is called from one
	// goroutine, in order, and must not block for long. After a dropped
	// subscription is restored, fn receives a MessageResync, so the
	// subscriber can read what it may have missed.
	Subscribe(ctx context.Context, fn func(Message)) (stop func(), err error)
}

// BatchReleaser is an optional interface of a Store that can send several
// ReleaseWithStatus calls in one round trip. lease/redislease and
// lease/memory implement it; the scheduler sends the releases of the runs
// that end together through it.
//
// ReleaseWithStatusBatch releases leases[i] with sts[i] as
// ReleaseWithStatus does and writes what that call would have returned to
// triggers[i] and errs[i]: sts, triggers and errs must be as long as
// leases. Every entry is answered on its own, with the errors
// ReleaseWithStatus would give it (an invalid entry fails alone, without
// I/O, and does not keep the others from being sent); nothing about the
// batch is atomic: the releases are independent, as if made one after the
// other in an unspecified order. ReleaseWithStatusBatch blocks until every
// answer is known or ctx is done.
type BatchReleaser interface {
	ReleaseWithStatusBatch(ctx context.Context, leases []*lease.Lease, sts []Status, triggers []int, errs []error)
}

// BatchPublisher is an optional interface of a Store that can publish
// several messages on the control channel in one round trip; lease/redislease
// and lease/memory implement it. The scheduler announces the due entries of
// the fleet's index of open occurrences through it.
//
// PublishBatch publishes each message of msgs as Publish does, in order,
// and returns the first error; the other messages may have been published
// or not. An invalid message fails the call before any is published.
type BatchPublisher interface {
	PublishBatch(ctx context.Context, msgs []Message) error
}

// TriggerCounter is implemented by stores that count the live triggers
// of many keys in one round trip; lease/redislease and lease/memory
// implement it. A scheduler looks for the triggers that wait for its jobs
// when it subscribes to the control channel and at each resync: one call
// per job would hold its control loop for seconds at thousands of jobs.
//
// PendingTriggersBatch sets counts[i] to PendingTriggers(keys[i]); counts
// must be as long as keys. The counts are read at one store time, not as
// one snapshot. A key that is not valid fails the whole call with
// lease.ErrInvalidArgument, before any I/O; a store error fails it too. A
// key whose trigger queue cannot be read (another type) counts 0 and is
// named in a *lease.UnreadableKeysError, returned once every other key is
// counted (see lease.UnreadKeys).
type TriggerCounter interface {
	PendingTriggersBatch(ctx context.Context, keys []string, counts []int) error
}

// JobState is what a store holds about one job's key, read by one
// JobState call at the store's time Now.
type JobState struct {
	// Now is the store's time when it was read: compare Holder.ExpiresAt
	// with it, never with a local clock.
	Now time.Time
	// Holder is the live lease on the key, or nil.
	Holder *lease.Info
	// LastRound is the last round claimed for the key (0: none), in Unix
	// milliseconds: for a scheduler's job, the round of the last
	// occurrence claimed, whatever claimed it (its schedule, a catch-up, a
	// trigger) and whether or not its run ended, or recorded as handled
	// while the job was paused.
	LastRound int64
	// Status is the last run recorded, or nil.
	Status *Status
	// Pause is the key's pause, or nil.
	Pause *Pause
	// Triggers is how many live triggers wait for the key.
	Triggers int
}

// MessageKind says what a Message announces.
type MessageKind string

// The kinds of Message.
const (
	// MessageTrigger: a trigger was queued for Key.
	MessageTrigger MessageKind = "trigger"
	// MessageDone: the run of trigger Trigger on Key ended with Outcome.
	MessageDone MessageKind = "done"
	// MessageOpen: Key's occurrence Round is open and may be attempted at
	// once (published by the scheduler after a release that leaves an
	// attempt open, and by the replicas that read the index of open
	// occurrences for the fleet when an entry is due; read by the replicas
	// that have the job).
	MessageOpen MessageKind = "open"
	// MessageUnclaimed: Key's occurrence Round was left unclaimed by a
	// replica chosen for it (its first choice or its backup), which cannot
	// run it (its earlier run of the job still executes there, no longer
	// renewing its lease); the
	// replicas that have the job claim it at once (published and read by
	// the scheduler).
	MessageUnclaimed MessageKind = "unclaimed"
	// MessageFleet: replica Replica published or dropped its registry
	// entry; the other replicas read the registry now rather than at their
	// next refresh, so that their choices of a preferred replica per
	// occurrence agree again at once (published and read by the
	// scheduler).
	MessageFleet MessageKind = "fleet"
	// MessageResync: the subscription was restored after it dropped;
	// messages may have been missed. Set by Subscribe only.
	MessageResync MessageKind = "resync"
)

// Message is what the control channel carries.
type Message struct {
	Kind    MessageKind
	Key     string // the job's lease key
	Trigger string // the trigger's ID
	Outcome string // for MessageDone: the run's Status.Outcome
	Error   string // for MessageDone: the run's Status.Error
	Round   int64  // for MessageOpen and MessageUnclaimed: the occurrence's round
	Replica string // for MessageFleet: the replica whose entry changed; for MessageOpen from the index: the replica that read it
}

// Limits every Store enforces.
const (
	// MaxTriggerTTL bounds how long a trigger may wait to be run.
	MaxTriggerTTL = 24 * time.Hour
	// MaxPauseNoteBytes is the longest pause note accepted, in bytes.
	MaxPauseNoteBytes = 1024
	// MaxReplicaIDBytes is the longest replica ID accepted, in bytes.
	MaxReplicaIDBytes = 256
)

// ServerClock is an optional interface of a Store whose operations are
// timed by a clock of its own (a Redis server's TIME): the scheduler reads
// it to measure its clock's offset from the store's, which it publishes in
// its registry entry (Replica.ClockOffset).
type ServerClock interface {
	// ServerTime returns the store's current time.
	ServerTime(ctx context.Context) (time.Time, error)
}
