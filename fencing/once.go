package fencing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Querier runs statements and reads rows: AdvanceOnce needs both, to tell a
// stale token from a duplicate occurrence. *sql.Tx, *sql.DB and *sql.Conn
// satisfy it.
type Querier interface {
	Execer
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// advanceOnceStatement returns the occurrence upsert for the table quoted,
// with p[0..2] the placeholders for resource, token and occurrence. The
// DO UPDATE's condition is the rule AdvanceOnce documents: the token must
// not go back, and the occurrence must move forward unless the writer is
// the run that recorded it (same token, same occurrence). A NULL occurrence
// is earlier than every occurrence.
func advanceOnceStatement(quoted string, p []string) string {
	return "INSERT INTO " + quoted + " AS fence (resource, token, occurrence)" +
		" VALUES (" + p[0] + ", " + p[1] + ", " + p[2] + ")" +
		" ON CONFLICT (resource) DO UPDATE SET token = excluded.token, occurrence = excluded.occurrence" +
		" WHERE fence.token <= excluded.token AND (fence.occurrence IS NULL" +
		" OR fence.occurrence < excluded.occurrence" +
		" OR (fence.token = excluded.token AND fence.occurrence = excluded.occurrence))"
}

// AdvanceOnce records token and occurrence for resource in one statement
// run on tx, so that one occurrence of a job commits its effect once even
// when it runs twice with two tokens (as it can after the lease store lost
// its round records, when a second replica runs the same occurrence with a
// greater token). Against the recorded token and occurrence:
//
//   - a token below the recorded one is refused with ErrStale (checked
//     first, as in Advance);
//   - the same run, that is the recorded token and the recorded occurrence,
//     passes and may write as often as it likes;
//   - an occurrence at or before the recorded one is refused with
//     ErrDuplicate: another run wrote it (or a later one). This includes
//     the recorded token with an earlier occurrence, since occurrences
//     only move forward: the table keeps one occurrence per resource and
//     cannot tell whether an earlier one was written;
//   - anything else (a later occurrence with the recorded token or a
//     greater one, or a first write) records both.
//
// Occurrences are compared in Unix milliseconds. A NULL occurrence (a row
// written only by Advance, or from before Migrate) is earlier than every
// occurrence, so the first AdvanceOnce with a token not below the recorded
// one passes.
//
// Use one resource per job, and write it with AdvanceOnce only. Advance on
// the same resource moves the token but leaves the recorded occurrence as
// it is, so a run that calls Advance and then AdvanceOnce for an
// occurrence already written would be taken for the run that wrote it and
// pass: mixing the two on one resource gives up the duplicate check.
//
// As with Advance: run it in the same transaction as the writes it
// protects, ideally first, and roll the transaction back on any error
// (with ErrDuplicate the occurrence's effect is already committed; do not
// retry). While the transaction is open the fence row stays locked, so
// concurrent writers of one resource are serialized, and of two runs of
// one occurrence exactly one commits. When the upsert is refused,
// AdvanceOnce reads the row in the same transaction to name the reason;
// the row is locked by then (PostgreSQL locks it even when the DO UPDATE's
// condition is false; SQLite holds the database write lock), so the reason
// is the one that refused it. tx should therefore be a transaction: with a
// *sql.DB the read may see a later row.
//
// resource and token follow Advance's rules; occurrence must be at least
// 1 ms after the Unix epoch. Otherwise AdvanceOnce returns
// ErrInvalidArgument without touching the database. On a table that lacks
// the occurrence column it returns an error wrapping ErrNotMigrated and the
// database's error.
func (t *Table) AdvanceOnce(ctx context.Context, tx Querier, resource string, token Token, occurrence time.Time) error {
	if err := t.check(tx); err != nil {
		return err
	}
	if err := checkResource(resource); err != nil {
		return err
	}
	if err := checkToken(token); err != nil {
		return err
	}
	ms, err := occurrenceMillis(occurrence)
	if err != nil {
		return err
	}
	op := fmt.Sprintf("advance %q to %s at occurrence %s", resource, token, formatMillis(ms))
	res, err := tx.ExecContext(ctx, t.advanceOnce, resource, int64(token), ms)
	if err != nil {
		if isMissingOccurrenceColumn(err) {
			return t.notMigrated(op, err)
		}
		return fmt.Errorf("fencing: %s: %w", op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("fencing: %s: rows affected: %w", op, err)
	}
	if n > 0 {
		return nil
	}
	return t.refusal(ctx, tx, op, resource, token, ms)
}

// refusal reads the fence row that refused the write (token, ms) and
// returns the error that says why.
func (t *Table) refusal(ctx context.Context, tx Querier, op, resource string, token Token, ms int64) error {
	var (
		recToken int64
		recOcc   sql.NullInt64
	)
	err := tx.QueryRowContext(ctx, t.readFence, resource).Scan(&recToken, &recOcc)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("fencing: %s: refused, then the fence row was gone "+
				"(was it deleted outside the transaction?): %w", op, err)
		}
		return fmt.Errorf("fencing: %s: refused; reading the fence row: %w", op, err)
	}
	recorded := Token(recToken)
	switch {
	case int64(token) < recToken:
		return fmt.Errorf("fencing: %s: %w: a greater token is recorded (%s)", op, ErrStale, recorded)
	case recOcc.Valid && ms == recOcc.Int64:
		return fmt.Errorf("fencing: %s: %w: token %s already wrote this occurrence", op, ErrDuplicate, recorded)
	case recOcc.Valid && ms < recOcc.Int64:
		return fmt.Errorf("fencing: %s: %w: token %s wrote the later occurrence %s",
			op, ErrDuplicate, recorded, formatMillis(recOcc.Int64))
	default:
		// The row allows the write it refused: it changed between the two
		// statements, which a transaction prevents.
		return fmt.Errorf("fencing: %s: refused, but the fence row (token %s, occurrence %s) now allows it: "+
			"it changed between the upsert and the read; run AdvanceOnce in a transaction",
			op, recorded, formatNullMillis(recOcc))
	}
}

// AdvanceOnceFromContext is AdvanceOnce with the token and the occurrence
// carried by ctx (see NewContext and NewOccurrenceContext; a scheduler
// job's context carries both). It returns ErrNoToken or ErrNoOccurrence
// when ctx lacks one, without touching the database.
func (t *Table) AdvanceOnceFromContext(ctx context.Context, tx Querier, resource string) error {
	token, ok := FromContext(ctx)
	if !ok {
		return fmt.Errorf("fencing: advance %q once: %w (wrap the context with fencing.NewContext)", resource, ErrNoToken)
	}
	occurrence, ok := OccurrenceFromContext(ctx)
	if !ok {
		return fmt.Errorf("fencing: advance %q once: %w (wrap the context with fencing.NewOccurrenceContext)",
			resource, ErrNoOccurrence)
	}
	return t.AdvanceOnce(ctx, tx, resource, token, occurrence)
}

// formatNullMillis is formatMillis for a nullable column.
func formatNullMillis(ms sql.NullInt64) string {
	if !ms.Valid {
		return "NULL"
	}
	return formatMillis(ms.Int64)
}
