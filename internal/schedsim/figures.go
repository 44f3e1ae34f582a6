package schedsim

import (
	"fmt"
	"sort"
	"strings"
)

// Figures count what simulations did.
type Figures struct {
	Seeds       int
	Occurrences int            // scheduled occurrences due within the simulated periods
	Attempts    int            // job function calls
	Triggers    int            // triggers accepted
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
