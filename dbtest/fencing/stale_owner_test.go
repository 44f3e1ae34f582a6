package fencing_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/testutil"
)

// TestTable_Advance_StaleOwnerIsRejected is the story fencing exists for,
// end to end on a real redis-server: A takes the lease and stalls past its
// TTL without renewing, B takes the lease and writes, A wakes and tries to
// write. A's Advance fails with ErrStale, and A's own insert in the same
// transaction is gone after the rollback.
func TestTable_Advance_StaleOwnerIsRejected(t *testing.T) {
	const (
		key  = "job:daily-report"
		ttlA = 200 * time.Millisecond
		ttlB = 5 * time.Second
	)
	client := testutil.StartRedis(t).Client(t)

	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, table *fencing.Table) {
		ctx := t.Context()
		store, err := redislease.New(client, redislease.WithPrefix("fencing-"+b.name))
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, "CREATE TABLE reports (day TEXT NOT NULL, writer TEXT NOT NULL, token BIGINT NOT NULL)")
		require.NoError(t, err)
		insertReport := b.rebind("INSERT INTO reports (day, writer, token) VALUES (?, ?, ?)")

		// A acquires, then stalls: it never renews.
		leaseA, err := store.Acquire(ctx, key, ttlA)
		require.NoError(t, err)
		_, err = store.Acquire(ctx, key, ttlB)
		require.ErrorIs(t, err, lease.ErrLocked, "B cannot acquire while A's lease is live")

		// A's lease expires on the server's clock (TTL plus ExpiryTolerance).
		require.Eventually(t, func() bool {
			locked, err := store.IsLocked(ctx, key)
			return err == nil && !locked
		}, ttlA+lease.ExpiryTolerance+3*time.Second, 20*time.Millisecond, "A's lease never expired")

		// B acquires and writes through Advance.
		leaseB, err := store.Acquire(ctx, key, ttlB)
		require.NoError(t, err)
		t.Cleanup(func() {
			// t.Context() is already cancelled when clean-ups run.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			assert.NoError(t, leaseB.Release(ctx))
		})
		require.Greater(t, leaseB.Fence, leaseA.Fence)

		txB, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, table.Advance(ctx, txB, "report:2024-06-01", leaseB.Fence))
		_, err = txB.ExecContext(ctx, insertReport, "2024-06-01", "B", int64(leaseB.Fence))
		require.NoError(t, err)
		require.NoError(t, txB.Commit())

		// A wakes and writes as if it still held the lease: its own insert
		// first, then the fence check, in one transaction.
		txA, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = txA.ExecContext(ctx, insertReport, "2024-06-01", "A", int64(leaseA.Fence))
		require.NoError(t, err)
		err = table.Advance(ctx, txA, "report:2024-06-01", leaseA.Fence)
		require.ErrorIs(t, err, fencing.ErrStale, "A's stale token must be rejected")
		require.NoError(t, txA.Rollback())

		// Only B's write is visible; the fence holds B's token.
		var writers []string
		rows, err := db.QueryContext(ctx, "SELECT writer FROM reports ORDER BY writer")
		require.NoError(t, err)
		for rows.Next() {
			var w string
			require.NoError(t, rows.Scan(&w))
			writers = append(writers, w)
		}
		require.NoError(t, errors.Join(rows.Err(), rows.Close()))
		assert.Equal(t, []string{"B"}, writers, "nothing A wrote may survive")
		got, _ := recordedIn(t, b, db, "fences", "report:2024-06-01")
		assert.Equal(t, int64(leaseB.Fence), got)
	})
}
