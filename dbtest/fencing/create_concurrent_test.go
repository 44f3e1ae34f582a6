package fencing_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
)

// replicas is how many replicas of one service start at once in the tests
// below, each with a pool of its own.
const replicas = 10

// newSQLiteNoBusyTimeout is a new SQLite database on SQLite's default
// (rollback) journal, opened without a busy timeout: a connection that finds
// the write lock taken fails at once with SQLITE_BUSY.
func newSQLiteNoBusyTimeout(t *testing.T) (driver, dsn string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fences.db")
	return "sqlite", "file:" + path + "?_txlock=immediate"
}

// startingBackends returns the backends, plus SQLite without a busy
// timeout: Create must wait for the write lock by itself.
func startingBackends() []backend {
	bs := backends()
	noWait := bs[1]
	noWait.name = "sqlite-no-busy-timeout"
	noWait.newDatabase = newSQLiteNoBusyTimeout
	return append(bs, noWait)
}

// startReplicas opens the database behind driver and dsn once per replica
// (a pool each, connected before the start) and runs create on every
// replica at the same moment. It returns each replica's error.
func startReplicas(t *testing.T, driver, dsn string, create func(ctx context.Context, db fencing.Execer) error) []error {
	t.Helper()
	pools := make([]*sql.DB, replicas)
	for i := range pools {
		db, err := sql.Open(driver, dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		require.NoError(t, db.PingContext(t.Context()))
		pools[i] = db
	}
	var (
		start = make(chan struct{})
		wg    sync.WaitGroup
		errs  = make([]error, replicas)
	)
	for i, db := range pools {
		wg.Go(func() {
			<-start
			errs[i] = create(t.Context(), db)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// columns returns the column names of table (unquoted, unqualified), sorted.
func columns(t *testing.T, b backend, db *sql.DB, table string) []string {
	t.Helper()
	q := "SELECT name FROM pragma_table_info('" + table + "')"
	if b.dialect == fencing.Postgres {
		q = "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = '" + table + "'"
	}
	rows, err := db.QueryContext(t.Context(), q)
	require.NoError(t, err)
	defer func() { _ = rows.Close() }()
	var names []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		names = append(names, n)
	}
	require.NoError(t, rows.Err())
	sort.Strings(names)
	return names
}

// assertFenceTable checks that table has the fence table's columns and
// constraints: the resource is the primary key, tokens and occurrences must
// be positive.
func assertFenceTable(t *testing.T, b backend, db *sql.DB, table string) {
	t.Helper()
	ctx := t.Context()
	assert.Equal(t, []string{"occurrence", "resource", "token"}, columns(t, b, db, table))
	insert := b.rebind("INSERT INTO " + table + " (resource, token, occurrence) VALUES (?, ?, ?)")
	_, err := db.ExecContext(ctx, insert, "check:token", 0, nil)
	assert.Error(t, err, "token must be > 0")
	_, err = db.ExecContext(ctx, insert, "check:occurrence", 1, 0)
	assert.Error(t, err, "occurrence must be > 0")
	_, err = db.ExecContext(ctx, insert, "check:key", 1, 1)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, insert, "check:key", 2, 2)
	assert.Error(t, err, "resource is the primary key")
	_, err = db.ExecContext(ctx, b.rebind("DELETE FROM "+table+" WHERE resource = ?"), "check:key")
	require.NoError(t, err)
}

// TestTable_Create_ReplicasStartingAtOnce starts the replicas on an empty
// database: every replica succeeds and the table is whole.
func TestTable_Create_ReplicasStartingAtOnce(t *testing.T) {
	for _, b := range startingBackends() {
		t.Run(b.name, func(t *testing.T) {
			driver, dsn := b.newDatabase(t)
			table := mustNewTable(t, "fences", b.dialect)

			errs := startReplicas(t, driver, dsn, table.Create)

			for i, err := range errs {
				assert.NoError(t, err, "replica %d", i)
			}
			db := openDSN(t, func(*testing.T) (string, string) { return driver, dsn })
			assertFenceTable(t, b, db, "fences")
			require.NoError(t, advanceOnceTx(t, db, table, "report", 1, occ))
		})
	}
}

// TestCreateTable_ReplicasStartingAtOnce is the reported start-up: the
// default table, on PostgreSQL, created by fencing.CreateTable.
func TestCreateTable_ReplicasStartingAtOnce(t *testing.T) {
	b := backends()[0]
	require.Equal(t, fencing.Postgres, b.dialect)
	driver, dsn := b.newDatabase(t)

	errs := startReplicas(t, driver, dsn, fencing.CreateTable)

	for i, err := range errs {
		assert.NoError(t, err, "replica %d", i)
	}
	db := openDSN(t, func(*testing.T) (string, string) { return driver, dsn })
	assertFenceTable(t, b, db, fencing.DefaultTableName)
}

// TestTable_Create_ReplicasMigratingAtOnce starts the replicas on a table
// made before the occurrence column existed, with rows: every replica
// succeeds, the column is added once and the rows keep their tokens.
func TestTable_Create_ReplicasMigratingAtOnce(t *testing.T) {
	for _, b := range startingBackends() {
		t.Run(b.name, func(t *testing.T) {
			driver, dsn := b.newDatabase(t)
			db := openDSN(t, func(*testing.T) (string, string) { return driver, dsn })
			_, err := db.ExecContext(t.Context(), fmt.Sprintf(oldTableDDL, "fences_v1"))
			require.NoError(t, err)
			table := mustNewTable(t, "fences_v1", b.dialect)
			for i := range 20 {
				require.NoError(t, advanceTx(t, db, table, fmt.Sprintf("job:%d", i), fencing.Token(100+i)))
			}

			// Half the replicas run Create, half Migrate alone.
			var calls atomic.Int64
			errs := startReplicas(t, driver, dsn, func(ctx context.Context, db fencing.Execer) error {
				if calls.Add(1)%2 == 0 {
					return table.Migrate(ctx, db)
				}
				return table.Create(ctx, db)
			})

			for i, err := range errs {
				assert.NoError(t, err, "replica %d", i)
			}
			assertFenceTable(t, b, db, "fences_v1")
			for i := range 20 {
				row, ok := readFence(t, b, db, "fences_v1", fmt.Sprintf("job:%d", i))
				require.True(t, ok, "job:%d survives the migration", i)
				assert.Equal(t, noOccurrence(int64(100+i)), row)
			}
			require.NoError(t, advanceOnceTx(t, db, table, "job:0", 100, occ))
		})
	}
}

// TestTable_Create_SQLiteHeldWriteLockEndsWithContext holds SQLite's write
// lock for longer than Create may wait: Create retries SQLITE_BUSY, but
// stops when its context ends, and says both why.
func TestTable_Create_SQLiteHeldWriteLockEndsWithContext(t *testing.T) {
	driver, dsn := newSQLiteNoBusyTimeout(t)
	holder := openDSN(t, func(*testing.T) (string, string) { return driver, dsn })
	tx, err := holder.BeginTx(t.Context(), nil) // BEGIN IMMEDIATE: the write lock
	require.NoError(t, err)
	defer func() { assert.NoError(t, tx.Rollback()) }()
	_, err = tx.ExecContext(t.Context(), "CREATE TABLE other (x INTEGER)")
	require.NoError(t, err)

	db := openDSN(t, func(*testing.T) (string, string) { return driver, dsn })
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err = mustNewTable(t, "fences", fencing.SQLite).Create(ctx, db)

	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "fencing: create table fences")
	assert.Contains(t, err.Error(), "database is locked")
}
