package fencing_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
)

// advanceTx runs Advance in a transaction of its own and commits it when
// Advance succeeds; it rolls back otherwise.
func advanceTx(t *testing.T, db *sql.DB, table *fencing.Table, resource string, token fencing.Token) error {
	t.Helper()
	tx, err := db.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	if err := table.Advance(t.Context(), tx, resource, token); err != nil {
		require.NoError(t, tx.Rollback())
		return err
	}
	require.NoError(t, tx.Commit())
	return nil
}

// recorded returns the token recorded for resource in the table "fences",
// and whether there is a row.
func recorded(t *testing.T, b backend, db *sql.DB, resource string) (int64, bool) {
	t.Helper()
	return recordedIn(t, b, db, "fences", resource)
}

// recordedIn is recorded for the fence table called table.
func recordedIn(t *testing.T, b backend, db *sql.DB, table, resource string) (int64, bool) {
	t.Helper()
	var token int64
	err := db.QueryRowContext(t.Context(), b.rebind("SELECT token FROM "+table+" WHERE resource = ?"), resource).Scan(&token)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false
	}
	require.NoError(t, err)
	return token, true
}

func TestTable_Advance_MovesForwardOnly(t *testing.T) {
	steps := []struct {
		token     fencing.Token
		wantStale bool
		want      int64 // recorded after the step
	}{
		{token: 5, want: 5},                  // first write inserts the row
		{token: 7, want: 7},                  // greater: advances
		{token: 7, want: 7},                  // equal: passes (one lease, many writes)
		{token: 6, wantStale: true, want: 7}, // smaller: stale
		{token: 1, wantStale: true, want: 7},
		{token: 8, want: 8},
	}
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, table *fencing.Table) {
		for i, s := range steps {
			err := advanceTx(t, db, table, "report", s.token)
			if s.wantStale {
				require.ErrorIs(t, err, fencing.ErrStale, "step %d: token %d", i, s.token)
				assert.Contains(t, err.Error(), `"report"`)
			} else {
				require.NoError(t, err, "step %d: token %d", i, s.token)
			}
			got, ok := recorded(t, b, db, "report")
			require.True(t, ok)
			assert.Equal(t, s.want, got, "step %d: token %d", i, s.token)
		}
	})
}

func TestTable_Advance_ResourcesAreIndependent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, table *fencing.Table) {
		require.NoError(t, advanceTx(t, db, table, "a", 10))
		require.NoError(t, advanceTx(t, db, table, "b", 3), "a lower token on another resource passes")
		require.ErrorIs(t, advanceTx(t, db, table, "a", 3), fencing.ErrStale)
		require.NoError(t, advanceTx(t, db, table, "b", 4))

		a, _ := recorded(t, b, db, "a")
		bb, _ := recorded(t, b, db, "b")
		assert.Equal(t, int64(10), a)
		assert.Equal(t, int64(4), bb)
	})
}

func TestTable_Advance_RollbackUndoesToken(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, table *fencing.Table) {
		ctx := t.Context()

		// A first-ever record rolled back leaves no row.
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, table.Advance(ctx, tx, "report", 9))
		require.NoError(t, tx.Rollback())
		_, ok := recorded(t, b, db, "report")
		assert.False(t, ok, "rolled-back insert must leave no row")

		// An advance rolled back leaves the earlier token.
		require.NoError(t, advanceTx(t, db, table, "report", 5))
		tx, err = db.BeginTx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, table.Advance(ctx, tx, "report", 10))
		require.NoError(t, tx.Rollback())
		got, _ := recorded(t, b, db, "report")
		assert.Equal(t, int64(5), got)
		require.NoError(t, advanceTx(t, db, table, "report", 6), "token 10 was rolled back, so 6 is current")
	})
}

func TestTable_Advance_BoundaryValuesAreStored(t *testing.T) {
	long := strings.Repeat("é", fencing.MaxResourceBytes/2) // exactly MaxResourceBytes bytes
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, table *fencing.Table) {
		require.NoError(t, advanceTx(t, db, table, long, 1))
		require.NoError(t, advanceTx(t, db, table, "max", fencing.MaxToken))
		got, _ := recorded(t, b, db, "max")
		assert.Equal(t, int64(math.MaxInt64), got)
		require.ErrorIs(t, advanceTx(t, db, table, "max", fencing.MaxToken-1), fencing.ErrStale)
		got, _ = recorded(t, b, db, long)
		assert.Equal(t, int64(1), got)
	})
}

// countingExecer counts the statements that reach the database.
type countingExecer struct {
	fencing.Execer
	n int
}

func (c *countingExecer) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	c.n++
	return c.Execer.ExecContext(ctx, q, args...)
}

func TestTable_Advance_InvalidArgumentsSendNothing(t *testing.T) {
	cases := []struct {
		name     string
		resource string
		token    fencing.Token
		wantMsg  string
	}{
		{"token zero", "report", 0, "token must not be zero"},
		{"token above MaxInt64", "report", fencing.MaxToken + 1, "does not fit"},
		{"token MaxUint64", "report", math.MaxUint64, "does not fit"},
		{"empty resource", "", 1, "resource must not be empty"},
		{"resource too long", strings.Repeat("r", fencing.MaxResourceBytes+1), 1, "at most 512 bytes"},
		{"resource not UTF-8", "rep\xffort", 1, "valid UTF-8"},
		{"resource with NUL", "rep\x00ort", 1, "NUL"},
	}
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, table *fencing.Table) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				exec := &countingExecer{Execer: db}
				err := table.Advance(t.Context(), exec, c.resource, c.token)
				require.ErrorIs(t, err, fencing.ErrInvalidArgument)
				assert.Contains(t, err.Error(), c.wantMsg)
				assert.Equal(t, 0, exec.n, "no statement may be sent")
			})
		}
		var rows int
		require.NoError(t, db.QueryRowContext(t.Context(), "SELECT count(*) FROM fences").Scan(&rows))
		assert.Zero(t, rows)
	})
}

func TestTable_AdvanceFromContext_UsesContextToken(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, table *fencing.Table) {
		exec := &countingExecer{Execer: db}
		err := table.AdvanceFromContext(t.Context(), exec, "report")
		require.ErrorIs(t, err, fencing.ErrNoToken)
		assert.Equal(t, 0, exec.n)

		ctx := fencing.NewContext(t.Context(), 12)
		require.NoError(t, table.AdvanceFromContext(ctx, db, "report"))
		got, _ := recorded(t, b, db, "report")
		assert.Equal(t, int64(12), got)

		ctx = fencing.NewContext(t.Context(), 11)
		require.ErrorIs(t, table.AdvanceFromContext(ctx, db, "report"), fencing.ErrStale)
	})
}

func TestAdvance_DefaultPostgresTable(t *testing.T) {
	db := openPostgres(t)
	ctx := t.Context()
	require.NoError(t, fencing.CreateTable(ctx, db))
	require.NoError(t, fencing.CreateTable(ctx, db), "CreateTable is idempotent")

	require.NoError(t, fencing.Advance(ctx, db, "report", 2))
	require.ErrorIs(t, fencing.Advance(ctx, db, "report", 1), fencing.ErrStale)
	require.ErrorIs(t, fencing.AdvanceFromContext(ctx, db, "report"), fencing.ErrNoToken)
	require.NoError(t, fencing.AdvanceFromContext(fencing.NewContext(ctx, 3), db, "report"))

	var token int64
	require.NoError(t, db.QueryRowContext(ctx,
		"SELECT token FROM "+fencing.DefaultTableName+" WHERE resource = $1", "report").Scan(&token))
	assert.Equal(t, int64(3), token)
}
