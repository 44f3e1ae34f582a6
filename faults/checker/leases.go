package checker

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/cronguard/cronguard/faults/history"
)

// byJob returns the recorded leases of each job in fence order.
func (ix *indexed) byJob() map[string][]*leaseRec {
	out := map[string][]*leaseRec{}
	for _, l := range ix.acquires {
		out[l.job] = append(out[l.job], l)
	}
	for _, ls := range out {
		sort.Slice(ls, func(i, j int) bool { return ls[i].fence < ls[j].fence })
	}
	return out
}

// checkExclusion is (3): per job, the leases' validity intervals in server
// time [acquiredAt, end) do not overlap, unless the earlier lease may have
// been unknown to the server when the later one was acquired because the
// server lost it with its data (lostWithData).
func checkExclusion(ix *indexed, r *Report) {
	for job, ls := range ix.byJob() {
		ls = append([]*leaseRec(nil), ls...)
		sort.SliceStable(ls, func(i, j int) bool { return ls[i].acquiredAt < ls[j].acquiredAt })
		var live []*leaseRec // earlier leases that may still be valid
		for _, l := range ls {
			live = slices.DeleteFunc(live, func(p *leaseRec) bool { return p.end() <= l.acquiredAt })
			reported := false
			for _, p := range live {
				if why := ix.lostWithData(p, l.acquiredAt); why != "" {
					r.LostLeases = append(r.LostLeases, Explained{Job: job, Occurrence: l.occurrence, Explanation: fmt.Sprintf(
						"lease %d of %s acquired at %s while lease %d of %s was valid until %s: %s",
						l.fence, l.replica, ms(l.acquiredAt), p.fence, p.replica, ms(p.end()), why)})
					continue
				}
				if !reported {
					reported = true
					r.Violations = append(r.Violations, Violation{Check: 3, Job: job, Occurrence: l.occurrence, Detail: fmt.Sprintf(
						"lease %d of %s acquired at %s while lease %d of %s was valid until %s (server time)",
						l.fence, l.replica, ms(l.acquiredAt), p.fence, p.replica, ms(p.end()))})
				}
			}
			live = append(live, l)
		}
	}
}

// checkCancellation is (5): each run's context was done (or the run had
// returned) before the job's next lease was acquired, in CLOCK_MONOTONIC.
// Exempt: holders paused (or stalled with the machine) or killed during
// their lease, and holders whose lease the server lost with its data
// before the next acquire (lostWithData).
func checkCancellation(ix *indexed, r *Report) {
	for job, ls := range ix.byJob() {
		for i, l := range ls {
			if l.cause == history.CauseLost || l.cause == history.CauseUnconfirmed {
				r.CutHolders++
			}
			if l.runStart == 0 || i+1 == len(ls) {
				continue
			}
			next := ls[i+1]
			r.Handovers++
			if ix.pausedOrKilled(l.replica, l.sent, next.mono) {
				r.Exempt++
				continue
			}
			done := firstNonZero(l.ctxDone, l.runEnd)
			if (done == 0 || done >= next.sent) && ix.lostWithData(l, next.acquiredAt) != "" {
				// The server lost the lease with its data: its holder
				// learns it at its next renewal, after the next acquire.
				r.ExemptDataLoss++
				continue
			}
			switch {
			case done == 0:
				r.Violations = append(r.Violations, Violation{Check: 5, Job: job, Occurrence: l.occurrence, Detail: fmt.Sprintf(
					"run of lease %d on %s was neither cancelled nor ended, and lease %d was acquired by %s",
					l.fence, l.replica, next.fence, next.replica)})
			case done < next.sent:
			case done >= next.mono:
				r.Violations = append(r.Violations, Violation{Check: 5, Job: job, Occurrence: l.occurrence, Detail: fmt.Sprintf(
					"run of lease %d on %s still live %s after lease %d was acquired by %s (ctx cause %q)",
					l.fence, l.replica, time.Duration(done-next.mono), next.fence, next.replica, l.cause)})
			default:
				r.Undecided++
			}
		}
	}
}

// pausedOrKilled reports whether replica was stopped (or stalled with the
// machine) or killed at some point in [from, to] (CLOCK_MONOTONIC).
func (ix *indexed) pausedOrKilled(replica string, from, to int64) bool {
	for _, f := range ix.faultsOn(replica) {
		if !f.pauses(replica) && f.kind != history.FaultKill {
			continue
		}
		end := f.endMono
		if !f.ended {
			end = to
		}
		if f.startMono <= to && end >= from {
			return true
		}
	}
	return false
}

func firstNonZero(a, b int64) int64 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	default:
		return min(a, b)
	}
}

func ms(t int64) string { return time.UnixMilli(t).UTC().Format("15:04:05.000") }
