package scheduler

import (
	"time"

	"github.com/cronguard/cronguard/lease"
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
//   - not at all when the job's next claim (its next occurrence less the
//     claim lead) comes before the run's lease would expire by itself
//     (its TTL from now, plus lease.ExpiryTolerance).
//
// The last bound is for a replica that stalls (a long pause, CPU
// throttling, SIGSTOP) while it holds releases: the leases it holds stay
// taken until they expire, and a held release is a lease held longer. A
// job whose next claim comes after its lease expires loses nothing to
// such a stall; one whose next claim comes sooner would find its lease
// taken, and miss its occurrences until the lease expired. Measured at
// 10,000 Every(1s) jobs with a TTL of 5s on 3 replicas (BENCHMARKS.md),
// holding those releases took the start lateness p99 from about 400 to
// 240-320 ms, but a replica stopped for 5s 150-300 ms after an occurrence
// then held all of its firing's leases: 6,700-16,900 occurrences missed,
// against 1,300-2,300 without the hold. So only the releases of jobs
// whose next claim is further away than their TTL wait: the large firing
// groups at the top of a minute or an hour, with the default TTL of 30s.
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
		if next := r.reg.plan.next(at); !next.IsZero() && next.Sub(at)-s.leadOf(r.reg.plan) <= r.reg.ttl+lease.ExpiryTolerance {
			return time.Time{} // a stall during the hold would cost its next occurrence
		}
	}
	if d <= 0 {
		return time.Time{}
	}
	return now.Add(d)
}

// hold waits until the claims are answered (claimsIdle closed), the
// earliest hold of ts has passed, or the batcher is closed. A task that
// may not wait (a zero hold) sends its batch at once. A part of a batch
// (part) is not out while it waits: the releases queued meanwhile are
// not kept waiting for it (release_batch.go), and one that may not wait
// goes at once in a call of its own.
func (b *releaseBatcher) hold(ts []releaseTask, part bool) {
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
	if part {
		b.partEnded()
		defer b.partOut()
	}
	select {
	case <-b.claimsIdle():
	case <-timer.C:
	case <-b.closing:
	}
}
