// Command cronworker is a runnable replicated worker built on cronguard.
//
// With no flags it starts an embedded Redis (miniredis) in process and three
// replicas, each with its own Redis client, lease store, scheduler and
// SQLite handle, all registering the same three jobs:
//
//   - report, on the cron schedule "*/5 * * * * *";
//   - tick, every second (epoch-aligned), with a 2s lease;
//   - rebuild, every 10s, which works for 5s under a 2s lease kept alive by
//     the heartbeat.
//
// Every run writes a row into the SQLite file, fenced: the job's fencing
// token is advanced (fencing.Table.Advance) in the same transaction as its
// insert. After -for (default 20s), or on SIGINT/SIGTERM, the replicas shut
// down gracefully, releasing their leases, and a summary table shows the
// occurrences per job, which replica ran each, the skips, the duplicates
// (counted from the rows: must be 0) and the stale writes fencing rejected.
// The exit code is 1 if any duplicate was found, a lease is still held by
// this process after shutdown, or anything failed; 2 for bad flags.
//
// Flags:
//
//	-redis URL     use a real Redis (redis://[user:password@]host:port[/db],
//	               rediss:// for TLS); -replicas then defaults to 1, so that
//	               several processes can run side by side, one per terminal
//	-replicas N    replicas in this process (default 3, or 1 with -redis)
//	-for D         how long to run before shutting down (default 20s)
//	-db PATH       the SQLite file (default: a new temporary file, printed);
//	               processes sharing one file share the duplicate check
//	-stall         freeze one replica past its lease's TTL (see stall.go):
//	               its late write is rejected by fencing
//	-metrics ADDR  serve the replicas' OpenTelemetry metrics (otelcronguard)
//	               in the Prometheus format at http://ADDR/metrics, e.g.
//	               -metrics :9464; the address is printed
//	-v             debug logs (skips, heartbeat renewals)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/lmittmann/tint"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/internal/logattr"
	"github.com/cronguard/cronguard/scheduler"
)

// Defaults and limits of the flags.
const (
	defaultReplicas = 3
	defaultRunFor   = 20 * time.Second
	maxReplicas     = 16
	minRunFor       = time.Second
	// shutdownGrace bounds the replicas' Shutdown: longer than stallFor, so
	// a frozen run still ends (and is rejected) before the process exits.
	shutdownGrace = 10 * time.Second
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // duplicates, a lease left held, or an error
	exitUsage = 2 // bad flags
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, restore the default handling: a second
	// Ctrl-C ends the process at once.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is the validated command line.
type config struct {
	redisURL string
	replicas int
	runFor   time.Duration
	dbPath   string
	stall    bool
	verbose  bool
	metrics  string // -metrics: host:port to serve /metrics on; "" for none

	// afterShutdown, when set (by tests), is called once the replicas
	// have shut down, before the summary, while /metrics still serves.
	afterShutdown func()
}

// parseFlags parses and validates args. It returns flag.ErrHelp for -h.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("cronworker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.redisURL, "redis", "", "use the Redis server at this URL (redis://[user:password@]host:port[/db], rediss:// for TLS) instead of an embedded one")
	fs.IntVar(&c.replicas, "replicas", defaultReplicas, "replicas to run in this process; with -redis the default is 1")
	fs.DurationVar(&c.runFor, "for", defaultRunFor, "how long to run before shutting down")
	fs.StringVar(&c.dbPath, "db", "", "SQLite file the jobs write to (default: a new temporary file)")
	fs.BoolVar(&c.stall, "stall", false, "freeze one replica past its lease's TTL, so fencing rejects its late write")
	fs.BoolVar(&c.verbose, "v", false, "log at debug level (skips, heartbeat renewals)")
	fs.StringVar(&c.metrics, "metrics", "", "serve OpenTelemetry metrics in the Prometheus format at http://ADDR/metrics (host:port, e.g. :9464)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	replicasSet := false
	fs.Visit(func(f *flag.Flag) { replicasSet = replicasSet || f.Name == "replicas" })
	if c.redisURL != "" && !replicasSet {
		c.replicas = 1
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q: cronworker takes flags only (see -h)", fs.Arg(0))
	case c.replicas < 1 || c.replicas > maxReplicas:
		return c, fmt.Errorf("-replicas must be between 1 and %d, got %d", maxReplicas, c.replicas)
	case c.runFor < minRunFor:
		return c, fmt.Errorf("-for must be at least %s, got %s", minRunFor, c.runFor)
	case c.stall && c.replicas < 2:
		return c, fmt.Errorf("-stall needs at least 2 replicas in this process (another one must take over the frozen one's lease), got -replicas %d", c.replicas)
	case c.metrics != "" && !validListenAddr(c.metrics):
		return c, fmt.Errorf("-metrics must be host:port or :port (e.g. :9464), got %q", c.metrics)
	case c.stall && c.runFor < minStallRun:
		return c, fmt.Errorf("-stall needs -for of at least %s (the stall begins about %s in and lasts %s), got %s", minStallRun, stallAfter, stallFor, c.runFor)
	}
	return c, nil
}

// run is the whole program; main only adds the signals and the exit.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "cronworker: %v\n", err)
		return exitUsage
	}
	ok, err := work(ctx, c, stdout, newLogHandler(stderr, c.verbose))
	if err != nil {
		fmt.Fprintf(stderr, "cronworker: %v\n", err)
		return exitFail
	}
	if !ok {
		return exitFail
	}
	return exitOK
}

// work starts Redis, the database and the replicas, lets them run until
// c.runFor has passed or ctx is done, shuts them down and prints the
// summary. It reports whether the run was clean: no duplicates and no
// lease left held.
func work(ctx context.Context, c config, stdout io.Writer, logs slog.Handler) (bool, error) {
	log := slog.New(logs)
	start := time.Now()

	redis, err := startRedis(c.redisURL)
	if err != nil {
		return false, err
	}
	defer redis.close()
	log.Info("redis", slog.String("server", redis.display))

	dbPath, err := databasePath(c.dbPath)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(stdout, "database: %s\n", dbPath)
	fences, err := fencing.NewTable(fencing.DefaultTableName, fencing.SQLite)
	if err != nil {
		return false, err
	}
	if err := setupDB(ctx, dbPath, fences, c.redisURL == ""); err != nil {
		return false, fmt.Errorf("-db %s: %w", dbPath, err)
	}

	var telemetry func(replica string) ([]scheduler.Option, error)
	if c.metrics != "" {
		m, err := startMetrics(c.metrics, log)
		if err != nil {
			return false, err
		}
		defer m.close()
		fmt.Fprintf(stdout, "metrics: %s\n", m.url)
		telemetry = m.schedulerOptions
	}

	st := newStall(c.stall, start)
	var replicas []*replica
	defer func() {
		for _, r := range replicas {
			r.close()
		}
	}()
	for i := 1; i <= c.replicas; i++ {
		name := fmt.Sprintf("replica-%d", i)
		if c.redisURL != "" { // processes share the server: tell them apart
			name = fmt.Sprintf("%d/replica-%d", os.Getpid(), i)
		}
		var sopts []scheduler.Option
		if telemetry != nil {
			if sopts, err = telemetry(name); err != nil {
				return false, fmt.Errorf("%s: %w", name, err)
			}
		}
		r, err := newReplica(replicaConfig{
			name: name, log: slog.New(logs),
			redis: redis, dbPath: dbPath, fences: fences, stall: st, schedulerOpts: sopts,
		})
		if err != nil {
			return false, fmt.Errorf("%s: %w", name, err)
		}
		replicas = append(replicas, r)
	}
	for _, r := range replicas {
		if err := r.start(); err != nil {
			shutdownAll(log, replicas)
			return false, fmt.Errorf("%s: %w", r.name, err)
		}
	}
	log.Info("running; Ctrl-C stops early", slog.Int("replicas", len(replicas)), logattr.Duration("for", c.runFor))

	timer := time.NewTimer(c.runFor)
	select {
	case <-ctx.Done():
		log.Info("signal received; shutting down")
	case <-timer.C:
		log.Info("time is up; shutting down")
	}
	timer.Stop()
	shutdownErr := shutdownAll(log, replicas)
	if c.afterShutdown != nil {
		c.afterShutdown()
	}

	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := summarize(sctx, dbPath, replicas, start.Add(-tickInterval), time.Now().Add(tickInterval))
	if err != nil {
		return false, err
	}
	if err := s.print(stdout); err != nil {
		return false, err
	}
	if shutdownErr != nil {
		return false, shutdownErr
	}
	return s.dupTotal == 0 && len(s.held) == 0, nil
}

// shutdownAll shuts every replica down at once, each bounded by
// shutdownGrace, and waits for all of them.
func shutdownAll(log *slog.Logger, replicas []*replica) error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	errs := make([]error, len(replicas))
	var wg sync.WaitGroup
	for i, r := range replicas {
		wg.Go(func() {
			if err := r.shutdown(ctx); err != nil {
				errs[i] = fmt.Errorf("%s: %w", r.name, err)
			}
		})
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err == nil {
		log.Info("all replicas shut down")
	}
	return err
}

// validListenAddr reports whether addr is host:port with a numeric port.
func validListenAddr(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 0 && n <= 65535
}

// databasePath returns path, or a new temporary file when path is empty.
func databasePath(path string) (string, error) {
	if path != "" {
		return path, nil
	}
	f, err := os.CreateTemp("", "cronworker-*.db")
	if err != nil {
		return "", fmt.Errorf("create a temporary database: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return f.Name(), nil
}

// setupDB creates the tables once, before the replicas open the file.
func setupDB(ctx context.Context, path string, fences *fencing.Table, embedded bool) error {
	db, err := openDB(path)
	if err != nil {
		return err
	}
	defer db.Close()
	return prepareDB(ctx, db, fences, embedded)
}

// newLogHandler returns the tint handler every logger shares, in colour
// when w is a terminal. Records are written whole, under one lock.
func newLogHandler(w io.Writer, verbose bool) slog.Handler {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	noColor := true
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			noColor = false
		}
	}
	return tint.NewTextHandler(&lockedWriter{w: w}, &tint.Options{Level: level, TimeFormat: "15:04:05.000", NoColor: noColor})
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
