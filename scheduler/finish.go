package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/internal/logattr"
	"github.com/cronguard/cronguard/internal/retry"
	"github.com/cronguard/cronguard/lease"
)

// finish ends a run however its job ended: it stops the heartbeat,
// reports the outcome, releases the slot and the lease, and tells the
// job's owner, which decides what happens next (a buffered occurrence, a
// catch-up, a trigger that waited; or, on a replica that stops or no
// longer has the job, handing the trigger on to the fleet). execute defers
// it, so it runs on runtime.Goexit too.
//
// A run whose release goes through the release batcher ends later, when
// its batch is answered (releaseThen): its goroutine returns first.
func (s *Scheduler) finish(r *run, end *exit) {
	triggers, later := 0, false
	// The owner is told from here, after the step below returned: its
	// frame is off the run goroutine's stack by then (see execute).
	defer func() {
		if !later {
			s.ended(r, triggers)
		}
	}()
	switch end.how {
	case exitNotStarted, exitNotRun:
		triggers = s.finishUncalled(r, end)
	default:
		triggers, later = s.finishCalled(r, end)
	}
}

// ended tells the job's owner that r ended, with the triggers its release
// found waiting (or triggersUnknown, triggersUnread), and signals the run's
// end (Shutdown waits for it).
func (s *Scheduler) ended(r *run, triggers int) {
	r.job.deliver(input{kind: inRunEnded, run: r, n: triggers})
	close(r.done)
}

// What a run's end reports of the triggers that wait for its job when the
// store did not say, with a control plane: a trigger queued behind the
// run's lease is then told of to no replica, so the job asks for one
// (job.go): once the lease can no longer be live when the release failed
// (triggersUnknown), at once when the lease was released but the triggers
// could not be counted (triggersUnread).
const (
	triggersUnknown = -1
	triggersUnread  = -2
)

// triggersAfter returns what a run's end reports of the triggers that wait
// for its job: n, as its release counted them, or triggersUnknown when the
// release failed and the fleet has triggers (a control plane).
func (s *Scheduler) triggersAfter(released bool, n int) int {
	if !released && s.control != nil {
		return triggersUnknown
	}
	return n
}

// finishUncalled ends a run whose job was not called: its heartbeat did
// not start, or it got no slot of its concurrency limit. Its lease goes
// back without a run status (nothing ran). It returns the triggers that
// wait for the job, as a called run's release does.
func (s *Scheduler) finishUncalled(r *run, end *exit) (triggers int) {
	if end.how == exitNotStarted {
		r.log.Error("heartbeat did not start; job not run", slog.Any("error", end.err))
		s.emit(r.job, r.event(EventFailed, end.err))
		return s.releaseUncalled(r)
	}
	_ = r.stopHeartbeat()
	if end.reason == SkipShutdown && r.early && r.attempts.Max > 0 {
		triggers = s.reopen(r) // claimed ahead, cancelled before it was due (claim_ahead.go)
	} else {
		triggers = s.releaseUncalled(r)
	}
	if end.reason != 0 {
		s.skip(r.job, r.info.Occurrence, end.reason, nil)
	}
	return triggers
}

// releaseUncalled releases the lease of a run whose job was not called
// and returns the triggers that wait for the job. A trigger queued while
// the lease was held waits for its holder: the replicas that found the
// job locked ask again only when the lease runs out, and one that never
// heard of the trigger (it subscribed after it was queued) not at all. A
// run that waits for a slot of its limit holds the lease up to its next
// occurrence, so a holder that did not take the trigger at its release
// could leave it waiting until it lapsed. A release without a status
// does not count them, so this asks the store: a round trip more, for
// runs that did not run only.
//
// An attempt with a completion record (attempts.go) that did not call its
// job leaves its occurrence open: its index entry, due when its lease
// would have expired, is made due now, so that the fleet attempts the
// occurrence again, or gives it up past its deadline, at its next read of
// the index rather than up to a TTL later.
func (s *Scheduler) releaseUncalled(r *run) (triggers int) {
	released, _ := s.release(r, nil)
	if !released {
		return s.triggersAfter(false, 0)
	}
	if r.attempts.Max > 0 {
		s.index(r.job, r.lease.Round, r.attempts.Deadline, s.storeClock.Now())
	}
	return s.waitingTriggers(r.job, r.reg.ttl)
}

// waitingTriggers returns how many triggers wait for j in the store, with
// a control plane; 0 without one, or when the store does not answer
// within min(ttl, MaxCleanup) (the replicas that found the job locked ask
// again when its lease runs out).
func (s *Scheduler) waitingTriggers(j *job, ttl time.Duration) int {
	fs, ok := s.store.(fleet.Store)
	if !ok || s.control == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(ttl, MaxCleanup))
	defer cancel()
	n, err := fs.PendingTriggers(ctx, j.key)
	if err != nil {
		s.log.Debug("could not look for triggers that wait for the job; asking for one again",
			slog.String("job", j.name), slog.Any("error", err))
		return triggersUnread
	}
	return n
}

// finishCalled ends a run whose job was called: it stops the heartbeat,
// reports the outcome and releases the lease with the run's status. It
// returns the triggers the release found waiting; or later true when the
// release was handed to the release batcher, whose answer ends the run
// (afterRelease, then ended).
func (s *Scheduler) finishCalled(r *run, end *exit) (triggers int, later bool) {
	took := s.cfg.clock.Since(r.began)
	cause := context.Cause(r.ctx) // before the heartbeat's stop cancels it below: nil unless Shutdown or a loss ended it
	r.unwatch()                   // a timeout or shutdown report in progress is out
	lost := r.stopHeartbeat()
	if r.stopSlotHeartbeat != nil {
		_ = r.stopSlotHeartbeat() // a loss was reported as it happened
	}
	if r.cancelTimeout != nil {
		r.cancelTimeout()
	}

	ae := endOf(r, end, cause)
	ev := s.outcome(r, end, ae, took)
	ev.Duration = took
	s.emit(r.job, ev)
	s.reportOutlived(r, lost)
	st := r.status(ev)
	st.Close, st.RetryAfter = s.closeOf(r, ae)
	r.job.setLastRun(RunInfo{Occurrence: st.Occurrence, Started: st.Started, Duration: st.Duration,
		Outcome: st.Outcome, Error: fleet.SanitizeError(st.Error), Trigger: st.Trigger})
	if r.slot != nil {
		s.releaseSlot(r, r.slot) // first: a run waiting for the slot need not wait for the lease too
	}
	if s.releaseThen(r, st) {
		return 0, true
	}
	released, n := s.release(r, &st)
	s.afterRelease(r, st, released)
	return s.triggersAfter(released, n), false
}

// afterRelease is what follows a called run's release: its event, and
// what the fleet is told of its close and of a triggered run's end.
func (s *Scheduler) afterRelease(r *run, st fleet.Status, released bool) {
	if released {
		s.emit(r.job, r.event(EventReleased, nil))
		s.afterClose(r, st)
	}
	if r.info.Trigger != "" {
		s.announceDone(r, st)
	}
}

// status is the run's fleet.Status, from its end event.
func (r *run) status(end Event) fleet.Status {
	st := fleet.Status{
		Occurrence: r.info.Occurrence,
		Owner:      r.lease.Owner,
		Replica:    r.info.Replica,
		Attempt:    r.info.Attempt,
		Fence:      r.lease.Fence,
		Started:    r.lease.AcquiredAt.Add(r.waited), // the store's clock; a run claimed ahead started when its wait ended
		Duration:   end.Duration,
		Outcome:    outcomeName(end.Kind),
		Trigger:    r.info.Trigger,
		Missed:     r.missed,
	}
	if end.Err != nil {
		st.Error = end.Err.Error()
		if r.reg.errorClassOnly {
			st.Error = errorClass(end.Err)
		}
	}
	return st
}

// outcomeName names a run's end event as fleet.Status.Outcome does.
func outcomeName(k EventKind) string {
	switch k {
	case EventSucceeded:
		return "succeeded"
	case EventPanicked:
		return "panicked"
	case EventTimedOut:
		return "timed_out"
	case EventInterrupted:
		return "interrupted"
	}
	return "failed"
}

// errorClass names what kind of error a run failed with, without its text
// (WithErrorClassOnly).
func errorClass(err error) string {
	switch {
	case errors.Is(err, ErrPanic):
		return "panic"
	case errors.Is(err, ErrGoexit):
		return "goexit"
	case errors.Is(err, ErrTimeout):
		return "timeout"
	case errors.Is(err, ErrShutdown):
		return "shutdown"
	case errors.Is(err, heartbeat.ErrLeaseLost), errors.Is(err, heartbeat.ErrLeaseUnconfirmed):
		return "lease_lost"
	case errors.Is(err, fencing.ErrStale):
		return "fencing_stale"
	case errors.Is(err, fencing.ErrDuplicate):
		return "fencing_duplicate"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	if c := lease.Class(err); c != "other" {
		return c
	}
	return "error"
}

// announceDone tells the fleet that a triggered run ended, so that whoever
// asked for it (inspect's Trigger with wait) learns its outcome.
func (s *Scheduler) announceDone(r *run, st fleet.Status) {
	fs, ok := s.store.(fleet.Store)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(r.reg.ttl, MaxCleanup))
	defer cancel()
	m := fleet.Message{Kind: fleet.MessageDone, Key: r.job.key, Trigger: r.info.Trigger, Outcome: st.Outcome, Error: fleet.SanitizeError(st.Error)}
	if err := fs.Publish(ctx, m); err != nil {
		r.log.Warn("could not announce the end of a triggered run", slog.Any("error", err))
	}
}

// outcome logs how the run ended and returns its end event. An
// interrupted run is a warning, not an error: it did not fail, and its
// occurrence stays open for another attempt. A run that succeeded builds
// no log attribute unless its info line is on (the text of its duration
// is an allocation per run); the other ends are outcomeNotSucceeded's.
func (s *Scheduler) outcome(r *run, end *exit, ae attemptEnd, took time.Duration) Event {
	if ae == endInterrupted || end.err != nil || end.how == exitPanicked || end.how == exitGoexit || r.timedOut.Load() {
		return s.outcomeNotSucceeded(r, end, ae, took)
	}
	if r.log.Enabled(context.Background(), slog.LevelInfo) {
		logSucceeded(r, took)
	}
	return r.event(EventSucceeded, nil)
}

// logSucceeded logs a run's success at info.
func logSucceeded(r *run, took time.Duration) {
	r.log.LogAttrs(context.Background(), slog.LevelInfo, "job succeeded", logattr.Duration("took", took))
}

// outcomeNotSucceeded is outcome for every end but a plain success: a
// function of its own, so that the frame of every run's end stays small.
func (s *Scheduler) outcomeNotSucceeded(r *run, end *exit, ae attemptEnd, took time.Duration) Event {
	tookAttr := logattr.Duration("took", took)
	switch {
	case ae == endInterrupted:
		r.log.Warn("job interrupted: it did not end by itself", slog.Any("error", end.err), tookAttr, slog.Int("attempt", r.info.Attempt))
		return r.event(EventInterrupted, end.err)
	case ae == endSucceeded && end.err != nil:
		r.log.Info("job succeeded: an earlier attempt had committed the occurrence's effect", slog.Any("error", end.err), tookAttr, slog.Int("attempt", r.info.Attempt))
		return r.event(EventSucceeded, nil)
	case end.how == exitPanicked:
		r.log.Error("job panicked", slog.Any("error", end.err), tookAttr, slog.String("stack", string(end.stack)))
		return r.event(EventPanicked, end.err)
	case end.how == exitGoexit:
		r.log.Error("job ended with runtime.Goexit", tookAttr)
		return r.event(EventFailed, ErrGoexit)
	case r.timedOut.Load():
		err := r.timeoutCause
		if end.err != nil {
			err = fmt.Errorf("%w: %w", err, end.err)
		}
		r.log.Error("job ended after its timeout", slog.Any("error", err), tookAttr)
		return r.event(EventTimedOut, err)
	default: // end.err != nil: outcome sends no other end here
		r.log.Error("job failed", slog.Any("error", end.err), tookAttr)
		return r.event(EventFailed, end.err)
	}
}

// reportOutlived warns when the job returned after its lease could no
// longer be trusted: lost (cause from the heartbeat), or past its local
// deadline because renewals had stopped (a timeout). Another replica may
// have run the job meanwhile; only fenced writes are safe from such a run.
func (s *Scheduler) reportOutlived(r *run, lost error) {
	by := s.storeClock.Since(*r.deadline.Load())
	if by <= 0 && !errors.Is(lost, heartbeat.ErrLeaseLost) {
		return
	}
	attrs := []slog.Attr{slog.String("effect", "another replica may have run the job meanwhile; only fenced writes are safe")}
	if by > 0 {
		attrs = append(attrs, logattr.Duration("past_deadline", by))
	}
	if lost != nil {
		attrs = append(attrs, slog.Any("cause", lost))
	}
	r.log.LogAttrs(context.Background(), slog.LevelWarn, "run outlived its lease", attrs...)
}

// release releases the run's lease with a fresh context bounded by
// min(ttl, MaxCleanup), never with the run's (cancelled) context, retrying
// transient errors (a connection reset by a Redis restart, say) within
// that bound. With a control plane it records st as the job's last run in
// the same store operation, and learns how many triggers wait; when the
// store is a fleet.BatchReleaser, the first try goes in a batch with the
// releases of the runs that end at the same time (releaseBatcher), and
// the tries that follow a transient failure go one by one. It reports
// whether the lease was released: by this call, or by an earlier attempt
// of it whose reply was lost (the lease is then not found, where a lease
// that expired would say so).
func (s *Scheduler) release(r *run, st *fleet.Status) (released bool, triggers int) {
	bound := min(r.reg.ttl, MaxCleanup)
	op := r.lease.Release
	if fs, ok := s.store.(fleet.Store); ok && st != nil && s.control != nil {
		op = func(ctx context.Context) error {
			n, err := fs.ReleaseWithStatus(ctx, r.lease, *st)
			triggers = n
			return err
		}
		if s.releases != nil {
			deadline := time.Now().Add(bound) // as context.WithTimeout's
			if a, ok := s.releases.release(r.lease, *st, deadline, s.releaseHold(r, deadline)); ok {
				return s.batchAnswered(r, fs, *st, a, deadline)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	return s.retryRelease(ctx, r, op, &triggers)
}

// releaseThen hands r's release with st to the release batcher without
// waiting for it, and reports whether it did: with a control plane, a
// store that batches releases (fleet.BatchReleaser) and the batcher still
// open. The rest of the run's end (afterRelease, then ended) follows its
// answer on the batch's goroutine; a first try that failed is retried as
// release retries it, and an end that talks to the fleet (a triggered
// run's, an attempt's close that is not done) is made, each on a goroutine
// of its own, so that the batch's other runs end without waiting for it.
// The run's goroutine returns meanwhile: while a firing group's claims
// are out its releases wait for them (release_hold.go), and runs that
// waited on their own goroutines kept one each alive, whose descriptors
// the runtime keeps for as long as the process runs.
func (s *Scheduler) releaseThen(r *run, st fleet.Status) bool {
	fs, ok := s.store.(fleet.Store)
	if !ok || s.control == nil || s.releases == nil {
		return false
	}
	deadline := time.Now().Add(min(r.reg.ttl, MaxCleanup)) // as context.WithTimeout's
	quick := r.info.Trigger == "" && (r.attempts.Max == 0 || st.Close == fleet.CloseDone)
	return s.releases.releaseThen(r.lease, st, deadline, s.releaseHold(r, deadline), func(a releaseAnswer) {
		end := func() {
			released, n := s.batchAnswered(r, fs, st, a, deadline)
			s.afterRelease(r, st, released)
			s.ended(r, s.triggersAfter(released, n))
		}
		if a.err == nil && quick {
			end()
			return
		}
		go end()
	})
}

// batchAnswered finishes r's release with st from its batched try's answer
// a: released at the first try, or tried again one by one, as release
// tries, until deadline.
func (s *Scheduler) batchAnswered(r *run, fs fleet.Store, st fleet.Status, a releaseAnswer, deadline time.Time) (released bool, triggers int) {
	if a.err == nil {
		r.log.LogAttrs(context.Background(), slog.LevelDebug, "job lease released", slog.Int("tries", 1))
		return true, a.triggers
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	op := func(ctx context.Context) error {
		n, err := fs.ReleaseWithStatus(ctx, r.lease, st)
		triggers = n
		return err
	}
	return s.retryRelease(ctx, r, replayFirst(op, a, &triggers), &triggers)
}

// replayFirst returns op whose first call answers the batched try's a
// (setting *triggers as op does), without I/O: retry.Do then treats it as
// its first try, and retries, waits and logs as for any other.
func replayFirst(op func(context.Context) error, a releaseAnswer, triggers *int) func(context.Context) error {
	first := true
	return func(ctx context.Context) error {
		if first {
			first = false
			*triggers = a.triggers
			return a.err
		}
		return op(ctx)
	}
}

// remembered reports whether the store still remembers a lease whose
// local deadline is deadline, had it expired: an expired lease is known as
// expired for lease.ExpiredRetention after its expiry (plus
// lease.ExpiryTolerance), and the deadline comes before the expiry. While
// it does, a lease the store does not find was deleted, and a release
// tried again after a try whose reply was lost finds its own work. Past
// that, the lease may have expired and been forgotten (the replica was cut
// off from the store for longer than that): not found says nothing.
func (s *Scheduler) remembered(deadline time.Time) bool {
	return s.storeClock.Since(deadline) < lease.ExpiryTolerance+lease.ExpiredRetention
}

// retryRelease makes release's tries with op within ctx, and reports
// whether the lease was released and the triggers op learned.
func (s *Scheduler) retryRelease(ctx context.Context, r *run, op func(context.Context) error, triggers *int) (bool, int) {
	attempts, err := retry.Do(ctx, op, func(err error, wait time.Duration) {
		r.log.Debug("job lease release failed; retrying", slog.Any("error", err), logattr.Duration("retry_in", wait))
	})
	var nh *lease.NotHeldError
	switch {
	case err == nil:
		r.log.Debug("job lease released", slog.Int("tries", attempts))
		return true, *triggers
	case attempts > 1 && errors.As(err, &nh) && nh.Reason == lease.ReasonNotFound && s.remembered(*r.deadline.Load()):
		r.log.Debug("job lease released by an earlier try whose reply was lost", slog.Int("tries", attempts))
		return true, *triggers
	case errors.Is(err, lease.ErrNotHeld):
		r.log.Debug("job lease was no longer held at release", slog.Any("error", err))
	default:
		r.log.Warn("job lease release failed; it expires after its TTL", slog.Any("error", err), slog.Int("tries", attempts))
	}
	return false, *triggers
}
