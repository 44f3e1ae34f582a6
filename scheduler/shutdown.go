package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// Shutdown stops the scheduler:
//
//  1. No new runs: firings that have not acquired their lease are skipped,
//     and gocron stops scheduling. Acquires already sent to the store are
//     waited for (each is bounded by min(ttl, MaxCleanup)); a lease they win
//     is released at once.
//  2. Every running job's context is cancelled with cause ErrShutdown.
//  3. Shutdown waits for the running jobs until ctx is done. A job that
//     returns stops its heartbeat and releases its lease (with a fresh
//     context), so another replica can run the next occurrence without
//     waiting for the TTL.
//  4. A job still running when ctx is done keeps its lease, no longer
//     renewed, until the TTL runs out, so no second run can overlap it; its
//     goroutine is left running (Go cannot stop it) and releases the lease
//     if it ever returns. Shutdown then returns an error wrapping
//     ErrJobsStillRunning and ctx's cause, naming those jobs and the jobs
//     whose acquire was still in flight.
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
	s.mu.Unlock()
	if first {
		// Cancels every run context (and with it every heartbeat, which
		// stops renewing) with cause ErrShutdown.
		s.cancelBase(ErrShutdown)
		s.log.Info("scheduler shutting down")
		if s.control != nil {
			s.control.close() // out of the registry at once, not after it lapses
		}
	}
	var gocronErr error
	if g != nil {
		// gocron waits only for its tasks, which only queue acquires: the
		// acquires and user code run in the Scheduler's own goroutines.
		if err := g.ShutdownWithContext(ctx); err != nil {
			gocronErr = fmt.Errorf("scheduler: stop gocron: %w", err)
		}
	}
	// The acquire workers skip what is queued and finish the acquires in
	// flight (each bounded by min(ttl, MaxCleanup); a lease won now is
	// released at once), then exit.
	s.queue.close()
	workersDone := make(chan struct{})
	go func() {
		s.workers.Wait()
		close(workersDone)
	}()
	select {
	case <-workersDone:
	case <-ctx.Done():
		return s.stillRunning(ctx)
	}

	s.mu.Lock()
	runs := make([]*run, 0, len(s.runs))
	for r := range s.runs {
		runs = append(runs, r)
	}
	s.mu.Unlock()
	for _, r := range runs {
		select {
		case <-r.done:
		case <-ctx.Done():
			return s.stillRunning(ctx)
		}
	}
	if gocronErr != nil {
		return gocronErr
	}
	if first {
		s.log.Info("scheduler shut down")
	}
	return nil
}

// stillRunning is Shutdown's error when ctx ended first: it names every
// job still running on this replica and every job whose acquire is still
// in flight (marked "(acquiring)"), and wraps ErrJobsStillRunning and
// ctx's cause.
func (s *Scheduler) stillRunning(ctx context.Context) error {
	var running, acquiring []string
	s.mu.Lock()
	for r := range s.runs {
		running = append(running, r.job.name)
	}
	s.mu.Unlock()
	for _, j := range s.jobsSnapshot() {
		if j.pipe.acquiring() {
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
	s.log.Error("scheduler shut down with jobs still running; they keep their leases until the TTL, and a lease an acquire still wins is released at once",
		slog.Any("running", running), slog.Any("acquiring", acquiring))
	return fmt.Errorf("%w: %s: %w", ErrJobsStillRunning, strings.Join(names, ", "), context.Cause(ctx))
}

func (s *Scheduler) jobsSnapshot() []*job {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.order)
}
