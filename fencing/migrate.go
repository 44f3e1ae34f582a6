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

// migrateStatement returns the statement that adds the occurrence column to
// the table quoted when it lacks it.
//
// PostgreSQL: a DO block that looks the column up in the catalog and runs
// ALTER TABLE only when it is missing, so that a table already migrated is
// not locked (ALTER TABLE takes an ACCESS EXCLUSIVE lock even when IF NOT
// EXISTS finds the column). IF NOT EXISTS still covers two services
// migrating at once. A missing table makes to_regclass return NULL and the
// ALTER TABLE fail with "relation ... does not exist".
//
// SQLite has neither IF NOT EXISTS for columns nor procedural blocks: the
// ALTER TABLE is run as it is, and Migrate takes its "duplicate column name"
// error as success. SQLite raises that error while preparing the statement,
// before it takes any lock.
func migrateStatement(quoted string, d Dialect) string {
	alter := "ALTER TABLE " + quoted + " ADD COLUMN "
	if d == SQLite {
		return alter + occurrenceColumn
	}
	// quoted holds only [a-z0-9_] identifiers in double quotes (see
	// quoteTableName), so it is safe inside a single-quoted literal.
	return "DO $fencing$ BEGIN" +
		" IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute" +
		" WHERE attrelid = to_regclass('" + quoted + "') AND attname = 'occurrence' AND NOT attisdropped)" +
		" THEN " + alter + "IF NOT EXISTS " + occurrenceColumn + ";" +
		" END IF; END $fencing$"
}

// Migrate adds the occurrence column, which AdvanceOnce needs, to a fence
// table made before the column existed, and does nothing to a table that
// has it. Existing rows keep their tokens and get a NULL occurrence, which
// AdvanceOnce treats as earlier than every occurrence (see AdvanceOnce).
// Advance works the same before and after.
//
// Run it once per table, before the first AdvanceOnce (Create runs it too).
// In PostgreSQL the column is looked up first, so a migrated table is not
// locked; adding the column takes a brief ACCESS EXCLUSIVE lock, which
// waits for open transactions on the table. The table must exist. The SQL,
// for those who run their own migrations, is in the package documentation.
func (t *Table) Migrate(ctx context.Context, db Execer) error {
	if err := t.check(db); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, t.migrate)
	if err != nil && !(t.dialect == SQLite && isDuplicateOccurrenceColumn(err)) {
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
