package scheduler

import "fmt"

// OverlapPolicy says what an occurrence does that finds its job still
// running, on any replica, for an earlier occurrence (the job's lease is
// held).
type OverlapPolicy int

// The overlap policies.
const (
	// OverlapSkip: the occurrence is skipped (SkipLocked) and the next
	// winner reports it missed. The default.
	OverlapSkip OverlapPolicy = iota + 1
	// OverlapBufferOne: the occurrence waits for the running one to end,
	// woken by its release (lease.Lock, on the store's notifications), up
	// to the job's next occurrence less a margin of min(gap/10, 1s) (for
	// an At schedule, AtRetryWindow; within the catch-up window when the
	// job has one, as for retries), and then claims its round as usual
	// and runs, once. While it waits, later occurrences find the job
	// running and wait or are skipped as usual: a replica buffers one
	// occurrence per job (a later firing waits behind it in the acquire
	// path and replaces an earlier one there, SkipOverrun), and on other
	// replicas the same occurrence waits too but only one of them claims
	// it (the others skip it, SkipClaimed). An occurrence whose wait ends
	// without the lease is skipped (SkipLocked). A job whose runs take
	// longer than its interval thus runs back to back: one run starts as
	// the previous one ends, and the occurrences that could not start
	// before their next one are skipped. Catch-ups and triggers do not
	// wait.
	OverlapBufferOne
)

// String returns "skip" or "buffer one".
func (p OverlapPolicy) String() string {
	switch p {
	case OverlapSkip:
		return "skip"
	case OverlapBufferOne:
		return "buffer one"
	default:
		return fmt.Sprintf("overlap(%d)", int(p))
	}
}

// WithOverlap sets the job's overlap policy: what an occurrence does that
// finds the job still running elsewhere. Default: OverlapSkip. p must be
// OverlapSkip or OverlapBufferOne. OverlapBufferOne waits best with a
// store that notifies releases (lease.Notifier: lease/redislease on Redis 7
// with the pub/sub grants, lease/memory); with another store the waiting
// occurrence polls with backoff (100ms doubling to 2s), so it may start a
// little after the release.
func WithOverlap(p OverlapPolicy) JobOption {
	return func(c *jobConfig) error {
		if p != OverlapSkip && p != OverlapBufferOne {
			return invalidOption("WithOverlap: policy must be OverlapSkip or OverlapBufferOne, got %d", int(p))
		}
		c.overlap = p
		return nil
	}
}
