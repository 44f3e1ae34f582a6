package checker

import (
	"fmt"
	"sort"
	"strings"
)

// Table returns the report as a summary table (faults by kind, runs,
// writes, misses, handovers, violations), one "name  value" line each.
func (r Report) Table() string {
	var b strings.Builder
	row := func(name string, v any) { fmt.Fprintf(&b, "  %-28s %v\n", name, v) }
	kinds := make([]string, 0, len(r.Faults))
	total := 0
	for k, n := range r.Faults {
		kinds = append(kinds, k)
		total += n
	}
	sort.Strings(kinds)
	row("faults injected", total)
	for _, k := range kinds {
		row("  "+k, r.Faults[k])
	}
	row("stalls (machine)", r.Stalls)
	row("runs", r.Runs)
	row("leases acquired", r.Leases)
	row("duplicate starts (explained)", len(r.DuplicateStarts))
	row("leases lost with data", len(r.LostLeases))
	row("writes accepted", r.Accepted)
	row("writes rejected (stale)", r.Rejected)
	row("writes refused (duplicate)", r.Duplicates)
	row("writes failed (other)", r.WriteErrors)
	row("occurrences checked", r.Occurrences)
	reasons := map[string]int{}
	for _, m := range r.Misses {
		reasons[m.Reason]++
	}
	row("misses explained", len(r.Misses))
	rs := make([]string, 0, len(reasons))
	for k := range reasons {
		rs = append(rs, k)
	}
	sort.Strings(rs)
	for _, k := range rs {
		row("  "+k, reasons[k])
	}
	row("holders cut off (ctx lost)", r.CutHolders)
	row("handovers checked (5)", r.Handovers-r.Exempt)
	row("  exempt (paused/killed)", r.Exempt)
	row("  exempt (data loss)", r.ExemptDataLoss)
	row("  undecided (within RTT)", r.Undecided)
	row("violations", len(r.Violations))
	for _, v := range r.Violations {
		b.WriteString("    " + v.String() + "\n")
	}
	return b.String()
}
