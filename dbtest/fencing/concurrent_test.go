package fencing_test

import (
	"database/sql"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
)

// outcome is what happened to one token, with positions on a shared event
// counter: a commit that started before a rejection ended may have caused
// it; one that started after cannot have.
type outcome struct {
	token       fencing.Token
	accepted    bool
	commitStart int64 // accepted: counter before Commit
	commitEnd   int64 // accepted: counter after Commit returned
	rejectedAt  int64 // rejected: counter after Advance returned ErrStale
	err         error // anything else
}

func TestTable_Advance_ConcurrentTokensOnlyMoveForward(t *testing.T) {
	const writers = 50
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB, table *fencing.Table) {
		ctx := t.Context()
		var (
			events   atomic.Int64
			start    = make(chan struct{})
			wg       sync.WaitGroup
			outcomes = make([]outcome, writers)
		)
		for i, p := range rand.Perm(writers) {
			token := fencing.Token(p + 1)
			wg.Go(func() {
				o := outcome{token: token}
				defer func() { outcomes[i] = o }()
				<-start
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					o.err = err
					return
				}
				err = table.Advance(ctx, tx, "report", token)
				if errors.Is(err, fencing.ErrStale) {
					o.rejectedAt = events.Add(1)
					o.err = tx.Rollback()
					return
				}
				if err != nil {
					o.err = errors.Join(err, tx.Rollback())
					return
				}
				o.commitStart = events.Add(1)
				o.err = tx.Commit()
				o.commitEnd = events.Add(1)
				o.accepted = o.err == nil
			})
		}
		close(start)
		wg.Wait()

		var accepted, rejected []outcome
		for _, o := range outcomes {
			require.NoError(t, o.err, "token %d: every writer must end in accept or ErrStale", o.token)
			if o.accepted {
				accepted = append(accepted, o)
			} else {
				rejected = append(rejected, o)
			}
		}
		got, _ := recorded(t, b, db, "report")
		assert.Equal(t, int64(writers), got, "the highest token is recorded")
		assert.NotEmpty(t, rejected, "shuffled concurrent tokens must see some rejections")
		t.Logf("%d accepted, %d rejected", len(accepted), len(rejected))

		// Every rejected token is lower than one accepted before it.
		for _, r := range rejected {
			witness := false
			for _, a := range accepted {
				if a.token > r.token && a.commitStart < r.rejectedAt {
					witness = true
					break
				}
			}
			assert.True(t, witness, "token %d was rejected with no greater token committed before", r.token)
		}
		// Tokens accepted one after the other increase: no accepted token is
		// lower than one whose commit had finished before its own began.
		for _, a := range accepted {
			for _, later := range accepted {
				if a.commitEnd < later.commitStart {
					assert.Less(t, a.token, later.token, "token %d committed after %d", later.token, a.token)
				}
			}
		}
	})
}
