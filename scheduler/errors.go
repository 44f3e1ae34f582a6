package scheduler

import "errors"

// Sentinel errors. Errors returned by this package wrap exactly one of them,
// with a message that names the job, option or rule involved; callers branch
// with errors.Is.
var (
	// ErrInvalidArgument: an option, job name, function or schedule broke a
	// rule; the message names the rule.
	ErrInvalidArgument = errors.New("scheduler: invalid argument")
	// ErrInvalidSchedule: a schedule cannot be used: a malformed cron
	// expression, an interval that is not a whole number of milliseconds, a
	// one-time job in the past, or a schedule whose occurrences replicas
	// could not agree on. It also wraps ErrInvalidArgument.
	ErrInvalidSchedule = errors.New("scheduler: invalid schedule")
	// ErrDuplicateJob: Register was called twice with the same job name (after
	// NFC normalization).
	ErrDuplicateJob = errors.New("scheduler: duplicate job")
	// ErrUnknownJob: Remove named a job that is not registered.
	ErrUnknownJob = errors.New("scheduler: unknown job")
	// ErrAlreadyStarted: Start was called on a running scheduler.
	ErrAlreadyStarted = errors.New("scheduler: already started")
	// ErrShutdown is the cause (context.Cause) of a run context cancelled by
	// Shutdown, and the error Start and Register return after Shutdown.
	ErrShutdown = errors.New("scheduler: shut down")
	// ErrJobsStillRunning: Shutdown's context ended while jobs were still
	// running; the message names them. They keep their leases until the TTL
	// runs out.
	ErrJobsStillRunning = errors.New("scheduler: jobs still running")
	// ErrTimeout is the cause of a run context cancelled because the job ran
	// longer than its WithTimeout.
	ErrTimeout = errors.New("scheduler: job timed out")
	// ErrPanic wraps the value a job panicked with; the run is reported as
	// panicked and its lease released.
	ErrPanic = errors.New("scheduler: job panicked")
	// ErrGoexit is the error of a run whose job ended with runtime.Goexit
	// (t.FailNow, for example) instead of returning; the run is reported as
	// failed and its lease released.
	ErrGoexit = errors.New("scheduler: job called runtime.Goexit")
)

// invalidSchedule wraps both ErrInvalidSchedule and ErrInvalidArgument.
type scheduleError struct{ msg string }

func (e *scheduleError) Error() string { return "scheduler: invalid schedule: " + e.msg }

// Is reports whether target is ErrInvalidSchedule or ErrInvalidArgument.
func (e *scheduleError) Is(target error) bool {
	return target == ErrInvalidSchedule || target == ErrInvalidArgument
}
