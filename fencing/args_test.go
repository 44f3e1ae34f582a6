package fencing_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
)

// The argument checks of the fencing package, which need no database (the
// behaviour on PostgreSQL and SQLite is tested in the dbtest module).

// occ is the occurrence the AdvanceOnce checks use.
var occ = time.Date(2024, 6, 1, 9, 0, 0, 0, time.UTC)

// countingQuerier counts the statements that reach it and answers none: a
// refused call must not send one.
type countingQuerier struct{ n int }

// countingExecer is a countingQuerier used where an Execer is asked for.
type countingExecer = countingQuerier

func (c *countingQuerier) ExecContext(context.Context, string, ...any) (sql.Result, error) {
	c.n++
	return nil, errors.New("no database")
}

func (c *countingQuerier) QueryRowContext(context.Context, string, ...any) *sql.Row {
	c.n++
	return nil
}

// withRun returns ctx carrying a run's token and occurrence, as the
// scheduler's run context does.
func withRun(ctx context.Context, token fencing.Token, o time.Time) context.Context {
	return fencing.NewOccurrenceContext(fencing.NewContext(ctx, token), o)
}

// mustTable is fencing.NewTable that fails the test on error.
func mustTable(t *testing.T, name string, d fencing.Dialect) *fencing.Table {
	t.Helper()
	table, err := fencing.NewTable(name, d)
	require.NoError(t, err)
	return table
}

func TestTable_Advance_NilTxOrZeroTable(t *testing.T) {
	table, err := fencing.NewTable("fences", fencing.SQLite)
	require.NoError(t, err)
	err = table.Advance(t.Context(), nil, "report", 1)
	require.ErrorIs(t, err, fencing.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "tx must not be nil")

	for name, zero := range map[string]*fencing.Table{"nil": nil, "zero value": {}} {
		err := zero.Advance(t.Context(), &countingExecer{}, "report", 1)
		require.ErrorIs(t, err, fencing.ErrInvalidArgument, name)
		assert.Contains(t, err.Error(), "NewTable", name)
		require.ErrorIs(t, zero.Create(t.Context(), &countingExecer{}), fencing.ErrInvalidArgument, name)
	}
}

func TestTable_Migrate_NilDBRefused(t *testing.T) {
	table := mustTable(t, "fences", fencing.Postgres)
	require.ErrorIs(t, table.Migrate(t.Context(), nil), fencing.ErrInvalidArgument)
}

func TestTable_AdvanceOnce_NilTxOrZeroTable(t *testing.T) {
	table, err := fencing.NewTable("fences", fencing.SQLite)
	require.NoError(t, err)
	err = table.AdvanceOnce(t.Context(), nil, "report", 1, occ)
	require.ErrorIs(t, err, fencing.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "tx must not be nil")

	for name, zero := range map[string]*fencing.Table{"nil": nil, "zero value": {}} {
		q := &countingQuerier{}
		err := zero.AdvanceOnce(t.Context(), q, "report", 1, occ)
		require.ErrorIs(t, err, fencing.ErrInvalidArgument, name)
		assert.Contains(t, err.Error(), "NewTable", name)
		require.ErrorIs(t, zero.AdvanceOnceFromContext(withRun(t.Context(), 1, occ), q, "report"), fencing.ErrInvalidArgument, name)
		require.ErrorIs(t, zero.Migrate(t.Context(), q), fencing.ErrInvalidArgument, name)
		assert.Equal(t, 0, q.n, name)
	}
}

// fakeResult is an sql.Result with a fixed row count or error.
type fakeResult struct {
	rows int64
	err  error
}

func (r fakeResult) LastInsertId() (int64, error) { return 0, errors.New("not supported") }
func (r fakeResult) RowsAffected() (int64, error) { return r.rows, r.err }

func TestCheckResult_RowCounts(t *testing.T) {
	errDriver := errors.New("driver cannot count rows")
	cases := []struct {
		name      string
		res       sql.Result
		wantErrIs error // nil: no error
	}{
		{"zero rows is stale", fakeResult{rows: 0}, fencing.ErrStale},
		{"one row passes", fakeResult{rows: 1}, nil},
		{"several rows pass", fakeResult{rows: 3}, nil},
		{"RowsAffected error is wrapped", fakeResult{err: errDriver}, errDriver},
		{"nil result is invalid", nil, fencing.ErrInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := fencing.CheckResult(c.res)
			if c.wantErrIs == nil {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, c.wantErrIs)
			if c.wantErrIs != fencing.ErrStale {
				assert.NotErrorIs(t, err, fencing.ErrStale, "only zero rows means stale")
			}
		})
	}
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
