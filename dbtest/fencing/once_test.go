package fencing_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
)

// occ is the occurrence most tests use: a job scheduled at 09:00 UTC.
var occ = time.Date(2024, 6, 1, 9, 0, 0, 0, time.UTC)

// fenceRow is a fence table row as read back.
type fenceRow struct {
	token      int64
	occurrence sql.NullInt64 // Unix ms
}

// at is the fenceRow for token and occurrence o.
func at(token int64, o time.Time) fenceRow {
	return fenceRow{token: token, occurrence: sql.NullInt64{Int64: o.UnixMilli(), Valid: true}}
}

// noOccurrence is the fenceRow for token with a NULL occurrence.
func noOccurrence(token int64) fenceRow { return fenceRow{token: token} }

// readFence returns the row of resource in the fence table called table,
// and whether there is one.
func readFence(t *testing.T, b backend, db *sql.DB, table, resource string) (fenceRow, bool) {
	t.Helper()
	var r fenceRow
	err := db.QueryRowContext(t.Context(),
		b.rebind("SELECT token, occurrence FROM "+table+" WHERE resource = ?"), resource).Scan(&r.token, &r.occurrence)
	if errors.Is(err, sql.ErrNoRows) {
		return fenceRow{}, false
	}
	require.NoError(t, err)
	return r, true
}

// advanceOnceTx runs AdvanceOnce in a transaction of its own and commits it
// when AdvanceOnce succeeds; it rolls back otherwise.
func advanceOnceTx(t *testing.T, db *sql.DB, table *fencing.Table, resource string, token fencing.Token, o time.Time) error {
	t.Helper()
	tx, err := db.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	if err := table.AdvanceOnce(t.Context(), tx, resource, token, o); err != nil {
		require.NoError(t, tx.Rollback())
		return err
	}
	require.NoError(t, tx.Commit())
	return nil
}

// insertFence writes a fence row directly; prior.occurrence may be NULL.
func insertFence(t *testing.T, b backend, db *sql.DB, resource string, prior fenceRow) {
	t.Helper()
	var o any
	if prior.occurrence.Valid {
		o = prior.occurrence.Int64
	}
	_, err := db.ExecContext(t.Context(),
		b.rebind("INSERT INTO fences (resource, token, occurrence) VALUES (?, ?, ?)"), resource, prior.token, o)
	require.NoError(t, err)
}

func TestTable_AdvanceOnce_Rule(t *testing.T) {
	cases := []struct {
		name    string
		prior   *fenceRow // nil: no row yet
		token   fencing.Token
		o       time.Time
		wantErr error // nil: the write passes
		wantMsg string
		want    fenceRow // recorded afterwards
	}{
		{name: "first write inserts", token: 5, o: occ, want: at(5, occ)},

		{name: "no occurrence: lower token is stale", prior: &fenceRow{token: 5}, token: 4, o: occ,
			wantErr: fencing.ErrStale, wantMsg: "a greater token is recorded (000000000000005)", want: noOccurrence(5)},
		{name: "no occurrence: same token records the occurrence", prior: &fenceRow{token: 5}, token: 5, o: occ, want: at(5, occ)},
		{name: "no occurrence: greater token records both", prior: &fenceRow{token: 5}, token: 7, o: occ, want: at(7, occ)},

		{name: "lower token, same occurrence is stale", prior: ptr(at(5, occ)), token: 4, o: occ,
			wantErr: fencing.ErrStale, want: at(5, occ)},
		{name: "lower token, later occurrence is stale", prior: ptr(at(5, occ)), token: 4, o: occ.Add(time.Hour),
			wantErr: fencing.ErrStale, want: at(5, occ)},
		{name: "lower token, earlier occurrence is stale, not duplicate", prior: ptr(at(5, occ)), token: 4, o: occ.Add(-time.Hour),
			wantErr: fencing.ErrStale, want: at(5, occ)},

		{name: "same run writes again", prior: ptr(at(5, occ)), token: 5, o: occ, want: at(5, occ)},
		{name: "same token, later occurrence records it", prior: ptr(at(5, occ)), token: 5, o: occ.Add(time.Hour),
			want: at(5, occ.Add(time.Hour))},
		{name: "same token, earlier occurrence is a duplicate", prior: ptr(at(5, occ)), token: 5, o: occ.Add(-time.Hour),
			wantErr: fencing.ErrDuplicate, wantMsg: "wrote the later occurrence 2024-06-01T09:00:00.000Z", want: at(5, occ)},

		{name: "greater token, same occurrence is a duplicate", prior: ptr(at(5, occ)), token: 7, o: occ,
			wantErr: fencing.ErrDuplicate, wantMsg: "token 000000000000005 already wrote this occurrence", want: at(5, occ)},
		{name: "greater token, earlier occurrence is a duplicate", prior: ptr(at(5, occ)), token: 7, o: occ.Add(-time.Hour),
			wantErr: fencing.ErrDuplicate, wantMsg: "later occurrence", want: at(5, occ)},
		{name: "greater token, later occurrence records both", prior: ptr(at(5, occ)), token: 7, o: occ.Add(time.Hour),
			want: at(7, occ.Add(time.Hour))},

		{name: "within the same millisecond is the same occurrence", prior: ptr(at(5, occ)), token: 7, o: occ.Add(999 * time.Microsecond),
			wantErr: fencing.ErrDuplicate, want: at(5, occ)},
		{name: "same run within the same millisecond", prior: ptr(at(5, occ)), token: 5, o: occ.Add(999 * time.Microsecond),
			want: at(5, occ)},
		{name: "one millisecond later is a later occurrence", prior: ptr(at(5, occ)), token: 7, o: occ.Add(time.Millisecond),
			want: at(7, occ.Add(time.Millisecond))},
		{name: "the same instant in another zone is the same occurrence", prior: ptr(at(5, occ)), token: 7,
			o: occ.In(time.FixedZone("UTC+2", 2*60*60)), wantErr: fencing.ErrDuplicate, want: at(5, occ)},
	}
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, table *fencing.Table) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				resource := "job:" + c.name
				if c.prior != nil {
					insertFence(t, b, db, resource, *c.prior)
				}
				err := advanceOnceTx(t, db, table, resource, c.token, c.o)
				if c.wantErr == nil {
					require.NoError(t, err)
				} else {
					require.ErrorIs(t, err, c.wantErr)
					for _, other := range []error{fencing.ErrStale, fencing.ErrDuplicate} {
						if other != c.wantErr {
							assert.NotErrorIs(t, err, other)
						}
					}
					assert.Contains(t, err.Error(), `"`+resource+`"`)
					assert.Contains(t, err.Error(), c.wantMsg)
				}
				got, ok := readFence(t, b, db, "fences", resource)
				require.True(t, ok)
				assert.Equal(t, c.want, got)
			})
		}
	})
}

func ptr[T any](v T) *T { return &v }

// createEffects creates the table of a job's effects: what fencing
// protects. Its id counts up in insertion order.
func createEffects(t *testing.T, b backend, db *sql.DB) {
	t.Helper()
	id := "id INTEGER PRIMARY KEY" // SQLite: the rowid
	if b.dialect == fencing.Postgres {
		id = "id BIGSERIAL PRIMARY KEY"
	}
	_, err := db.ExecContext(t.Context(), "CREATE TABLE effects ("+id+", occurrence BIGINT NOT NULL, writer TEXT NOT NULL)")
	require.NoError(t, err)
}

// runJob is one run of a job: it writes its effect, then fences it with
// AdvanceOnce, in one transaction, and commits only if the fence passes.
func runJob(ctx context.Context, b backend, db *sql.DB, table *fencing.Table, writer string, token fencing.Token, o time.Time) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	_, err = tx.ExecContext(ctx, b.rebind("INSERT INTO effects (occurrence, writer) VALUES (?, ?)"), o.UnixMilli(), writer)
	if err != nil {
		return err
	}
	if err := table.AdvanceOnce(ctx, tx, "job:daily-report", token, o); err != nil {
		return err
	}
	return tx.Commit()
}

// effects returns the writers of the committed effects of occurrence o, in
// insertion order.
func effects(t *testing.T, b backend, db *sql.DB, o time.Time) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), b.rebind("SELECT writer FROM effects WHERE occurrence = ? ORDER BY id"), o.UnixMilli())
	require.NoError(t, err)
	var writers []string
	for rows.Next() {
		var w string
		require.NoError(t, rows.Scan(&w))
		writers = append(writers, w)
	}
	require.NoError(t, errors.Join(rows.Err(), rows.Close()))
	return writers
}

// TestTable_AdvanceOnce_RunTwiceAfterDataLoss is the story AdvanceOnce
// exists for: the lease store lost its round records, so a second replica
// runs an occurrence that has already committed, with a greater token.
func TestTable_AdvanceOnce_RunTwiceAfterDataLoss(t *testing.T) {
	later := occ.Add(24 * time.Hour)
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, table *fencing.Table) {
		ctx := t.Context()
		createEffects(t, b, db)
		recordedRow := func() fenceRow {
			r, ok := readFence(t, b, db, "fences", "job:daily-report")
			require.True(t, ok)
			return r
		}

		require.NoError(t, runJob(ctx, b, db, table, "A", 5, occ), "run A of the occurrence commits")
		assert.Equal(t, at(5, occ), recordedRow())

		// Redis lost its data: B runs the same occurrence with a new token.
		err := runJob(ctx, b, db, table, "B", 7, occ)
		require.ErrorIs(t, err, fencing.ErrDuplicate, "B must not commit the occurrence again")
		assert.Equal(t, []string{"A"}, effects(t, b, db, occ), "B's transaction commits nothing")
		assert.Equal(t, at(5, occ), recordedRow(), "B's token is not recorded")

		require.NoError(t, runJob(ctx, b, db, table, "C", 8, later), "the next occurrence passes")
		err = runJob(ctx, b, db, table, "stale", 4, later)
		require.ErrorIs(t, err, fencing.ErrStale, "an owner from before A is stale")
		require.NoError(t, runJob(ctx, b, db, table, "C", 8, later), "the same run writes again")

		assert.Equal(t, []string{"A"}, effects(t, b, db, occ))
		assert.Equal(t, []string{"C", "C"}, effects(t, b, db, later))
		assert.Equal(t, at(8, later), recordedRow())
	})
}

func TestTable_AdvanceOnce_BoundaryValuesAreStored(t *testing.T) {
	first := time.UnixMilli(1)
	last := time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC)
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, table *fencing.Table) {
		require.NoError(t, advanceOnceTx(t, db, table, "first", 1, first))
		require.NoError(t, advanceOnceTx(t, db, table, "max", fencing.MaxToken, last))
		got, _ := readFence(t, b, db, "fences", "first")
		assert.Equal(t, at(1, first), got)
		got, _ = readFence(t, b, db, "fences", "max")
		assert.Equal(t, fenceRow{token: math.MaxInt64, occurrence: sql.NullInt64{Int64: last.UnixMilli(), Valid: true}}, got)
		require.ErrorIs(t, advanceOnceTx(t, db, table, "max", fencing.MaxToken, last.Add(-time.Millisecond)), fencing.ErrDuplicate)
	})
}

// countingQuerier counts the statements that reach the database.
type countingQuerier struct {
	fencing.Querier
	n int
}

func (c *countingQuerier) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	c.n++
	return c.Querier.ExecContext(ctx, q, args...)
}

func (c *countingQuerier) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	c.n++
	return c.Querier.QueryRowContext(ctx, q, args...)
}

func TestTable_AdvanceOnce_InvalidArgumentsSendNothing(t *testing.T) {
	cases := []struct {
		name     string
		resource string
		token    fencing.Token
		o        time.Time
		wantMsg  string
	}{
		{"zero occurrence", "report", 1, time.Time{}, "occurrence must not be the zero time"},
		{"occurrence at the epoch", "report", 1, time.Unix(0, 0), "at least 1ms after the Unix epoch"},
		{"occurrence under 1ms after the epoch", "report", 1, time.Unix(0, 999_999), "at least 1ms after the Unix epoch"},
		{"occurrence before the epoch", "report", 1, time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC), "at least 1ms after the Unix epoch"},
		{"occurrence beyond int64 milliseconds", "report", 1, time.Date(300_000_000, 1, 1, 0, 0, 0, 0, time.UTC), "does not fit"},
		{"token zero", "report", 0, occ, "token must not be zero"},
		{"token above MaxInt64", "report", fencing.MaxToken + 1, occ, "does not fit"},
		{"empty resource", "", 1, occ, "resource must not be empty"},
		{"resource too long", strings.Repeat("r", fencing.MaxResourceBytes+1), 1, occ, "at most 512 bytes"},
		{"resource not UTF-8", "rep\xffort", 1, occ, "valid UTF-8"},
		{"resource with NUL", "rep\x00ort", 1, occ, "NUL"},
	}
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, table *fencing.Table) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				q := &countingQuerier{Querier: db}
				err := table.AdvanceOnce(t.Context(), q, c.resource, c.token, c.o)
				require.ErrorIs(t, err, fencing.ErrInvalidArgument)
				assert.Contains(t, err.Error(), c.wantMsg)
				assert.Equal(t, 0, q.n, "no statement may be sent")
			})
		}
		var rows int
		require.NoError(t, db.QueryRowContext(t.Context(), "SELECT count(*) FROM fences").Scan(&rows))
		assert.Zero(t, rows)
	})
}

// withRun returns ctx carrying a run's token and occurrence, as the
// scheduler's run context does.
func withRun(ctx context.Context, token fencing.Token, o time.Time) context.Context {
	return fencing.NewOccurrenceContext(fencing.NewContext(ctx, token), o)
}

func TestTable_AdvanceOnceFromContext_UsesContextValues(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, table *fencing.Table) {
		ctx := t.Context()
		missing := []struct {
			name    string
			ctx     context.Context
			wantErr error
			wantMsg string
		}{
			{"neither", ctx, fencing.ErrNoToken, "fencing.NewContext"},
			{"occurrence only", fencing.NewOccurrenceContext(ctx, occ), fencing.ErrNoToken, "fencing.NewContext"},
			{"token only", fencing.NewContext(ctx, 12), fencing.ErrNoOccurrence, "fencing.NewOccurrenceContext"},
		}
		for _, m := range missing {
			q := &countingQuerier{Querier: db}
			err := table.AdvanceOnceFromContext(m.ctx, q, "report")
			require.ErrorIs(t, err, m.wantErr, m.name)
			assert.Contains(t, err.Error(), m.wantMsg, m.name)
			assert.Equal(t, 0, q.n, "%s: no statement may be sent", m.name)
		}

		require.NoError(t, table.AdvanceOnceFromContext(withRun(ctx, 12, occ), db, "report"))
		got, _ := readFence(t, b, db, "fences", "report")
		assert.Equal(t, at(12, occ), got)
		require.ErrorIs(t, table.AdvanceOnceFromContext(withRun(ctx, 13, occ), db, "report"), fencing.ErrDuplicate)
		require.ErrorIs(t, table.AdvanceOnceFromContext(withRun(ctx, 11, occ.Add(time.Hour)), db, "report"), fencing.ErrStale)
		err := table.AdvanceOnceFromContext(withRun(ctx, 12, time.Time{}), db, "report")
		require.ErrorIs(t, err, fencing.ErrInvalidArgument, "a zero occurrence in the context is refused")
	})
}

func TestAdvanceOnce_DefaultPostgresTable(t *testing.T) {
	db := openPostgres(t)
	ctx := t.Context()
	require.NoError(t, fencing.CreateTable(ctx, db))

	require.NoError(t, fencing.AdvanceOnce(ctx, db, "report", 2, occ))
	require.ErrorIs(t, fencing.AdvanceOnce(ctx, db, "report", 3, occ), fencing.ErrDuplicate)
	require.ErrorIs(t, fencing.AdvanceOnce(ctx, db, "report", 1, occ.Add(time.Hour)), fencing.ErrStale)
	require.ErrorIs(t, fencing.AdvanceOnceFromContext(fencing.NewContext(ctx, 3), db, "report"), fencing.ErrNoOccurrence)
	require.NoError(t, fencing.AdvanceOnceFromContext(withRun(ctx, 3, occ.Add(time.Hour)), db, "report"))

	got, _ := readFence(t, backends()[0], db, fencing.DefaultTableName, "report")
	assert.Equal(t, at(3, occ.Add(time.Hour)), got)
}
