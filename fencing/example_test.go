package fencing_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"

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
