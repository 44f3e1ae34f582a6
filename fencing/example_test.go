package fencing_test

import (
	"context"
	"database/sql"
	"errors"
	"log"
	"os"
	"time"

	"github.com/cronguard/cronguard/fencing"
)

// openDatabase stands for your service's database handle: here PostgreSQL
// through the pgx driver (import _ "github.com/jackc/pgx/v5/stdlib").
func openDatabase() *sql.DB {
	db, err := sql.Open("pgx", os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	return db
}

// A job checks its fencing token and makes its own write in one
// transaction. When a stale holder (token 7, after token 8 wrote) wakes up,
// its transaction is refused with ErrStale and rolled back, write included.
func Example() {
	ctx := context.Background()
	db := openDatabase()
	defer db.Close()

	fences, err := fencing.NewTable("fences", fencing.Postgres)
	if err != nil {
		log.Fatal(err)
	}
	if err := fences.Create(ctx, db); err != nil { // once, or in your migrations
		log.Fatal(err)
	}

	// writeReport is the job's body; ctx carries its lease's token (the
	// scheduler puts it there).
	writeReport := func(ctx context.Context, total int) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() // does nothing after Commit
		if err := fences.AdvanceFromContext(ctx, tx, "report:2024-06-01"); err != nil {
			return err // errors.Is(err, fencing.ErrStale): a newer holder has written
		}
		_, err = tx.ExecContext(ctx,
			"INSERT INTO reports (day, total) VALUES ($1, $2) ON CONFLICT (day) DO UPDATE SET total = excluded.total",
			"2024-06-01", total)
		if err != nil {
			return err
		}
		return tx.Commit()
	}

	_ = writeReport(fencing.NewContext(ctx, 7), 100) // nil
	_ = writeReport(fencing.NewContext(ctx, 8), 120) // nil
	err = writeReport(fencing.NewContext(ctx, 7), 999)
	log.Println(errors.Is(err, fencing.ErrStale)) // true: 7 woke from a long pause; the total stays 120
}

// The simple case on PostgreSQL: the default table, one call in the job's
// transaction.
func ExampleAdvance() {
	run := func(ctx context.Context, db *sql.DB, token fencing.Token) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := fencing.Advance(ctx, tx, "billing:invoices", token); err != nil {
			return err // errors.Is(err, fencing.ErrStale): a newer holder has written
		}
		if _, err := tx.ExecContext(ctx, "UPDATE invoices SET sent = true WHERE due < now()"); err != nil {
			return err
		}
		return tx.Commit()
	}
	_ = run // with a *sql.DB opened with the "pgx" driver, after fencing.CreateTable(ctx, db)
}

// Fencing rows of your own: a conditional UPDATE that touches the row only
// for a current token, and CheckResult to read the verdict (ErrStale when
// no row was written).
func ExampleCheckResult() {
	ctx := context.Background()
	db := openDatabase()
	defer db.Close()

	update := func(token fencing.Token, balance int) error {
		res, err := db.ExecContext(ctx,
			"UPDATE accounts SET balance = $1, last_token = $2 WHERE id = $3 AND last_token <= $2",
			balance, int64(token), "acme")
		if err != nil {
			return err
		}
		return fencing.CheckResult(res)
	}
	log.Println(update(6, 150)) // <nil> when the row's last token was at most 6
	log.Println(update(4, 0))   // fencing: stale token: no row was written
}

// One effect per occurrence: after the lease store lost its round records,
// a second replica runs the 09:00 occurrence again with a greater token.
// The run context carries the token and the occurrence (the scheduler puts
// both there); AdvanceOnceFromContext refuses the second run with
// ErrDuplicate and its transaction rolls back, so the report is sent once.
func ExampleTable_AdvanceOnceFromContext() {
	ctx := context.Background()
	db := openDatabase()
	defer db.Close()
	fences, err := fencing.NewTable("fences", fencing.Postgres)
	if err != nil {
		log.Fatal(err)
	}

	// sendReport is the job's body.
	sendReport := func(ctx context.Context) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := fences.AdvanceOnceFromContext(ctx, tx, "job:daily-report"); err != nil {
			return err
		}
		occurrence, _ := fencing.OccurrenceFromContext(ctx)
		if _, err := tx.ExecContext(ctx, "INSERT INTO sent (occurrence) VALUES ($1)", occurrence); err != nil {
			return err
		}
		return tx.Commit()
	}
	run := func(token fencing.Token, occurrence time.Time) context.Context {
		return fencing.NewOccurrenceContext(fencing.NewContext(ctx, token), occurrence)
	}

	nine := time.Date(2024, 6, 1, 9, 0, 0, 0, time.UTC)
	_ = sendReport(run(5, nine))                      // nil: sent
	err = sendReport(run(7, nine))                    // the same occurrence, run again
	log.Println(errors.Is(err, fencing.ErrDuplicate)) // true: not sent twice
	_ = sendReport(run(8, nine.Add(24*time.Hour)))    // nil: the next day's
}

// A fence table made before the occurrence column existed keeps working
// for Advance; AdvanceOnce asks for the migration (ErrNotMigrated), which
// keeps the rows.
func ExampleTable_Migrate() {
	ctx := context.Background()
	db := openDatabase()
	defer db.Close()
	fences, err := fencing.NewTable("fences", fencing.Postgres)
	if err != nil {
		log.Fatal(err)
	}
	if err := fences.Migrate(ctx, db); err != nil { // idempotent; takes no table lock once migrated
		log.Fatal(err)
	}
}
