package leasebench

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Table is a markdown table.
type Table struct {
	Header []string
	Rows   [][]string
}

// Markdown renders t as a GitHub markdown table; the first column is left
// aligned, the others right aligned.
func (t Table) Markdown() string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(t.Header, " | ") + " |\n|")
	for i := range t.Header {
		if i == 0 {
			b.WriteString(" --- |")
		} else {
			b.WriteString(" ---: |")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// series extracts one value per round.
func series(ms []Measurement, f func(Measurement) float64) []float64 {
	out := make([]float64, len(ms))
	for i, m := range ms {
		out[i] = f(m)
	}
	return out
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func p50(m Measurement) float64  { return micros(m.P50) }
func p99(m Measurement) float64  { return micros(m.P99) }
func rate(m Measurement) float64 { return m.Rate() }

func perOp(m Measurement, n int64) float64 {
	if m.Ops == 0 {
		return math.NaN()
	}
	return float64(n) / float64(m.Ops)
}

func errorsOf(ms []Measurement) int64 {
	var n int64
	for _, m := range ms {
		n += m.Errors
	}
	return n
}

// fmtNum prints v with digits decimals, or "-" for NaN.
func fmtNum(v float64, digits int) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.*f", digits, v)
}

func fmtSpread(s Summary, digits int) string {
	return fmtNum(s.Min, digits) + "–" + fmtNum(s.Max, digits)
}

func fmtRatio(s Summary) string {
	if math.IsNaN(s.Median) {
		return "-"
	}
	return fmt.Sprintf("%.2fx (%.2f–%.2f)", s.Median, s.Min, s.Max)
}

func (r *Results) floor() string { return r.Contenders[0] }

// LatencyTable reports p50 and p99 latency (µs) of a Sequential or Extend
// scenario, and the per-round p50 ratio to the floor.
func (r *Results) LatencyTable(sc Scenario) Table {
	t := Table{Header: []string{"contender", "p50 µs", "p50 spread", "p99 µs", "p99 spread", "p50 / floor (spread)", "ops/s", "errors"}}
	floor := series(r.Runs[sc][r.floor()], p50)
	for _, name := range r.Contenders {
		ms := r.Runs[sc][name]
		if len(ms) == 0 {
			continue
		}
		a, b := Summarize(series(ms, p50)), Summarize(series(ms, p99))
		t.Rows = append(t.Rows, []string{name, fmtNum(a.Median, 1), fmtSpread(a, 1), fmtNum(b.Median, 1), fmtSpread(b, 1),
			fmtRatio(RatioSummary(series(ms, p50), floor)), fmtNum(Summarize(series(ms, rate)).Median, 0), fmt.Sprint(errorsOf(ms))})
	}
	return t
}

// ThroughputTable reports operations per second of a Parallel or
// Contention scenario; for Contention it adds the Redis commands (all
// calls, including those run inside scripts) and scripts per success.
func (r *Results) ThroughputTable(sc Scenario) Table {
	t := Table{Header: []string{"contender", "ops/s", "spread", "ratio to floor (spread)", "errors"}}
	if sc.Kind == Contention {
		t.Header = []string{"contender", "successes/s", "spread", "ratio to floor (spread)", "commands / success", "scripts / success", "failed tries / success", "errors"}
	}
	floor := series(r.Runs[sc][r.floor()], rate)
	for _, name := range r.Contenders {
		ms := r.Runs[sc][name]
		if len(ms) == 0 {
			continue
		}
		s := Summarize(series(ms, rate))
		row := []string{name, fmtNum(s.Median, 0), fmtSpread(s, 0), fmtRatio(RatioSummary(series(ms, rate), floor))}
		if sc.Kind == Contention {
			cmds := Summarize(series(ms, func(m Measurement) float64 { return perOp(m, TotalCalls(m.Commands)) }))
			scripts := Summarize(series(ms, func(m Measurement) float64 { return perOp(m, ScriptCalls(m.Commands)) }))
			tries := Summarize(series(ms, func(m Measurement) float64 { return perOp(m, m.Contended) }))
			row = append(row, fmtNum(cmds.Median, 1), fmtNum(scripts.Median, 1), fmtNum(tries.Median, 1))
		}
		t.Rows = append(t.Rows, append(row, fmt.Sprint(errorsOf(ms))))
	}
	return t
}

// SweepTable reports the median throughput of every Parallel scenario, one
// column per worker count.
func (r *Results) SweepTable() Table {
	t := Table{Header: []string{"contender"}}
	var scs []Scenario
	for _, sc := range r.Scenarios {
		if sc.Kind == Parallel {
			scs = append(scs, sc)
			t.Header = append(t.Header, fmt.Sprintf("%d goroutines", sc.Workers))
		}
	}
	for _, name := range r.Contenders {
		row := []string{name}
		for _, sc := range scs {
			row = append(row, fmtNum(Summarize(series(r.Runs[sc][name], rate)).Median, 0))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// CommandTable breaks one scenario's Redis work down per completed
// operation, summed over all rounds: commands (including those run inside
// scripts), scripts, the scripts' server time (INFO commandstats usec, which
// for a script includes the commands it ran), and, per command name, calls
// and server µs per operation.
func (r *Results) CommandTable(sc Scenario) Table {
	t := Table{Header: []string{"contender", "commands / op", "scripts / op", "script µs / op", "per command: calls / op (server µs / op)"}}
	for _, name := range r.Contenders {
		ms := r.Runs[sc][name]
		var ops int64
		sum := map[string]CommandStat{}
		for _, m := range ms {
			ops += m.Ops
			for k, v := range m.Commands {
				s := sum[k]
				s.Calls += v.Calls
				s.Usec += v.Usec
				sum[k] = s
			}
		}
		if ops == 0 {
			continue
		}
		fo := float64(ops)
		var scriptUsec float64
		names := make([]string, 0, len(sum))
		for k, v := range sum {
			if v.Calls == 0 {
				continue
			}
			names = append(names, k)
			if isScript(k) {
				scriptUsec += v.Usec
			}
		}
		slices.SortFunc(names, func(a, b string) int {
			return cmp.Or(cmp.Compare(sum[b].Calls, sum[a].Calls), cmp.Compare(a, b))
		})
		var parts []string
		for _, k := range names {
			parts = append(parts, fmt.Sprintf("%s %.2f (%.1f)", strings.ToUpper(k), float64(sum[k].Calls)/fo, sum[k].Usec/fo))
		}
		t.Rows = append(t.Rows, []string{name, fmtNum(float64(TotalCalls(sum))/fo, 2), fmtNum(float64(ScriptCalls(sum))/fo, 2),
			fmtNum(scriptUsec/fo, 1), strings.Join(parts, ", ")})
	}
	return t
}

func isScript(cmd string) bool {
	switch cmd {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		return true
	}
	return false
}

// HeadToHeadTable compares subject with every other contender but the
// floor on a throughput scenario, round by round: in how many rounds
// subject's rate was higher, and the median (and spread) of the per-round
// ratio subject/other. Rounds pair up because round r's measurements of
// every contender were taken seconds apart. It has no rows when subject
// was not run.
func (r *Results) HeadToHeadTable(sc Scenario, subject string) Table {
	t := Table{Header: []string{"against", "rounds " + subject + " was faster", subject + " / it (spread)"}}
	mine := series(r.Runs[sc][subject], rate)
	if len(mine) == 0 {
		return t
	}
	for _, name := range r.Contenders {
		theirs := series(r.Runs[sc][name], rate)
		if name == subject || name == r.floor() || len(theirs) == 0 {
			continue
		}
		won, rounds := 0, min(len(mine), len(theirs))
		for i := range rounds {
			if mine[i] > theirs[i] {
				won++
			}
		}
		t.Rows = append(t.Rows, []string{name, fmt.Sprintf("%d of %d", won, rounds), fmtRatio(RatioSummary(mine, theirs))})
	}
	return t
}
