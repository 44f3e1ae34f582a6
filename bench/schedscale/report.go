package schedscale

import (
	"fmt"
	"strings"
	"time"

	"github.com/cronguard/cronguard/bench/leasebench"
)

// Markdown renders r.
func (r *Report) Markdown() string {
	var b strings.Builder
	w := r.Config.Window.Seconds()
	fmt.Fprintf(&b, "%d jobs on a %s grid (`Every(%s)`, lease TTL %s), registered on each of %d replicas (child processes) sharing one Redis; checked window %s (%d occurrences per job), opened %s after the last replica started.\n\n",
		r.Config.Jobs, r.Config.Interval, r.Config.Interval, r.Config.TTL, r.Config.Replicas, r.Config.Window,
		int(r.Config.Window/r.Config.Interval), r.Config.Warmup)
	t := leasebench.Table{Header: []string{"measure", "value"}}
	add := func(k, v string) { t.Rows = append(t.Rows, []string{k, v}) }
	add("occurrences expected in the window", fmt.Sprint(r.Expected))
	add("ran exactly once or more", fmt.Sprint(r.Ran))
	add("**missed**", fmt.Sprint(r.Missed))
	add("**duplicated** (extra runs)", fmt.Sprint(r.Duplicated))
	add("Redis commands/s over the window (incl. commands inside scripts)", fmt.Sprintf("%.0f", float64(r.TotalCmds)/w))
	add("Redis scripts/s over the window (EVALSHA+EVAL)", fmt.Sprintf("%.0f", float64(leasebench.ScriptCalls(r.Commands))/w))
	add("Redis instantaneous_ops_per_sec, mid-window", fmt.Sprint(r.InstOpsMid))
	if r.Expected > 0 {
		add("Redis commands per occurrence", fmt.Sprintf("%.2f", float64(r.TotalCmds)/float64(r.Expected)))
		add("Redis scripts per occurrence", fmt.Sprintf("%.2f", float64(leasebench.ScriptCalls(r.Commands))/float64(r.Expected)))
	}
	b.WriteString(t.Markdown())
	if len(r.MissedJobs) > 0 {
		fmt.Fprintf(&b, "\nFirst missed occurrences: %s\n", strings.Join(r.MissedJobs, ", "))
	}
	rt := leasebench.Table{Header: []string{"replica", "CPU (cores, avg)", "CPU time", "heap per registered job", "runs", "won", "skipped: claimed", "skipped: locked", "acquire failed", "lease lost"}}
	for i, rp := range r.Replicas {
		rt.Rows = append(rt.Rows, []string{fmt.Sprint(i), fmt.Sprintf("%.2f", rp.CPU.Seconds()/rp.Wall.Seconds()), rp.CPU.Round(time.Millisecond).String(),
			fmt.Sprintf("%.0f B", rp.HeapPerJob), fmt.Sprint(rp.Runs), fmt.Sprint(rp.Stats.Started), fmt.Sprint(rp.Stats.SkipClaimed),
			fmt.Sprint(rp.Stats.SkipLocked), fmt.Sprint(rp.Stats.AcquireFailed), fmt.Sprint(rp.Stats.LeaseLost)})
	}
	fmt.Fprintf(&b, "\nPer replica (CPU over the time from all-ready to stop, getrusage of the replica process; heap: HeapAlloc after GC, after minus before New+Register+Start, divided by jobs):\n\n%s", rt.Markdown())
	for i, rp := range r.Replicas {
		if rp.Err != "" {
			fmt.Fprintf(&b, "\nreplica %d shutdown error: %s\n", i, rp.Err)
		}
	}
	return b.String()
}
