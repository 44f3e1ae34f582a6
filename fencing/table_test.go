package fencing_test

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
)

func TestNewTable_ValidNamesWork(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, _ *fencing.Table) {
		names := []string{
			"job_fences",
			"_f1",
			"order", // a reserved word: the name is quoted
			strings.Repeat("f", fencing.MaxIdentifierBytes),
			b.schema + ".fences_q",
		}
		for _, name := range names {
			t.Run(name, func(t *testing.T) {
				ctx := t.Context()
				table, err := fencing.NewTable(name, b.dialect)
				require.NoError(t, err)
				assert.Equal(t, name, table.Name())
				assert.Equal(t, b.dialect, table.Dialect())

				require.NoError(t, table.Create(ctx, db))
				require.NoError(t, table.Advance(ctx, db, "report", 4))
				require.NoError(t, table.Create(ctx, db), "Create is idempotent and keeps the rows")
				require.ErrorIs(t, table.Advance(ctx, db, "report", 3), fencing.ErrStale)
				require.NoError(t, table.Advance(ctx, db, "report", 4))
			})
		}
	})
}

func TestNewTable_InvalidNamesRefused(t *testing.T) {
	cases := []struct {
		name    string
		wantMsg string
	}{
		{"", "must not be empty"},
		{"Fences", "[a-z_][a-z0-9_]*"},
		{"1fences", "[a-z_][a-z0-9_]*"},
		{"fences; DROP TABLE users", "[a-z_][a-z0-9_]*"},
		{`"fences"`, "[a-z_][a-z0-9_]*"},
		{"fen-ces", "[a-z_][a-z0-9_]*"},
		{"fen ces", "[a-z_][a-z0-9_]*"},
		{"fénces", "[a-z_][a-z0-9_]*"},
		{"fences\x00", "[a-z_][a-z0-9_]*"},
		{"a.b.c", "table or schema.table"},
		{".fences", "empty identifier"},
		{"app.", "empty identifier"},
		{strings.Repeat("f", fencing.MaxIdentifierBytes+1), "at most 63 bytes"},
		{"app." + strings.Repeat("f", fencing.MaxIdentifierBytes+1), "at most 63 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, d := range []fencing.Dialect{fencing.Postgres, fencing.SQLite} {
				table, err := fencing.NewTable(c.name, d)
				require.ErrorIs(t, err, fencing.ErrInvalidArgument)
				assert.Contains(t, err.Error(), c.wantMsg)
				assert.Nil(t, table)
			}
		})
	}
}

func TestNewTable_UnknownDialectRefused(t *testing.T) {
	for _, d := range []fencing.Dialect{0, 3, -1} {
		table, err := fencing.NewTable("fences", d)
		require.ErrorIs(t, err, fencing.ErrInvalidArgument)
		assert.Contains(t, err.Error(), "unknown dialect")
		assert.Nil(t, table)
	}
}

func TestDialect_String(t *testing.T) {
	assert.Equal(t, "postgres", fencing.Postgres.String())
	assert.Equal(t, "sqlite", fencing.SQLite.String())
	assert.Equal(t, "dialect(7)", fencing.Dialect(7).String())
}

func TestTable_Create_NilDBRefused(t *testing.T) {
	table, err := fencing.NewTable("fences", fencing.Postgres)
	require.NoError(t, err)
	require.ErrorIs(t, table.Create(t.Context(), nil), fencing.ErrInvalidArgument)
}
