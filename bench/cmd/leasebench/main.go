// Command leasebench benchmarks cronguard's Redis lease store against the
// floor (SET NX PX + compare-and-delete on rueidis) and its peers
// (bsm/redislock, go-redsync, rueidislock), and, with -scale, runs the
// scheduler at scale (many jobs across replicas on one Redis) and checks
// that no occurrence was missed or duplicated.
//
// It starts its own redis-server on a free loopback port unless -redis is
// given, and prints markdown to stdout (progress goes to stderr):
//
//	cd bench && go run ./cmd/leasebench -svg throughput.svg
//	cd bench && go run ./cmd/leasebench -scale
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/cronguard/cronguard/bench/leasebench"
	"github.com/cronguard/cronguard/bench/schedscale"
)

// multiFlag is a flag that may be given more than once.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "leasebench:", err)
		os.Exit(1)
	}
}

type flags struct {
	redis        string
	rounds       int
	duration     time.Duration
	ttl          time.Duration
	svg          string
	contenders   string
	only         string
	cpuprofile   string
	quiet        bool
	scale        bool
	scaleChild   bool
	scaleJobs    int
	scaleReps    string
	scaleRuns    int
	scaleBusy    bool
	scaleSpin    bool
	scaleOpts    multiFlag
	scaleProfile string
	scaleDur     time.Duration
	scaleWarmup  time.Duration
	scaleTTL     time.Duration
	scaleEvery   time.Duration
	scaleReplica int
	scaleOffsets string
	scaleOffset  time.Duration
	scaleStop    string
}

func parseFlags() flags {
	var f flags
	flag.StringVar(&f.redis, "redis", "", "use this Redis (host:port or redis://host:port) instead of starting redis-server; it must be a server nothing else uses (CONFIG RESETSTAT is run)")
	flag.IntVar(&f.rounds, "rounds", leasebench.DefaultRounds, "interleaved rounds")
	flag.DurationVar(&f.duration, "duration", leasebench.DefaultDuration, "duration of each measurement")
	flag.DurationVar(&f.ttl, "ttl", leasebench.DefaultTTL, "lock TTL")
	flag.StringVar(&f.svg, "svg", "", "write the throughput-against-concurrency chart to this SVG file")
	flag.StringVar(&f.contenders, "contenders", "", "comma-separated contenders to run besides the floor (default all: "+strings.Join(leasebench.ContenderNames()[1:], ",")+")")
	flag.StringVar(&f.only, "only", "", "comma-separated scenarios to run (sequential, parallel-N, contention-16, extend); default all")
	flag.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of this process to this file")
	flag.BoolVar(&f.quiet, "q", false, "no progress lines on stderr")
	flag.BoolVar(&f.scale, "scale", false, "run the scheduler scale test instead of the lease benchmark")
	flag.BoolVar(&f.scaleChild, "scale-child", false, "internal: run one scheduler replica (used by -scale)")
	flag.IntVar(&f.scaleJobs, "scale-jobs", 10000, "scale: registered jobs")
	flag.StringVar(&f.scaleReps, "scale-replicas", "3", "scale: replicas (child processes); a comma-separated list runs each count in turn")
	flag.IntVar(&f.scaleRuns, "scale-runs", 1, "scale: runs of each configuration; with more than one, a table of every run and the medians")
	flag.BoolVar(&f.scaleBusy, "scale-busy", false, "scale: keep one core busy (a child process spinning on one thread) during each run")
	flag.Var(&f.scaleOpts, "scale-opt", "scale: a scheduler option for every replica, name=value (repeatable; names: "+strings.Join(schedscale.OptionNames(), ", ")+")")
	flag.StringVar(&f.scaleProfile, "scale-profile", "", "scale: write each replica's CPU, heap (at ready and at the end), block and mutex profiles and a 3 s execution trace into this directory")
	flag.BoolVar(&f.scaleSpin, "scale-spin", false, "internal: spin on one core until killed (used by -scale-busy)")
	flag.DurationVar(&f.scaleDur, "scale-duration", 60*time.Second, "scale: length of the checked window")
	flag.DurationVar(&f.scaleWarmup, "scale-warmup", 3*time.Second, "scale: time after every replica started before the checked window opens")
	flag.DurationVar(&f.scaleTTL, "scale-ttl", 5*time.Second, "scale: job lease TTL")
	flag.DurationVar(&f.scaleEvery, "scale-interval", time.Second, "scale: the jobs' schedule, Every(interval), a whole number of seconds")
	flag.IntVar(&f.scaleReplica, "scale-replica", 0, "internal: replica number of a -scale-child")
	flag.StringVar(&f.scaleOffsets, "scale-offsets", "", "scale: comma-separated clock offsets of the replicas' schedulers, replica 0 first (e.g. -scale-offsets=-400ms,0,400ms); a shorter list repeats, a longer one's tail is unused; the lease store keeps the Redis server's clock, and lateness is measured on true time")
	flag.DurationVar(&f.scaleOffset, "scale-offset", 0, "internal: clock offset of a -scale-child's scheduler")
	flag.StringVar(&f.scaleStop, "scale-stop", "", "scale: stall a replica inside the window, replica=N,after=D,for=D: SIGSTOP to replica N's process D (after) after the window opens, SIGCONT D (for) later (after+for must not pass the window's end); the report adds the missed occurrences and the start lateness of those due while it was stopped")
	flag.Parse()
	return f
}

func run() error {
	f := parseFlags()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	if f.scaleChild {
		return runScaleChild(ctx, f)
	}
	if f.scaleSpin {
		schedscale.Spin()
	}

	addr := strings.TrimPrefix(f.redis, "redis://")
	if addr == "" {
		srv, err := leasebench.StartServer()
		if err != nil {
			return err
		}
		defer srv.Stop()
		addr = srv.Addr
	}
	var progress io.Writer = os.Stderr
	if f.quiet {
		progress = io.Discard
	}
	if f.cpuprofile != "" {
		pf, err := os.Create(f.cpuprofile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if f.scale {
		return runScale(ctx, f, addr, progress)
	}
	return runLease(ctx, f, addr, progress)
}

func runLease(ctx context.Context, f flags, addr string, progress io.Writer) error {
	var names []string
	if f.contenders != "" {
		names = strings.Split(f.contenders, ",")
	}
	contenders, err := leasebench.NewContenders(addr, f.ttl, names)
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range contenders {
			c.Close()
		}
	}()
	admin, err := leasebench.NewAdmin(addr)
	if err != nil {
		return err
	}
	defer admin.Close()
	var only []string
	if f.only != "" {
		only = strings.Split(f.only, ",")
	}

	fmt.Fprintln(os.Stdout, machineHeader(ctx, admin))
	res, err := leasebench.Run(ctx, admin, contenders, leasebench.Config{
		Rounds: f.rounds, Duration: f.duration, TTL: f.ttl, Log: progress, Only: only,
	})
	if err != nil {
		return err
	}
	writeLeaseReport(os.Stdout, res, f)
	if f.svg != "" {
		sf, err := os.Create(f.svg)
		if err != nil {
			return err
		}
		if err := res.SweepChart().WriteSVG(sf); err != nil {
			_ = sf.Close()
			return err
		}
		if err := sf.Close(); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return nil
}

func writeLeaseReport(w io.Writer, res *leasebench.Results, f flags) {
	fmt.Fprintf(w, "Rounds: %d interleaved (round r runs every contender in an order rotated by r), %s per measurement, lock TTL %s; run took %s.\n",
		res.Config.Rounds, res.Config.Duration, res.Config.TTL, res.Wall.Round(time.Second))
	fmt.Fprintf(w, "Values are medians over rounds; spread is min–max over rounds; a ratio is the median of per-round ratios to the floor measured in the same round.\n\n")
	for _, sc := range res.Scenarios {
		switch sc.Kind {
		case leasebench.Sequential:
			fmt.Fprintf(w, "### 1. Sequential acquire+release latency (one goroutine)\n\n%s\n", res.LatencyTable(sc).Markdown())
			fmt.Fprintf(w, "Redis work per acquire+release cycle (sequential scenario, all rounds):\n\n%s\n", res.CommandTable(sc).Markdown())
		case leasebench.Parallel:
			if sc.Workers == leasebench.DefaultParallelism {
				fmt.Fprintf(w, "### 2. %d goroutines on distinct keys: acquire+release cycles per second\n\n%s\n", sc.Workers, res.ThroughputTable(sc).Markdown())
				if h := res.HeadToHeadTable(sc, "cronguard"); len(h.Rows) > 0 {
					fmt.Fprintf(w, "Head to head, round by round (each round's measurements were taken seconds apart):\n\n%s\n", h.Markdown())
				}
			}
		case leasebench.Contention:
			fmt.Fprintf(w, "### 3. %d goroutines contending for one key: successful acquisitions per second\n\n"+
				"Commands counted from INFO commandstats deltas (CONFIG RESETSTAT before each measurement), including commands run inside scripts.\n\n%s\n",
				sc.Workers, res.ThroughputTable(sc).Markdown())
		case leasebench.Extend:
			fmt.Fprintf(w, "### 4. Extend latency (one goroutine, one held lock)\n\n%s\n", res.LatencyTable(sc).Markdown())
			fmt.Fprintf(w, "Redis work per extend:\n\n%s\n", res.CommandTable(sc).Markdown())
		}
	}
	fmt.Fprintf(w, "### Throughput against concurrency (distinct keys, cycles per second, medians)\n\n%s\n", res.SweepTable().Markdown())
	if f.svg != "" {
		fmt.Fprintf(w, "Chart: %s\n", f.svg)
	}
}
