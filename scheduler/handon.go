package scheduler

import (
	"context"
	"log/slog"
	"sync"

	"github.com/cronguard/cronguard/fleet"
)

// handOn hands a waiting trigger of j on to the fleet (handOnTrigger) on a
// goroutine of its own, which Shutdown waits for. The owner decides it at
// a run's end, which is delivered on a release batch's goroutine, whose
// other runs' ends must not wait for a round trip on the control channel
// (releaseThen's continuations must be quick). Once Shutdown has begun to
// wait for the hand-ons, one publishes on its caller's goroutine.
func (s *Scheduler) handOn(j *job) {
	s.handOnMu.Lock()
	if s.handOnsClosed {
		s.handOnMu.Unlock()
		s.handOnTrigger(j)
		return
	}
	s.handOns.Add(1)
	s.handOnMu.Unlock()
	go func() {
		defer s.handOns.Done()
		s.handOnTrigger(j)
	}()
}

// waitHandOns makes later hand-ons publish on their caller's goroutine and
// waits for those in flight; false when ctx ended first.
func (s *Scheduler) waitHandOns(ctx context.Context) bool {
	s.handOnMu.Lock()
	s.handOnsClosed = true
	s.handOnMu.Unlock()
	return waitGroup(ctx, &s.handOns)
}

// waitGroup waits for wg, or until ctx ends; false when ctx ended first.
// The goroutine that waits for wg returns with it.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// handOnTrigger announces on the control channel that a trigger of j
// waits, for the replicas that have the job: this one will not run it (it
// stops, or no longer has the job), and the others found the job locked
// by its run here and do not look again by themselves.
func (s *Scheduler) handOnTrigger(j *job) {
	fs, ok := s.store.(fleet.Store)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), MaxCleanup)
	defer cancel()
	if err := fs.Publish(ctx, fleet.Message{Kind: fleet.MessageTrigger, Key: j.key}); err != nil {
		s.log.Warn("could not hand on a trigger that waits for the job; it runs after the job's next run elsewhere, or lapses",
			slog.String("job", j.name), slog.Any("error", err))
		return
	}
	s.log.Info("trigger handed on to the fleet: this replica stops or no longer has the job", slog.String("job", j.name))
}
