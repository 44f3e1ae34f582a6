package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/lease"
)

// Completion: an occurrence is done once. A run (an attempt) ends
// succeeded, failed or interrupted; an interrupted attempt, and a failed
// one of a job with WithRetry, leaves its occurrence open, and any replica
// that has the job attempts it again (resume.go) as attempt k+1 of the same
// round, with a greater fence, until it succeeds, runs out of attempts, or
// reaches its deadline, when it is reported given up.

// DefaultAttempts is how many attempts an occurrence gets in total unless
// WithAttempts or WithRetry says otherwise: an interrupted attempt (by
// Shutdown, a lost lease, a dead replica) is resumed up to twice.
const DefaultAttempts = 3

// attemptDetectMargin is added to a job's TTL for the shortest attempt
// window that completes its occurrences: a dead holder is found once its
// lease has expired (TTL + lease.ExpiryTolerance) and the fleet's index is
// next read (resumePoll). A job whose window is shorter could not be
// resumed in it, and pays nothing for completion.
const attemptDetectMargin = lease.ExpiryTolerance + 2*resumePoll

// retryPolicy is WithRetry's: failures are retried after the backoff.
// BackOff values keep state, so the policy's is used under a lock, from
// its start for each delay.
type retryPolicy struct {
	mu sync.Mutex
	b  backoff.BackOff // nil: at once
}

// delay returns how long after failed attempt k (1 for the first) the
// next may start, and false when the backoff says to stop.
func (p *retryPolicy) delay(k int) (time.Duration, bool) {
	if p.b == nil {
		return 0, true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.b.Reset()
	var d time.Duration
	for range max(k, 1) {
		if d = p.b.NextBackOff(); d == backoff.Stop {
			return 0, false
		}
	}
	return d, true
}

// WithAttempts sets how many attempts an occurrence of the job gets in
// total: an attempt interrupted by Shutdown, a lost lease or a dead replica
// is resumed, by any replica that has the job, until this many have been
// made (failures too with WithRetry). Default: DefaultAttempts (3). n = 1
// turns completion off for the job: each occurrence gets one attempt, and
// an interrupted one is reported and not resumed. n must be at least 1.
//
// Completion needs the fleet's control plane (a fleet.Store, as
// lease/redislease and lease/memory are, without WithoutControlPlane), and
// an attempt window (WithAttemptWindow) longer than the job's TTL plus
// lease.ExpiryTolerance plus 2s, time enough to find a dead attempt: a job
// whose window is shorter (Every(time.Second), say) pays nothing for it,
// and its occurrences get one attempt.
func WithAttempts(n int) JobOption {
	return func(c *jobConfig) error {
		if n < 1 {
			return invalidOption("WithAttempts: attempts must be at least 1, got %d", n)
		}
		c.attempts = n
		return nil
	}
}

// WithRetry makes failed attempts of the job's occurrences (an error, a
// panic, a timeout) be attempted again, like interrupted ones, up to
// attempts in total (which replaces WithAttempts), waiting b's next
// backoff after each failure: after the k-th failed attempt, the k-th
// value b gives from its Reset (b is shared by the job's occurrences and
// used under a lock; backoff.Stop gives up). The attempt may run on any
// replica that has the job. nil b retries at once. Without WithRetry a
// failure is reported failed and its occurrence is not attempted again.
// An error that wraps fencing.ErrDuplicate is no failure: an earlier
// attempt committed the occurrence's effect, and the run succeeded.
// attempts must be at least 2.
func WithRetry(attempts int, b backoff.BackOff) JobOption {
	return func(c *jobConfig) error {
		if attempts < 2 {
			return invalidOption("WithRetry: attempts must be at least 2, got %d", attempts)
		}
		c.attempts = attempts
		c.retry = &retryPolicy{b: b}
		return nil
	}
}

// WithAttemptWindow sets how long after its occurrence an occurrence may
// still be attempted: no attempt starts window or more after it (its
// deadline), and one that would is reported given up. Default: until the
// job's next occurrence (AtRetryWindow after an At schedule's one), so
// that an occurrence is never attempted once the next one is due; a
// longer window lets attempts go on after it (a later occurrence's claim
// still gives up an open one: rounds only move forward). window must be
// positive.
func WithAttemptWindow(window time.Duration) JobOption {
	return func(c *jobConfig) error {
		if window <= 0 {
			return invalidOption("WithAttemptWindow: window must be positive, got %s", window)
		}
		c.attemptWindow = window
		return nil
	}
}

// attemptDeadline returns when attempts of occurrence occ of reg stop:
// occ + WithAttemptWindow, else the next occurrence, else AtRetryWindow
// after occ.
func (s *Scheduler) attemptDeadline(reg *registration, occ time.Time) time.Time {
	if reg.attemptWindow > 0 {
		return occ.Add(reg.attemptWindow)
	}
	if next := reg.plan.next(occ); !next.IsZero() {
		return next
	}
	return occ.Add(AtRetryWindow)
}

// attemptsOf returns the completion policy of occurrence occ of reg, and
// false when the occurrence gets a single attempt and no completion
// record: the job asked for one attempt, the scheduler has no control
// plane, or the window is too short to attempt again.
func (s *Scheduler) attemptsOf(reg *registration, occ time.Time) (lease.Attempts, bool) {
	if reg.attempts < 2 || s.control == nil {
		return lease.Attempts{}, false
	}
	deadline := s.attemptDeadline(reg, occ)
	if deadline.Sub(occ) < reg.ttl+attemptDetectMargin {
		return lease.Attempts{}, false
	}
	return lease.Attempts{Max: reg.attempts, Deadline: deadline}, true
}

// attemptEnd is how an attempt ended, for its occurrence.
type attemptEnd uint8

const (
	endSucceeded   attemptEnd = iota // nil, or fencing.ErrDuplicate
	endFailed                        // an error, a panic, a timeout, runtime.Goexit
	endInterrupted                   // Shutdown or a lost lease ended it, and it returned an error
)

// endOf classifies how run r ended: end is how its job ended, and cause
// is its context's cause (nil while not cancelled).
func endOf(r *run, end *exit, cause error) attemptEnd {
	switch {
	case end.how == exitReturned && errors.Is(end.err, fencing.ErrDuplicate):
		return endSucceeded // an earlier attempt committed the effect
	case end.how == exitReturned && end.err == nil && !r.timedOut.Load():
		return endSucceeded // nil after the timeout is a timeout, as its report says
	case end.how == exitReturned && !r.timedOut.Load() &&
		(errors.Is(cause, ErrShutdown) || errors.Is(cause, heartbeat.ErrLeaseLost) || errors.Is(cause, heartbeat.ErrLeaseUnconfirmed)):
		return endInterrupted
	}
	return endFailed
}

// closeOf decides what the release of run r, which ended as e, does to its
// occurrence's completion record: done, open for attempt k+1 after a
// delay, or given up (out of attempts, or of time before the deadline).
func (s *Scheduler) closeOf(r *run, e attemptEnd) (fleet.CloseKind, time.Duration) {
	a := r.attempts
	if a.Max == 0 || e == endSucceeded || (e == endFailed && r.reg.retry == nil) {
		return fleet.CloseDone, 0
	}
	var after time.Duration
	if e == endFailed {
		d, ok := r.reg.retry.delay(r.info.Attempt)
		if !ok {
			return fleet.CloseGivenUp, 0
		}
		after = d
	}
	if r.info.Attempt >= a.Max || !s.cfg.clock.Now().Add(after).Before(a.Deadline) {
		return fleet.CloseGivenUp, 0
	}
	return fleet.CloseOpen, after
}

// givenUp reports that occurrence occ of job j (round, as the store keeps
// it) will not be attempted again after attempt: a warning, an
// EventGivenUp, a count. j is nil for a job this replica does not have.
func (s *Scheduler) givenUp(j *job, name string, occ time.Time, attempt int, why string) {
	s.log.LogAttrs(context.Background(), slog.LevelWarn, "occurrence given up: it will not be attempted again",
		slog.String("job", name), slog.Time("occurrence", occ), slog.Int("attempt", attempt), slog.String("reason", why))
	s.emit(j, Event{Kind: EventGivenUp, Job: name, Occurrence: occ, Attempt: attempt})
}

// reportSuperseded reports the occurrence that the claim l gave up (a
// scheduled round with attempts, or a trigger's run: execute calls it for
// every run): it was still open (or its attempt's holder had died) when a
// later occurrence was claimed, and the store marked it given up, once.
func (s *Scheduler) reportSuperseded(j *job, l *lease.Lease) {
	if sup := l.Superseded; sup != nil {
		s.givenUp(j, j.name, time.UnixMilli(sup.Round).In(s.cfg.location), sup.Attempt, "a later occurrence was claimed")
	}
}
