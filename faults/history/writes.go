package history

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/cronguard/cronguard/fencing"
)

// WritesTable is the PostgreSQL table of accepted writes: one row per write
// that passed fencing.AdvanceOnce, inserted in the same transaction. Its
// serial id is the commit order of the writes of one resource, because the
// row is inserted after AdvanceOnce has locked the resource's fence row.
const WritesTable = "fault_writes"

// InsertWrite is the statement a replica runs after fencing.AdvanceOnce, with
// placeholders replica, job, occurrence, fence and lease; it returns the id.
const InsertWrite = "INSERT INTO " + WritesTable +
	" (replica, job, occurrence, fence, lease) VALUES ($1, $2, $3, $4, $5) RETURNING id"

// Write is one row of WritesTable.
type Write struct {
	ID         int64  `json:"id"`      // commit order within a resource
	Replica    string `json:"replica"` // the replica that wrote
	Job        string `json:"job"`     // the job, which is also the fenced resource
	Occurrence int64  `json:"occ"`     // the run's occurrence, Unix ms
	Fence      uint64 `json:"fence"`   // the run's fencing token
	Lease      string `json:"lease"`   // the run's lease ID, short form
}

// CreateTables creates fencing's default fence table and WritesTable if
// they do not exist.
func CreateTables(ctx context.Context, db *sql.DB) error {
	if err := fencing.CreateTable(ctx, db); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+WritesTable+` (
		id BIGSERIAL PRIMARY KEY,
		replica TEXT NOT NULL,
		job TEXT NOT NULL,
		occurrence BIGINT NOT NULL,
		fence BIGINT NOT NULL,
		lease TEXT NOT NULL)`)
	if err != nil {
		return fmt.Errorf("history: create %s: %w", WritesTable, err)
	}
	return nil
}

// ReadWrites returns every row of WritesTable in id order.
func ReadWrites(ctx context.Context, db *sql.DB) ([]Write, error) {
	rows, err := db.QueryContext(ctx,
		"SELECT id, replica, job, occurrence, fence, lease FROM "+WritesTable+" ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("history: read %s: %w", WritesTable, err)
	}
	defer rows.Close()
	var out []Write
	for rows.Next() {
		var w Write
		var fence int64
		if err := rows.Scan(&w.ID, &w.Replica, &w.Job, &w.Occurrence, &fence, &w.Lease); err != nil {
			return nil, fmt.Errorf("history: scan %s: %w", WritesTable, err)
		}
		w.Fence = uint64(fence)
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: read %s: %w", WritesTable, err)
	}
	return out, nil
}
