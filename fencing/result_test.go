package fencing_test

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
)

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

func TestCheckResult_ConditionalUpdate(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, _ *fencing.Table) {
		ctx := t.Context()
		_, err := db.ExecContext(ctx, "CREATE TABLE accounts (id TEXT PRIMARY KEY, balance BIGINT NOT NULL, last_token BIGINT NOT NULL)")
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, b.rebind("INSERT INTO accounts VALUES (?, ?, ?)"), "acme", 100, 5)
		require.NoError(t, err)

		update := b.rebind("UPDATE accounts SET balance = ?, last_token = ? WHERE id = ? AND last_token <= ?")
		write := func(balance int64, token fencing.Token) error {
			res, err := db.ExecContext(ctx, update, balance, int64(token), "acme", int64(token))
			require.NoError(t, err)
			return fencing.CheckResult(res)
		}
		require.NoError(t, write(110, 6), "a newer token writes")
		require.NoError(t, write(120, 6), "the same token writes again")
		require.ErrorIs(t, write(999, 4), fencing.ErrStale, "an older token touches no row")

		var balance, last int64
		require.NoError(t, db.QueryRowContext(ctx, b.rebind("SELECT balance, last_token FROM accounts WHERE id = ?"), "acme").Scan(&balance, &last))
		assert.Equal(t, int64(120), balance)
		assert.Equal(t, int64(6), last)
	})
}
