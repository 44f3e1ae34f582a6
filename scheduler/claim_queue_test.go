package scheduler

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClaimQueue_PopBatch_LimitsCallsNotClaims: the limit counts the
// batches in flight (one call each), not the claims in them, so a firing
// group's claims all go out at once in full batches; a batch's done lets
// one more be taken.
func TestClaimQueue_PopBatch_LimitsCallsNotClaims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newClaimQueue()
		for range 200 {
			require.True(t, q.push(claimTask{}))
		}
		const n, limit = 64, 2
		first, ok := q.popBatch(nil, n, limit)
		require.True(t, ok)
		second, ok := q.popBatch(nil, n, limit)
		require.True(t, ok)
		assert.Len(t, first, n, "a full batch")
		assert.Len(t, second, n, "a second full batch: two calls are allowed, whatever they carry")

		third := make(chan int)
		go func() {
			ts, ok := q.popBatch(nil, n, limit)
			assert.True(t, ok)
			third <- len(ts)
		}()
		synctest.Wait()
		select {
		case <-third:
			t.Fatal("a third call was taken while two were in flight")
		default:
		}
		q.done(len(first))
		assert.Equal(t, n, <-third, "the call done let one more be taken")
		q.close()
	})
}
