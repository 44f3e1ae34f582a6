package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cronguard/cronguard/faults/history"
)

// checkMisses is (4): every occurrence in the window ran, or a miss is
// explained.
func checkMisses(in Input, ix *indexed, r *Report) {
	leases := ix.byJob()
	for _, job := range in.Jobs {
		step := job.Every.Milliseconds()
		if step <= 0 {
			continue
		}
		from, to := window(in, ix, job.Every)
		if from.IsZero() || to.IsZero() || !from.Before(to) {
			continue
		}
		flights := ix.flights(job)
		blocks := ix.blocking(leases[job.Name], job.TTL)
		first := (from.UnixMilli() + step - 1) / step * step
		for o := first; o <= to.UnixMilli(); o += step {
			r.Occurrences++
			if len(ix.runs[key{job.Name, o}]) > 0 {
				continue
			}
			if why, explained := ix.claimedNotRun(job, o); why != "" {
				// Redis was up and the round was taken: only the winner's
				// death explains the miss.
				if explained {
					r.Misses = append(r.Misses, Miss{Job: job.Name, Occurrence: o, Reason: "killed_winner", Explanation: why})
				} else {
					r.Violations = append(r.Violations, Violation{Check: 4, Job: job.Name, Occurrence: o, Detail: why})
				}
				continue
			}
			reason, why := explain(in, ix, blocks, flights, job, o)
			if reason == "" {
				r.Violations = append(r.Violations, Violation{Check: 4, Job: job.Name, Occurrence: o,
					Detail: "missed without explanation; attempts: " + attempts(ix.attempts[key{job.Name, o}])})
				continue
			}
			r.Misses = append(r.Misses, Miss{Job: job.Name, Occurrence: o, Reason: reason, Explanation: why})
		}
	}
}

// claimedNotRun looks for a recorded lease that acquired occurrence o of
// job, which did not run: its replica won the round, so no other could
// run the occurrence, and Redis was answering. The miss is explained only
// if that replica was killed within the TTL after the acquire (before it
// could record the run's start); otherwise the winner declined to run what
// it claimed, a violation. It returns "" if no lease acquired o.
func (ix *indexed) claimedNotRun(job Job, o int64) (why string, explained bool) {
	for _, a := range ix.attempts[key{job.Name, o}] {
		if a.Kind != history.Acquire {
			continue
		}
		for _, f := range ix.faultsOn(a.Replica) {
			if f.kind == history.FaultKill && (f.startMono >= a.Mono && f.startMono <= a.Mono+job.TTL.Nanoseconds() || ix.diedRecording(a, f)) {
				return fmt.Sprintf("lease %d of %s acquired it at %s; %s was killed at %s before starting the run",
					a.Fence, a.Replica, ms(a.AcquiredAt), a.Replica, ms(f.startWall/1e6)), true
			}
		}
		var skips []string
		for _, e := range ix.attempts[key{job.Name, o}] {
			if e.Kind == history.Skip && e.Replica == a.Replica {
				skips = append(skips, e.Reason)
			}
		}
		return fmt.Sprintf("lease %d of %s acquired it at %s (claiming its round) and did not run it (skipped: %s); attempts: %s",
			a.Fence, a.Replica, ms(a.AcquiredAt), strings.Join(skips, ", "), attempts(ix.attempts[key{job.Name, o}])), false
	}
	return "", false
}

// diedRecording reports whether event a was recorded by the process that
// kill f ended, after the harness recorded the kill's start: the harness
// records FaultStart before it sends SIGKILL, so the dying process may
// record a few more events (an acquire whose run it never started). That
// process is the one that recorded the replica's last event before the
// kill's start.
func (ix *indexed) diedRecording(a history.Event, f *fault) bool {
	if a.Mono < f.startMono || a.PID == 0 {
		return false
	}
	killed := 0
	for _, e := range ix.history[a.Replica] {
		if e.Mono >= f.startMono {
			break
		}
		killed = e.PID
	}
	return killed == a.PID
}

// window returns the occurrences (4) checks of a job whose interval is
// step: Input's From and To, or from one interval after the last replica
// first became ready to one interval before the first replica began to
// shut down.
func window(in Input, ix *indexed, step time.Duration) (from, to time.Time) {
	from, to = in.From, in.To
	if from.IsZero() {
		var last int64
		found := false
		for _, walls := range ix.ready {
			if len(walls) > 0 {
				last, found = max(last, walls[0]), true
			}
		}
		if found {
			from = time.Unix(0, last).Add(step)
		}
	}
	if to.IsZero() && ix.shutdown != 0 {
		to = time.Unix(0, ix.shutdown).Add(-step)
	}
	return from, to
}

// blocked is a recorded lease and when it blocked acquires of its job
// (leaseRec.blocksUntil, and data losses: blockSpans).
type blocked struct {
	l     *leaseRec
	spans []span
}

// blocking returns the blocking spans of leases, whose TTL is ttl.
func (ix *indexed) blocking(leases []*leaseRec, ttl time.Duration) []blocked {
	out := make([]blocked, 0, len(leases))
	for _, l := range leases {
		out = append(out, blocked{l, ix.blockSpans(l, ttl)})
	}
	return out
}

// explain returns why occurrence o of job did not run, or "" if nothing
// does. Times are Unix ms; a replica fires o within half an interval, or
// later when its previous acquire of the job was still pending (as the
// times of its attempts show).
func explain(in Input, ix *indexed, blocks []blocked, flights []flight, job Job, o int64) (reason, why string) {
	step := job.Every.Milliseconds()
	fireEnd := o + step/2
	tol, slack := Tolerance.Milliseconds(), in.Slack.Milliseconds()
	for _, b := range blocks {
		l := b.l
		if l.occurrence == o {
			continue
		}
		for _, s := range b.spans {
			if s.from > fireEnd || s.to <= o {
				continue
			}
			if s.from > l.acquiredAt {
				return "restored", fmt.Sprintf("lease %d of %s (occurrence %s, acquired %s) may have been put back by a rollback at %s and blocked until %s",
					l.fence, l.replica, ms(l.occurrence), ms(l.acquiredAt), ms(s.from), ms(s.to))
			}
			why := fmt.Sprintf("lease %d of %s (occurrence %s) was valid %s..%s",
				l.fence, l.replica, ms(l.occurrence), ms(l.acquiredAt), ms(min(l.end(), s.to)))
			if l.extendMayRunUntil != 0 {
				why += fmt.Sprintf(", and blocked until %s if an extend of %s whose outcome it never learned (a lost reply, or in flight at a pause or kill) ran",
					ms(s.to), l.replica)
			}
			return "held", why
		}
	}
	if why := ix.lockedOut(blocks, job, o); why != "" {
		return "held", why
	}
	for _, f := range ix.faults {
		if f.redisDown() && f.startWall/1e6 <= fireEnd && recovered(f)/1e6+slack >= o {
			return "redis_down", fmt.Sprintf("redis %s %s..%s", f.kind, ms(f.startWall/1e6), ms(recovered(f)/1e6))
		}
	}
	// An acquire in flight when its replica was paused or killed may have
	// run on the server and claimed the round or taken the lease,
	// unrecorded, until its TTL.
	if why := explainFlight(flights, job, o); why != "" {
		return "in_flight", why
	}
	// A reply lost in a fault: the acquire may have run on the server at
	// any instant from its send to its failure, and claimed the round or
	// taken the lease, unrecorded, until its TTL. One in flight across a
	// pause is a flight, bounded above.
	lingers := job.TTL.Milliseconds() + tol + slack
	for _, es := range ix.attempts {
		for _, e := range es {
			at, sent := e.Wall/1e6, e.Wall/1e6
			if e.Sent != 0 {
				sent = wallAt(e, e.Sent) / 1e6
			}
			if e.Job == job.Name && e.Kind == history.AcquireError && e.Reason == acquireError && sent <= fireEnd && at+lingers >= o &&
				!ix.pausedRequest(e) {
				return "lost_reply", fmt.Sprintf("acquire by %s for %s, sent at %s, failed at %s (%s): it may have run on the server",
					e.Replica, ms(e.Occurrence), ms(sent), ms(at), shorten(e.Err))
			}
		}
	}
	if why := releaseInFlight(ix.attempts[key{job.Name, o}], blocks, o, tol); why != "" {
		return "held", why
	}
	if healthy := ix.healthyAt(o, fireEnd, slack); len(healthy) == 0 {
		if f := ix.stallIn(o, fireEnd, slack); f != nil {
			return "stall", fmt.Sprintf("the machine stalled %s..%s (as if every replica was paused)", ms(f.startWall/1e6), ms(f.endWall/1e6))
		}
		return "no_healthy_replica", "every replica was down, stopped or cut off"
	}
	return "", ""
}

// releaseInFlight explains the miss of occurrence o by a replica that
// skipped it as running there (the scheduler's running_here: its run of
// an earlier occurrence had not ended when o came due, its release
// included) while that run's lease may still have been held at o: the
// release that freed it was confirmed only at o or later (or never, and
// the lease's expiry, with tol, reaches o). Under OverlapSkip such an
// occurrence is skipped; any other replica's acquire at o could have met
// the same lease. It returns "" when no attempt is such a skip.
func releaseInFlight(attempts []history.Event, blocks []blocked, o, tol int64) string {
	for _, e := range attempts {
		if e.Kind != history.Skip || e.Reason != "running_here" {
			continue
		}
		for _, b := range blocks {
			l := b.l
			if l.replica != e.Replica || l.occurrence >= o || l.acquiredAt > o {
				continue
			}
			switch {
			case l.releasedOK != 0 && l.releasedOK/1e6 >= o:
				return fmt.Sprintf("%s skipped it as running there: lease %d of %s (occurrence %s, acquired %s) was released, confirmed at %s",
					e.Replica, l.fence, l.replica, ms(l.occurrence), ms(l.acquiredAt), ms(l.releasedOK/1e6))
			case l.releasedOK == 0 && l.expiresAt+tol >= o:
				return fmt.Sprintf("%s skipped it as running there: lease %d of %s (occurrence %s, acquired %s) had no confirmed release and expired at %s",
					e.Replica, l.fence, l.replica, ms(l.occurrence), ms(l.acquiredAt), ms(l.expiresAt))
			}
		}
	}
	return ""
}

// stallIn returns a stall that overlaps [from, to] (Unix ms), counting
// slack after it, or nil.
func (ix *indexed) stallIn(from, to, slack int64) *fault {
	for _, f := range ix.faults {
		if f.kind == history.FaultStall && f.startWall/1e6 <= to && recovered(f)/1e6+slack >= from {
			return f
		}
	}
	return nil
}

// lockedOut explains the miss of occurrence o by recorded leases when
// every replica acquired o late, after its usual firing window (its
// previous acquire of the job was still pending), and was told "locked"
// while a recorded lease of another occurrence may have been the one it
// met: each attempt ran on the server some time between its send and its
// reply, and that span overlaps a span in which the lease blocked. It
// returns "" unless every replica has such an attempt.
func (ix *indexed) lockedOut(blocks []blocked, job Job, o int64) string {
	var parts []string
	for _, name := range ix.replicaNames() {
		part := ""
		for _, a := range ix.attempts[key{job.Name, o}] {
			if a.Replica != name || a.Kind != history.AcquireError || a.Reason != reasonLocked || a.Sent == 0 {
				continue
			}
			sent, told := wallAt(a, a.Sent)/1e6, a.Wall/1e6
			for _, b := range blocks {
				if b.l.occurrence == o {
					continue
				}
				for _, s := range b.spans {
					if s.from <= told && sent < s.to {
						part = fmt.Sprintf("%s's acquire (sent %s, told locked %s) met lease %d of %s (occurrence %s, blocking %s..%s)",
							name, ms(sent), ms(told), b.l.fence, b.l.replica, ms(b.l.occurrence), ms(s.from), ms(s.to))
						break
					}
				}
				if part != "" {
					break
				}
			}
		}
		if part == "" {
			return ""
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

// replicaNames returns the replicas' names in order.
func (ix *indexed) replicaNames() []string {
	out := make([]string, 0, len(ix.replicas))
	for name := range ix.replicas {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// recovered returns when a fault's effect ended (wall ns): the restarted
// replica's Ready for a kill, FaultEnd otherwise, or far future if neither.
func recovered(f *fault) int64 {
	if f.recoveredWall != 0 {
		return f.recoveredWall
	}
	return 1 << 62
}

// healthyAt returns the replicas that were up and unfaulted throughout
// [from, to] (Unix ms), counting slack after each fault's recovery.
func (ix *indexed) healthyAt(from, to, slack int64) []string {
	var out []string
	for name := range ix.replicas {
		walls := ix.ready[name]
		if len(walls) == 0 || walls[0]/1e6 > from {
			continue
		}
		ok := true
		for _, f := range ix.faultsOn(name) {
			if f.startWall/1e6 <= to && recovered(f)/1e6+slack >= from {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func attempts(es []history.Event) string {
	if len(es) == 0 {
		return "none"
	}
	var parts []string
	for _, e := range es {
		s := e.Replica + ":" + string(e.Kind)
		if e.Reason != "" {
			s += "(" + e.Reason + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
