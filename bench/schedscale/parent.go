package schedscale

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cronguard/cronguard/bench/leasebench"
	"github.com/cronguard/cronguard/scheduler"
)

// Config configures a scale run.
type Config struct {
	Addr     string        // Redis host:port, used by nothing else
	Exe      string        // binary that runs a replica given ChildArgs
	Replicas int           // replica processes
	Jobs     int           // jobs registered on every replica
	Interval time.Duration // the jobs' grid
	TTL      time.Duration // job lease TTL
	Window   time.Duration // length of the checked window
	Warmup   time.Duration // from "all replicas started" to the window's start
	Log      io.Writer     // progress
	// Busy keeps one core busy during the run: a child process (Exe with
	// SpinArgs) that spins on one thread from before the replicas start
	// until they stopped.
	Busy bool
	// Options are passed to every replica: scheduler options by name, as
	// "name=value" (see SchedulerOptions).
	Options []string
	// Offsets are the replicas' clock offsets (see Offset): each replica's
	// scheduler runs on a clock whose Now is true time plus its offset.
	// Lateness is still measured on true time.
	Offsets []time.Duration
	// Stop, when set, stalls a replica (SIGSTOP, then SIGCONT) inside the
	// window, and the report tells what it cost (Report.Stop).
	Stop *Stop
}

// SpinArgs are the arguments that make Exe spin on one core until killed
// (Config.Busy).
var SpinArgs = []string{"-scale-spin"}

// Spin keeps one thread busy forever.
func Spin() {
	runtime.GOMAXPROCS(1)
	var x uint64
	for {
		x = x*6364136223846793005 + 1442695040888963407
		spinSink.Store(x)
	}
}

var spinSink atomic.Uint64

// ChildArgs returns the arguments that make Exe run replica i.
type ChildArgs func(cfg Config, replica int) []string

// Replica is what one replica reported.
type Replica struct {
	HeapPerJob float64 // bytes: HeapAlloc growth over New+Register+Start / jobs
	// HeapSteadyPerJob is the same at the end of the run, after the jobs
	// fired for the whole window (bytes per job).
	HeapSteadyPerJob float64
	CPU              time.Duration // CPU time between ready and stop
	Wall             time.Duration // wall time between ready and stop
	Runs             int           // occurrences it ran (all, in and out of the window)
	Stats            scheduler.Stats
	Err              string
}

// Report is the outcome of a scale run.
type Report struct {
	Config      Config
	WindowStart time.Time
	Expected    int // jobs × occurrences in the window
	Ran         int // occurrences in the window that ran at least once
	Missed      int // occurrences in the window that never ran
	Duplicated  int // extra runs of occurrences in the window (runs - 1, summed)
	MissedJobs  []string
	Replicas    []Replica
	Commands    map[string]leasebench.CommandStat // INFO commandstats over the window
	TotalCmds   int64                             // total_commands_processed over the window
	InstOpsMid  int64                             // instantaneous_ops_per_sec sampled mid-window
	// RedisCPU is the server's CPU time (used_cpu_user + used_cpu_sys)
	// over the window; 0 if INFO cpu could not be read.
	RedisCPU     time.Duration
	MaxRunsOfOcc int
	// Lateness of the runs of the window's occurrences: the job function's
	// start minus the occurrence, across all replicas.
	LateP50, LateP99, LateMax time.Duration
	LateOver1s                int // runs that started 1 s or more late
	// WindowRuns is, per replica, its runs of the window's occurrences.
	WindowRuns []int
	// Stop is what stalling a replica cost (Config.Stop), nil without.
	Stop *StopReport
}

// Spread returns the most and the fewest runs of the window's occurrences
// on one replica (WindowRuns), each as a ratio to the mean over the
// replicas: 1 and 1 when the work spread evenly; 0 and 0 without runs.
func (r *Report) Spread() (maxRatio, minRatio float64) {
	if len(r.WindowRuns) == 0 {
		return 0, 0
	}
	sum := 0
	for _, n := range r.WindowRuns {
		sum += n
	}
	if sum == 0 {
		return 0, 0
	}
	mean := float64(sum) / float64(len(r.WindowRuns))
	return float64(slices.Max(r.WindowRuns)) / mean, float64(slices.Min(r.WindowRuns)) / mean
}

// ScriptsPerOccurrence is EVAL/EVALSHA/FCALL calls over the window per
// expected occurrence.
func (r *Report) ScriptsPerOccurrence() float64 {
	if r.Expected == 0 {
		return 0
	}
	return float64(leasebench.ScriptCalls(r.Commands)) / float64(r.Expected)
}

// CommandsPerOccurrence is every command call INFO commandstats counted
// over the window (the scripts' own EVALSHA calls and the commands they
// ran, which Redis counts under their own names, everything else the
// replicas sent: heartbeats, the registry, history; not the harness's
// INFO and CONFIG) per expected occurrence.
func (r *Report) CommandsPerOccurrence() float64 {
	if r.Expected == 0 {
		return 0
	}
	return float64(leasebench.TotalCalls(r.Commands)) / float64(r.Expected)
}

// CoresPerReplica is the median replica's CPU over its wall time.
func (r *Report) CoresPerReplica() float64 {
	return r.medianReplica(func(rp Replica) float64 { return rp.CPU.Seconds() / rp.Wall.Seconds() })
}

// HeapPerJob is the median replica's heap per registered job after
// Start, and at the end of the window.
func (r *Report) HeapPerJob() (ready, steady float64) {
	return r.medianReplica(func(rp Replica) float64 { return rp.HeapPerJob }),
		r.medianReplica(func(rp Replica) float64 { return rp.HeapSteadyPerJob })
}

func (r *Report) medianReplica(f func(Replica) float64) float64 {
	v := make([]float64, len(r.Replicas))
	for i, rp := range r.Replicas {
		v[i] = f(rp)
	}
	return median(v)
}

type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	dec   *json.Decoder
	ready message
	done  message
}

// Run performs a scale run.
func Run(ctx context.Context, cfg Config, args ChildArgs) (*Report, error) {
	if cfg.Stop != nil {
		if err := cfg.Stop.check(cfg); err != nil {
			return nil, err
		}
	}
	admin, err := leasebench.NewAdmin(cfg.Addr)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	if err := admin.FlushAll(ctx); err != nil {
		return nil, err
	}
	if cfg.Busy {
		spin := exec.Command(cfg.Exe, SpinArgs...)
		spin.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := spin.Start(); err != nil {
			return nil, fmt.Errorf("schedscale: start the spinning process: %w", err)
		}
		defer func() {
			_ = spin.Process.Kill()
			_ = spin.Wait()
		}()
	}

	children := make([]*child, cfg.Replicas)
	defer func() {
		for _, c := range children {
			if c != nil && c.cmd.ProcessState == nil {
				_ = c.cmd.Process.Kill()
				_ = c.cmd.Wait()
			}
		}
	}()
	for i := range children {
		cmd := exec.Command(cfg.Exe, args(cfg, i)...)
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("schedscale: start replica %d: %w", i, err)
		}
		children[i] = &child{cmd: cmd, stdin: stdin, dec: json.NewDecoder(bufio.NewReaderSize(stdout, 1<<20))}
	}
	for i, c := range children {
		if err := c.dec.Decode(&c.ready); err != nil || c.ready.Event != "ready" {
			return nil, fmt.Errorf("schedscale: replica %d did not get ready: %v", i, err)
		}
		fmt.Fprintf(cfg.Log, "replica %d ready: %d jobs registered and started\n", i, cfg.Jobs)
	}

	allReady := time.Now()
	start := allReady.Add(cfg.Warmup).Truncate(cfg.Interval).Add(cfg.Interval)
	end := start.Add(cfg.Window)
	// Reset just before the window's first occurrence fires.
	if err := sleepUntil(ctx, start.Add(-50*time.Millisecond)); err != nil {
		return nil, err
	}
	if err := admin.ResetStats(ctx); err != nil {
		return nil, err
	}
	cpuStart := redisCPU(ctx, admin)
	fmt.Fprintf(cfg.Log, "window %s .. %s\n", start.Format(time.TimeOnly), end.Format(time.TimeOnly))
	rep := &Report{Config: cfg, WindowStart: start}
	// The stalled replica is resumed before the replicas are asked to
	// stop (Stop.check: inside the window), and at once if Run returns
	// early.
	type paused struct {
		stopped, resumed time.Time
		err              error
	}
	var pauseDone chan paused
	if st := cfg.Stop; st != nil {
		pauseCtx, cancelPause := context.WithCancel(ctx)
		pauseDone = make(chan paused, 1)
		proc := children[st.Replica].cmd.Process
		go func() {
			var p paused
			p.stopped, p.resumed, p.err = st.pause(pauseCtx, start, proc.Signal)
			pauseDone <- p
		}()
		defer func() {
			cancelPause()
			if pauseDone != nil { // not received yet
				<-pauseDone
			}
		}()
	}
	if err := sleepUntil(ctx, start.Add(cfg.Window/2)); err != nil {
		return nil, err
	}
	if info, err := admin.Info(ctx, "stats"); err == nil {
		rep.InstOpsMid = leasebench.ParseInfoInt(info, "instantaneous_ops_per_sec")
	}
	// The window's last occurrence is end-Interval; read the counters once it
	// has had time to run.
	if err := sleepUntil(ctx, end.Add(-50*time.Millisecond)); err != nil {
		return nil, err
	}
	if info, err := admin.Info(ctx, "stats"); err == nil {
		rep.TotalCmds = leasebench.ParseInfoInt(info, "total_commands_processed")
	}
	if cpuStart > 0 {
		rep.RedisCPU = redisCPU(ctx, admin) - cpuStart
	}
	if rep.Commands, err = admin.CommandStats(ctx); err != nil {
		return nil, err
	}
	// Let the last occurrences finish, then stop the replicas.
	if err := sleepUntil(ctx, end.Add(2*time.Second)); err != nil {
		return nil, err
	}
	var pause paused
	if pauseDone != nil {
		pause = <-pauseDone
		pauseDone = nil
		if pause.err != nil {
			return nil, pause.err
		}
	}
	stopAt := time.Now()
	for _, c := range children {
		_, _ = io.WriteString(c.stdin, "stop\n")
	}
	for i, c := range children {
		if err := c.dec.Decode(&c.done); err != nil || c.done.Event != "done" {
			return nil, fmt.Errorf("schedscale: replica %d did not report: %v", i, err)
		}
		_ = c.stdin.Close()
		if err := c.cmd.Wait(); err != nil {
			return nil, fmt.Errorf("schedscale: replica %d: %w", i, err)
		}
		if c.done.Late != "" {
			fmt.Fprintf(cfg.Log, "replica %d: %s\n", i, c.done.Late)
		}
		rep.Replicas = append(rep.Replicas, Replica{
			HeapPerJob:       (float64(c.ready.HeapAfter) - float64(c.ready.HeapBefore)) / float64(cfg.Jobs),
			HeapSteadyPerJob: (float64(c.done.HeapSteady) - float64(c.ready.HeapBefore)) / float64(cfg.Jobs),
			CPU:              c.done.CPU - c.ready.CPU,
			Wall:             stopAt.Sub(allReady),
			Runs:             len(c.done.Runs),
			Stats:            c.done.Stats,
			Err:              c.done.Err,
		})
	}
	rep.check(children, start, end)
	if cfg.Stop != nil {
		rep.checkStop(children, *cfg.Stop, start)
		rep.Stop.Stopped, rep.Stop.Resumed = pause.stopped, pause.resumed
	}
	return rep, nil
}

// check counts, for every job and every occurrence in [start, end), how
// many times it ran across all replicas.
func (r *Report) check(children []*child, start, end time.Time) {
	iv := r.Config.Interval.Milliseconds()
	slots := int((end.UnixMilli() - start.UnixMilli()) / iv)
	counts := make([]uint8, r.Config.Jobs*slots)
	var late []time.Duration
	r.WindowRuns = make([]int, len(children))
	for i, c := range children {
		for _, run := range c.done.Runs {
			job, occ := int(run[0]), run[1]
			if job < 0 || job >= r.Config.Jobs || occ < start.UnixMilli() || occ >= end.UnixMilli() || (occ-start.UnixMilli())%iv != 0 {
				continue
			}
			k := job*slots + int((occ-start.UnixMilli())/iv)
			if counts[k] < 255 {
				counts[k]++
			}
			late = append(late, time.Duration(run[2])*time.Microsecond)
			r.WindowRuns[i]++
		}
	}
	r.Expected = len(counts)
	for k, n := range counts {
		switch {
		case n == 0:
			r.Missed++
			if len(r.MissedJobs) < 10 {
				r.MissedJobs = append(r.MissedJobs, JobName(k/slots)+"@"+start.Add(time.Duration(k%slots)*r.Config.Interval).UTC().Format("15:04:05"))
			}
		default:
			r.Ran++
			r.Duplicated += int(n) - 1
		}
		r.MaxRunsOfOcc = max(r.MaxRunsOfOcc, int(n))
	}
	if len(late) > 0 {
		slices.Sort(late)
		r.LateP50 = leasebench.Percentile(late, 50)
		r.LateP99 = leasebench.Percentile(late, 99)
		r.LateMax = late[len(late)-1]
		r.LateOver1s = len(late) - sort.Search(len(late), func(i int) bool { return late[i] >= time.Second })
	}
}

func sleepUntil(ctx context.Context, t time.Time) error {
	if ctx.Err() != nil {
		return errors.New("schedscale: interrupted")
	}
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return errors.New("schedscale: interrupted")
	case <-timer.C:
		return nil
	}
}

// DefaultChildArgs passes cfg to "-scale-child" flags of the leasebench
// command.
func DefaultChildArgs(cfg Config, replica int) []string {
	args := []string{"-scale-child", "-redis", cfg.Addr,
		"-scale-replica", strconv.Itoa(replica),
		"-scale-jobs", strconv.Itoa(cfg.Jobs),
		"-scale-ttl", cfg.TTL.String(),
		"-scale-interval", cfg.Interval.String(),
		"-scale-warmup", cfg.Warmup.String(),
		"-scale-duration", cfg.Window.String()}
	for _, o := range cfg.Options {
		args = append(args, "-scale-opt", o)
	}
	if d := cfg.Offset(replica); d != 0 {
		args = append(args, "-scale-offset="+d.String())
	}
	return args
}

// redisCPU returns the server's CPU time so far (INFO cpu: used_cpu_user
// plus used_cpu_sys), 0 if it cannot be read.
func redisCPU(ctx context.Context, admin *leasebench.Admin) time.Duration {
	info, err := admin.Info(ctx, "cpu")
	if err != nil {
		return 0
	}
	s := leasebench.ParseInfoFloat(info, "used_cpu_user") + leasebench.ParseInfoFloat(info, "used_cpu_sys")
	return time.Duration(s * float64(time.Second))
}
