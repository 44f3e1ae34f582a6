package schedscale

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
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
	if offs := r.Config.formatOffsets(); offs != "" {
		fmt.Fprintf(&b, "Scheduler clock offsets, replica 0 on: %s (lateness measured on true time).\n\n", offs)
	}
	if st := r.Config.Stop; st != nil {
		fmt.Fprintf(&b, "Replica %d stopped (SIGSTOP) %s after the window opened, resumed (SIGCONT) %s later.\n\n", st.Replica, st.After, st.For)
	}
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
		add("Redis commands per occurrence (INFO commandstats calls: each EVALSHA and each command it ran)", fmt.Sprintf("%.2f", r.CommandsPerOccurrence()))
		add("Redis commands per occurrence (total_commands_processed)", fmt.Sprintf("%.2f", float64(r.TotalCmds)/float64(r.Expected)))
		if r.RedisCPU > 0 {
			add("Redis server CPU over the window (cores, avg; µs per occurrence)", fmt.Sprintf("%.3f; %.1f",
				r.RedisCPU.Seconds()/r.Config.Window.Seconds(), float64(r.RedisCPU.Microseconds())/float64(r.Expected)))
		}
		add("Redis scripts per occurrence", fmt.Sprintf("%.2f", r.ScriptsPerOccurrence()))
	}
	add("start lateness of the window's runs p50 / p99 / max", fmt.Sprintf("%s / %s / %s", ms(r.LateP50), ms(r.LateP99), ms(r.LateMax)))
	add("runs started 1 s or more late", fmt.Sprint(r.LateOver1s))
	if hi, lo := r.Spread(); hi > 0 {
		add("work spread: the window's runs per replica, max / mean and min / mean", fmt.Sprintf("%.2fx / %.2fx", hi, lo))
	}
	b.WriteString(t.Markdown())
	if ct := r.commandTable(); ct != nil {
		b.WriteString("\nServer time by command over the window (INFO commandstats; a script's time includes the commands it ran, which are listed under their own names too):\n\n")
		b.WriteString(ct.Markdown())
	}
	if r.Stop != nil {
		fmt.Fprintf(&b, "\n%s", r.Stop.markdown())
	}
	if len(r.MissedJobs) > 0 {
		fmt.Fprintf(&b, "\nFirst missed occurrences: %s\n", strings.Join(r.MissedJobs, ", "))
	}
	rt := leasebench.Table{Header: []string{"replica", "clock offset", "CPU (cores, avg)", "CPU time", "heap per registered job (ready / end)", "runs", "runs in the window (/ mean)", "won", "skipped: claimed", "skipped: locked", "acquire failed", "lease lost"}}
	mean := 0.0
	for _, n := range r.WindowRuns {
		mean += float64(n) / float64(len(r.WindowRuns))
	}
	for i, rp := range r.Replicas {
		window := "-"
		if i < len(r.WindowRuns) && mean > 0 {
			window = fmt.Sprintf("%d (%.2fx)", r.WindowRuns[i], float64(r.WindowRuns[i])/mean)
		}
		rt.Rows = append(rt.Rows, []string{fmt.Sprint(i), r.Config.Offset(i).String(), fmt.Sprintf("%.2f", rp.CPU.Seconds()/rp.Wall.Seconds()), rp.CPU.Round(time.Millisecond).String(),
			fmt.Sprintf("%.0f / %.0f B", rp.HeapPerJob, rp.HeapSteadyPerJob), fmt.Sprint(rp.Runs), window, fmt.Sprint(rp.Stats.Started), fmt.Sprint(rp.Stats.SkipClaimed),
			fmt.Sprint(rp.Stats.SkipLocked), fmt.Sprint(rp.Stats.AcquireFailed), fmt.Sprint(rp.Stats.LeaseLost)})
	}
	fmt.Fprintf(&b, "\nPer replica (CPU over the time from all-ready to stop, getrusage of the replica process; heap: HeapAlloc after GC less HeapAlloc before New+Register, divided by jobs, once the replica has read the registry after Start (the least of samples over 1 s) and at the end of the window):\n\n%s", rt.Markdown())
	for i, rp := range r.Replicas {
		if rp.Err != "" {
			fmt.Fprintf(&b, "\nreplica %d shutdown error: %s\n", i, rp.Err)
		}
	}
	return b.String()
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// Series is the runs of one configuration.
type Series struct {
	Config Config
	Runs   []*Report
}

// seriesColumn is a figure of a run that Series reports, with its format.
type seriesColumn struct {
	name string
	val  func(*Report) float64
	fmt  string
}

// seriesColumns are the figures of every run that Series reports.
var seriesColumns = []seriesColumn{
	{"missed", func(r *Report) float64 { return float64(r.Missed) }, "%.0f"},
	{"duplicated", func(r *Report) float64 { return float64(r.Duplicated) }, "%.0f"},
	{"lateness p50 ms", func(r *Report) float64 { return r.LateP50.Seconds() * 1000 }, "%.1f"},
	{"lateness p99 ms", func(r *Report) float64 { return r.LateP99.Seconds() * 1000 }, "%.1f"},
	{"scripts / occ", (*Report).ScriptsPerOccurrence, "%.2f"},
	{"commands / occ", (*Report).CommandsPerOccurrence, "%.2f"},
	{"cores / replica", (*Report).CoresPerReplica, "%.3f"},
	{"heap B / job (ready)", func(r *Report) float64 { h, _ := r.HeapPerJob(); return h }, "%.0f"},
	{"heap B / job (end)", func(r *Report) float64 { _, h := r.HeapPerJob(); return h }, "%.0f"},
	{"spread max / mean", func(r *Report) float64 { hi, _ := r.Spread(); return hi }, "%.2f"},
	{"spread min / mean", func(r *Report) float64 { _, lo := r.Spread(); return lo }, "%.2f"},
}

// stopColumns are the figures Series adds for runs that stalled a replica
// (Config.Stop): of the occurrences due while it was stopped.
var stopColumns = []seriesColumn{
	{"stopped: missed", func(r *Report) float64 { return float64(stopOf(r).Missed) }, "%.0f"},
	{"stopped: p99 ms", func(r *Report) float64 { return stopOf(r).Late.P99.Seconds() * 1000 }, "%.1f"},
	{"stopped: max ms", func(r *Report) float64 { return stopOf(r).Late.Max.Seconds() * 1000 }, "%.1f"},
	{"stopped, on others: max ms", func(r *Report) float64 { return stopOf(r).Others.Max.Seconds() * 1000 }, "%.1f"},
	{"stopped, on others: over grace+100ms", func(r *Report) float64 { return float64(stopOf(r).OthersOverBound) }, "%.0f"},
}

func stopOf(r *Report) *StopReport {
	if r.Stop == nil {
		return &StopReport{}
	}
	return r.Stop
}

// Markdown renders one row per run and a row of the medians (per column,
// over the runs; per replica figures are the median replica's).
func (s *Series) Markdown() string {
	columns := seriesColumns
	if s.Config.Stop != nil {
		columns = append(slices.Clip(columns), stopColumns...)
	}
	header := []string{"run"}
	for _, c := range columns {
		header = append(header, c.name)
	}
	t := leasebench.Table{Header: header}
	for i, r := range s.Runs {
		row := []string{fmt.Sprint(i + 1)}
		for _, c := range columns {
			row = append(row, fmt.Sprintf(c.fmt, c.val(r)))
		}
		t.Rows = append(t.Rows, row)
	}
	if len(s.Runs) > 1 {
		row := []string{"**median**"}
		for _, c := range columns {
			v := make([]float64, len(s.Runs))
			for i, r := range s.Runs {
				v[i] = c.val(r)
			}
			row = append(row, fmt.Sprintf(c.fmt, median(v)))
		}
		t.Rows = append(t.Rows, row)
	}
	busy := ""
	if s.Config.Busy {
		busy = ", one core kept busy"
	}
	opts := ""
	if len(s.Config.Options) > 0 {
		opts = ", options " + strings.Join(s.Config.Options, " ")
	}
	if offs := s.Config.formatOffsets(); offs != "" {
		opts += ", clock offsets " + offs
	}
	if s.Config.Stop != nil {
		opts += ", stop " + s.Config.Stop.String()
	}
	return fmt.Sprintf("%d jobs x %d replicas, %s window%s%s:\n\n%s", s.Config.Jobs, s.Config.Replicas, s.Config.Window, busy, opts, t.Markdown())
}

func median(v []float64) float64 {
	return leasebench.Summarize(v).Median
}

// commandTable lists the commands of the window by server time, with
// their calls and server time per expected occurrence; nil without
// statistics.
func (r *Report) commandTable() *leasebench.Table {
	if len(r.Commands) == 0 || r.Expected == 0 {
		return nil
	}
	names := slices.Collect(maps.Keys(r.Commands))
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(r.Commands[b].Usec, r.Commands[a].Usec) })
	t := &leasebench.Table{Header: []string{"command", "calls / occ", "µs / occ", "µs / call"}}
	n := float64(r.Expected)
	for _, name := range names {
		st := r.Commands[name]
		if st.Calls == 0 {
			continue
		}
		t.Rows = append(t.Rows, []string{name, fmt.Sprintf("%.3f", float64(st.Calls)/n), fmt.Sprintf("%.2f", st.Usec/n), fmt.Sprintf("%.2f", st.Usec/float64(st.Calls))})
	}
	return t
}
