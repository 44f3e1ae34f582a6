package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// Shutdown stops the scheduler, in this order:
//
//  1. No new runs: gocron stops firing (its tasks in progress are waited
//     for), the control plane leaves the registry and stops taking
//     triggers, and every job learns that the scheduler stops: a firing
//     waiting behind a claim, or for the job's run (OverlapBufferOne), is
//     skipped (SkipShutdown), retries and waits end, and claims not yet
//     sent are skipped. Claims already sent to the store are waited for
//     (each is bounded by min(ttl, MaxCleanup)); a lease they win is
//     released at once.
//  2. Every running job's context is cancelled with cause ErrShutdown. A
//     run claimed ahead of its occurrence (WithClaimLead) that is not due
//     yet does not call its job: it is skipped (SkipShutdown) and, for a
//     job with attempts, its lease released open, so that a replica that
//     has the job resumes the occurrence at once.
//  3. Shutdown waits for the claims and the running jobs until ctx is
//     done. A job that returns stops its heartbeat and releases its lease
//     (with a fresh context), so another replica can run the next
//     occurrence without waiting for the TTL; a trigger that waited for
//     it is handed on to the replicas that have the job. A job that
//     returned an error after the cancellation is reported interrupted
//     (a warning) and its lease released open, announced on the control
//     channel: another replica resumes its occurrence at once (see
//     WithAttempts).
//  4. A job still running when ctx is done keeps its lease, no longer
//     renewed, until the TTL runs out, so no second run can overlap it; its
//     goroutine is left running (Go cannot stop it) and releases the lease
//     if it ever returns. Shutdown then returns an error wrapping
//     ErrJobsStillRunning and ctx's cause, naming those jobs and the jobs
//     whose claim was still in flight.
//
// Shutdown is safe to call more than once and before Start; a later call
// waits again for the jobs still running. After Shutdown, Start and Register
// fail with ErrShutdown.
func (s *Scheduler) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	g := s.cron
	s.cron = nil
	jobs := s.allJobsLocked()
	s.mu.Unlock()

	// 1. No new runs.
	var gocronErr error
	if g != nil {
		// gocron waits only for its tasks, which only deliver firings:
		// claims and user code run in the Scheduler's own goroutines.
		if err := g.ShutdownWithContext(ctx); err != nil {
			gocronErr = fmt.Errorf("scheduler: stop gocron: %w", err)
		}
	}
	if first {
		s.log.Info("scheduler shutting down")
		if s.control != nil {
			s.control.close() // out of the registry at once, not after it lapses
		}
		s.cancelClaims(ErrShutdown)
		s.queue.close()
		s.missed.close() // what waits is logged now, and later reports at once
		s.backups.close()
		for _, j := range jobs {
			j.deliver(input{kind: inShutdown})
		}
		// 2. Cancel the running jobs (and with them their heartbeats,
		// which stop renewing).
		s.cancelBase(ErrShutdown)
		s.runBases.release()
	}

	// 3. Wait for the claims, then for the runs: none starts after the
	// jobs learned of the shutdown.
	if !waitGroup(ctx, &s.workers) {
		s.stopReleases(ctx)
		return s.stillRunning(ctx, jobs)
	}
	for _, j := range jobs {
		r := j.running()
		if r == nil {
			continue
		}
		select {
		case <-r.done:
		case <-ctx.Done():
			s.stopReleases(ctx) // the runs still going release on their own
			return s.stillRunning(ctx, jobs)
		}
	}
	if !s.waitHandOns(ctx) { // the runs' ends are delivered: no hand-on starts after this
		s.stopReleases(ctx)
		s.log.Warn("scheduler shut down while a waiting trigger was handed on to the fleet; if that fails, the trigger runs after the job's next run elsewhere, or lapses")
		return fmt.Errorf("scheduler: shut down while a waiting trigger was handed on to the fleet: %w", context.Cause(ctx))
	}
	s.stopReleases(ctx) // the last release was answered
	if gocronErr != nil {
		return gocronErr
	}
	if first {
		s.log.Info("scheduler shut down")
	}
	return nil
}

// stillRunning is Shutdown's error when ctx ended first (step 4): it names
// every job still running on this replica and every job whose claim is
// still in flight (marked "(acquiring)"), and wraps ErrJobsStillRunning
// and ctx's cause.
func (s *Scheduler) stillRunning(ctx context.Context, jobs []*job) error {
	var running, acquiring []string
	for _, j := range jobs {
		if j.running() != nil {
			running = append(running, j.name)
		}
		if j.busy() {
			acquiring = append(acquiring, j.name)
		}
	}
	slices.Sort(running)
	running = slices.Compact(running)
	slices.Sort(acquiring)
	names := slices.Clone(running)
	for _, n := range acquiring {
		names = append(names, n+" (acquiring)")
	}
	s.log.Error("scheduler shut down with jobs still running; they keep their leases until the TTL, and a lease a claim still wins is released at once",
		slog.Any("running", running), slog.Any("acquiring", acquiring))
	return fmt.Errorf("%w: %s: %w", ErrJobsStillRunning, strings.Join(names, ", "), context.Cause(ctx))
}

// jobsSnapshot returns the registered jobs, in the order they were
// registered.
func (s *Scheduler) jobsSnapshot() []*job {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.order)
}

// allJobsLocked returns every job owner: the registered jobs and the
// removed ones whose run or claim still goes. s.mu is held.
func (s *Scheduler) allJobsLocked() []*job {
	out := make([]*job, 0, len(s.jobs))
	for _, j := range s.jobs {
		out = append(out, j)
	}
	return out
}
