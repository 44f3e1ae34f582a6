// Command replica is one replica of the fault harness (package faults): a
// cronguard scheduler running the harness's jobs against Redis (through the
// address given, normally the replica's own fault proxy), with every job
// run writing through fencing.AdvanceOnceFromContext into PostgreSQL (one
// resource per job), and every step recorded in a JSON Lines history
// (package faults/history).
//
//	replica -name r1 -redis 127.0.0.1:7001 -dsn postgres://... -history r1.jsonl -seed 42
//	replica -init -dsn postgres://...   # create the tables and exit
//
// SIGTERM or SIGINT shuts the scheduler down and exits 0. The harness
// kills it with SIGKILL and pauses it with SIGSTOP as faults.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v4"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/faults"
	"github.com/cronguard/cronguard/faults/history"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/scheduler"
)

// connectFor bounds how long a (re)started replica waits for Redis.
const connectFor = 60 * time.Second

// ReadyLine is printed on stdout once the scheduler has started.
const ReadyLine = "ready"

// shutdownFor bounds the scheduler's Shutdown on SIGTERM.
const shutdownFor = 5 * time.Second

func main() {
	var (
		name     = flag.String("name", "", "replica name (instance ID), e.g. r1")
		addr     = flag.String("redis", "", "Redis host:port")
		dsn      = flag.String("dsn", "", "PostgreSQL DSN (pgx)")
		histPath = flag.String("history", "", "history file (JSON Lines, appended)")
		seed     = flag.Int64("seed", 1, "seed of the jobs' run lengths (mixed with name and pid)")
		initDB   = flag.Bool("init", false, "create the tables in -dsn and exit")
	)
	flag.Parse()
	if err := run(*name, *addr, *dsn, *histPath, *seed, *initDB); err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		os.Exit(1)
	}
}

func run(name, addr, dsn, histPath string, seed int64, initDB bool) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if initDB {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return history.CreateTables(ctx, db)
	}
	if name == "" || addr == "" || histPath == "" {
		return errors.New("-name, -redis and -history are required")
	}
	db.SetMaxOpenConns(8)

	hist, err := history.Create(histPath, name)
	if err != nil {
		return err
	}
	defer hist.Close()
	_ = hist.Write(history.Event{Kind: history.Boot})

	base := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	log := base.With("replica", name) // the scheduler adds the attribute to its own records
	client, err := connect(addr)
	if err != nil {
		return err
	}
	defer client.Close()
	inner, err := redislease.New(client, redislease.WithLogger(log))
	if err != nil {
		return err
	}
	store := newRecordingStore(inner, hist, scheduler.JobKeyPrefix)

	s, err := scheduler.New(store,
		scheduler.WithInstanceID(name),
		scheduler.WithLogger(base),
		scheduler.WithObserver(func(e scheduler.Event) { observe(hist, e) }))
	if err != nil {
		return err
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	w := &worker{hist: hist, db: db, name: name,
		rng: rand.New(rand.NewPCG(uint64(seed), h.Sum64()^uint64(os.Getpid())))}
	for _, spec := range faults.Jobs {
		opts := []scheduler.JobOption{scheduler.WithTTL(spec.TTL)}
		if spec.Retry >= 2 {
			opts = append(opts, scheduler.WithRetry(spec.Retry, backoff.NewConstantBackOff(spec.RetryAfter)))
		}
		if err := s.Register(spec.Name, scheduler.Every(spec.Every), w.fn(spec), opts...); err != nil {
			return err
		}
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	if err := s.Start(); err != nil {
		return err
	}
	_ = hist.Write(history.Event{Kind: history.Ready})
	fmt.Println(ReadyLine) // the harness waits for this line
	<-sigs
	_ = hist.Write(history.Event{Kind: history.Shutdown})
	ctx, cancel := context.WithTimeout(context.Background(), shutdownFor)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		log.Warn("shutdown", "error", err)
	}
	return nil
}

// connect makes the rueidis client, retrying while Redis (or the proxy in
// front of it) refuses: a replica restarted during a fault must come up.
func connect(addr string) (rueidis.Client, error) {
	deadline := time.Now().Add(connectFor)
	for {
		c, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress:      []string{addr},
			DisableCache:     true,
			Dialer:           net.Dialer{Timeout: time.Second},
			ConnWriteTimeout: time.Second,
		})
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("connect to redis %s: %w", addr, err)
		}
		time.Sleep(100 * time.Millisecond) // polling an unreachable server: nothing to await
	}
}

// observe records the scheduler's skips, lease losses, interrupted
// attempts and given up occurrences.
func observe(hist *history.Writer, e scheduler.Event) {
	ev := history.Event{Job: e.Job, Occurrence: e.Occurrence.UnixMilli(), Fence: uint64(e.Fence), Lease: e.ShortLeaseID}
	switch e.Kind {
	case scheduler.EventSkipped:
		ev.Kind, ev.Reason = history.Skip, e.Reason.String()
	case scheduler.EventLeaseLost:
		ev.Kind, ev.Cause = history.LeaseLost, causeOf(e.Err)
		ev.Err = e.Err.Error()
	case scheduler.EventInterrupted:
		ev.Kind, ev.Attempt, ev.Cause = history.Interrupted, e.Attempt, causeOf(e.Err)
		if e.Err != nil {
			ev.Err = e.Err.Error()
		}
	case scheduler.EventGivenUp:
		ev.Kind, ev.Attempt = history.GivenUp, e.Attempt
	default:
		return
	}
	_ = hist.Write(ev)
}
