package fencing

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// occurrenceColumn is the definition of the occurrence column, in CREATE
// TABLE and in ALTER TABLE ... ADD COLUMN alike. It is nullable: rows
// written by Advance, and rows from before the column existed, hold NULL.
const occurrenceColumn = "occurrence BIGINT CHECK (occurrence > 0)"

// Migrate adds the occurrence column, which AdvanceOnce needs, to a fence
// table made before the column existed, and does nothing to a table that
// has it. Existing rows keep their tokens and get a NULL occurrence, which
// AdvanceOnce treats as earlier than every occurrence (see AdvanceOnce).
// Advance works the same before and after.
//
// Run it before the first AdvanceOnce (Create runs it too). Like Create,
// it is safe to call from every replica at once: in PostgreSQL it holds
// the table's advisory lock (see Create), in SQLite it retries
// SQLITE_BUSY. In PostgreSQL the column is looked up first, so a migrated
// table is not locked; adding the column takes a brief ACCESS EXCLUSIVE
// lock, which waits for open transactions on the table. The table must
// exist. The SQL, for those who run their own migrations, is in the
// package documentation.
func (t *Table) Migrate(ctx context.Context, db Execer) error {
	if err := t.check(db); err != nil {
		return err
	}
	var done func(error) bool
	if t.dialect == SQLite {
		done = isDuplicateOccurrenceColumn
	}
	if err := t.execSchema(ctx, db, t.migrate, done); err != nil {
		return fmt.Errorf("fencing: migrate table %s: add the occurrence column: %w", t.name, err)
	}
	return nil
}

// isDuplicateOccurrenceColumn reports whether err is SQLite's refusal to add
// the occurrence column a second time. The text is SQLite's own (alter.c),
// passed on unchanged by its Go drivers.
func isDuplicateOccurrenceColumn(err error) bool {
	return strings.Contains(err.Error(), "duplicate column name: occurrence")
}

// isMissingOccurrenceColumn reports whether err is the database saying the
// fence table has no occurrence column: PostgreSQL's undefined_column
// (SQLSTATE 42703) naming it, or SQLite's "no column named occurrence" /
// "no such column: ...occurrence".
func isMissingOccurrenceColumn(err error) bool {
	msg := err.Error()
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		return coded.SQLState() == "42703" && strings.Contains(msg, `"occurrence"`)
	}
	return strings.Contains(msg, `column "occurrence"`) && strings.Contains(msg, "does not exist") ||
		strings.Contains(msg, "no column named occurrence") ||
		strings.Contains(msg, "no such column: occurrence") ||
		strings.Contains(msg, "no such column: fence.occurrence")
}

// notMigrated wraps err, the database's refusal of a statement naming the
// occurrence column, with ErrNotMigrated and what to do about it.
func (t *Table) notMigrated(op string, err error) error {
	return fmt.Errorf("fencing: %s: %w: run Table.Migrate or Table.Create (or fencing.CreateTable) once, "+
		"or ALTER TABLE %s ADD COLUMN %s: %w", op, ErrNotMigrated, t.name, occurrenceColumn, err)
}
