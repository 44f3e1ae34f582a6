package schedsim

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cronguard/cronguard/scheduler"
)

// Dump returns what h recorded of job (all jobs for "") in [from, to],
// one line per item, in time order: operations, lease grants, attempts
// and events. It is what a failing seed prints with -v.
func (h *History) Dump(job string, from, to time.Time) string {
	type line struct {
		at time.Time
		s  string
	}
	var lines []line
	in := func(t time.Time) bool { return !t.Before(from) && !t.After(to) }
	add := func(t time.Time, format string, args ...any) {
		if in(t) {
			lines = append(lines, line{t, fmt.Sprintf("+%-12s ", t.Sub(h.Start)) + fmt.Sprintf(format, args...)})
		}
	}
	for _, o := range h.Ops {
		if job == "" || o.Job == "" || o.Job == job {
			s := fmt.Sprintf("op %s %s %s", o.Kind, o.Replica, o.Job)
			if o.Arg != 0 {
				s += " " + o.Arg.String()
			}
			if o.Err != "" {
				s += " -> " + o.Err
			}
			if o.Skipped != "" {
				s += " (skipped: " + o.Skipped + ")"
			}
			add(o.At, "%s", s)
		}
	}
	for _, l := range h.Leases {
		if job == "" || l.Key == scheduler.JobKeyPrefix+job {
			what := fmt.Sprintf("round %s", time.UnixMilli(l.Round).UTC().Format("15:04:05.000"))
			if l.Trigger != "" {
				what = "trigger " + shortID(l.Trigger)
			}
			add(l.Acquired, "lease %s won by %s (%s, fence %d), expires %s, released %s",
				l.Key, l.Client, what, l.Fence, l.Expires.Sub(h.Start), relTo(h.Start, l.Released))
		}
	}
	for _, a := range h.Attempts {
		if job == "" || a.Job == job {
			add(a.Start, "%s of registration %d starts; cancelled %s (%s), returns %s, crashed %s",
				a, a.Reg, relTo(h.Start, a.Cancelled), a.Cause, relTo(h.Start, a.Return), relTo(h.Start, a.Crashed))
		}
	}
	for _, t := range h.Triggers {
		if job == "" || t.Job == job {
			add(t.At, "trigger %s of %s accepted, expires %s", shortID(t.ID), t.Job, relTo(h.Start, t.Expires))
		}
	}
	for _, r := range h.Regs {
		if job == "" || r.Job == job {
			add(r.From, "registration %d of %s on %s (limit %d) %s, ends %s", r.N, r.Job, r.Replica, r.Limit, r.Err, relTo(h.Start, r.To))
		}
	}
	for _, e := range h.Events {
		if job == "" || e.E.Job == job {
			s := fmt.Sprintf("event %s %s %s occurrence %s", e.E.Instance, e.E.Job, e.E.Kind, e.E.Occurrence.UTC().Format("15:04:05.000"))
			switch {
			case e.E.Kind == scheduler.EventSkipped:
				s += " reason " + e.E.Reason.String()
			case e.E.Kind == scheduler.EventMissed:
				s += fmt.Sprintf(" missed %d from %s to %s", e.E.Missed.Count, e.E.Missed.First.UTC().Format("15:04:05"), e.E.Missed.Last.UTC().Format("15:04:05"))
			}
			if e.E.Fence != 0 {
				s += fmt.Sprintf(" fence %d", e.E.Fence)
			}
			if e.E.Trigger != "" {
				s += " trigger " + shortID(e.E.Trigger)
			}
			add(e.At, "%s", s)
		}
	}
	sort.SliceStable(lines, func(a, b int) bool { return lines[a].at.Before(lines[b].at) })
	var b strings.Builder
	for i := range h.Jobs {
		if j := &h.Jobs[i]; job == "" || j.Name == job {
			fmt.Fprintf(&b, "%s: %s, ttl %s, timeout %s, catch-up %s, buffer one %t, limit %q/%d\n",
				j.Name, j.Schedule, j.TTL, j.Timeout, j.CatchUp, j.BufferOne, j.Limit, j.LimitN)
		}
	}
	for _, l := range lines {
		b.WriteString(l.s)
		b.WriteByte('\n')
	}
	return b.String()
}

func relTo(start, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return "+" + t.Sub(start).String()
}
