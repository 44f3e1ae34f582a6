package completion

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/dbtest"
	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/scheduler"
)

// effectResource is the resource the job's effect is fenced on.
const effectResource = "report:nightly"

// startDatabase starts a PostgreSQL server with the fence table
// (fencing.CreateTable) and the table the job's effect goes to.
func startDatabase(t *testing.T) (*dbtest.Postgres, *sql.DB) {
	t.Helper()
	pg := dbtest.StartPostgres(t)
	db := pg.DB(t)
	require.NoError(t, fencing.CreateTable(t.Context(), db))
	_, err := db.ExecContext(t.Context(),
		`CREATE TABLE effects (occurrence BIGINT NOT NULL, attempt INT NOT NULL, replica TEXT NOT NULL, fence BIGINT NOT NULL)`)
	require.NoError(t, err)
	return pg, db
}

// commitEffect is the job's effect: one row for its run, in a transaction
// fenced by fencing.AdvanceOnceFromContext, which refuses a stale token
// (fencing.ErrStale) and an occurrence already done (fencing.ErrDuplicate).
func commitEffect(ctx context.Context, db *sql.DB) error {
	r, _ := scheduler.RunFromContext(ctx)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	if err := fencing.AdvanceOnceFromContext(ctx, tx, effectResource); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO effects (occurrence, attempt, replica, fence) VALUES ($1, $2, $3, $4)`,
		r.Occurrence.UnixMilli(), r.Attempt, r.Replica, int64(r.Fence)); err != nil {
		return err
	}
	return tx.Commit()
}

// effect is a committed row of the job's effect.
type effect struct {
	Attempt int
	Replica string
	Fence   int64
}

// effectsOf returns the committed effects of occurrence occ.
func effectsOf(t *testing.T, db *sql.DB, occ time.Time) []effect {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT attempt, replica, fence FROM effects WHERE occurrence = $1 ORDER BY fence`, occ.UnixMilli())
	require.NoError(t, err)
	defer rows.Close()
	var out []effect
	for rows.Next() {
		var e effect
		require.NoError(t, rows.Scan(&e.Attempt, &e.Replica, &e.Fence))
		out = append(out, e)
	}
	require.NoError(t, rows.Err())
	return out
}
