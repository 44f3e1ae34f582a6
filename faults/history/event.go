package history

import (
	"time"

	"golang.org/x/sys/unix"
)

// Kind says what an Event records.
type Kind string

// Event kinds written by a replica.
const (
	Boot          Kind = "boot"           // the replica process started
	Ready         Kind = "ready"          // its scheduler started
	Acquire       Kind = "acquire"        // Store.Acquire succeeded: Lease, Fence, AcquiredAt, ExpiresAt, Sent, Attempt, Superseded
	AcquireError  Kind = "acquire_error"  // Store.Acquire failed: Reason (locked, claimed, skew, given_up, not_due, invalid, error), Err, First
	Extend        Kind = "extend"         // Store.Extend succeeded: ExpiresAt, Sent
	ExtendError   Kind = "extend_error"   // Store.Extend failed: Reason (not_held, unknown), Err, Sent
	Release       Kind = "release"        // Store.Release succeeded: Sent, SentWall, Close
	ReleaseError  Kind = "release_error"  // Store.Release failed: Reason (not_held, unknown), Err, Sent, SentWall, Close
	Skip          Kind = "skip"           // scheduler skipped an occurrence: Reason
	RunStart      Kind = "run_start"      // the job function was called: Attempt
	CtxDone       Kind = "ctx_done"       // the run's context ended while the job ran: Cause
	WriteAccepted Kind = "write_accepted" // fenced write committed: WriteID
	WriteRejected Kind = "write_rejected" // fenced write refused: Reason (stale: fencing.ErrStale; duplicate: fencing.ErrDuplicate), Err
	WriteError    Kind = "write_error"    // write failed for another reason: Err
	RunEnd        Kind = "run_end"        // the job function returned: Err
	LeaseLost     Kind = "lease_lost"     // scheduler reported the lease lost: Cause
	Interrupted   Kind = "interrupted"    // scheduler reported an attempt interrupted (left open): Attempt, Cause, Err
	GivenUp       Kind = "given_up"       // scheduler reported the occurrence given up: Attempt (its last)
	GiveUpMarked  Kind = "give_up_marked" // the store's GiveUp marked the occurrence given up for this replica, which must report it
	Shutdown      Kind = "shutdown"       // the replica is shutting down
)

// Event kinds written by the harness.
const (
	HarnessStart Kind = "harness_start" // Seed
	HarnessEnd   Kind = "harness_end"
	FaultStart   Kind = "fault_start" // Fault, Target
	FaultEnd     Kind = "fault_end"   // Fault, Target
	// DataLost: while redis-server was down in a redis_wipe or
	// redis_rollback fault (Fault), its data was replaced: emptied, or put
	// back to the copy of its append-only file taken from CopyStart to
	// CopyEnd. Everything the old server wrote before this event and after
	// CopyStart may be lost (all of it for a wipe); the new server starts
	// after it.
	DataLost Kind = "data_lost"
)

// Fault kinds.
const (
	FaultKill         = "kill"          // SIGKILL of a replica, restarted at FaultEnd
	FaultStop         = "stop"          // SIGSTOP of a replica, SIGCONT at FaultEnd
	FaultBlackhole    = "blackhole"     // the replica's proxy forwards nothing
	FaultCut          = "cut"           // the replica's proxy drops and refuses connections
	FaultRedisRestart = "redis_restart" // redis-server restarted (Target "redis")
	// FaultRedisWipe: redis-server restarted without its data (Target
	// "redis"); a DataLost event marks the instant.
	FaultRedisWipe = "redis_wipe"
	// FaultRedisRollback: redis-server restarted from an older copy of its
	// append-only file (Target "redis"); a DataLost event marks the instant
	// and names the copy.
	FaultRedisRollback = "redis_rollback"
	// FaultStall: the harness's watchdog woke up late: the whole machine
	// (Target "machine") may have stopped running processes from FaultStart
	// to FaultEnd, which the harness records afterwards with the times of
	// the window.
	FaultStall = "stall"
)

// Fault targets other than a replica.
const (
	TargetRedis   = "redis"   // redis-server
	TargetMachine = "machine" // every process on the machine (a stall)
)

// Reasons of an ExtendError or a ReleaseError.
const (
	OutcomeNotHeld = "not_held" // the server said the lease was not held: the request did nothing
	OutcomeUnknown = "unknown"  // the reply was lost or unreadable: the request may have run
)

// Reasons of an AcquireError beyond the lease's own (locked, claimed,
// skew; error: any other, whose outcome is unknown): the answers of a
// resume, and an acquire refused before any I/O.
const (
	AcquireGivenUp = "given_up" // lease.ErrGivenUp: no attempt remains or the deadline passed; First: this call marked it
	AcquireNotDue  = "not_due"  // lease.ErrNotDue: the occurrence's backoff has not passed
	AcquireInvalid = "invalid"  // lease.ErrInvalidArgument: refused before any I/O; it did not run
)

// Closes of a Release: what it did to the occurrence's completion record
// (empty for a lease without attempts, or a plain Release).
const (
	CloseDone    = "done"     // the attempt succeeded: the occurrence is done
	CloseOpen    = "open"     // the attempt failed or was interrupted: it may be attempted again
	CloseGivenUp = "given_up" // the attempt failed and the occurrence is given up
)

// Reasons of a WriteRejected.
const (
	RejectStale     = "stale"     // fencing.ErrStale: a greater token was recorded
	RejectDuplicate = "duplicate" // fencing.ErrDuplicate: the occurrence (or a later one) was written
)

// Causes of a run context's end (CtxDone, LeaseLost).
const (
	CauseLost        = "lost"        // heartbeat.ErrLeaseLost
	CauseUnconfirmed = "unconfirmed" // heartbeat.ErrLeaseUnconfirmed
	CauseShutdown    = "shutdown"    // scheduler.ErrShutdown
	CauseTimeout     = "timeout"     // scheduler.ErrTimeout
	CauseOther       = "other"
)

// Event is one line of a history. Fields that do not apply are omitted.
type Event struct {
	Mono    int64  `json:"mono"`              // CLOCK_MONOTONIC, ns
	Wall    int64  `json:"wall"`              // CLOCK_REALTIME, Unix ns
	Replica string `json:"replica,omitempty"` // replica name, or "harness"
	PID     int    `json:"pid,omitempty"`
	Kind    Kind   `json:"kind"`

	Job        string `json:"job,omitempty"`
	Occurrence int64  `json:"occ,omitempty"`   // the occurrence (round), Unix ms
	Fence      uint64 `json:"fence,omitempty"` // the lease's fencing token
	Lease      string `json:"lease,omitempty"` // the lease ID in short form

	AcquiredAt int64 `json:"acquired_at,omitempty"` // server time, Unix ms
	ExpiresAt  int64 `json:"expires_at,omitempty"`  // server time, Unix ms
	Sent       int64 `json:"sent,omitempty"`        // CLOCK_MONOTONIC when the request was sent, ns
	SentWall   int64 `json:"sent_wall,omitempty"`   // CLOCK_REALTIME when the request was sent, Unix ns

	// Attempt is the attempt at the occurrence (1 for the first) of an
	// acquire, a run or an interruption, and the last attempt of a given
	// up occurrence; 0 when not recorded (read as 1).
	Attempt int `json:"attempt,omitempty"`
	// Superseded is the round (Unix ms) of an earlier occurrence that a
	// round acquire found still open and the store marked given up, which
	// the acquirer must report; 0 if none.
	Superseded int64 `json:"superseded,omitempty"`
	// First, on an AcquireError given_up: this call marked the occurrence
	// given up (exactly one caller does), and must report it.
	First bool `json:"first,omitempty"`
	// Close is what a Release did to the occurrence's record: CloseDone,
	// CloseOpen or CloseGivenUp; empty for a lease without attempts.
	Close string `json:"close,omitempty"`

	Reason  string `json:"reason,omitempty"`
	Cause   string `json:"cause,omitempty"`
	Err     string `json:"err,omitempty"`
	WriteID int64  `json:"write_id,omitempty"`

	Fault  string `json:"fault,omitempty"`
	Target string `json:"target,omitempty"`
	Seed   int64  `json:"seed,omitempty"`

	// CopyStart and CopyEnd bound, in Unix ns (CLOCK_REALTIME), when the
	// copy of the append-only file a DataLost put back was taken; zero for
	// a wipe.
	CopyStart int64 `json:"copy_start,omitempty"`
	CopyEnd   int64 `json:"copy_end,omitempty"`
}

// Mono returns this machine's CLOCK_MONOTONIC reading in nanoseconds. It
// is comparable across the processes of one boot of one machine.
func Mono() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		// CLOCK_MONOTONIC is always present on Linux; a failure is a
		// broken platform, not an input.
		panic("history: clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}

// Wall returns CLOCK_REALTIME in Unix nanoseconds.
func Wall() int64 { return time.Now().UnixNano() }
