package leasetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

// RunBatch runs the contract of lease.BatchAcquirer and lease.RoundReader:
// a batch answers each request as Acquire would, and the rounds read are
// the ones acquires recorded. The store must implement both.
func RunBatch(t *testing.T, newEnv func(t *testing.T) Env) {
	t.Helper()
	runConcurrently(t, newEnv, batchTests, func(t *testing.T, env Env) {
		_, ok := env.Store.(lease.BatchAcquirer)
		require.True(t, ok, "leasetest: the store is not a lease.BatchAcquirer")
		_, ok = env.Store.(lease.RoundReader)
		require.True(t, ok, "leasetest: the store is not a lease.RoundReader")
	})
}

var batchTests = []subtest{
	{"AnswersAsAcquire", testBatchAnswers},
	{"Empty", testBatchEmpty},
	{"LastRounds", testLastRounds},
	{"LastRunsWhileHeld", testLastRunsWhileHeld},
}

// testBatchAnswers: each request of a batch gets the answer Acquire gives
// it (won, locked, round claimed, invalid), in its own place, and the
// leases won are live, fenced and releasable.
func testBatchAnswers(t *testing.T, env Env) {
	ctx := t.Context()
	ba := env.Store.(lease.BatchAcquirer)
	free, held, claimed, twice := testKey(t, "free"), testKey(t, "held"), testKey(t, "claimed"), testKey(t, "twice")
	holder := acquire(t, env, held, longTTL)
	l := acquire(t, env, claimed, longTTL, lease.WithRound(20))
	require.NoError(t, env.Store.Release(ctx, l.ID))

	reqs := []lease.AcquireRequest{
		{Key: free, TTL: longTTL, Options: []lease.AcquireOption{lease.WithRound(7), lease.WithOwner("a")}},
		{Key: held, TTL: longTTL},
		{Key: claimed, TTL: longTTL, Options: []lease.AcquireOption{lease.WithRound(20)}},
		{Key: "", TTL: longTTL},
		{Key: twice, TTL: longTTL, Options: []lease.AcquireOption{lease.WithRound(1)}},
		{Key: twice, TTL: longTTL, Options: []lease.AcquireOption{lease.WithRound(2)}},
		{Key: claimed, TTL: 0},
	}
	res := make([]lease.AcquireResult, len(reqs))
	ba.AcquireBatch(ctx, reqs, res)

	require.NoError(t, res[0].Err, "a free key")
	require.NotNil(t, res[0].Lease)
	assert.Equal(t, free, res[0].Lease.Key)
	assert.Equal(t, "a", res[0].Lease.Owner)
	assert.Equal(t, int64(7), res[0].Lease.Round)
	requireLockedState(t, env, free, true, "the batch took the lease")

	var le *lease.LockedError
	assert.ErrorAs(t, res[1].Err, &le, "a held key")
	assert.Nil(t, res[1].Lease)
	assert.ErrorIs(t, res[2].Err, lease.ErrRoundClaimed, "a claimed round")
	assert.ErrorIs(t, res[3].Err, lease.ErrInvalidArgument, "an empty key fails alone")
	assert.ErrorIs(t, res[6].Err, lease.ErrInvalidArgument, "a zero TTL fails alone")

	// One key twice: independent acquires, one wins and the other finds
	// it held (or its round behind), in whichever order the store ran them.
	won := 0
	for _, r := range res[4:6] {
		if r.Err == nil {
			won++
			continue
		}
		if !assert.ErrorIs(t, r.Err, lease.ErrLocked) {
			assert.ErrorIs(t, r.Err, lease.ErrRoundClaimed)
		}
	}
	assert.Equal(t, 1, won, "one of two acquires of one key wins")

	for _, r := range res {
		if r.Lease != nil {
			require.NoError(t, r.Lease.Release(ctx), "a lease won in a batch is released through its store")
		}
	}
	require.NoError(t, env.Store.Release(ctx, holder.ID))
	after := acquire(t, env, free, longTTL)
	assert.Greater(t, after.Fence, res[0].Lease.Fence, "the batch's acquire issued a fence")
	require.NoError(t, env.Store.Release(ctx, after.ID))
}

// testBatchEmpty: an empty batch answers nothing and sends nothing.
func testBatchEmpty(t *testing.T, env Env) {
	env.Store.(lease.BatchAcquirer).AcquireBatch(t.Context(), nil, nil)
	require.NoError(t, env.Store.(lease.RoundReader).LastRounds(t.Context(), nil, nil))
}

// testLastRounds: the rounds read are the last recorded, 0 for a key
// that never claimed one; a plain acquire records none; an invalid key
// fails the call.
func testLastRounds(t *testing.T, env Env) {
	ctx := t.Context()
	rr := env.Store.(lease.RoundReader)
	a, b, fresh := testKey(t, "a"), testKey(t, "b"), testKey(t, "fresh")
	l := acquire(t, env, a, longTTL, lease.WithRound(1700000000123))
	require.NoError(t, env.Store.Release(ctx, l.ID))
	l = acquire(t, env, b, longTTL, lease.WithRound(5))
	require.NoError(t, env.Store.Release(ctx, l.ID))
	l = acquire(t, env, b, longTTL) // no round
	require.NoError(t, env.Store.Release(ctx, l.ID))

	rounds := []int64{-1, -1, -1}
	require.NoError(t, rr.LastRounds(ctx, []string{a, b, fresh}, rounds))
	assert.Equal(t, []int64{1700000000123, 5, 0}, rounds)

	spans := make([]lease.RunSpan, 2)
	require.NoError(t, rr.LastRuns(ctx, []string{a, fresh}, spans))
	assert.Equal(t, []lease.RunSpan{{}, {}}, spans, "a plain release records no run")
	assert.ErrorIs(t, rr.LastRuns(ctx, []string{""}, spans), lease.ErrInvalidArgument)

	err := rr.LastRounds(ctx, []string{a, ""}, make([]int64, 2))
	assert.ErrorIs(t, err, lease.ErrInvalidArgument)
	err = rr.LastRounds(ctx, []string{a, b}, make([]int64, 1))
	assert.ErrorIs(t, err, lease.ErrInvalidArgument)
}

// testLastRunsWhileHeld: while a lease holds a key, LastRuns answers its
// holder's span (from its acquisition to its expiry), which covers an
// occurrence that came due during the run, before its release records it;
// once released, the key's span is what the release recorded (none for a
// plain release).
func testLastRunsWhileHeld(t *testing.T, env Env) {
	ctx := t.Context()
	rr := env.Store.(lease.RoundReader)
	k := testKey(t, "held")
	l := acquire(t, env, k, longTTL, lease.WithRound(5))
	spans := make([]lease.RunSpan, 1)
	require.NoError(t, rr.LastRuns(ctx, []string{k}, spans))
	assert.True(t, spans[0].Start.Equal(l.AcquiredAt), "from the holder's acquisition: %v against %v", spans[0].Start, l.AcquiredAt)
	assert.False(t, spans[0].End.Before(l.ExpiresAt), "to its expiry: %v against %v", spans[0].End, l.ExpiresAt)
	assert.True(t, spans[0].Covers(l.AcquiredAt.Add(time.Millisecond)), "an occurrence during the run")

	require.NoError(t, env.Store.Release(ctx, l.ID))
	require.NoError(t, rr.LastRuns(ctx, []string{k}, spans))
	assert.Zero(t, spans[0], "a plain release records no run")
}
