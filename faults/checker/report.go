package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Table returns the report as a summary table (faults by kind, runs,
// writes, misses, completion, handovers, violations), one "name  value"
// line each.
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
	row("writes refused (duplicate)", r.Duplicates) // duplicate effects, refused
	row("writes failed (other)", r.WriteErrors)
	row("occurrences checked", r.Occurrences)
	reasons := map[string]int{}
	for _, m := range r.Misses {
		reasons[m.Reason]++
	}
	row("misses explained", len(r.Misses))
	for _, k := range sortedKeys(reasons) {
		row("  "+k, reasons[k])
	}
	c := r.Completion
	row("occurrences claimed (7)", c.Claimed)
	row("  completed", c.Completed)
	row("  given up", c.GivenUp)
	excepted := map[string]int{}
	for _, e := range c.Exceptions {
		excepted[e.Reason]++
	}
	row("  exceptions", len(c.Exceptions))
	for _, k := range sortedKeys(excepted) {
		row("    "+k, excepted[k])
	}
	row("attempts interrupted", c.Interrupted)
	row("attempts resumed", c.Resumed)
	row("attempts retried", c.Retried)
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

// Details lists what the checker explained, one line each: the duplicate
// starts and lease overlaps that data loss explains, the misses with their
// reasons, and the occurrences excepted from (7).
func (r Report) Details() string {
	var b strings.Builder
	line := func(what, job string, occ int64, why string) {
		fmt.Fprintf(&b, "%s %s occurrence %s: %s\n", what, job, time.UnixMilli(occ).UTC().Format("15:04:05.000"), why)
	}
	for _, d := range r.DuplicateStarts {
		line("duplicate start", d.Job, d.Occurrence, d.Explanation)
	}
	for _, d := range r.LostLeases {
		line("lease lost with data", d.Job, d.Occurrence, d.Explanation)
	}
	for _, m := range r.Misses {
		line("miss ("+m.Reason+")", m.Job, m.Occurrence, m.Explanation)
	}
	for _, e := range r.Completion.Exceptions {
		line("not completed ("+e.Reason+")", e.Job, e.Occurrence, e.Explanation)
	}
	return b.String()
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
