package scheduler_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/lease/memory"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/scheduler"
)

// A replicated worker: every replica runs this program; each night at 02:00
// UTC exactly one of them writes the invoices, guarded by its fencing token,
// and a replica that is told to stop lets its job finish (or cancels it)
// and releases the lease. (Compiled, not run: it needs a Redis server and
// waits for a signal.)
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:  []string{"127.0.0.1:6379"},
		DisableCache: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	store, err := redislease.New(client)
	if err != nil {
		log.Fatal(err)
	}

	// Your service's database; PostgreSQL through the pgx driver here
	// (import _ "github.com/jackc/pgx/v5/stdlib").
	db, err := sql.Open("pgx", os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	fences, err := fencing.NewTable(fencing.DefaultTableName, fencing.Postgres)
	if err != nil {
		log.Fatal(err)
	}
	if err := fences.Create(ctx, db); err != nil {
		log.Fatal(err)
	}

	s, err := scheduler.New(store)
	if err != nil {
		log.Fatal(err)
	}
	err = s.Register("nightly-invoices", scheduler.Cron("0 2 * * *"), func(ctx context.Context) error {
		run, _ := scheduler.RunFromContext(ctx)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		// Refused with fencing.ErrStale if a newer lease holder has written.
		if err := fences.AdvanceFromContext(ctx, tx, "invoices"); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO invoices (day) VALUES ($1)`, run.Occurrence.Format(time.DateOnly)); err != nil {
			return err
		}
		return tx.Commit()
	}, scheduler.WithTTL(time.Minute), scheduler.WithTimeout(30*time.Minute))
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Start(); err != nil {
		log.Fatal(err)
	}

	<-ctx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Shutdown(shutdownCtx); err != nil {
		log.Print(err) // names the jobs that did not stop in time
	}
}

// A job on an epoch-aligned one-minute grid, driven by a fake clock: the
// run's context carries the occurrence and the fencing token.
func ExampleScheduler_Register() {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC))
	store, err := memory.New(memory.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	s, err := scheduler.New(store,
		scheduler.WithClock(clock),
		scheduler.WithLogger(slog.New(slog.DiscardHandler)),
	)
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan struct{})
	err = s.Register("report", scheduler.Every(time.Minute), func(ctx context.Context) error {
		run, _ := scheduler.RunFromContext(ctx)
		fence, _ := fencing.FromContext(ctx)
		fmt.Println(run.Job, run.Occurrence.Format(time.RFC3339), fence)
		close(done)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Start(); err != nil {
		log.Fatal(err)
	}
	_ = clock.BlockUntilContext(context.Background(), 1) // the job's timer
	clock.Advance(30 * time.Second)
	<-done
	if err := s.Shutdown(context.Background()); err != nil {
		log.Fatal(err)
	}
	// Output: report 2026-03-01T12:01:00Z 177236646000000
}
