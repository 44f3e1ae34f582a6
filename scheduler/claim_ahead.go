package scheduler

import (
	"context"
	"time"

	"github.com/cronguard/cronguard/fleet"
)

// Claiming ahead (WithClaimLead; off by default). A firing group's claims
// take store time in proportion to its jobs: 1,000 jobs' acquires are some
// 10 ms of a Redis server's time, 10,000 are some 100 ms (with the
// replicas' own work for them on top), and a job called when its claim is
// answered starts that much late. With a lead, a
// scheduled occurrence is claimed up to the lead before it is due, and the
// won run waits for the occurrence before it calls the job: the store's
// work is done by then, and the job starts on time.
//
//   - The lead is min(WithClaimLead, half the round's maximum skew at the
//     plan's tightest gap): 250 ms at most for Every(time.Second) and every
//     cron expression. The store refuses a round more than its maximum
//     skew ahead of its clock, so half the skew is left for the replicas'
//     clock offsets. A replica whose clock runs ahead of the store's (its
//     published offset) holds its firing back by as much, up to the lead,
//     so that it claims no earlier, on the store's clock, than the others.
//   - gocron fires each group lead before its occurrences; the firing maps
//     to the occurrence lead ahead (group.occurrence).
//   - A claim sent ahead that finds the job's lease held, or that the
//     store refuses as too far ahead of its clock, is sent again at the
//     occurrence, as it would have been without the lead: the run that
//     holds the lease may end by then. So does a firing that finds the
//     job's earlier run still going here.
//   - A job scheduled here (by Start, or registered after it) within the
//     lead before an occurrence is past that occurrence's firing time: it
//     is fired for it at the occurrence (fireWithinLead).
//   - A run claimed ahead has begun: like a run in progress it outlives
//     Remove and a pause set after its claim, and Shutdown waits for it.
//     If Shutdown cancels the runs before its occurrence is due, or its
//     lease is lost while it waits, the job is not called and the
//     occurrence is skipped here (SkipShutdown, SkipLeaseLost). Its round
//     stays claimed; at Shutdown, a job with attempts (WithAttempts)
//     releases it open, an attempt interrupted before it began, and a
//     replica that has the job resumes it at once (reopen). A job
//     without attempts does not run it elsewhere, as when a claim is
//     answered during Shutdown.
//   - Why it is off by default: a replica that stalls (a SIGSTOP, a long
//     pause) holds the leases of the runs it claimed and has not ended
//     until it resumes or they expire, and for a stall longer than the
//     interval each such job misses its next occurrences until its TTL
//     runs out (reported missed). Without a lead that window is a firing's
//     claim round trip plus the run; the lead adds itself to it. It also
//     costs a timer per run and the run's goroutine until the occurrence.
//   - A backup waits its grace from the occurrence, not from its early
//     firing; the retries of a claim stop the lead earlier than they
//     would without it (retryUntil), so that a retried claim never meets
//     the next occurrence's claims, sent ahead.

// MaxClaimLead caps WithClaimLead.
const MaxClaimLead = time.Second

// WithClaimLead sets how far ahead of a scheduled occurrence this replica
// sends its claim; the run it wins waits for the occurrence before the job
// is called. A large firing group's claims then cost the store its time
// before the occurrence, not the jobs' start: on 3 replicas, a start
// lateness p99 of about 13 ms instead of 34 with 1,000 jobs on one
// schedule, 42 instead of 195 with 10,000 (BENCHMARKS.md). The lead of a schedule is at most half the maximum
// clock skew of its rounds (half of half its shortest gap, capped at
// MaxOccurrenceSkew/2): 250 ms for Every(time.Second), the lead to start
// from. It must be between 0 and MaxClaimLead. Default: 0, claims at the
// occurrence.
//
// A run claimed ahead counts as begun: Remove, and a pause set after its
// claim, do not stop it, and Shutdown waits for it. Cancelled by Shutdown
// before its occurrence is due, it is skipped here (SkipShutdown); a job
// with attempts (WithAttempts) releases the occurrence open, and a replica
// that has the job resumes it at once; with one attempt it runs nowhere. A
// replica that stalls holds the leases of the runs it claimed and has not
// ended until it resumes or they expire (the job's TTL), and a stall
// longer than the interval makes those jobs miss their next occurrences:
// the lead adds itself to the time each run holds its lease.
func WithClaimLead(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 || d > MaxClaimLead {
			return invalidOption("WithClaimLead: lead must be between 0 and %s, got %s", MaxClaimLead, d)
		}
		c.claimLead = d
		return nil
	}
}

// leadOf returns how far ahead of the occurrences of p their claims go.
func (s *Scheduler) leadOf(p plan) time.Duration {
	return min(s.cfg.claimLead, p.maxLead()).Truncate(time.Millisecond)
}

// fireWithinLead fires j, just scheduled here (by Start, or registered
// after it), for its next occurrence if that is due within the lead: the
// group's firing for it, the lead before it, has passed, so gocron fires
// the group first for the occurrence after it (group.scheduledAt), and a
// group that has other jobs fired for it without j. The firing comes at
// the occurrence, as it would without a lead. A one-off occurrence needs
// none: its group is fired at the occurrence when its firing time has
// passed (atPlan.definition). A firing that reaches a removed or stopping
// job is dropped, and so is one of an occurrence the job fired already.
func (s *Scheduler) fireWithinLead(j *job) {
	reg := j.registered()
	if reg == nil || oneOff(reg.schedule) {
		return
	}
	lead := s.leadOf(reg.plan)
	if lead <= 0 {
		return
	}
	now := s.cfg.clock.Now()
	occ := reg.plan.next(now)
	if occ.IsZero() || !occ.Before(now.Add(lead)) {
		return
	}
	_, maxSkew := reg.plan.occurrence(occ)
	f := newFiring(occ, maxSkew, firedBySchedule, nil) // the job's owner gives it its registration
	s.cfg.clock.AfterFunc(max(occ.Sub(now), time.Millisecond), func() { j.deliver(input{kind: inFiring, f: f}) })
}

// holdBack returns how long a firing that came lead ahead of its
// occurrence waits before its claims go: how far this replica's clock runs
// ahead of the store's, as it published it, up to the lead.
func (s *Scheduler) holdBack(lead time.Duration) time.Duration {
	if lead <= 0 {
		return 0
	}
	return min(max(s.view.Load().ownOffset(), 0), lead)
}

// awaitOccurrence waits until the occurrence of r is due on the
// scheduler's clock: a run claimed ahead. It returns 0 when the job is to
// be called, else why it is not: ctx (the run's heartbeat context) ended
// first, by Shutdown or a lost lease.
func (s *Scheduler) awaitOccurrence(ctx context.Context, r *run) SkipReason {
	if !r.early {
		return 0
	}
	wait := r.info.Occurrence.Sub(s.cfg.clock.Now())
	if wait <= 0 {
		return 0
	}
	start := s.cfg.clock.Now()
	t := s.cfg.clock.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.Chan():
		r.waited = s.cfg.clock.Since(start)
		return 0
	case <-ctx.Done():
	}
	if s.base.Err() != nil {
		return SkipShutdown
	}
	return SkipLeaseLost
}

// reopen releases the lease of run r, claimed ahead and cancelled by
// Shutdown before its occurrence was due, with the occurrence open for its
// next attempt while attempts and time remain: the attempt was interrupted
// before it began, and is announced (fleet.MessageOpen) for a replica that
// has the job to resume at once, as a run interrupted by Shutdown is. It
// returns the triggers the release found waiting for the job.
func (s *Scheduler) reopen(r *run) (triggers int) {
	st := r.status(r.event(EventInterrupted, ErrShutdown))
	st.Close, st.RetryAfter = s.closeOf(r, endInterrupted)
	released, triggers := s.release(r, &st)
	if released && st.Close != fleet.CloseDone {
		s.afterClose(r, st)
	}
	return s.triggersAfter(released, triggers)
}
