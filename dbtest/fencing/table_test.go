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
