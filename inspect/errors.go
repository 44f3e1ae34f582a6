package inspect

import "errors"

// Sentinel errors. Errors from an Inspector wrap one of them, or the lease
// package's sentinel the store answered with (lease.ErrUnavailable,
// lease.ErrAuth, lease.ErrInvalidArgument, ...), so callers branch with
// errors.Is.
var (
	// ErrUnknownJob: no live replica has registered a job of that name.
	// The fleet's jobs are what its live replicas registered; a job whose
	// replicas all stopped (or never started) is unknown until one
	// registers it again.
	ErrUnknownJob = errors.New("inspect: unknown job")
	// ErrPaused: Trigger refused a job that is paused fleet-wide.
	ErrPaused = errors.New("inspect: job is paused")
	// ErrNotHeld: ForceRelease found no live lease on the job. It is
	// wrapped together with lease.ErrNotFound.
	ErrNotHeld = errors.New("inspect: no live lease holds the job")
	// ErrWaitTimeout: Trigger with WithWait queued the trigger, but did not
	// hear of its run's end within the wait. The run may still happen (the
	// trigger waits in the queue until its TTL ends) or be in progress.
	ErrWaitTimeout = errors.New("inspect: the triggered run did not end within the wait")
)
