package fencing

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// defaultTable is DefaultTableName in PostgreSQL.
var defaultTable = mustTable(DefaultTableName, Postgres)

func mustTable(name string, d Dialect) *Table {
	t, err := NewTable(name, d)
	if err != nil {
		panic(err) // only for constant, known-good names
	}
	return t
}

// Advance records token for resource in the PostgreSQL table
// DefaultTableName, inside the caller's transaction tx, and returns an error
// wrapping ErrStale if a greater token was already recorded. It is
// Table.Advance on the default table; use NewTable for another name or for
// SQLite.
func Advance(ctx context.Context, tx Execer, resource string, token Token) error {
	return defaultTable.Advance(ctx, tx, resource, token)
}

// AdvanceFromContext is Advance with the token carried by ctx. It returns
// ErrNoToken when ctx carries none.
func AdvanceFromContext(ctx context.Context, tx Execer, resource string) error {
	return defaultTable.AdvanceFromContext(ctx, tx, resource)
}

// AdvanceOnce records token and occurrence for resource in the PostgreSQL
// table DefaultTableName, inside the caller's transaction tx. It returns an
// error wrapping ErrStale if a greater token was already recorded, and one
// wrapping ErrDuplicate if another run already wrote this occurrence or a
// later one. It is Table.AdvanceOnce on the default table, which documents
// the rule.
func AdvanceOnce(ctx context.Context, tx Querier, resource string, token Token, occurrence time.Time) error {
	return defaultTable.AdvanceOnce(ctx, tx, resource, token, occurrence)
}

// AdvanceOnceFromContext is AdvanceOnce with the token and the occurrence
// carried by ctx. It returns ErrNoToken or ErrNoOccurrence when ctx lacks
// one.
func AdvanceOnceFromContext(ctx context.Context, tx Querier, resource string) error {
	return defaultTable.AdvanceOnceFromContext(ctx, tx, resource)
}

// CreateTable creates the PostgreSQL table DefaultTableName if it does not
// exist, and adds the occurrence column to one made without it. It is safe
// to call from every replica at start, all at once (see Table.Create). It
// is Table.Create on the default table.
func CreateTable(ctx context.Context, db Execer) error {
	return defaultTable.Create(ctx, db)
}

// CheckResult turns the result of a conditional write into a fencing
// verdict: zero rows affected means the condition on the token failed, and
// CheckResult returns ErrStale; one or more rows means the write landed and
// it returns nil. Use it for fencing your own rows, for example
//
//	res, err := tx.ExecContext(ctx,
//		`UPDATE accounts SET balance = $1, last_token = $2 WHERE id = $3 AND last_token <= $2`,
//		balance, int64(token), id)
//	if err != nil { ... }
//	if err := fencing.CheckResult(res); err != nil { ... } // ErrStale: roll back
//
// The statement must touch a row only when the token is current, and the
// row must exist (insert it first), or zero rows cannot tell stale from
// missing. An error from RowsAffected (a driver that cannot count) is
// returned wrapped.
func CheckResult(res sql.Result) error {
	if res == nil {
		return invalid("result must not be nil")
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("fencing: rows affected: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: no row was written", ErrStale)
	}
	return nil
}
