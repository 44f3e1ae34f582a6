package checker

import (
	"fmt"
	"sort"
)

// checkStarts is (6): an attempt at an occurrence of a job is started by
// one lease (an occurrence without completion has one attempt). A later
// attempt of the occurrence, acquired after an earlier one, is not a
// second start: the store handed the occurrence on (7). A second start is
// explained only when the server may have lost the first
// lease's round claim with its data before the second acquire (claimLost);
// it is then counted, with its explanation, never hidden. Fencing
// (AdvanceOnce) is what keeps the occurrence's effect single: (2).
func checkStarts(ix *indexed, r *Report) {
	byJob := ix.byJob()
	keys := make([]key, 0, len(ix.runs))
	for k := range ix.runs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].job != keys[j].job {
			return keys[i].job < keys[j].job
		}
		return keys[i].occ < keys[j].occ
	})
	for _, k := range keys {
		runs := distinctLeases(ix.runs[k])
		if len(runs) < 2 {
			continue
		}
		sort.SliceStable(runs, func(i, j int) bool { return runs[i].acquiredAt < runs[j].acquiredAt })
		for i, dup := range runs[1:] {
			for _, l := range runs[:i+1] {
				if dup.attempt > l.attempt {
					continue // a later attempt, resumed or retried
				}
				if len(l.ops) == 0 || len(dup.ops) == 0 {
					r.Violations = append(r.Violations, Violation{Check: 6, Job: k.job, Occurrence: k.occ, Detail: fmt.Sprintf(
						"started twice: by lease %d of %s and lease %d of %s, one of whose acquires is not recorded",
						l.fence, l.replica, dup.fence, dup.replica)})
					continue
				}
				if why := ix.claimLost(l, dup, byJob[k.job]); why != "" {
					r.DuplicateStarts = append(r.DuplicateStarts, Explained{Job: k.job, Occurrence: k.occ, Explanation: why})
					continue
				}
				r.Violations = append(r.Violations, Violation{Check: 6, Job: k.job, Occurrence: k.occ, Detail: fmt.Sprintf(
					"attempt %d started twice: lease %d of %s (acquired %s) and lease %d of %s (acquired %s, attempt %d); no data loss between them may have lost the round's claim",
					l.attempt, l.fence, l.replica, ms(l.acquiredAt), dup.fence, dup.replica, ms(dup.acquiredAt), dup.attempt)})
			}
		}
	}
}

// distinctLeases returns runs without repeats of one lease (a run start
// recorded twice).
func distinctLeases(runs []*leaseRec) []*leaseRec {
	seen := map[*leaseRec]bool{}
	var out []*leaseRec
	for _, l := range runs {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}
