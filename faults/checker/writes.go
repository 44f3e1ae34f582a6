package checker

import (
	"fmt"
	"sort"

	"github.com/cronguard/cronguard/faults/history"
)

// checkFenceOrder is (1): per resource, in id order, tokens never go down.
func checkFenceOrder(writes []history.Write) []Violation {
	ws := append([]history.Write(nil), writes...)
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].ID < ws[j].ID })
	type top struct {
		fence uint64
		id    int64
	}
	maxSeen := map[string]top{}
	var out []Violation
	for _, w := range ws {
		m, ok := maxSeen[w.Job]
		if ok && w.Fence < m.fence {
			out = append(out, Violation{Check: 1, Job: w.Job, Occurrence: w.Occurrence, Detail: fmt.Sprintf(
				"write id %d by %s with token %d accepted after write id %d with token %d", w.ID, w.Replica, w.Fence, m.id, m.fence)})
			continue
		}
		if !ok || w.Fence > m.fence {
			maxSeen[w.Job] = top{w.Fence, w.ID}
		}
	}
	return out
}

// checkOncePerOccurrence is (2): one occurrence of a job has at most one
// committed write. Every run writes once, so two rows are two runs'
// effects (or one run's effect twice), whatever their leases.
func checkOncePerOccurrence(writes []history.Write) []Violation {
	first := map[key]history.Write{}
	var out []Violation
	for _, w := range writes {
		k := key{w.Job, w.Occurrence}
		f, ok := first[k]
		if !ok {
			first[k] = w
			continue
		}
		out = append(out, Violation{Check: 2, Job: w.Job, Occurrence: w.Occurrence, Detail: fmt.Sprintf(
			"committed twice: write id %d by %s (token %d, lease %s) and write id %d by %s (token %d, lease %s)",
			f.ID, f.Replica, f.Fence, f.Lease, w.ID, w.Replica, w.Fence, w.Lease)})
	}
	return out
}
