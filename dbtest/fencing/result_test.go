package fencing_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
)

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
