package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/cronguard/cronguard/fencing"
)

// The SQLite database every replica writes to. Each replica opens its own
// *sql.DB on the file, as separate processes would.
//
// runs has no unique constraint on (job, occurrence_ms) on purpose: the
// summary counts duplicates from the rows, so a broken exclusion would show
// up instead of being hidden by the database.
const schema = `
CREATE TABLE IF NOT EXISTS runs (
	id            INTEGER PRIMARY KEY,
	job           TEXT    NOT NULL,
	occurrence_ms INTEGER NOT NULL,
	replica       TEXT    NOT NULL,
	fence         INTEGER NOT NULL,
	written_ms    INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_occurrence ON runs (job, occurrence_ms);`

// fenceResource is the fencing resource a job's writes advance: one per job,
// the same on every replica.
func fenceResource(job string) string { return "cronworker/" + job }

// openDB opens the SQLite file at path in WAL mode, with write transactions
// that begin with BEGIN IMMEDIATE and wait up to 5s on a busy database, so
// that replicas writing at once take turns instead of failing with
// SQLITE_BUSY.
func openDB(path string) (*sql.DB, error) {
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("-db %q: the path must not contain '?' or '#'", path)
	}
	dsn := "file:" + path + "?_txlock=immediate&_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// prepareDB creates the runs table and the fence table. With an embedded
// Redis, whose fence counters start again at 1 on every start, it refuses a
// file that already holds fence tokens: every write would be rejected as
// stale, which is fencing working as intended, but not a useful demo.
func prepareDB(ctx context.Context, db *sql.DB, fences *fencing.Table, embedded bool) error {
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("create runs table: %w", err)
	}
	if err := fences.Create(ctx, db); err != nil {
		return err
	}
	if !embedded {
		return nil
	}
	var n int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+fences.Name()).Scan(&n)
	if err != nil {
		return fmt.Errorf("count fence rows: %w", err)
	}
	if n > 0 {
		return errors.New("the database already holds fence tokens from an earlier run; the embedded Redis starts its fence counters at 1 again, so every write would be rejected as stale: use a new -db file (the default) or a persistent -redis")
	}
	return nil
}

// writeRun records one run of job for its occurrence, fenced: the token
// advance and the row commit together or not at all. It returns an error
// wrapping fencing.ErrStale when a newer lease holder has written for the
// job since this run's lease was acquired.
func writeRun(ctx context.Context, db *sql.DB, fences *fencing.Table, job string, occurrence time.Time, replica string, fence fencing.Token) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	if err := fences.Advance(ctx, tx, fenceResource(job), fence); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx,
		`INSERT INTO runs (job, occurrence_ms, replica, fence, written_ms) VALUES (?, ?, ?, ?, ?)`,
		job, occurrence.UnixMilli(), replica, int64(fence), time.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("insert run: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// runRow is one (job, occurrence, replica) group of rows.
type runRow struct {
	job        string
	occurrence int64 // Unix ms
	replica    string
	rows       int
}

// readRuns returns the rows for occurrences in [from, to], grouped by job,
// occurrence and replica.
func readRuns(ctx context.Context, db *sql.DB, from, to time.Time) ([]runRow, error) {
	rows, err := db.QueryContext(ctx,
		`SELECT job, occurrence_ms, replica, COUNT(*) FROM runs
		 WHERE occurrence_ms BETWEEN ? AND ?
		 GROUP BY job, occurrence_ms, replica ORDER BY job, occurrence_ms`,
		from.UnixMilli(), to.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("read runs: %w", err)
	}
	defer rows.Close()
	var out []runRow
	for rows.Next() {
		var r runRow
		if err := rows.Scan(&r.job, &r.occurrence, &r.replica, &r.rows); err != nil {
			return nil, fmt.Errorf("read runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read runs: %w", err)
	}
	return out, nil
}
