package schedsim

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/cronguard/cronguard/fencing"
)

// The jobs' effects go through the real fencing package
// (fencing.AdvanceOnceFromContext, SQLite dialect) into an in-memory fence
// table behind a small database/sql driver that understands the two
// statements AdvanceOnce sends: the conditional upsert and the read of the
// fence row. A transaction holds the table's lock from Begin to Commit, as
// a database's row lock would.

// fenceTable is the in-memory table: per resource, the last writer's token
// and occurrence (Unix ms).
type fenceTable struct {
	mu   sync.Mutex
	rows map[string]fenceRow
}

type fenceRow struct {
	token, occurrence int64
}

// openFenceDB returns a database on a new, empty fence table, and the
// fencing.Table that writes to it. Close the database when done.
func openFenceDB() (*sql.DB, *fencing.Table, error) {
	t, err := fencing.NewTable(fencing.DefaultTableName, fencing.SQLite)
	if err != nil {
		return nil, nil, err
	}
	return sql.OpenDB(&fenceConnector{table: &fenceTable{rows: make(map[string]fenceRow)}}), t, nil
}

type fenceConnector struct{ table *fenceTable }

func (c *fenceConnector) Connect(context.Context) (driver.Conn, error) {
	return &fenceConn{table: c.table}, nil
}
func (c *fenceConnector) Driver() driver.Driver { return fenceDriver{} }

type fenceDriver struct{}

func (fenceDriver) Open(string) (driver.Conn, error) {
	return nil, errors.New("schedsim: the fence table opens through its connector only")
}

type fenceConn struct {
	table *fenceTable
	inTx  bool
}

var (
	_ driver.ExecerContext  = (*fenceConn)(nil)
	_ driver.QueryerContext = (*fenceConn)(nil)
)

func (c *fenceConn) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("schedsim: fence table: prepared statements are not supported")
}
func (c *fenceConn) Close() error { return nil }
func (c *fenceConn) Begin() (driver.Tx, error) {
	c.table.mu.Lock()
	c.inTx = true
	return fenceTx{c}, nil
}

type fenceTx struct{ c *fenceConn }

func (t fenceTx) Commit() error   { t.c.inTx = false; t.c.table.mu.Unlock(); return nil }
func (t fenceTx) Rollback() error { return t.Commit() } // every statement is applied at once

func (c *fenceConn) lock() func() {
	if c.inTx {
		return func() {}
	}
	c.table.mu.Lock()
	return c.table.mu.Unlock
}

// ExecContext runs AdvanceOnce's upsert: INSERT ... ON CONFLICT (resource)
// DO UPDATE ... WHERE fence.token <= excluded.token AND (fence.occurrence IS
// NULL OR fence.occurrence < excluded.occurrence OR (fence.token =
// excluded.token AND fence.occurrence = excluded.occurrence)).
func (c *fenceConn) ExecContext(_ context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if !strings.HasPrefix(query, "INSERT INTO") || !strings.Contains(query, "occurrence") || len(args) != 3 {
		return nil, fmt.Errorf("schedsim: fence table: unexpected statement %q", query)
	}
	resource, ok1 := args[0].Value.(string)
	token, ok2 := args[1].Value.(int64)
	occ, ok3 := args[2].Value.(int64)
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("schedsim: fence table: unexpected arguments %v", args)
	}
	defer c.lock()()
	row, found := c.table.rows[resource]
	if found && (row.token > token || !(row.occurrence < occ || (row.token == token && row.occurrence == occ))) {
		return driver.RowsAffected(0), nil
	}
	c.table.rows[resource] = fenceRow{token: token, occurrence: occ}
	return driver.RowsAffected(1), nil
}

// QueryContext runs the read of a fence row: token, occurrence.
func (c *fenceConn) QueryContext(_ context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if !strings.HasPrefix(query, "SELECT") || len(args) != 1 {
		return nil, fmt.Errorf("schedsim: fence table: unexpected query %q", query)
	}
	resource, ok := args[0].Value.(string)
	if !ok {
		return nil, fmt.Errorf("schedsim: fence table: unexpected arguments %v", args)
	}
	defer c.lock()()
	row, found := c.table.rows[resource]
	return &fenceRows{row: row, left: found}, nil
}

type fenceRows struct {
	row  fenceRow
	left bool
}

func (r *fenceRows) Columns() []string { return []string{"token", "occurrence"} }
func (r *fenceRows) Close() error      { return nil }
func (r *fenceRows) Next(dest []driver.Value) error {
	if !r.left {
		return io.EOF
	}
	r.left = false
	dest[0], dest[1] = r.row.token, r.row.occurrence
	return nil
}

// writeOnce commits the attempt's effect for its job through fencing, in a
// transaction, whether or not ctx is done (as a job that ignores its
// context would).
func writeOnce(ctx context.Context, db *sql.DB, t *fencing.Table, job string) error {
	ctx = context.WithoutCancel(ctx)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := t.AdvanceOnceFromContext(ctx, tx, "job:"+job); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
