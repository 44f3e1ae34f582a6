package fencing_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
)

// TestTable_AdvanceOnce_RacingRunsCommitOnce starts several runs of one
// occurrence at once, each with its own token, round after round. Their
// transactions contend for the fence row; exactly one commits, and each
// loser is told why: ErrStale when its token is below the winner's,
// ErrDuplicate when it is above. No assertion depends on who wins.
func TestTable_AdvanceOnce_RacingRunsCommitOnce(t *testing.T) {
	cases := []struct {
		runs, rounds int
	}{
		{runs: 2, rounds: 60},
		{runs: 5, rounds: 20},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d runs", c.runs), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, table *fencing.Table) {
				createEffects(t, b, db)
				lowerWon := 0
				for r := range c.rounds {
					o := occ.Add(time.Duration(r) * time.Minute)
					// Distinct tokens above every earlier round's.
					tokens := make([]fencing.Token, c.runs)
					for i, p := range rand.Perm(10 * c.runs)[:c.runs] {
						tokens[i] = fencing.Token(r*10*c.runs + p + 1)
					}
					errs := raceRuns(t, b, db, table, tokens, o)

					winner := -1
					for i, err := range errs {
						if err == nil && winner != -1 {
							require.Failf(t, "two runs committed", "round %d: tokens %d and %d", r, tokens[winner], tokens[i])
						}
						if err == nil {
							winner = i
						}
					}
					require.NotEqual(t, -1, winner, "round %d: no run committed: %v", r, errs)
					for i, err := range errs {
						switch {
						case i == winner:
						case tokens[i] < tokens[winner]:
							assert.ErrorIs(t, err, fencing.ErrStale, "round %d: token %d lost to %d", r, tokens[i], tokens[winner])
						default:
							assert.ErrorIs(t, err, fencing.ErrDuplicate, "round %d: token %d lost to %d", r, tokens[i], tokens[winner])
						}
					}
					if tokens[winner] < slices.Max(tokens) {
						lowerWon++
					}
					want := fmt.Sprint(tokens[winner])
					assert.Equal(t, []string{want}, effects(t, b, db, o), "round %d: one committed effect, the winner's", r)
					got, _ := readFence(t, b, db, "fences", "job:daily-report")
					assert.Equal(t, at(int64(tokens[winner]), o), got, "round %d", r)
				}
				t.Logf("%d of %d rounds won by a token below the greatest", lowerWon, c.rounds)
			})
		})
	}
}

// raceRuns runs one job run per token for occurrence o, all released at
// once, and returns each run's error.
func raceRuns(t *testing.T, b backend, db *sql.DB, table *fencing.Table, tokens []fencing.Token, o time.Time) []error {
	t.Helper()
	var (
		ready, done sync.WaitGroup
		start       = make(chan struct{})
		errs        = make([]error, len(tokens))
	)
	ready.Add(len(tokens))
	for i, token := range tokens {
		done.Go(func() {
			ready.Done()
			<-start
			errs[i] = runJob(t.Context(), b, db, table, fmt.Sprint(token), token, o)
		})
	}
	ready.Wait()
	close(start)
	done.Wait()
	for i, err := range errs {
		if err != nil && !errors.Is(err, fencing.ErrStale) && !errors.Is(err, fencing.ErrDuplicate) {
			require.NoError(t, err, "token %d: every run must commit or be refused", tokens[i])
		}
	}
	return errs
}

// TestTable_AdvanceOnce_WaitsForTheRowLock makes the contention certain on
// PostgreSQL: the first run's transaction holds the fence row (or its
// not-yet-committed insert) while the second run's AdvanceOnce waits for
// it; the second's verdict then follows from how the first ended, read in
// the second's own transaction.
func TestTable_AdvanceOnce_WaitsForTheRowLock(t *testing.T) {
	earlier := at(1, occ.Add(-time.Hour))
	cases := []struct {
		name          string
		prior         *fenceRow
		first, second fencing.Token
		firstCommits  bool
		wantErr       error // for the second; nil: it passes
		want          fenceRow
	}{
		{"lower token committed first: duplicate", &earlier, 5, 7, true, fencing.ErrDuplicate, at(5, occ)},
		{"greater token committed first: stale", &earlier, 7, 5, true, fencing.ErrStale, at(7, occ)},
		{"first rolled back: second records", &earlier, 5, 7, false, nil, at(7, occ)},
		{"first insert committed: duplicate", nil, 5, 7, true, fencing.ErrDuplicate, at(5, occ)},
		{"first insert rolled back: second inserts", nil, 7, 5, false, nil, at(5, occ)},
	}
	b := backends()[0]
	require.Equal(t, fencing.Postgres, b.dialect)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			db := b.open(t)
			table, err := fencing.NewTable("fences", b.dialect)
			require.NoError(t, err)
			require.NoError(t, table.Create(ctx, db))
			if c.prior != nil {
				insertFence(t, b, db, "report", *c.prior)
			}

			first, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			require.NoError(t, table.AdvanceOnce(ctx, first, "report", c.first, occ))

			secondErr := make(chan error, 1)
			go func() { secondErr <- runAdvanceOnce(db, table, c.second) }()
			require.Eventually(t, func() bool {
				var waiting int
				err := db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity"+
					" WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&waiting)
				return err == nil && waiting == 1
			}, 10*time.Second, 5*time.Millisecond, "the second run never waited for the first's lock")

			if c.firstCommits {
				require.NoError(t, first.Commit())
			} else {
				require.NoError(t, first.Rollback())
			}
			err = <-secondErr
			if c.wantErr == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, c.wantErr)
			}
			got, _ := readFence(t, b, db, "fences", "report")
			assert.Equal(t, c.want, got)
		})
	}
}

// runAdvanceOnce runs AdvanceOnce for "report" at occ in a transaction of
// its own, commits it if AdvanceOnce passed, and returns AdvanceOnce's or
// the commit's error. It does not use t: it runs on its own goroutine.
func runAdvanceOnce(db *sql.DB, table *fencing.Table, token fencing.Token) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := table.AdvanceOnce(ctx, tx, "report", token, occ); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}

// TestTable_AdvanceOnce_RefusedRunHoldsTheLock checks what the read after
// a refusal relies on: a refused AdvanceOnce still holds the fence row
// (PostgreSQL) or the database write lock (SQLite, even in a deferred
// transaction) until its transaction ends, so no writer can change the row
// between the refusal and the read. The other writer is told not to wait
// (lock_timeout, busy_timeout 0), so a wait shows as an error.
func TestTable_AdvanceOnce_RefusedRunHoldsTheLock(t *testing.T) {
	type setup struct {
		db    *sql.DB        // runs the refused transaction
		other fencing.Execer // a writer that does not wait for locks
	}
	cases := []struct {
		dialect fencing.Dialect
		busy    string // what the other writer is told
		open    func(t *testing.T) setup
	}{
		{fencing.Postgres, "lock timeout", func(t *testing.T) setup {
			db := openPostgres(t)
			conn, err := db.Conn(t.Context())
			require.NoError(t, err)
			t.Cleanup(func() { _ = conn.Close() })
			_, err = conn.ExecContext(t.Context(), "SET lock_timeout = '100ms'")
			require.NoError(t, err)
			return setup{db: db, other: conn}
		}},
		{fencing.SQLite, "database is locked", func(t *testing.T) setup {
			path := filepath.Join(t.TempDir(), "fences.db")
			open := func(dsn string) *sql.DB {
				db, err := sql.Open("sqlite", "file:"+path+"?"+dsn)
				require.NoError(t, err)
				t.Cleanup(func() { _ = db.Close() })
				require.NoError(t, db.PingContext(t.Context()))
				return db
			}
			// Deferred transactions: the lock comes from the refused
			// statement itself, not from BEGIN IMMEDIATE.
			db := open("_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
			return setup{db: db, other: open("_pragma=busy_timeout(0)")}
		}},
	}
	for _, c := range cases {
		t.Run(c.dialect.String(), func(t *testing.T) {
			ctx := t.Context()
			s := c.open(t)
			table := mustNewTable(t, "fences", c.dialect)
			require.NoError(t, table.Create(ctx, s.db))
			require.NoError(t, table.AdvanceOnce(ctx, s.db, "report", 5, occ))

			tx, err := s.db.BeginTx(ctx, nil)
			require.NoError(t, err)
			require.ErrorIs(t, table.AdvanceOnce(ctx, tx, "report", 7, occ), fencing.ErrDuplicate)
			err = table.Advance(ctx, s.other, "report", 9)
			require.Error(t, err, "the refused transaction must still hold the lock")
			assert.Contains(t, err.Error(), c.busy)
			require.NoError(t, tx.Rollback())

			require.NoError(t, table.Advance(ctx, s.other, "report", 9), "the lock ends with the transaction")
		})
	}
}
