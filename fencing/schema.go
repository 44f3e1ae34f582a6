package fencing

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Every replica of a service runs Create when it starts, so many run it at
// once. This file is what makes that safe.
//
// PostgreSQL: two sessions that both run CREATE TABLE IF NOT EXISTS for a
// missing table both go on to insert the table's row type into pg_type, and
// all but the first fail on its unique index (SQLSTATE 23505) once the
// first commits; ALTER TABLE ... ADD COLUMN IF NOT EXISTS has the same
// window. IF NOT EXISTS checks, it does not lock. So the whole schema
// change is one DO block, one statement and so one transaction (or part of
// the caller's), that first takes a transaction-scoped advisory lock on a
// key derived from the table name: the sessions take turns, and each one
// after the first finds the table, and the column, made and committed. The
// lock ends with the transaction; a crashed session's lock ends with it.
//
// SQLite: a schema change that runs on its own (autocommit) takes the
// database write lock as it starts, as BEGIN IMMEDIATE would, and a
// statement prepared against a schema that has changed since is prepared
// again (SQLITE_SCHEMA) before it runs: the second CREATE TABLE IF NOT
// EXISTS sees the first one's table, the second ADD COLUMN fails as a
// duplicate column, which Migrate takes as success. What is left is the
// wait for the write lock: SQLite waits only as long as the connection's
// busy timeout (none by default) and then fails with SQLITE_BUSY. BEGIN
// IMMEDIATE would not remove that wait, and it needs one connection for
// several statements while Create takes any Execer (a pool may run each
// statement on another connection). Each statement being idempotent, Create
// and Migrate retry SQLITE_BUSY with backoff instead, for up to
// schemaBusyWait.

// schemaBusyWait bounds how long Create and Migrate retry a SQLite schema
// change refused with SQLITE_BUSY: far longer than a fence table's schema
// change holds the write lock, so only a database held by something else
// for that long makes them fail.
const schemaBusyWait = 10 * time.Second

// Backoff between retries of a busy SQLite schema change.
const (
	schemaBusyInitial     = 5 * time.Millisecond
	schemaBusyMaxInterval = 250 * time.Millisecond
)

// schemaLockKey is the PostgreSQL advisory lock key under which the fence
// table called name is created and migrated: FNV-1a (64 bits) of
// "cronguard/fencing:" and the name as given to NewTable. Spell the name
// the same way on every replica ("fences" and "public.fences" are one table
// but two keys).
func schemaLockKey(name string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("cronguard/fencing:" + name))
	return int64(h.Sum64())
}

// schemaStatements returns the statements Create and Migrate run for the
// table quoted (called name in NewTable).
//
// PostgreSQL: each is one DO block that takes the table's advisory lock
// first. Create's makes the table and then migrates it; the migration looks
// the column up in the catalog and runs ALTER TABLE only when it is
// missing, so that a table already migrated is not locked (ALTER TABLE
// takes an ACCESS EXCLUSIVE lock even when IF NOT EXISTS finds the
// column). A missing table makes to_regclass return NULL and the ALTER
// TABLE fail with "relation ... does not exist".
//
// SQLite has neither IF NOT EXISTS for columns nor procedural blocks:
// Create runs the CREATE TABLE and then Migrate's ALTER TABLE, each on its
// own, and Migrate takes the ALTER TABLE's "duplicate column name" error as
// success. SQLite raises that error while preparing the statement, before
// it takes any lock.
func schemaStatements(name, quoted string, d Dialect) (create, migrate string) {
	createTable := "CREATE TABLE IF NOT EXISTS " + quoted + " (" +
		"resource TEXT NOT NULL PRIMARY KEY, " +
		"token BIGINT NOT NULL CHECK (token > 0), " +
		occurrenceColumn + ")"
	addColumn := "ALTER TABLE " + quoted + " ADD COLUMN "
	if d == SQLite {
		return createTable, addColumn + occurrenceColumn
	}
	lock := fmt.Sprintf("PERFORM pg_catalog.pg_advisory_xact_lock(CAST(%d AS bigint));", schemaLockKey(name))
	// quoted holds only [a-z0-9_] identifiers in double quotes (see
	// quoteTableName), so it is safe inside a single-quoted literal.
	addMissing := "IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute" +
		" WHERE attrelid = to_regclass('" + quoted + "') AND attname = 'occurrence' AND NOT attisdropped)" +
		" THEN " + addColumn + "IF NOT EXISTS " + occurrenceColumn + ";" +
		" END IF;"
	block := func(body string) string { return "DO $fencing$ BEGIN " + body + " END $fencing$" }
	return block(lock + " " + createTable + "; " + addMissing), block(lock + " " + addMissing)
}

// execSchema runs the schema change stmt on db. With SQLite it retries
// SQLITE_BUSY with backoff for up to schemaBusyWait, or until ctx is done
// (the error then wraps ctx's and the last SQLITE_BUSY); done, when not
// nil, turns an error into success (Migrate's duplicate column). Every
// other error is returned at once.
func (t *Table) execSchema(ctx context.Context, db Execer, stmt string, done func(error) bool) error {
	var busy error // the last SQLITE_BUSY
	attempt := func() error {
		_, err := db.ExecContext(ctx, stmt)
		switch {
		case err == nil || done != nil && done(err):
			return nil
		case t.dialect == SQLite && isBusy(err):
			busy = err
			return err
		default:
			return backoff.Permanent(err)
		}
	}
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(schemaBusyInitial),
		backoff.WithMaxInterval(schemaBusyMaxInterval),
		backoff.WithMaxElapsedTime(schemaBusyWait),
	)
	err := backoff.Retry(attempt, backoff.WithContext(b, ctx))
	if err != nil && busy != nil && err != busy {
		return fmt.Errorf("%w; still busy after retries: %w", err, busy)
	}
	return err
}

// isBusy reports whether err is SQLite's SQLITE_BUSY or SQLITE_LOCKED: the
// write lock was held by another connection for longer than the busy
// timeout. Drivers that expose the result code (modernc.org/sqlite: Code)
// are asked; the others are recognised by SQLite's own messages.
func isBusy(err error) bool {
	const sqliteBusy, sqliteLocked = 5, 6
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		primary := coded.Code() & 0xff
		return primary == sqliteBusy || primary == sqliteLocked
	}
	msg := err.Error()
	return strings.Contains(msg, "database is locked") || strings.Contains(msg, "database table is locked")
}
