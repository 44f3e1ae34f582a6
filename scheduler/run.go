package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/lease"
)

// Run describes the run a job function was called for; RunFromContext
// returns it from the function's context.
type Run struct {
	Job        string        // the job's name
	Occurrence time.Time     // the scheduled time, in the scheduler's location
	Fence      fencing.Token // the run's fencing token (also in fencing.FromContext)
	LeaseID    string        // the lease ID; a secret of sorts: log lease.ShortID(LeaseID)
	Owner      string        // the holder label stored with the lease
}

type runKey struct{}

// RunFromContext returns the Run carried by a job's context, and whether
// there was one.
func RunFromContext(ctx context.Context) (Run, bool) {
	r, ok := ctx.Value(runKey{}).(Run)
	return r, ok
}

// run is a won occurrence while its job executes.
type run struct {
	job   *job
	info  Run
	lease *lease.Lease
	done  chan struct{} // closed after the job returned and the lease was released
}

// attempt is the guarded acquire of one firing of j, run by an acquire
// worker: try the lease for the occurrence, and on a win hand the run to its
// own goroutine.
func (s *Scheduler) attempt(j *job, f firing) {
	occ := f.occ
	if s.base.Err() != nil {
		s.skip(j, occ, SkipShutdown, nil)
		return
	}
	// The acquire is not cancelled by Shutdown (an abandoned acquire may
	// have taken the lease); it is bounded instead, and a lease won during
	// shutdown is released at once.
	actx, cancel := context.WithTimeout(context.Background(), min(j.ttl, MaxCleanup))
	l, err := s.store.Acquire(actx, j.key, j.ttl, lease.WithRoundTime(occ, f.maxSkew), lease.WithOwner(j.owner))
	cancel()
	switch {
	case err == nil:
	case errors.Is(err, lease.ErrLocked):
		s.skip(j, occ, SkipLocked, err)
		return
	case errors.Is(err, lease.ErrRoundClaimed):
		s.skip(j, occ, SkipClaimed, err)
		return
	case errors.Is(err, lease.ErrClockSkew):
		s.skip(j, occ, SkipClockSkew, err)
		return
	default:
		s.log.Error("job lease acquire failed; occurrence not run here",
			slog.String("job", j.name), slog.Time("occurrence", occ), slog.Any("error", err))
		s.emit(Event{Kind: EventAcquireFailed, Job: j.name, Occurrence: occ, Err: err})
		return
	}

	r := &run{
		job:   j,
		lease: l,
		done:  make(chan struct{}),
		info:  Run{Job: j.name, Occurrence: occ, Fence: l.Fence, LeaseID: l.ID, Owner: j.owner},
	}
	log := withLazy(s.log, slog.String("job", j.name), slog.Time("occurrence", occ))
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.release(log, r)
		s.skip(j, occ, SkipShutdown, nil)
		return
	}
	s.runs[r] = struct{}{}
	s.mu.Unlock()
	go s.execute(r, log)
}

// skip reports an occurrence of j this replica does not run. A fast clock
// is an error; losing the race is routine.
func (s *Scheduler) skip(j *job, occ time.Time, reason SkipReason, err error) {
	if reason == SkipClockSkew {
		s.log.Error("occurrence refused: this replica's clock runs ahead of the store's; fix its time sync",
			slog.String("job", j.name), slog.Time("occurrence", occ), slog.Any("error", err))
	} else {
		s.debug(j, occ, "occurrence skipped", slog.String("reason", reason.String()))
	}
	s.emit(Event{Kind: EventSkipped, Job: j.name, Occurrence: occ, Reason: reason, Err: err})
}

// execute runs a won occurrence: heartbeat, call, stop heartbeat, release.
func (s *Scheduler) execute(r *run, log *slog.Logger) {
	defer func() {
		s.mu.Lock()
		delete(s.runs, r)
		s.mu.Unlock()
		close(r.done)
	}()
	j, l := r.job, r.lease
	// The heartbeat adds the lease and fence to its own log lines.
	hbCtx, stop, err := heartbeat.Start(s.base, s.store, l,
		heartbeat.WithClock(s.cfg.clock), heartbeat.WithLogger(log))
	log = log.With(slog.String("lease", l.LogID()), slog.String("fence", l.Fence.String()))
	ev := Event{Job: j.name, Occurrence: r.info.Occurrence, Fence: l.Fence, LeaseID: l.LogID()}
	if err != nil { // a bug: the TTL was validated
		log.Error("heartbeat did not start; job not run", slog.Any("error", err))
		ev.Kind, ev.Err = EventFailed, err
		s.emit(ev)
		s.release(log, r)
		return
	}
	ctx, cancel := context.WithCancelCause(hbCtx)
	defer cancel(nil)
	if j.timeout > 0 {
		// At the timeout the run is cancelled and its lease no longer
		// renewed: a job that ignores its context keeps the lease for at
		// most one more TTL, instead of blocking the job forever.
		t := s.cfg.clock.AfterFunc(j.timeout, func() {
			cancel(fmt.Errorf("%w after %s", ErrTimeout, j.timeout))
			_ = stop()
		})
		defer t.Stop()
	}
	ctx = fencing.NewContext(ctx, l.Fence)
	ctx = context.WithValue(ctx, runKey{}, r.info)

	ev.Kind = EventStarted
	s.emit(ev)
	log.Info("job started")
	began := s.cfg.clock.Now()
	err, stack := call(ctx, j.fn)
	ev.Duration = s.cfg.clock.Since(began)
	cancel(nil)
	lost := stop()

	switch {
	case stack != nil:
		log.Error("job panicked", slog.Any("error", err), slog.Duration("took", ev.Duration), slog.String("stack", string(stack)))
		ev.Kind, ev.Err = EventPanicked, err
	case err != nil:
		log.Error("job failed", slog.Any("error", err), slog.Duration("took", ev.Duration))
		ev.Kind, ev.Err = EventFailed, err
	default:
		log.Info("job succeeded", slog.Duration("took", ev.Duration))
		ev.Kind, ev.Err = EventSucceeded, nil
	}
	s.emit(ev)
	if lost != nil {
		log.Warn("job lease was lost while it ran", slog.Any("cause", lost))
		ev.Kind, ev.Err, ev.Duration = EventLeaseLost, lost, 0
		s.emit(ev)
	}
	if s.release(log, r) {
		ev.Kind, ev.Err, ev.Duration = EventReleased, nil, 0
		s.emit(ev)
	}
}

// call calls fn, turning a panic into an error that wraps ErrPanic; stack
// is the panicking goroutine's stack, for the log.
func call(ctx context.Context, fn func(context.Context) error) (err error, stack []byte) {
	defer func() {
		if v := recover(); v != nil {
			err, stack = fmt.Errorf("%w: %v", ErrPanic, v), debug.Stack()
		}
	}()
	return fn(ctx), nil
}

// release releases the run's lease with a fresh context bounded by
// min(ttl, MaxCleanup), never with the run's (cancelled) context. It reports
// whether the lease was released.
func (s *Scheduler) release(log *slog.Logger, r *run) bool {
	ctx, cancel := context.WithTimeout(context.Background(), min(r.job.ttl, MaxCleanup))
	defer cancel()
	err := r.lease.Release(ctx)
	switch {
	case err == nil:
		log.Debug("job lease released")
		return true
	case errors.Is(err, lease.ErrNotHeld):
		log.Debug("job lease was no longer held at release", slog.Any("error", err))
	default:
		log.Warn("job lease release failed; it expires after its TTL", slog.Any("error", err))
	}
	return false
}
