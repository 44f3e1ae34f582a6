package scheduler

import (
	"time"
)

// Releases after claims. The runs of a large firing group start as their
// claims are answered, and the first of them end while the others' claims
// still wait at Redis: their releases (status, history, the EVALSHA) would
// go to Redis between those claims and make the last runs start later. At
// 10,000 jobs on 3 replicas the releases so interleaved were about a third
// of the start lateness (BENCHMARKS.md). So a release queued while this
// replica's claims are queued or in flight waits for them to be answered,
// up to a bound:
//   - at most maxReleaseHold;
//   - at most a quarter of the release's own time (its deadline);
//   - at most half the time to the job's next claim (its next occurrence
//     less the claim lead), so that a held release never makes the job's
//     next occurrence find its lease still held.
//
// A release queued while no claim waits goes at once. The wait is on the
// machine's clock, as the release's deadline is: it is about what Redis
// has to do, not about the schedule.

// maxReleaseHold is the longest a release waits for this replica's claims.
const maxReleaseHold = 250 * time.Millisecond

// releaseHold returns until when the release of r, whose tries end at
// deadline, may wait for this replica's claims: the zero time when no
// claim is queued or in flight.
func (s *Scheduler) releaseHold(r *run, deadline time.Time) time.Time {
	select {
	case <-s.queue.idle():
		return time.Time{}
	default:
	}
	now := time.Now()
	d := min(maxReleaseHold, deadline.Sub(now)/4)
	if at := s.cfg.clock.Now(); r.reg != nil {
		if next := r.reg.plan.next(at); !next.IsZero() {
			d = min(d, (next.Sub(at)-s.leadOf(r.reg.plan))/2)
		}
	}
	if d <= 0 {
		return time.Time{}
	}
	return now.Add(d)
}

// hold waits until the claims are answered (claimsIdle closed), the
// earliest hold of ts has passed, or the batcher is closed. A task that
// may not wait (a zero hold) sends its batch at once.
func (b *releaseBatcher) hold(ts []releaseTask) {
	if b.claimsIdle == nil {
		return
	}
	until := ts[0].hold
	for _, t := range ts[1:] {
		if t.hold.Before(until) {
			until = t.hold
		}
	}
	if until.IsZero() {
		return
	}
	d := time.Until(until)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-b.claimsIdle():
	case <-timer.C:
	case <-b.closing:
	}
}
