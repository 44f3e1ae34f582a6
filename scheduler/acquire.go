package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/cronguard/cronguard/lease"
)

// Retry within the occurrence: an acquire that fails with a transient
// error (the store unavailable, a timeout, an outcome the store rolled
// back) is tried again while its occurrence is still current, so that an
// outage shorter than that runs the occurrence late instead of nowhere.
const (
	// AtRetryWindow bounds the retries of an At schedule's one occurrence,
	// which has no next occurrence to bound them: they stop this long after
	// it.
	AtRetryWindow = 5 * time.Minute
	// maxRetryMargin caps the margin before the next occurrence at which
	// the retries of an occurrence stop: min(gap/10, maxRetryMargin).
	maxRetryMargin = time.Second
	// Backoff between retries: from retryInitial, doubling up to
	// retryMax, each wait randomized by ±50%.
	retryInitial = 100 * time.Millisecond
	retryMax     = 5 * time.Second
)

// MaxMissedCount caps how many missed occurrences one EventMissed counts
// (Missed.Capped says there were more): enumerating a schedule over a long
// gap costs a step per occurrence.
const MaxMissedCount = 1000

// retryUntil returns when the retries of firing f of j stop: before the
// job's next occurrence, less a margin of min(gap/10, 1s); for an At
// schedule, AtRetryWindow after its occurrence; and within the job's
// catch-up window when it has one and it ends sooner.
func (s *Scheduler) retryUntil(j *job, f firing) time.Time {
	until := f.occ.Add(AtRetryWindow)
	if next := j.plan.next(f.occ); !next.IsZero() {
		until = next.Add(-min(next.Sub(f.occ)/10, maxRetryMargin))
	}
	if j.catchUp > 0 {
		until = minTime(until, f.occ.Add(j.catchUp))
	}
	return until
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// transient reports whether an acquire error is worth another attempt
// within the occurrence. Locked, claimed and skewed are answers, not
// errors.
func transient(err error) bool {
	return errors.Is(err, lease.ErrUnavailable) || errors.Is(err, lease.ErrTimeout)
}

// acquire tries the lease of j for firing f, retrying transient errors
// with exponential backoff (backoff/v4) until retryUntil or Shutdown. Each
// attempt is bounded by min(ttl, MaxCleanup) and is not cancelled by
// Shutdown (an abandoned acquire may have taken the lease; the store rolls
// back what it cannot confirm). Each retry is reported (EventAcquireRetrying).
func (s *Scheduler) acquire(j *job, f firing) (*lease.Lease, error) {
	until := s.retryUntil(j, f)
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(retryInitial),
		backoff.WithMaxInterval(retryMax),
		backoff.WithMaxElapsedTime(0), // until bounds the retries
		backoff.WithClockProvider(s.cfg.clock),
	)
	opts := []lease.AcquireOption{lease.WithOwner(j.owner), lease.WithRoundTime(f.occ, f.maxSkew), lease.WithPauseCheck()}
	if f.trigger {
		// A run now, under the job's lease: the store consumes the
		// trigger with the acquire and chooses the run's round, after
		// every round claimed before it; a pause keeps the trigger queued.
		opts = []lease.AcquireOption{lease.WithOwner(j.owner), lease.WithTrigger(), lease.WithPauseCheck()}
	}
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(context.Background(), min(j.ttl, MaxCleanup))
		l, err := s.store.Acquire(actx, j.key, j.ttl, opts...)
		cancel()
		if err == nil || !transient(err) {
			return l, err
		}
		left := until.Sub(s.cfg.clock.Now())
		if left <= 0 || s.base.Err() != nil {
			return nil, err
		}
		wait := min(b.NextBackOff(), left)
		attrs := []slog.Attr{slog.String("job", j.name), slog.Time("occurrence", f.occ), slog.Int("attempt", attempt),
			slog.Duration("retry_in", wait), slog.Any("error", err)}
		if attempt == 1 {
			s.log.LogAttrs(context.Background(), slog.LevelWarn, "job lease acquire failed; retrying while the occurrence is current", attrs...)
		} else {
			s.log.LogAttrs(context.Background(), slog.LevelDebug, "job lease acquire failed again; retrying", attrs...)
		}
		s.emit(j, Event{Kind: EventAcquireRetrying, Job: j.name, Occurrence: f.occ, Attempt: attempt, Err: err})
		timer := s.cfg.clock.NewTimer(wait)
		select {
		case <-timer.Chan():
		case <-s.base.Done():
			timer.Stop()
			return nil, err
		}
	}
}

// reportMissed reports the occurrences of j that ran nowhere, as the
// ledger tells: l won occ, and the round recorded before it was
// l.PrevRound, so every occurrence strictly between the two was claimed by
// no replica (all were down, the store was unreachable, the job's previous
// run overlapped them, or every replica's clock was refused). The first
// claim of a job (no previous round) reports nothing.
func (s *Scheduler) reportMissed(j *job, l *lease.Lease, occ time.Time) {
	if l.PrevRound <= 0 {
		return
	}
	n, first, last, capped := j.plan.between(time.UnixMilli(l.PrevRound), occ, MaxMissedCount)
	if n == 0 {
		return
	}
	m := Missed{Count: n, First: first.In(s.cfg.location), Last: last.In(s.cfg.location), Capped: capped}
	s.log.LogAttrs(context.Background(), slog.LevelWarn, "occurrences ran nowhere",
		slog.String("job", j.name), slog.Int("missed", n), slog.Bool("at_least", capped),
		slog.Time("first", m.First), slog.Time("last", m.Last), slog.Time("occurrence", occ))
	s.emit(j, Event{Kind: EventMissed, Job: j.name, Occurrence: occ, Missed: m})
}

// catchUp offers j a late claim of its latest occurrence at or before now,
// if that lies within the job's catch-up window (WithCatchUp): a normal
// round claim, so it wins only if no replica claimed that occurrence or a
// later one, and runs once however many replicas try.
func (s *Scheduler) catchUp(j *job) {
	if j.catchUp <= 0 || s.base.Err() != nil {
		return
	}
	now := s.cfg.clock.Now()
	occ, ok := j.plan.prev(now)
	if !ok || now.Sub(occ) > j.catchUp {
		return
	}
	_, maxSkew := j.plan.occurrence(occ)
	s.dispatch(j, firing{occ: occ.In(s.cfg.location), maxSkew: maxSkew, catchUp: true})
}
