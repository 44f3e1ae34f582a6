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
// no slot frees up in time the attempt is skipped with
// SkipConcurrencyLimit. An occurrence with one attempt (WithAttempts(1),
// or a window too short for completion) is then not run anywhere (its
// round is claimed, so no other replica runs it, and the ledger does not
// report it missed; the skip event does). One with attempts stays open:
// the fleet attempts it again, on any replica, at its next read of the
// index of open occurrences, while attempts and its window remain, and
// reports it given up after. The slot is kept alive by a heartbeat as the
// lease is, and released with it after the run; a run whose slot is lost
// is cancelled as for a lost lease. EventStarted is emitted once the slot
// is taken.
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
		c.limitSpec = &concurrencyLimit{name: name, n: n}
		return nil
	}
}

// sharedLimit is a concurrency limit's semaphore and how many registered
// jobs share it.
type sharedLimit struct {
	sem  *lease.Semaphore
	jobs int
}

// semaphoreFor returns the semaphore of limit, made on first use, and
// counts job among its users. Jobs that share a name must share n. s.mu
// is held.
func (s *Scheduler) semaphoreFor(job string, limit *concurrencyLimit) (*lease.Semaphore, error) {
	if sl := s.limits[limit.name]; sl != nil {
		if sl.sem.Limit() != limit.n {
			return nil, invalidOption("Register %q: WithConcurrencyLimit(%q, %d): another job shares the limit with n = %d",
				job, limit.name, limit.n, sl.sem.Limit())
		}
		sl.jobs++
		return sl.sem, nil
	}
	sem, err := lease.NewSemaphore(s.store, JobKeyPrefix+limit.name, limit.n)
	if err != nil {
		return nil, fmt.Errorf("%w: Register %q: WithConcurrencyLimit: %w", ErrInvalidArgument, job, err)
	}
	s.limits[limit.name] = &sharedLimit{sem: sem, jobs: 1}
	return sem, nil
}

// dropLimit counts a removed job out of its limit's users; the last one
// out forgets the limit, so that it may be registered again with another
// n (a run still going keeps its semaphore). s.mu is held.
func (s *Scheduler) dropLimit(limit *concurrencyLimit) {
	if limit == nil {
		return
	}
	if sl := s.limits[limit.name]; sl != nil {
		if sl.jobs--; sl.jobs <= 0 {
			delete(s.limits, limit.name)
		}
	}
}

// takeSlot takes a slot of the run's concurrency limit, waiting for one
// until the job's next occurrence (see WithConcurrencyLimit), while ctx
// (the job lease's heartbeat context) lasts. On success it starts the
// slot's heartbeat, a child of ctx, and returns its context: the run's
// context then ends when either the lease or the slot is lost. Otherwise
// it returns the reason to skip the occurrence (SkipLeaseLost when the
// job's lease was lost while it waited, not SkipConcurrencyLimit), or 0
// after reporting a store failure.
func (s *Scheduler) takeSlot(ctx context.Context, r *run) (context.Context, SkipReason) {
	j, reg := r.job, r.reg
	until := s.retryUntil(newFiring(r.info.Occurrence, 0, r.kind, reg))
	l, err := reg.limit.Acquire(ctx, reg.ttl, lease.WithMaxWait(waitBound(until.Sub(s.cfg.clock.Now()))),
		lease.WithLockClock(s.cfg.clock))
	switch {
	case err == nil:
	case s.base.Err() != nil:
		return nil, SkipShutdown
	case ctx.Err() != nil:
		// The job's lease was lost (or could not be confirmed) while the
		// run waited for a slot: the heartbeat reported it; no slot was
		// missing.
		r.log.Warn("job lease lost while waiting for a slot of the concurrency limit; job not run",
			slog.String("limit", reg.limit.Name()), slog.Any("cause", context.Cause(ctx)))
		return nil, SkipLeaseLost
	case errors.Is(err, lease.ErrLocked):
		r.log.Debug("no slot of the concurrency limit freed up before the next occurrence",
			slog.String("limit", reg.limit.Name()), slog.Any("error", err))
		return nil, SkipConcurrencyLimit
	default:
		r.log.Error("concurrency limit slot acquire failed; occurrence not run here",
			slog.String("limit", reg.limit.Name()), slog.Any("error", err))
		s.emit(j, Event{Kind: EventAcquireFailed, Job: j.name, Occurrence: r.info.Occurrence, Err: err})
		return nil, 0
	}
	slotCtx, stop, err := heartbeat.Start(ctx, reg.limit.Store(), l, heartbeat.WithLogger(&r.heartbeatLog),
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
	ctx, cancel := context.WithTimeout(context.Background(), min(r.reg.ttl, MaxCleanup))
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
