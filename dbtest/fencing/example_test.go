package fencing_test

// The fencing package's examples, run here against SQLite with their
// output checked (the copies in the fencing package are compiled only, so
// that its module needs no SQL driver).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"time"

	_ "modernc.org/sqlite"

	"github.com/cronguard/cronguard/fencing"
)

// A job checks its fencing token and makes its own write in one
// transaction. When a stale holder (token 7, after token 8 wrote) wakes up,
// its transaction is refused and rolled back, write included.
func Example() {
	ctx := context.Background()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // every connection to :memory: is a database of its own

	fences, err := fencing.NewTable("fences", fencing.SQLite)
	if err != nil {
		log.Fatal(err)
	}
	if err := fences.Create(ctx, db); err != nil {
		log.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE reports (day TEXT PRIMARY KEY, total INTEGER NOT NULL)"); err != nil {
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
			return err
		}
		_, err = tx.ExecContext(ctx,
			"INSERT INTO reports (day, total) VALUES (?, ?) ON CONFLICT (day) DO UPDATE SET total = excluded.total",
			"2024-06-01", total)
		if err != nil {
			return err
		}
		return tx.Commit()
	}

	fmt.Println("holder 7 writes:", writeReport(fencing.NewContext(ctx, 7), 100))
	fmt.Println("holder 8 writes:", writeReport(fencing.NewContext(ctx, 8), 120))
	err = writeReport(fencing.NewContext(ctx, 7), 999) // 7 wakes from a long pause
	fmt.Println("holder 7 is stale:", errors.Is(err, fencing.ErrStale))

	var total int
	if err := db.QueryRowContext(ctx, "SELECT total FROM reports WHERE day = ?", "2024-06-01").Scan(&total); err != nil {
		log.Fatal(err)
	}
	fmt.Println("total:", total)
	// Output:
	// holder 7 writes: <nil>
	// holder 8 writes: <nil>
	// holder 7 is stale: true
	// total: 120
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
// for a current token, and CheckResult to read the verdict.
func ExampleCheckResult() {
	ctx := context.Background()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx,
		"CREATE TABLE accounts (id TEXT PRIMARY KEY, balance INTEGER NOT NULL, last_token INTEGER NOT NULL);"+
			"INSERT INTO accounts VALUES ('acme', 100, 5)"); err != nil {
		log.Fatal(err)
	}

	update := func(token fencing.Token, balance int) error {
		res, err := db.ExecContext(ctx,
			"UPDATE accounts SET balance = ?, last_token = ? WHERE id = ? AND last_token <= ?",
			balance, int64(token), "acme", int64(token))
		if err != nil {
			return err
		}
		return fencing.CheckResult(res)
	}
	fmt.Println("token 6:", update(6, 150))
	fmt.Println("token 4:", update(4, 0))
	// Output:
	// token 6: <nil>
	// token 4: fencing: stale token: no row was written
}

// One effect per occurrence: after the lease store lost its round records,
// a second replica runs the 09:00 occurrence again with a greater token.
// The run context carries the token and the occurrence (the scheduler puts
// both there); AdvanceOnceFromContext refuses the second run with
// ErrDuplicate and its transaction rolls back, so the report is sent once.
func ExampleTable_AdvanceOnceFromContext() {
	ctx := context.Background()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	fences, err := fencing.NewTable("fences", fencing.SQLite)
	if err != nil {
		log.Fatal(err)
	}
	if err := fences.Create(ctx, db); err != nil {
		log.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE sent (occurrence TEXT NOT NULL, token INTEGER NOT NULL)"); err != nil {
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
		token, _ := fencing.FromContext(ctx)
		occurrence, _ := fencing.OccurrenceFromContext(ctx)
		if _, err := tx.ExecContext(ctx, "INSERT INTO sent VALUES (?, ?)",
			occurrence.Format("Jan 2 15:04"), int64(token)); err != nil {
			return err
		}
		return tx.Commit()
	}
	run := func(token fencing.Token, occurrence time.Time) context.Context {
		return fencing.NewOccurrenceContext(fencing.NewContext(ctx, token), occurrence)
	}

	nine := time.Date(2024, 6, 1, 9, 0, 0, 0, time.UTC)
	fmt.Println("token 5 at 09:00:", sendReport(run(5, nine)))
	err = sendReport(run(7, nine)) // the same occurrence, run again
	fmt.Println("token 7 at 09:00 is a duplicate:", errors.Is(err, fencing.ErrDuplicate))
	fmt.Println("token 8 the next day:", sendReport(run(8, nine.Add(24*time.Hour))))

	rows, err := db.QueryContext(ctx, "SELECT occurrence, token FROM sent ORDER BY rowid")
	if err != nil {
		log.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var occurrence string
		var token int64
		if err := rows.Scan(&occurrence, &token); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("sent: %s by token %d\n", occurrence, token)
	}
	if err := rows.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// token 5 at 09:00: <nil>
	// token 7 at 09:00 is a duplicate: true
	// token 8 the next day: <nil>
	// sent: Jun 1 09:00 by token 5
	// sent: Jun 2 09:00 by token 8
}

// A fence table made before the occurrence column existed keeps working
// for Advance; AdvanceOnce asks for the migration, which keeps the rows.
func ExampleTable_Migrate() {
	ctx := context.Background()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	// The table as an older Create made it.
	if _, err := db.ExecContext(ctx,
		"CREATE TABLE fences (resource TEXT NOT NULL PRIMARY KEY, token BIGINT NOT NULL CHECK (token > 0))"); err != nil {
		log.Fatal(err)
	}
	fences, err := fencing.NewTable("fences", fencing.SQLite)
	if err != nil {
		log.Fatal(err)
	}
	nine := time.Date(2024, 6, 1, 9, 0, 0, 0, time.UTC)

	fmt.Println("advance:", fences.Advance(ctx, db, "job:daily-report", 5))
	err = fences.AdvanceOnce(ctx, db, "job:daily-report", 5, nine)
	fmt.Println("advance once needs the migration:", errors.Is(err, fencing.ErrNotMigrated))
	fmt.Println("migrate:", fences.Migrate(ctx, db))
	fmt.Println("advance once:", fences.AdvanceOnce(ctx, db, "job:daily-report", 5, nine))
	// Output:
	// advance: <nil>
	// advance once needs the migration: true
	// migrate: <nil>
	// advance once: <nil>
}
