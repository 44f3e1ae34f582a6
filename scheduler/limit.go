package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/internal/logattr"
	"github.com/cronguard/cronguard/internal/retry"
	"github.com/cronguard/cronguard/lease"
)

// concurrencyLimit is a job's WithConcurrencyLimit.
type concurrencyLimit struct {
	name string
	n    int
}

// WithConcurrencyLimit makes the job one of the jobs sharing the limit
// name, of which at most n run at once across every replica: they share a
// semaphore of n slots in the lease store (lease.Semaphore named by the
// scheduler's key prefix and name; the store must be a
// lease.SemaphoreStore, as lease/redislease and lease/memory are). Every job
// and replica that shares name must give the same n.
//
// An occurrence first wins the job's lease and claims its round as usual;
// then it takes a slot. When none is free it waits for one, woken when a
// run sharing the limit releases its slot, up to the job's next
// occurrence less a margin of min(gap/10, 1s) (as for retries; for an At
// schedule, AtRetryWindow), keeping the job's lease alive meanwhile. If
// no slot frees up in time the occurrence is skipped with
// SkipConcurrencyLimit: it is not run anywhere (its round is claimed, so
// no other replica runs it, and the ledger does not report it missed; the
// skip event does). The slot is kept alive by a heartbeat as the lease is,
// and released with it after the run; a run whose slot is lost is
// cancelled as for a lost lease. EventStarted is emitted once the slot is
// taken.
//
// name must be a valid lease key (non-empty, at most lease.MaxKeyBytes
// with the key prefix); n must be between 1 and lease.MaxSemaphoreLimit.
// Default: no limit.
func WithConcurrencyLimit(name string, n int) JobOption {
	return func(c *jobConfig) error {
		if name == "" {
			return invalidOption("WithConcurrencyLimit: name must not be empty")
		}
		if err := lease.ValidateSemaphoreLimit(n); err != nil {
			return fmt.Errorf("%w: WithConcurrencyLimit: %w", ErrInvalidArgument, err)
		}
		c.limit = &concurrencyLimit{name: name, n: n}
		return nil
	}
}

// semaphoreFor returns the semaphore of limit, made on first use. Jobs
// that share a name must share n. s.mu is held.
func (s *Scheduler) semaphoreFor(job string, limit *concurrencyLimit) (*lease.Semaphore, error) {
	if sem := s.limits[limit.name]; sem != nil {
		if sem.Limit() != limit.n {
			return nil, invalidOption("Register %q: WithConcurrencyLimit(%q, %d): another job shares the limit with n = %d",
				job, limit.name, limit.n, sem.Limit())
		}
		return sem, nil
	}
	sem, err := lease.NewSemaphore(s.store, JobKeyPrefix+limit.name, limit.n)
	if err != nil {
		return nil, fmt.Errorf("%w: Register %q: WithConcurrencyLimit: %w", ErrInvalidArgument, job, err)
	}
	s.limits[limit.name] = sem
	return sem, nil
}

// takeSlot takes a slot of the run's concurrency limit, waiting for one
// until the job's next occurrence (see WithConcurrencyLimit), while ctx
// (the job lease's heartbeat context) lasts. On success it starts the
// slot's heartbeat, a child of ctx, and returns its context: the run's
// context then ends when either the lease or the slot is lost. Otherwise
// it returns the reason to skip the occurrence, or 0 after reporting a
// store failure.
func (s *Scheduler) takeSlot(ctx context.Context, r *run) (context.Context, SkipReason) {
	j := r.job
	until := s.retryUntil(j, firing{occ: r.info.Occurrence})
	if r.info.Trigger != "" {
		until = s.cfg.clock.Now().Add(j.ttl) // a run now has no occurrence to make way for
	}
	l, err := j.limit.Acquire(ctx, j.ttl, lease.WithMaxWait(waitBound(until.Sub(s.cfg.clock.Now()))),
		lease.WithLockClock(s.cfg.clock))
	switch {
	case err == nil:
	case s.base.Err() != nil:
		return nil, SkipShutdown
	case errors.Is(err, lease.ErrLocked):
		r.log.Debug("no slot of the concurrency limit freed up before the next occurrence",
			slog.String("limit", j.limit.Name()), slog.Any("error", err))
		return nil, SkipConcurrencyLimit
	default:
		r.log.Error("concurrency limit slot acquire failed; occurrence not run here",
			slog.String("limit", j.limit.Name()), slog.Any("error", err))
		s.emit(j, Event{Kind: EventAcquireFailed, Job: j.name, Occurrence: r.info.Occurrence, Err: err})
		return nil, 0
	}
	slotCtx, stop, err := heartbeat.Start(ctx, j.limit.Store(), l, heartbeat.WithLogger(r.log),
		heartbeat.WithObserver(func(e heartbeat.Event) { s.observeSlot(r, e) }))
	if err != nil { // a bug: the TTL was validated
		s.releaseSlot(r, l)
		r.log.Error("slot heartbeat did not start; job not run", slog.Any("error", err))
		s.emit(j, Event{Kind: EventAcquireFailed, Job: j.name, Occurrence: r.info.Occurrence, Err: err})
		return nil, 0
	}
	r.slot, r.stopSlotHeartbeat = l, stop
	return slotCtx, 0
}

// observeSlot follows the heartbeat of the run's slot: a loss is reported
// as the loss of the run's lease is.
func (s *Scheduler) observeSlot(r *run, e heartbeat.Event) {
	if e.Kind != heartbeat.EventLost {
		return
	}
	r.unrenewed.Store(true)
	ev := r.event(EventLeaseLost, e.Err)
	ev.Remaining = e.Remaining
	s.emit(r.job, ev)
}

// releaseSlot releases the run's slot with a fresh context bounded by
// min(ttl, MaxCleanup), retrying transient errors, as release does for the
// lease.
func (s *Scheduler) releaseSlot(r *run, l *lease.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), min(r.job.ttl, MaxCleanup))
	defer cancel()
	attempts, err := retry.Do(ctx, l.Release, func(err error, wait time.Duration) {
		r.log.Debug("concurrency slot release failed; retrying", slog.Any("error", err), logattr.Duration("retry_in", wait))
	})
	var nh *lease.NotHeldError
	switch {
	case err == nil, attempts > 1 && errors.As(err, &nh) && nh.Reason == lease.ReasonNotFound:
	case errors.Is(err, lease.ErrNotHeld):
		r.log.Debug("concurrency slot was no longer held at release", slog.Any("error", err))
	default:
		r.log.Warn("concurrency slot release failed; it frees up after its TTL", slog.Any("error", err))
	}
}
