package schedsim

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cronguard/cronguard/scheduler"
)

// Figures count what simulations did.
type Figures struct {
	Seeds       int
	Occurrences int            // scheduled occurrences due within the simulated periods
	Attempts    int            // job function calls
	Triggers    int            // triggers accepted
	Recorded    int            // occurrences claimed with a completion record
	Resumed     int            // attempts after the first of an occurrence (resumed or retried)
	GivenUp     int            // occurrences reported given up
	Ops         map[string]int // operations applied, by kind (faults included)
	Violations  map[string]int // by check
}

// Add counts one history and its violations.
func (f *Figures) Add(h *History, vs []Violation) {
	if f.Ops == nil {
		f.Ops, f.Violations = make(map[string]int), make(map[string]int)
	}
	f.Seeds++
	for i := range h.Jobs {
		f.Occurrences += len(h.Jobs[i].occurrences(h.Start, h.End))
	}
	f.Attempts += len(h.Attempts)
	f.Triggers += len(h.Triggers)
	recorded := make(map[string]bool)
	for _, l := range h.Leases {
		if l.Max > 0 && l.Attempt <= 1 {
			recorded[fmt.Sprintf("%s|%d", l.Key, l.Round)] = true
		}
	}
	f.Recorded += len(recorded)
	for _, a := range h.Attempts {
		if a.Attempt > 1 {
			f.Resumed++
		}
	}
	for _, e := range h.Events {
		if e.E.Kind == scheduler.EventGivenUp {
			f.GivenUp++
		}
	}
	for _, o := range h.Ops {
		if o.Skipped == "" {
			f.Ops[o.Kind]++
		}
	}
	for _, v := range vs {
		f.Violations[v.Check]++
	}
}

func (f *Figures) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d seeds, %d occurrences due, %d attempts, %d triggers accepted\n", f.Seeds, f.Occurrences, f.Attempts, f.Triggers)
	fmt.Fprintf(&b, "completion: %d occurrences with a record, %d later attempts, %d given up\n", f.Recorded, f.Resumed, f.GivenUp)
	fmt.Fprintf(&b, "operations: %s\n", countList(f.Ops))
	fmt.Fprintf(&b, "violations: %s", countList(f.Violations))
	return b.String()
}

func countList(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
