package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cronguard/cronguard/internal/logattr"
	"github.com/cronguard/cronguard/lease"
)

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

// buffers reports whether firing f of j, refused with err, waits for the
// job's running occurrence (OverlapBufferOne) instead of being skipped.
func (j *job) buffers(f firing, err error) bool {
	return j.overlap == OverlapBufferOne && !f.catchUp && !f.trigger && errors.Is(err, lease.ErrLocked)
}

// bufferOne waits, in a goroutine of its own, for the running occurrence
// of j to end and then claims f's round (OverlapBufferOne); the acquire
// workers are not held. The firing stays the job's busy one in the acquire
// path until the wait ends; the goroutine then hands on the job's next
// firing, as a worker does. Shutdown waits for it with the workers.
func (s *Scheduler) bufferOne(j *job, f firing) {
	s.debug(j, f.occ, "occurrence waits for the job's running one to end (overlap policy: buffer one)")
	s.workers.Add(1) // a worker holds a count: the group is not at zero here
	go func() {
		defer s.workers.Done()
		l, err := s.waitTurn(j, f)
		s.settle(j, f, l, err)
		if next, ok := j.pipe.done(); ok {
			s.enqueue(j, next)
		}
	}()
}

// waitTurn waits until the lease of j is free and claims it for firing f,
// until retryUntil: lease.Lock with f's round, woken by the release of the
// running occurrence (or its lease running out). A transient error is
// retried as acquire retries it; Shutdown ends the wait (lease.ErrAborted).
func (s *Scheduler) waitTurn(j *job, f firing) (*lease.Lease, error) {
	until := s.retryUntil(j, f)
	if err := s.waitRunHere(j, until); err != nil {
		return nil, err
	}
	opts := []lease.AcquireOption{lease.WithOwner(j.owner), lease.WithRoundTime(f.occ, f.maxSkew), lease.WithPauseCheck()}
	for {
		left := until.Sub(s.cfg.clock.Now())
		if left <= 0 {
			return nil, fmt.Errorf("%w: waited until the next occurrence: %w", lease.ErrAcquireTimeout, lease.ErrLocked)
		}
		l, err := lease.Lock(s.base, s.store, j.key, j.ttl, lease.WithAcquireOptions(opts...),
			lease.WithMaxWait(left), lease.WithLockClock(s.cfg.clock))
		if err == nil || !transient(err) || s.base.Err() != nil {
			return l, err
		}
		// The store failed: retry within the occurrence as any acquire
		// does, and wait again if the job is still running.
		if l, err = s.acquire(j, f); err == nil || !errors.Is(err, lease.ErrLocked) {
			return l, err
		}
		s.log.LogAttrs(context.Background(), slog.LevelDebug, "occurrence waits again for the job's running one",
			slog.String("job", j.name), slog.Time("occurrence", f.occ), logattr.Duration("left", until.Sub(s.cfg.clock.Now())))
	}
}

// waitRunHere waits, until until, for the run of j that executes on this
// replica (if any) to end. Only then may the store be asked: a lease of the
// running occurrence that is gone before its heartbeat noticed (Redis lost
// its data) would otherwise let the waiter claim an occurrence this
// replica cannot run yet. The run's end comes after its release, so the
// lock that follows finds the key free, or taken by another replica.
func (s *Scheduler) waitRunHere(j *job, until time.Time) error {
	cur := j.current.Load()
	if cur == nil {
		return nil
	}
	t := s.cfg.clock.NewTimer(max(until.Sub(s.cfg.clock.Now()), 0))
	defer t.Stop()
	select {
	case <-cur.done:
		return nil
	case <-t.Chan():
		return fmt.Errorf("%w: waited until the next occurrence: the job is still running on this replica: %w", lease.ErrAcquireTimeout, lease.ErrLocked)
	case <-s.base.Done():
		return fmt.Errorf("%w: %w", lease.ErrAborted, context.Cause(s.base))
	}
}

// waitBound is the wait of at least one attempt: a wait of zero or less
// is not a valid lease.WithMaxWait.
func waitBound(d time.Duration) time.Duration { return max(d, time.Millisecond) }
