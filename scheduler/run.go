package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
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
	Replica    string        // the instance ID of the replica running it (WithInstanceID)
	// CatchUp is set when the run is a late claim of an occurrence that
	// had not run (WithCatchUp), rather than the occurrence's own firing.
	CatchUp bool
	// Trigger is the ID of the trigger the run was started for (a run now,
	// package fleet), or "" for a scheduled run. A triggered run's
	// Occurrence is the round the store claimed for it: when it started,
	// in the store's time, or just after the occurrence claimed before it
	// if that is later (a replica whose clock runs fast claimed it).
	Trigger string
}

type runKey struct{}

// RunFromContext returns the Run carried by a job's context, and whether
// there was one.
func RunFromContext(ctx context.Context) (Run, bool) {
	r, ok := ctx.Value(runKey{}).(Run)
	return r, ok
}

// run is a won occurrence while its job executes. Its fields are set by
// attempt and execute before the job is called; the heartbeat observer and
// the cancellation watcher write only the atomics and timeoutCause.
type run struct {
	job   *job
	info  Run
	lease *lease.Lease
	log   *slog.Logger
	done  chan struct{} // closed after the job returned and the lease was released

	began         time.Time
	stopHeartbeat heartbeat.Stop
	cancel        context.CancelCauseFunc
	cancelTimeout context.CancelFunc // nil without WithTimeout
	unwatch       func()             // ends the cancellation watcher and waits for it

	// slot is the run's slot of its job's concurrency limit, and
	// stopSlotHeartbeat its heartbeat's stop; nil without a limit, or
	// before the slot is taken (limit.go).
	slot              *lease.Lease
	stopSlotHeartbeat heartbeat.Stop

	deadline     atomic.Pointer[time.Time] // the lease's latest local deadline (store clock)
	unrenewed    atomic.Bool               // the heartbeat stopped renewing: timeout or loss
	timedOut     atomic.Bool               // the run's timeout passed
	timeoutCause error                     // set with timedOut, read after unwatch
}

// event returns an event of kind about r.
func (r *run) event(kind EventKind, err error) Event {
	return Event{
		Kind:         kind,
		Job:          r.job.name,
		Occurrence:   r.info.Occurrence,
		Fence:        r.lease.Fence,
		ShortLeaseID: lease.ShortID(r.lease.ID),
		CatchUp:      r.info.CatchUp,
		Trigger:      r.info.Trigger,
		Err:          err,
	}
}

// attempt is the guarded acquire of one firing of j, run by an acquire
// worker: try the lease for the occurrence, and on a win hand the run to its
// own goroutine. It reports true when the firing found the job running and
// waits for it in a goroutine of its own (OverlapBufferOne), which then
// ends the firing in the acquire path instead of the worker.
func (s *Scheduler) attempt(j *job, f firing) (buffered bool) {
	occ := f.occ
	if j.removed.Load() {
		return false // Remove: its firings are dropped
	}
	if s.base.Err() != nil {
		s.skip(j, occ, SkipShutdown, nil)
		return false
	}
	quiet := f.catchUp || f.trigger // a catch-up or trigger that finds nothing to do is no skip
	if j.current.Load() != nil {
		// An earlier run still executes here: this replica cannot run the
		// occurrence, so it must not claim it. Asking the store would win
		// it whenever the earlier run's lease is gone before its heartbeat
		// noticed (Redis lost its data, the process stalled past the TTL),
		// and a claimed occurrence is skipped by every other replica and
		// never reported missed. Skipped unasked, it runs on another
		// replica, or, if the earlier lease still holds it off there,
		// is reported missed by the next winner.
		if quiet {
			s.debug(j, occ, "nothing to catch up or trigger now: the job is running here")
			return false
		}
		if j.overlap == OverlapBufferOne {
			s.bufferOne(j, f) // waits for the run here to end before it asks the store
			return true
		}
		s.skip(j, occ, SkipRunning, nil)
		return false
	}
	l, err := s.acquire(j, f)
	if err != nil && j.buffers(f, err) && s.base.Err() == nil {
		s.bufferOne(j, f)
		return true
	}
	s.settle(j, f, l, err)
	return false
}

// settle acts on the outcome of the acquire of firing f of j: a skip, a
// failure, or a won occurrence, whose run it starts in its own goroutine.
func (s *Scheduler) settle(j *job, f firing, l *lease.Lease, err error) {
	occ := f.occ
	quiet := f.catchUp || f.trigger // a catch-up or trigger that finds nothing to do is no skip
	switch {
	case err == nil:
	case s.base.Err() != nil && errors.Is(err, lease.ErrAborted):
		s.skip(j, occ, SkipShutdown, nil) // a wait for the job's running occurrence, ended by Shutdown
		return
	case f.trigger && errors.Is(err, lease.ErrNoTrigger):
		s.debug(j, occ, "trigger already run elsewhere, or expired")
		return
	case f.trigger && errors.Is(err, lease.ErrLocked):
		s.debug(j, occ, "trigger waits: the job is running; the replica running it takes the trigger when the run ends")
		return
	case quiet && (errors.Is(err, lease.ErrLocked) || errors.Is(err, lease.ErrRoundClaimed) || errors.Is(err, lease.ErrPaused)):
		s.debug(j, occ, "nothing to catch up: the occurrence (or a later one) was claimed, the job is running, or it is paused", slog.Any("answer", err))
		return
	case errors.Is(err, lease.ErrPaused):
		s.skip(j, occ, SkipPaused, err)
		return
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
		s.emit(j, Event{Kind: EventAcquireFailed, Job: j.name, Occurrence: occ, Err: err})
		return
	}
	if f.trigger {
		occ = time.UnixMilli(l.Round).In(s.cfg.location) // a run now: the round the store chose
	}
	s.reportMissed(j, l, occ)

	r := &run{
		job:   j,
		lease: l,
		done:  make(chan struct{}),
		info: Run{Job: j.name, Occurrence: occ, Fence: l.Fence, LeaseID: l.ID, Owner: j.owner,
			Replica: s.cfg.instanceID, CatchUp: f.catchUp, Trigger: l.Trigger},
		log: withLazy(s.log, slog.String("job", j.name), slog.Time("occurrence", occ),
			slog.String("lease", lease.ShortID(l.ID)), slog.Any("fence", l.Fence)),
	}
	r.deadline.Store(&l.Deadline)
	s.mu.Lock()
	reason := SkipReason(0)
	switch {
	case s.closed:
		reason = SkipShutdown
	case !j.current.CompareAndSwap(nil, r):
		// Never two of a job at once. Unreachable while a job's acquires
		// are serialized (one in flight per job) and checked above; kept
		// so that the invariant does not rest on that alone.
		reason = SkipRunning
	default:
		s.runs[r] = struct{}{}
	}
	s.mu.Unlock()
	if reason != 0 {
		s.release(r, nil)
		s.skip(j, occ, reason, nil)
		return
	}
	go s.execute(r)
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
	s.emit(j, Event{Kind: EventSkipped, Job: j.name, Occurrence: occ, Reason: reason, Err: err})
}

// execute runs a won occurrence: heartbeat, call, and, on every way out of
// the job (return, panic, runtime.Goexit), finish: stop the heartbeat,
// report the outcome, release the lease.
func (s *Scheduler) execute(r *run) {
	end := exit{how: exitGoexit} // until the job returns or panics
	defer s.finish(r, &end)

	hbCtx, stop, err := heartbeat.Start(s.base, s.store, r.lease,
		heartbeat.WithLogger(r.log), heartbeat.WithObserver(func(e heartbeat.Event) { s.observeHeartbeat(r, e) }))
	if err != nil { // a bug: the TTL was validated
		end = exit{how: exitNotStarted, err: err}
		return
	}
	r.stopHeartbeat = stop
	if r.job.limit != nil {
		slotCtx, reason := s.takeSlot(hbCtx, r)
		if slotCtx == nil {
			end = exit{how: exitNotRun, reason: reason}
			return
		}
		hbCtx = slotCtx
	}
	ctx, cancel := context.WithCancelCause(hbCtx)
	r.cancel = cancel
	if t := r.job.timeout; t > 0 {
		// A real deadline, so that drivers bound their I/O by it; the
		// watcher stops the lease's renewals when it passes.
		ctx, r.cancelTimeout = context.WithTimeoutCause(ctx, t, fmt.Errorf("%w after %s", ErrTimeout, t))
	}
	r.unwatch = s.watchCancel(r, ctx)
	ctx = fencing.NewContext(ctx, r.lease.Fence)
	ctx = fencing.NewOccurrenceContext(ctx, r.info.Occurrence)
	ctx = context.WithValue(ctx, runKey{}, r.info)

	r.began = s.cfg.clock.Now()
	ev := r.event(EventStarted, nil)
	ev.Lateness = r.began.Sub(r.info.Occurrence)
	s.emit(r.job, ev)
	r.log.Info("job started", slog.Duration("lateness", ev.Lateness), slog.Bool("catch_up", r.info.CatchUp))
	call(ctx, r.job.fn, &end)
}

// observeHeartbeat follows the run's heartbeat: each renewal moves the
// lease's local deadline, and a loss is reported as it happens.
func (s *Scheduler) observeHeartbeat(r *run, e heartbeat.Event) {
	switch e.Kind {
	case heartbeat.EventExtended:
		d := e.Deadline
		r.deadline.Store(&d)
		ev := r.event(EventRenewed, nil)
		ev.Latency = e.Latency
		s.emit(r.job, ev)
	case heartbeat.EventLost:
		r.unrenewed.Store(true)
		ev := r.event(EventLeaseLost, e.Err)
		ev.Remaining = e.Remaining
		s.emit(r.job, ev)
	}
}

// watchCancel reports a cancellation of the run's context by its timeout
// or by Shutdown when it happens, while the job may still run. At the
// timeout it also stops the lease's renewals: a job that ignores its
// context then holds the lease for at most one more TTL. The returned func
// ends the watch and waits for a report in progress.
func (s *Scheduler) watchCancel(r *run, ctx context.Context) func() {
	reported := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(reported)
		cause := context.Cause(ctx)
		switch {
		case errors.Is(cause, ErrTimeout):
			r.timeoutCause = cause
			r.timedOut.Store(true)
			r.unrenewed.Store(true)
			_ = r.stopHeartbeat()
			if r.stopSlotHeartbeat != nil {
				_ = r.stopSlotHeartbeat()
			}
			r.log.Warn("job timed out", slog.Any("cause", cause),
				slog.String("effect", "context cancelled; lease no longer renewed"))
			s.emit(r.job, r.event(EventCancelled, cause))
		case errors.Is(cause, ErrShutdown):
			s.emit(r.job, r.event(EventCancelled, cause))
		}
	})
	return func() {
		if !stop() {
			<-reported
		}
	}
}
