package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/internal/logattr"
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
	// Attempt is the run's attempt at its occurrence: 1 for the first, k+1
	// for the attempt that resumes or retries attempt k (WithAttempts,
	// WithRetry). Every attempt has its own, greater, fencing token and
	// the same Occurrence. An effect outside the database should carry an
	// idempotency key made of Job and Occurrence (not Attempt): then a
	// later attempt of an occurrence whose effect was made is refused by
	// the receiving system, as fencing.AdvanceOnce refuses it in the
	// database.
	Attempt int
}

type runKey struct{}

// RunFromContext returns the Run carried by a job's context, and whether
// there was one.
func RunFromContext(ctx context.Context) (Run, bool) {
	r, ok := ctx.Value(runKey{}).(Run)
	return r, ok
}

// run is a won occurrence while its job executes. Its fields are set by
// newRun and execute before the job is called; the heartbeat observer and
// the cancellation watcher write only the atomics and timeoutCause. It
// belongs to its job's owner, which learns of its end (finish.go).
type run struct {
	job   *job
	reg   *registration // the registration it was claimed for
	kind  firingKind
	early bool // claimed ahead of its occurrence: waits for it (claim_ahead.go)
	info  Run
	lease *lease.Lease
	// shortID is lease.ShortID of the lease's ID, made once.
	shortID string
	// log is &logger, whose handler is handler: the run's attributes are
	// added to a line as it is written (runHandler). heartbeatLog is the
	// logger of its heartbeats (the lease's and a concurrency slot's),
	// which name their lease themselves. All are part of the run, so that
	// a run that logs nothing allocates nothing for them.
	log          *slog.Logger
	logger       slog.Logger
	handler      runHandler
	heartbeatLog slog.Logger
	hbHandler    runHandler
	done         chan struct{} // closed after the job returned, the lease was released and the owner told

	began  time.Time
	waited time.Duration // how long it waited for its occurrence after its claim (claim_ahead.go)
	// ctx is the run's context below its timeout and the values the job
	// reads: the heartbeat's (or, with a concurrency limit, the slot's),
	// cancelled with a cause on a loss or Shutdown, and by the heartbeat's
	// stop once the job has returned.
	ctx           context.Context
	stopHeartbeat heartbeat.Stop
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

	// missed is how many occurrences before this one ran nowhere, as the
	// ledger reported when the run won (reportMissed); recorded in its
	// status. Set before the job starts, read when it has ended.
	missed int

	// attempts is the occurrence's completion policy as its first attempt
	// recorded it in the store (attempts.go); its Max is 0 when the lease
	// was taken without one: the run is its occurrence's only attempt.
	attempts lease.Attempts
}

// event returns an event of kind about r.
func (r *run) event(kind EventKind, err error) Event {
	return Event{
		Kind:         kind,
		Job:          r.job.name,
		Occurrence:   r.info.Occurrence,
		Fence:        r.lease.Fence,
		ShortLeaseID: r.shortID,
		CatchUp:      r.info.CatchUp,
		Trigger:      r.info.Trigger,
		Attempt:      r.info.Attempt,
		Err:          err,
	}
}

// newRun builds the run of a won claim of firing f of j; the job's owner
// calls it, under its lock, before the run starts.
func (s *Scheduler) newRun(j *job, f firing, l *lease.Lease) *run {
	occ := s.occ(f)
	if f.kind == firedByTrigger {
		// A run now: the round the store chose (a store that chose none
		// gives the run its start).
		occ = l.AcquiredAt.In(s.cfg.location)
		if l.Round > 0 {
			occ = time.UnixMilli(l.Round).In(s.cfg.location)
		}
	}
	owner := l.Owner // what the claim sent: the stores give it back
	if owner == "" {
		owner = s.ownerOf(j, f.reg)
	}
	r := &run{
		job:   j,
		reg:   f.reg,
		kind:  f.kind,
		early: f.early,
		lease: l,
		done:  make(chan struct{}),
		info: Run{Job: j.name, Occurrence: occ, Fence: l.Fence, LeaseID: l.ID, Owner: owner,
			Replica: s.cfg.instanceID, CatchUp: f.kind == firedByCatchUp, Trigger: l.Trigger, Attempt: max(l.Attempt, 1)},
		attempts: l.Attempts, // as the store recorded them with the first attempt
		shortID:  lease.ShortID(l.ID),
	}
	r.handler = runHandler{h: s.log.Handler(), r: r}
	r.logger = *slog.New(&r.handler)
	r.log = &r.logger
	r.hbHandler = runHandler{h: s.log.Handler(), r: r, heartbeat: true}
	r.heartbeatLog = *slog.New(&r.hbHandler)
	r.deadline.Store(&l.Deadline)
	return r
}

// execute runs a won occurrence: report the occurrences that ran nowhere,
// start the heartbeat, take a slot of the concurrency limit, call, and, on
// every way out of the job (return, panic, runtime.Goexit), finish: stop
// the heartbeat, report the outcome, release the lease (finish.go).
//
// Each step is a call of its own, made one after the other: a run's
// goroutine starts with a small stack, which grew (a copy of every frame)
// each time the steps' frames were stacked in one.
func (s *Scheduler) execute(r *run) {
	r.missed = s.reportWin(r.job, r.reg, r.lease, r.info.Occurrence)
	end := exit{how: exitGoexit} // until the job returns or panics
	defer s.finish(r, &end)
	ctx := s.prepare(r, &end)
	if ctx == nil {
		return
	}
	s.begin(r)
	call(ctx, r.reg.fn, &end)
	// Starts before ends: at a large firing group's occurrence thousands
	// of runs are ready at once, and each would otherwise finish (stop
	// its heartbeat, build its status, queue its release) before the
	// runs behind it start. Yielding here lets those start first; the
	// release waits a little, under a lease that holds. At 10,000 jobs x
	// 3 replicas with a claim lead, the start lateness p50 went from
	// about 33 to 24 ms in alternated runs (BENCHMARKS.md).
	runtime.Gosched()
}

// prepare starts r's heartbeat, indexes its occurrence, takes a slot of
// its concurrency limit and returns the context the job is called with;
// nil, with end set, when the job is not to be called.
func (s *Scheduler) prepare(r *run, end *exit) context.Context {
	hbCtx, stop, err := heartbeat.Start(s.runBases.take(), s.store, r.lease,
		heartbeat.WithLogger(&r.heartbeatLog), heartbeat.WithObserver(func(e heartbeat.Event) { s.observeHeartbeat(r, e) }))
	if err != nil { // a bug: the TTL was validated
		*end = exit{how: exitNotStarted, err: err}
		return nil
	}
	r.stopHeartbeat = stop
	s.indexRun(r)
	if reason := s.awaitOccurrence(hbCtx, r); reason != 0 {
		*end = exit{how: exitNotRun, reason: reason}
		return nil
	}
	if r.reg.limit != nil {
		slotCtx, reason := s.takeSlot(hbCtx, r)
		if slotCtx == nil {
			*end = exit{how: exitNotRun, reason: reason}
			return nil
		}
		hbCtx = slotCtx
	}
	// The job's context is the heartbeat's (or the slot's): no layer of
	// its own, which every run would register with the heartbeat's
	// context at its start. The heartbeat's stop (finish.go) cancels it
	// once the job has returned.
	ctx := hbCtx
	r.ctx = ctx
	if t := r.reg.timeout; t > 0 {
		// A real deadline, so that drivers bound their I/O by it; the
		// watcher stops the lease's renewals when it passes.
		ctx, r.cancelTimeout = context.WithTimeoutCause(ctx, t, fmt.Errorf("%w after %s", ErrTimeout, t))
	}
	r.unwatch = s.watchCancel(r, ctx)
	ctx = fencing.NewContext(ctx, r.lease.Fence)
	ctx = fencing.NewOccurrenceContext(ctx, r.info.Occurrence)
	return context.WithValue(ctx, runKey{}, r.info)
}

// begin marks r begun and reports it (EventStarted, "job started").
func (s *Scheduler) begin(r *run) {
	r.began = s.cfg.clock.Now()
	ev := r.event(EventStarted, nil)
	ev.Lateness = r.began.Sub(r.info.Occurrence)
	s.emit(r.job, ev)
	if r.log.Enabled(context.Background(), slog.LevelInfo) { // the text of a duration is an allocation per run
		r.log.LogAttrs(context.Background(), slog.LevelInfo, "job started",
			logattr.Duration("lateness", ev.Lateness), slog.Bool("catch_up", r.info.CatchUp), slog.Int("attempt", r.info.Attempt))
	}
}

// reportWin reports what the store told claim l when it won occurrence
// occ, whether or not it runs (execute, giveBack): the occurrences that
// ran nowhere before it, and the open occurrence it superseded. The store
// recorded l's round over both, so no later claim can tell them. It
// returns how many occurrences it reported missed.
func (s *Scheduler) reportWin(j *job, reg *registration, l *lease.Lease, occ time.Time) int {
	n := s.reportMissed(j, reg, l, occ)
	s.reportSuperseded(j, l)
	return n
}

// reportMissed reports the occurrences of j that ran nowhere, as the
// ledger tells: l won occ, and the round recorded before it was
// l.PrevRound, so every occurrence strictly between the two was claimed by
// no replica (all were down, the store was unreachable, the job's previous
// run overlapped them, or every replica's clock was refused). The first
// claim of a job (no previous round) reports nothing. It returns how many
// it reported (at most MaxMissedCount). The event is the job's; the
// warning is the firing group's (missedLog), so that an outage that every
// job of a group reports at its next win logs one line, not one per job.
func (s *Scheduler) reportMissed(j *job, reg *registration, l *lease.Lease, occ time.Time) int {
	if l.PrevRound <= 0 {
		return 0
	}
	n, first, last, capped := reg.plan.between(time.UnixMilli(l.PrevRound), occ, MaxMissedCount)
	if n == 0 {
		return 0
	}
	s.reportMissedSpan(j, reg, occ, n, first, last, capped)
	return n
}

// reportMissedBeforePause reports the occurrences of j that ran nowhere
// before firing f's, which the store refused as paused (err): the refusal
// that recorded f's round as handled tells the round recorded before it
// and when the pause was set (lease.PausedError), as a won claim's ledger
// tells the round before it. Those strictly between that round and f's
// that came due before the pause were claimed by no replica while the job
// was not paused; those from the pause on were paused, not missed. A
// refusal that recorded nothing, or a pause of unknown time, reports
// nothing.
func (s *Scheduler) reportMissedBeforePause(j *job, f firing, err error) {
	var pe *lease.PausedError
	if f.reg == nil || !errors.As(err, &pe) || pe.PrevRound <= 0 || pe.PausedAt.IsZero() {
		return
	}
	end := time.UnixMilli(min(f.ms, pe.PausedAt.UnixMilli()))
	n, first, last, capped := f.reg.plan.between(time.UnixMilli(pe.PrevRound), end, MaxMissedCount)
	if n > 0 {
		s.reportMissedSpan(j, f.reg, s.occ(f), n, first, last, capped)
	}
}

// reportMissedSpan reports the n occurrences of j from first to last
// (capped: at least n) that ran nowhere before occ. It is reportMissed's
// rare part, a function of its own so that the frame of every run's call
// stays small.
func (s *Scheduler) reportMissedSpan(j *job, reg *registration, occ time.Time, n int, first, last time.Time, capped bool) {
	m := Missed{Count: n, First: first.In(s.cfg.location), Last: last.In(s.cfg.location), Capped: capped}
	s.debug(j, occ, "occurrences ran nowhere", slog.Int("missed", n), slog.Bool("at_least", capped),
		slog.Time("first", m.First), slog.Time("last", m.Last))
	s.missed.add(reg.plan.groupKey(), j.name, m) // one warning per firing group, not per job
	s.emit(j, Event{Kind: EventMissed, Job: j.name, Occurrence: occ, Missed: m})
}

// observeHeartbeat follows the run's heartbeat: each renewal moves the
// lease's local deadline, and a loss is reported as it happens.
func (s *Scheduler) observeHeartbeat(r *run, e heartbeat.Event) {
	// Every run's heartbeat ends with EventStopped, which needs nothing
	// here: the two that do build their Event in functions of their own,
	// so that this frame stays small (each run's heartbeat goroutine
	// grew its stack here).
	switch e.Kind {
	case heartbeat.EventRenewed:
		s.renewed(r, e.Deadline, e.Latency)
	case heartbeat.EventLost:
		s.leaseLost(r, e.Err, e.Remaining)
	}
}

// renewed records a renewal of r's lease: its new local deadline.
func (s *Scheduler) renewed(r *run, deadline time.Time, latency time.Duration) {
	r.deadline.Store(&deadline)
	ev := r.event(EventRenewed, nil)
	ev.Latency = latency
	s.emit(r.job, ev)
}

// leaseLost records that r's heartbeat cancelled the run: its lease was
// lost or could not be confirmed (cause), remaining before its local
// deadline.
func (s *Scheduler) leaseLost(r *run, cause error, remaining time.Duration) {
	r.unrenewed.Store(true)
	ev := r.event(EventLeaseLost, cause)
	ev.Remaining = remaining
	s.emit(r.job, ev)
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

// exitHow is how a job function ended.
type exitHow int

const (
	exitGoexit     exitHow = iota // neither returned nor panicked: runtime.Goexit
	exitReturned                  // returned (err may be nil)
	exitPanicked                  // panicked (err wraps ErrPanic)
	exitNotStarted                // never called: the heartbeat did not start
	exitNotRun                    // never called: no slot of its concurrency limit (reason says why)
)

// exit is how a run ended, filled in by call.
type exit struct {
	how    exitHow
	err    error
	stack  []byte     // for a panic, the panicking goroutine's stack
	reason SkipReason // for exitNotRun: the skip to report (0: reported already)
}

// call calls fn and records how it ended in end. If fn calls
// runtime.Goexit, call does not return, end keeps exitGoexit, and the
// caller's deferred finish still runs.
func call(ctx context.Context, fn func(context.Context) error, end *exit) {
	defer func() {
		if v := recover(); v != nil {
			*end = exit{how: exitPanicked, err: fmt.Errorf("%w: %v", ErrPanic, v), stack: debug.Stack()}
		}
	}()
	err := fn(ctx)
	*end = exit{how: exitReturned, err: err}
}
