package fencing_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
)

// oldTableDDL is the fence table as Create made it before the occurrence
// column existed.
const oldTableDDL = "CREATE TABLE IF NOT EXISTS %s (resource TEXT NOT NULL PRIMARY KEY, token BIGINT NOT NULL CHECK (token > 0))"

// mustNewTable is NewTable for a name the test knows to be valid.
func mustNewTable(t *testing.T, name string, d fencing.Dialect) *fencing.Table {
	t.Helper()
	table, err := fencing.NewTable(name, d)
	require.NoError(t, err)
	return table
}

// quoteName double-quotes each dot-separated part of name.
func quoteName(name string) string {
	return `"` + strings.ReplaceAll(name, ".", `"."`) + `"`
}

func TestTable_Migrate_OldTable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, _ *fencing.Table) {
		ctx := t.Context()
		_, err := db.ExecContext(ctx, fmt.Sprintf(oldTableDDL, "fences_v1"))
		require.NoError(t, err)
		table := mustNewTable(t, "fences_v1", b.dialect)

		// Before the migration: Advance works, AdvanceOnce says what to do.
		require.NoError(t, advanceTx(t, db, table, "report", 5))
		require.NoError(t, advanceTx(t, db, table, "other", 3))
		err = advanceOnceTx(t, db, table, "report", 6, occ)
		require.ErrorIs(t, err, fencing.ErrNotMigrated)
		assert.Contains(t, err.Error(), "Migrate")
		assert.Contains(t, err.Error(), "ADD COLUMN occurrence BIGINT")
		assert.NotErrorIs(t, err, fencing.ErrStale)
		got, _ := recordedIn(t, b, db, "fences_v1", "report")
		assert.Equal(t, int64(5), got, "the refused write changed nothing")

		require.NoError(t, table.Migrate(ctx, db))
		require.NoError(t, table.Migrate(ctx, db), "Migrate is idempotent")
		require.NoError(t, table.Create(ctx, db), "Create on a migrated table does nothing")

		// Old rows keep their tokens and have no occurrence.
		row, _ := readFence(t, b, db, "fences_v1", "report")
		assert.Equal(t, noOccurrence(5), row)

		// No occurrence counts as before every occurrence; tokens still
		// only move forward.
		require.ErrorIs(t, advanceOnceTx(t, db, table, "report", 4, occ), fencing.ErrStale)
		require.NoError(t, advanceOnceTx(t, db, table, "report", 5, occ), "the old token's holder may record an occurrence")
		require.ErrorIs(t, advanceOnceTx(t, db, table, "report", 6, occ), fencing.ErrDuplicate)
		require.NoError(t, advanceOnceTx(t, db, table, "report", 6, occ.Add(time.Hour)))
		row, _ = readFence(t, b, db, "fences_v1", "report")
		assert.Equal(t, at(6, occ.Add(time.Hour)), row)

		// Advance keeps working on the migrated table, and leaves the
		// occurrence as it is.
		require.NoError(t, advanceTx(t, db, table, "other", 4))
		require.NoError(t, advanceTx(t, db, table, "report", 9))
		row, _ = readFence(t, b, db, "fences_v1", "other")
		assert.Equal(t, noOccurrence(4), row)
		row, _ = readFence(t, b, db, "fences_v1", "report")
		assert.Equal(t, at(9, occ.Add(time.Hour)), row, "Advance moves the token, not the occurrence")

		// The column keeps its CHECK.
		_, err = db.ExecContext(ctx, b.rebind("UPDATE fences_v1 SET occurrence = ? WHERE resource = ?"), 0, "report")
		require.Error(t, err, "occurrence must be > 0")
	})
}

func TestTable_Create_MigratesOldTable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, _ *fencing.Table) {
		for _, name := range []string{"fences_v1", "order", b.schema + ".fences_v1_q"} {
			t.Run(name, func(t *testing.T) {
				_, err := db.ExecContext(t.Context(), fmt.Sprintf(oldTableDDL, quoteName(name)))
				require.NoError(t, err)
				table := mustNewTable(t, name, b.dialect)
				require.NoError(t, advanceTx(t, db, table, "report", 5))

				require.NoError(t, table.Create(t.Context(), db))
				require.NoError(t, advanceOnceTx(t, db, table, "report", 5, occ))
				require.ErrorIs(t, advanceOnceTx(t, db, table, "report", 7, occ), fencing.ErrDuplicate)
			})
		}
	})
}

func TestTable_Migrate_MissingTableFails(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, _ *fencing.Table) {
		err := mustNewTable(t, "no_such_fences", b.dialect).Migrate(t.Context(), db)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "fencing: migrate table no_such_fences")
	})
}

// TestTable_Migrate_MigratedTableTakesNoLock runs Migrate on a migrated
// table while another transaction holds a fence row. Migrate must not ask
// for the table lock (PostgreSQL: lock_timeout turns a wait into an error)
// or the write lock (SQLite: the busy timeout would end in SQLITE_BUSY).
func TestTable_Migrate_MigratedTableTakesNoLock(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, table *fencing.Table) {
		ctx := t.Context()
		holder, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { assert.NoError(t, holder.Rollback()) }()
		require.NoError(t, table.AdvanceOnce(ctx, holder, "report", 1, occ))

		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		defer func() { assert.NoError(t, conn.Close()) }()
		if b.dialect == fencing.Postgres {
			_, err = conn.ExecContext(ctx, "SET lock_timeout = '100ms'")
			require.NoError(t, err)
		}
		require.NoError(t, table.Migrate(ctx, conn))
		require.NoError(t, table.Create(ctx, conn))
	})
}
