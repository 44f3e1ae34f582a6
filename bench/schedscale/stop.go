package schedscale

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cronguard/cronguard/bench/leasebench"
	"github.com/cronguard/cronguard/scheduler"
)

// Stop stalls one replica during the window: the parent sends its process
// SIGSTOP at the window's start + After and SIGCONT For later. The
// replica's runtime, timers and connections freeze and resume as they were;
// its leases and registry entry keep running out on the server's clock.
type Stop struct {
	Replica int           // replica number
	After   time.Duration // from the window's start
	For     time.Duration // how long it stays stopped
}

// BackupBound is the lateness within which the occurrences of a stalled
// first choice should start on their backup: scheduler.BackupGrace plus
// 100 ms for the backup's round read, its claim and the run's start.
const BackupBound = scheduler.BackupGrace + 100*time.Millisecond

// ParseStop parses "replica=N,after=D,for=D" (the leasebench flag
// -scale-stop; D a Go duration, keys in any order, all three required). An
// empty string is no stop (nil).
func ParseStop(s string) (*Stop, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	st := &Stop{}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || seen[k] {
			return nil, fmt.Errorf("schedscale: stop %q: want replica=N,after=D,for=D, each once", s)
		}
		seen[k] = true
		var err error
		switch k {
		case "replica":
			st.Replica, err = strconv.Atoi(v)
			if err == nil && st.Replica < 0 {
				err = fmt.Errorf("negative replica")
			}
		case "after":
			st.After, err = time.ParseDuration(v)
			if err == nil && st.After < 0 {
				err = fmt.Errorf("negative delay")
			}
		case "for":
			st.For, err = time.ParseDuration(v)
			if err == nil && st.For <= 0 {
				err = fmt.Errorf("the stop must last")
			}
		default:
			err = fmt.Errorf("unknown key (known: replica, after, for)")
		}
		if err != nil {
			return nil, fmt.Errorf("schedscale: stop %q: %s: %w", s, k, err)
		}
	}
	if len(seen) != 3 {
		return nil, fmt.Errorf("schedscale: stop %q: want replica=N,after=D,for=D, all three", s)
	}
	return st, nil
}

// String renders s as ParseStop reads it.
func (s Stop) String() string {
	return fmt.Sprintf("replica=%d,after=%s,for=%s", s.Replica, s.After, s.For)
}

// check reports whether s fits a run of cfg: a replica it has, stopped and
// resumed inside the window.
func (s Stop) check(cfg Config) error {
	if s.Replica >= cfg.Replicas {
		return fmt.Errorf("schedscale: stop %s: there are only %d replicas", s, cfg.Replicas)
	}
	if s.After+s.For > cfg.Window {
		return fmt.Errorf("schedscale: stop %s: it must end inside the %s window", s, cfg.Window)
	}
	return nil
}

// pause sends signal SIGSTOP at start+After and SIGCONT at start+After+For,
// and returns when it sent them. Once SIGSTOP was sent, SIGCONT always
// follows, at once if ctx ends first; if ctx ends before start+After,
// nothing is sent.
func (s Stop) pause(ctx context.Context, start time.Time, signal func(os.Signal) error) (stopped, resumed time.Time, err error) {
	if err := sleepUntil(ctx, start.Add(s.After)); err != nil {
		return time.Time{}, time.Time{}, err
	}
	if err := signal(syscall.SIGSTOP); err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("schedscale: stop replica %d: %w", s.Replica, err)
	}
	stopped = time.Now()
	waitErr := sleepUntil(ctx, start.Add(s.After+s.For))
	if err := signal(syscall.SIGCONT); err != nil {
		return stopped, time.Time{}, fmt.Errorf("schedscale: resume replica %d: %w", s.Replica, err)
	}
	return stopped, time.Now(), waitErr
}

// Lateness summarizes the start lateness of some runs.
type Lateness struct {
	N             int
	P50, P99, Max time.Duration
}

func summarizeLateness(d []time.Duration) Lateness {
	if len(d) == 0 {
		return Lateness{}
	}
	slices.Sort(d)
	return Lateness{N: len(d), P50: leasebench.Percentile(d, 50), P99: leasebench.Percentile(d, 99), Max: d[len(d)-1]}
}

// String renders l as "N runs, p50 / p99 / max".
func (l Lateness) String() string {
	if l.N == 0 {
		return "no runs"
	}
	return fmt.Sprintf("%d runs, %s / %s / %s", l.N, ms(l.P50), ms(l.P99), ms(l.Max))
}

// StopReport is what stalling a replica cost the occurrences due while it
// was stopped.
type StopReport struct {
	Stop Stop
	// From and To bound the occurrences checked, [From, To): the window's
	// start + After and + After + For.
	From, To time.Time
	// Stopped and Resumed are when SIGSTOP and SIGCONT were sent.
	Stopped, Resumed time.Time
	Expected         int // occurrences in [From, To)
	Missed           int // of those, never run
	Duplicated       int // extra runs of those
	// Late is the start lateness of their runs on every replica; Others of
	// their runs on the replicas that were not stopped; OnStopped of their
	// runs on the stopped replica (started just before SIGSTOP, or late,
	// after SIGCONT).
	Late, Others, OnStopped Lateness
	// OthersOverGrace counts the runs on the other replicas that started
	// scheduler.BackupGrace or later after their occurrence (a backup took
	// them, or a first choice ran late); OthersOverBound those that started
	// BackupBound or later.
	OthersOverGrace, OthersOverBound int
}

// checkStop fills r.Stop from the runs of the occurrences in the stop's
// interval.
func (r *Report) checkStop(children []*child, st Stop, start time.Time) {
	iv := r.Config.Interval.Milliseconds()
	from, to := start.Add(st.After), start.Add(st.After+st.For)
	// The interval's first occurrence is on the grid at or after from.
	first := start.UnixMilli() + (from.UnixMilli()-start.UnixMilli()+iv-1)/iv*iv
	slots := 0
	if to.UnixMilli() > first {
		slots = int((to.UnixMilli() - first + iv - 1) / iv)
	}
	sr := &StopReport{Stop: st, From: from, To: to, Expected: r.Config.Jobs * slots}
	counts := make([]uint8, r.Config.Jobs*slots)
	var all, others, stopped []time.Duration
	for i, c := range children {
		for _, run := range c.done.Runs {
			job, occ := int(run[0]), run[1]
			if job < 0 || job >= r.Config.Jobs || occ < first || occ >= to.UnixMilli() || (occ-first)%iv != 0 {
				continue
			}
			k := job*slots + int((occ-first)/iv)
			if counts[k] < 255 {
				counts[k]++
			}
			late := time.Duration(run[2]) * time.Microsecond
			all = append(all, late)
			if i == st.Replica {
				stopped = append(stopped, late)
				continue
			}
			others = append(others, late)
			if late >= scheduler.BackupGrace {
				sr.OthersOverGrace++
			}
			if late >= BackupBound {
				sr.OthersOverBound++
			}
		}
	}
	for _, n := range counts {
		switch n {
		case 0:
			sr.Missed++
		default:
			sr.Duplicated += int(n) - 1
		}
	}
	sr.Late, sr.Others, sr.OnStopped = summarizeLateness(all), summarizeLateness(others), summarizeLateness(stopped)
	r.Stop = sr
}

// markdown renders s.
func (s *StopReport) markdown() string {
	t := leasebench.Table{Header: []string{"occurrences due while replica " + strconv.Itoa(s.Stop.Replica) + " was stopped", "value"}}
	add := func(k, v string) { t.Rows = append(t.Rows, []string{k, v}) }
	add("interval (window start + after, + for)", fmt.Sprintf("%s .. %s", s.From.Format("15:04:05.000"), s.To.Format("15:04:05.000")))
	if !s.Stopped.IsZero() {
		add("SIGSTOP / SIGCONT sent (late by)", fmt.Sprintf("%s / %s", ms(s.Stopped.Sub(s.From)), ms(s.Resumed.Sub(s.To))))
	}
	add("occurrences expected", fmt.Sprint(s.Expected))
	add("**missed**", fmt.Sprint(s.Missed))
	add("**duplicated** (extra runs)", fmt.Sprint(s.Duplicated))
	add("start lateness, every replica: runs, p50 / p99 / max", s.Late.String())
	add("start lateness, on the other replicas: runs, p50 / p99 / max", s.Others.String())
	add(fmt.Sprintf("runs on the other replicas started %s or later (a backup's)", scheduler.BackupGrace), fmt.Sprint(s.OthersOverGrace))
	add(fmt.Sprintf("runs on the other replicas started %s or later (past grace + 100 ms)", BackupBound), fmt.Sprint(s.OthersOverBound))
	add("start lateness, on the stopped replica: runs, p50 / p99 / max", s.OnStopped.String())
	return t.Markdown()
}
