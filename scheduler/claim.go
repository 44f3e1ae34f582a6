package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/cronguard/cronguard/internal/logattr"
	"github.com/cronguard/cronguard/lease"
)

// Retry within the occurrence: a claim that fails with a transient error
// (the store unavailable, a timeout, an outcome the store rolled back) is
// tried again while its occurrence is still current, so that an outage
// shorter than that runs the occurrence late instead of nowhere.
const (
	// AtRetryWindow bounds the retries of an At schedule's one occurrence,
	// which has no next occurrence to bound them: they stop this long after
	// it.
	AtRetryWindow = 5 * time.Minute
	// maxRetryMargin caps the margin before the next occurrence at which
	// the retries of an occurrence stop: min(gap/10, maxRetryMargin).
	maxRetryMargin = time.Second
	// Backoff between retries: from retryInitial, growing 1.5x up to
	// retryMax, each wait randomized by ±50%. The longest wait is short:
	// the tries are the only thing that notices the store is back, and
	// once it is, a claim (a trigger's too: it waits behind a claim in
	// progress) should not leave the job idle for seconds while an
	// operator, or the next occurrence, waits. A claim is retried only
	// while its occurrence is current, so the tries stay few.
	retryInitial = 100 * time.Millisecond
	retryMax     = time.Second
)

// retryBackoff returns the backoff between the tries of a claim, bounded
// by the caller's until.
func (s *Scheduler) retryBackoff() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(retryInitial),
		backoff.WithMaxInterval(retryMax),
		backoff.WithMaxElapsedTime(0), // until bounds the retries
		backoff.WithClockProvider(s.cfg.clock),
	)
}

// MaxMissedCount caps how many missed occurrences one EventMissed counts
// (Missed.Capped says there were more): enumerating a schedule over a long
// gap costs a step per occurrence.
const MaxMissedCount = 1000

// errClaimStopped answers a claim that Shutdown stopped before it asked
// the store; errClaimDropped one that Remove dropped (it must not claim a
// round that the replicas still having the job would then skip).
var (
	errClaimStopped = fmt.Errorf("claim not sent: %w", ErrShutdown)
	errClaimDropped = fmt.Errorf("claim not sent: the job was removed: %w", lease.ErrAborted)
)

// retryUntil returns when the retries (and waits) of firing f stop: before
// the job's next occurrence, less a margin of min(gap/10, 1s) and the
// lead its claims are sent ahead by (claim_ahead.go); for an At
// schedule, AtRetryWindow after its occurrence; and within the job's
// catch-up window when it has one and it ends sooner. A trigger, which has
// no occurrence until the store gives it one, retries for one TTL.
func (s *Scheduler) retryUntil(f firing) time.Time {
	reg := f.reg
	switch f.kind {
	case firedByTrigger:
		return s.cfg.clock.Now().Add(reg.ttl)
	case firedByResume:
		return minTime(s.cfg.clock.Now().Add(reg.ttl), s.attemptDeadline(reg, s.occ(f)))
	}
	occ := s.occ(f)
	until := occ.Add(AtRetryWindow)
	if next := reg.plan.next(occ); !next.IsZero() {
		until = next.Add(-min(next.Sub(occ)/10, maxRetryMargin) - s.leadOf(reg.plan))
	}
	if reg.catchUp > 0 {
		until = minTime(until, occ.Add(reg.catchUp))
	}
	return until
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// transient reports whether a claim error is worth another attempt within
// the occurrence. Locked, claimed and skewed are answers, not errors.
func transient(err error) bool {
	return errors.Is(err, lease.ErrUnavailable) || errors.Is(err, lease.ErrTimeout)
}

// isLocked reports whether the store answered that the job's lease is
// held (and not that a wait for it was aborted).
func isLocked(err error) bool {
	return errors.Is(err, lease.ErrLocked) && !errors.Is(err, lease.ErrAborted)
}

// claimOptions are the acquire options of firing f: its round, or, for a
// trigger, the trigger's acquire, whose round the store chooses, or, for a
// resume, the next attempt of its round. All honour a pause. A round
// claim of a job whose occurrences are completed records its attempts
// (attempts.go).
func (s *Scheduler) claimOptions(j *job, f firing) []lease.AcquireOption {
	owner := lease.WithOwner(s.ownerOf(j, f.reg))
	switch f.kind {
	case firedByTrigger:
		return []lease.AcquireOption{owner, lease.WithTrigger(), lease.WithPauseCheck()}
	case firedByResume:
		return []lease.AcquireOption{owner, lease.WithResume(f.ms), lease.WithPauseCheck()}
	}
	opts := []lease.AcquireOption{owner, lease.WithRoundTime(time.UnixMilli(f.ms), f.maxSkew()), lease.WithPauseCheck()}
	if a, ok := s.attemptsOf(f.reg, s.occ(f)); ok {
		opts = append(opts, lease.WithAttempts(a))
	}
	return opts
}

// claim asks the store for the lease of j for firing f, retrying transient
// errors with exponential backoff (backoff/v4) until retryUntil or
// Shutdown. Each attempt is bounded by min(ttl, MaxCleanup) and is not
// cancelled by Shutdown (an abandoned acquire may have taken the lease;
// the store rolls back what it cannot confirm). Each retry is reported
// (EventAcquireRetrying). A claim taken from the queue after Shutdown
// stopped the claims answers errClaimStopped without asking.
func (s *Scheduler) claim(j *job, f firing) (*lease.Lease, error) {
	switch {
	case s.claimCtx.Err() != nil:
		return nil, errClaimStopped
	case j.registered() == nil:
		return nil, errClaimDropped
	}
	until := s.retryUntil(f)
	b := s.retryBackoff()
	opts := s.claimOptions(j, f)
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(context.Background(), min(f.reg.ttl, MaxCleanup))
		sent := s.cfg.clock.Now()
		l, err := s.store.Acquire(actx, j.key, f.reg.ttl, opts...)
		cancel()
		if l != nil {
			s.offset.observe(sent, s.cfg.clock.Now(), l.AcquiredAt)
		}
		if err == nil || !transient(err) {
			if f.kind == firedByResume {
				s.resumeAnswered(j, f, err)
			}
			return l, err
		}
		left := until.Sub(s.cfg.clock.Now())
		if left <= 0 || s.claimCtx.Err() != nil {
			return nil, err
		}
		wait := min(b.NextBackOff(), left)
		attrs := []slog.Attr{slog.String("job", j.name), slog.Time("occurrence", s.occ(f)), slog.Int("try", attempt),
			logattr.Duration("retry_in", wait), slog.Any("error", err)}
		if attempt == 1 {
			s.log.LogAttrs(context.Background(), slog.LevelWarn, "job lease acquire failed; retrying while the occurrence is current", attrs...)
		} else {
			s.log.LogAttrs(context.Background(), slog.LevelDebug, "job lease acquire failed again; retrying", attrs...)
		}
		s.emit(j, Event{Kind: EventAcquireRetrying, Job: j.name, Occurrence: s.occ(f), Try: attempt, Err: err})
		timer := s.cfg.clock.NewTimer(wait)
		select {
		case <-timer.Chan():
		case <-s.claimCtx.Done():
			timer.Stop()
			return nil, err
		}
	}
}

// claimBatch is claim for several jobs at once: the attempts of the
// tasks ts go to the store in one round trip (lease.BatchAcquirer), and
// each task is answered (its job's inClaimed) as claim would answer it.
// The tasks whose attempt failed with a transient error are tried again
// together, with one backoff, each until its own retryUntil; each retry
// is logged and reported as claim reports it.
func (s *Scheduler) claimBatch(ba lease.BatchAcquirer, ts []claimTask) {
	type pending struct {
		t     claimTask
		until time.Time
		err   error
	}
	answer := func(t claimTask, l *lease.Lease, err error) {
		t.job.deliver(input{kind: inClaimed, f: t.f, lease: l, err: err})
	}
	ps := make([]pending, 0, len(ts))
	for _, t := range ts {
		switch {
		case s.claimCtx.Err() != nil:
			answer(t, nil, errClaimStopped)
		case t.job.registered() == nil:
			answer(t, nil, errClaimDropped)
		default:
			ps = append(ps, pending{t: t, until: s.retryUntil(t.f)})
		}
	}
	var b *backoff.ExponentialBackOff
	reqs := make([]lease.AcquireRequest, len(ps))
	res := make([]lease.AcquireResult, len(ps))
	for attempt := 1; len(ps) > 0; attempt++ {
		reqs, res = reqs[:len(ps)], res[:len(ps)]
		bound := MaxCleanup
		for i, p := range ps {
			reqs[i] = lease.AcquireRequest{Key: p.t.job.key, TTL: p.t.f.reg.ttl, Options: s.claimOptions(p.t.job, p.t.f)}
			res[i] = lease.AcquireResult{}
			bound = min(bound, p.t.f.reg.ttl)
		}
		actx, cancel := context.WithTimeout(context.Background(), bound)
		sent := s.cfg.clock.Now()
		ba.AcquireBatch(actx, reqs, res)
		cancel()
		now := s.cfg.clock.Now()
		for _, r := range res {
			if r.Lease != nil {
				s.offset.observe(sent, now, r.Lease.AcquiredAt)
				break // the batch's leases share its round trip
			}
		}
		var left time.Duration
		keep := ps[:0]
		for i, p := range ps {
			r := res[i]
			if r.Err == nil || !transient(r.Err) {
				if p.t.f.kind == firedByResume {
					s.resumeAnswered(p.t.job, p.t.f, r.Err)
				}
				answer(p.t, r.Lease, r.Err)
				continue
			}
			l := p.until.Sub(now)
			if l <= 0 || s.claimCtx.Err() != nil {
				answer(p.t, nil, r.Err)
				continue
			}
			if len(keep) == 0 || l < left {
				left = l
			}
			p.err = r.Err
			keep = append(keep, p)
		}
		ps = keep
		if len(ps) == 0 {
			return
		}
		if b == nil {
			b = s.retryBackoff()
		}
		wait := min(b.NextBackOff(), left)
		for _, p := range ps {
			j, f := p.t.job, p.t.f
			attrs := []slog.Attr{slog.String("job", j.name), slog.Time("occurrence", s.occ(f)), slog.Int("try", attempt),
				logattr.Duration("retry_in", wait), slog.Any("error", p.err)}
			if attempt == 1 {
				s.log.LogAttrs(context.Background(), slog.LevelWarn, "job lease acquire failed; retrying while the occurrence is current", attrs...)
			} else {
				s.log.LogAttrs(context.Background(), slog.LevelDebug, "job lease acquire failed again; retrying", attrs...)
			}
			s.emit(j, Event{Kind: EventAcquireRetrying, Job: j.name, Occurrence: s.occ(f), Try: attempt, Err: p.err})
		}
		timer := s.cfg.clock.NewTimer(wait)
		select {
		case <-timer.Chan():
		case <-s.claimCtx.Done():
			timer.Stop()
			for _, p := range ps {
				answer(p.t, nil, p.err)
			}
			return
		}
	}
}

// waitTurn waits until the lease of j is free and claims it for firing f
// (OverlapBufferOne), until retryUntil: lease.Lock with f's round, woken by
// the release of the running occurrence (or its lease running out). A
// transient error is retried as claim retries it. ctx (Remove, Shutdown)
// ends the wait with lease.ErrAborted.
func (s *Scheduler) waitTurn(ctx context.Context, j *job, f firing) (*lease.Lease, error) {
	s.debug(j, s.occ(f), "occurrence waits for the job's running one to end (overlap policy: buffer one)")
	until := s.retryUntil(f)
	opts := s.claimOptions(j, f)
	for {
		left := until.Sub(s.cfg.clock.Now())
		if left <= 0 {
			return nil, fmt.Errorf("%w: waited until the next occurrence: %w", lease.ErrAcquireTimeout, lease.ErrLocked)
		}
		l, err := lease.Lock(ctx, s.store, j.key, f.reg.ttl, lease.WithAcquireOptions(opts...),
			lease.WithMaxWait(left), lease.WithLockClock(s.cfg.clock))
		if err == nil || !transient(err) || ctx.Err() != nil {
			return l, err
		}
		// The store failed: retry within the occurrence as any claim
		// does, and wait again if the job is still running.
		if l, err = s.claim(j, f); err == nil || !isLocked(err) {
			return l, err
		}
		s.log.LogAttrs(context.Background(), slog.LevelDebug, "occurrence waits again for the job's running one",
			slog.String("job", j.name), slog.Time("occurrence", s.occ(f)), logattr.Duration("left", until.Sub(s.cfg.clock.Now())))
	}
}

// waitBound is the wait of at least one attempt: a wait of zero or less
// is not a valid lease.WithMaxWait.
func waitBound(d time.Duration) time.Duration { return max(d, time.Millisecond) }

// answer decides what a claim that did not win reports: a skip, a debug
// line (a catch-up or trigger with nothing to do), or a failure.
func answer(as *acts, f firing, err error, stopping, removed bool) {
	if errors.Is(err, ErrShutdown) {
		stopping = true // the claim queue closed before the job learned of it
	}
	note := func(msg string) { as.add(act{kind: actNote, f: f, msg: msg}) }
	skip := func(reason SkipReason, err error) { as.add(act{kind: actSkip, f: f, reason: reason, err: err}) }
	aborted := errors.Is(err, lease.ErrAborted) || errors.Is(err, ErrShutdown)
	switch {
	case err == errNotChosen:
		note("occurrence left to the replicas preferred for it")
	case removed && aborted && f.waited:
		// A buffered occurrence that waited for the job's lease
		// elsewhere, ended by Remove: it came due while the job was
		// registered here, and its wait ended without the lease.
		skip(SkipLocked, nil)
	case removed && (aborted || f.quiet()):
		note("claim of a removed job ended: dropped")
	case stopping && aborted && f.quiet():
		note("catch-up or trigger not run: shutting down")
	case stopping && aborted:
		skip(SkipShutdown, nil)
	case f.kind == firedByTrigger && errors.Is(err, lease.ErrNoTrigger):
		note("trigger already run elsewhere, or expired")
	case f.kind == firedByTrigger && isLocked(err):
		note("trigger waits: the job runs elsewhere; the replica running it takes the trigger when the run ends, or hands it on")
	case f.kind == firedByTrigger && errors.Is(err, lease.ErrPaused):
		note("trigger waits: the job is paused")
	case f.kind == firedByResume:
		// The fleet's index (or a message) said the occurrence was open;
		// the store's record decided otherwise, or could not be read: the
		// index brings it back while it is still open (resume.go).
		note("open occurrence not resumed here: " + lease.Class(err))
	case f.kind == firedByCatchUp && errors.Is(err, lease.ErrPaused):
		// A paused key records the round it refuses as handled: no later
		// claim runs it, and one that finds it so (a buffered occurrence
		// that waited for a run, say) hears "claimed". So the catch-up
		// that made the store record it reports it (a scheduled firing
		// during the pause may have too).
		skip(SkipPaused, err)
	case f.quiet() && (isLocked(err) || errors.Is(err, lease.ErrRoundClaimed) || errors.Is(err, lease.ErrPaused)):
		note("nothing to catch up: the occurrence (or a later one) was claimed, the job is running, or it is paused")
	case errors.Is(err, lease.ErrPaused):
		skip(SkipPaused, err)
	case errors.Is(err, lease.ErrLocked):
		skip(SkipLocked, err)
	case errors.Is(err, lease.ErrRoundClaimed):
		skip(SkipClaimed, err)
	case errors.Is(err, lease.ErrClockSkew):
		skip(SkipClockSkew, err)
	default:
		as.add(act{kind: actFail, f: f, err: err})
	}
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

// giveBack releases a lease won for firing f that will not run (the job
// was removed, or Shutdown came first), hands on a trigger that waited for
// it, puts an occurrence with attempts in the fleet's index, and reports
// the skip, if any.
func (s *Scheduler) giveBack(j *job, f firing, l *lease.Lease, reason SkipReason) {
	s.reportWin(j, f.reg, l, time.UnixMilli(l.Round).In(s.cfg.location)) // as a run reports it
	ctx, cancel := context.WithTimeout(context.Background(), min(f.reg.ttl, MaxCleanup))
	defer cancel()
	err := l.Release(ctx)
	if err != nil {
		s.log.Warn("could not give back a lease won for an occurrence not run; it expires after its TTL",
			slog.String("job", j.name), slog.Time("occurrence", s.occ(f)), slog.Any("error", err))
	} else if s.waitingTriggers(j, f.reg.ttl) > 0 {
		// A trigger queued while the lease was held here waited for this
		// release (see releaseUncalled), and this replica will not run it.
		s.handOn(j)
	}
	if l.Attempts.Max > 0 {
		// The claim recorded the occurrence's first attempt as running,
		// and no run started to index it (resume.go): the fleet's index
		// brings it to a replica that has the job, or gives it up past
		// its deadline, at once, or once the lease is no longer live.
		at := s.storeClock.Now()
		if err != nil {
			at = l.ExpiresAt.Add(lease.ExpiryTolerance)
		}
		s.index(j, l.Round, l.Attempts.Deadline, at)
	}
	if reason != 0 {
		s.skip(j, s.occ(f), reason, nil)
	}
}
