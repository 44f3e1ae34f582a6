package fleettest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// historyLimit is the store's history limit: what it says
// (HistoryLimit() int), or fleet.DefaultHistoryLimit.
func historyLimit(s fleet.Store) int {
	if hl, ok := s.(interface{ HistoryLimit() int }); ok {
		return hl.HistoryLimit()
	}
	return fleet.DefaultHistoryLimit
}

// recordRun acquires key, releases it with a status for occurrence occ
// (Unix ms) and returns the lease.
func recordRun(t *testing.T, env Env, key string, occ int64, outcome string) *lease.Lease {
	t.Helper()
	l, err := env.Store.Acquire(t.Context(), key, ttl, lease.WithOwner("r1/history"))
	require.NoError(t, err)
	st := fleet.Status{Occurrence: time.UnixMilli(occ), Owner: l.Owner, Replica: "r1", Attempt: 1,
		Fence: l.Fence, Started: l.AcquiredAt, Duration: 250 * time.Millisecond, Outcome: outcome}
	if outcome != fleet.OutcomeSucceeded {
		st.Error = fmt.Sprintf("run %d:\nfailed", occ)
	}
	_, err = env.Store.ReleaseWithStatus(t.Context(), l, st)
	require.NoError(t, err)
	return l
}

func testHistoryNewestFirst(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:history"
	var leases []*lease.Lease
	for i := range int64(5) {
		outcome := fleet.OutcomeSucceeded
		if i%2 == 1 {
			outcome = fleet.OutcomeFailed
		}
		leases = append(leases, recordRun(t, env, key, 1_700_000_000_000+i*60_000, outcome))
	}

	runs, total, err := env.Store.History(ctx, key, 0, 10)
	require.NoError(t, err)
	assert.Equal(t, 5, total)
	require.Len(t, runs, 5)
	for i, r := range runs {
		l := leases[4-i]
		assert.True(t, r.Occurrence.Equal(time.UnixMilli(1_700_000_000_000+int64(4-i)*60_000)), "run %d: newest first", i)
		assert.Equal(t, 1, r.Attempt)
		assert.Equal(t, "r1", r.Replica)
		assert.True(t, r.Started.Equal(l.AcquiredAt), "run %d: started", i)
		assert.True(t, r.Ended.Equal(l.AcquiredAt.Add(250*time.Millisecond)), "run %d: ended", i)
		assert.Equal(t, l.Fence, r.Fence)
		assert.Zero(t, r.Missed, "run %d: none missed", i)
	}
	assert.Equal(t, fleet.OutcomeSucceeded, runs[0].Outcome)
	assert.Empty(t, runs[0].Error)
	assert.Equal(t, fleet.OutcomeFailed, runs[1].Outcome)
	assert.Equal(t, "run 1700000180000: failed", runs[1].Error, "the error as the status keeps it: one line")

	page, total, err := env.Store.History(ctx, key, 1, 2)
	require.NoError(t, err)
	assert.Equal(t, 5, total)
	assert.Equal(t, runs[1:3], page, "offset 1, limit 2")
	page, total, err = env.Store.History(ctx, key, 4, 2)
	require.NoError(t, err)
	assert.Equal(t, 5, total)
	assert.Equal(t, runs[4:], page, "the last page is short")
	page, total, err = env.Store.History(ctx, key, 5, 2)
	require.NoError(t, err)
	assert.Equal(t, 5, total)
	assert.Empty(t, page, "past the end")
	page, total, err = env.Store.History(ctx, key, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, 5, total, "limit 0 still counts")
	assert.Empty(t, page)
}

func testHistoryCapped(t *testing.T, env Env) {
	ctx := t.Context()
	const key, runs = "job:history-capped", 10_000
	limit := historyLimit(env.Store)
	require.Less(t, limit, runs)
	for i := range int64(runs) {
		recordRun(t, env, key, i+1, fleet.OutcomeSucceeded)
	}
	got, total, err := env.Store.History(ctx, key, 0, fleet.MaxHistoryLimit)
	require.NoError(t, err)
	assert.Equal(t, limit, total, "the history keeps the store's limit")
	require.Len(t, got, limit, "a limit above the store's reads up to it")
	assert.Equal(t, int64(runs), got[0].Occurrence.UnixMilli(), "the newest run is first")
	assert.Equal(t, int64(runs-limit+1), got[limit-1].Occurrence.UnixMilli(), "the oldest kept run is last")
}

func testHistorySurvivesRelease(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:history-survives"
	l := recordRun(t, env, key, 1_700_000_000_000, fleet.OutcomeSucceeded)
	again, err := env.Store.Acquire(ctx, key, ttl)
	require.NoError(t, err, "released")
	require.NoError(t, env.Store.Release(ctx, again.ID)) // a release without status records nothing
	env.Wait(500 * time.Millisecond)

	runs, total, err := env.Store.History(ctx, key, 0, 10)
	require.NoError(t, err)
	assert.Equal(t, 1, total)
	require.Len(t, runs, 1)
	assert.Equal(t, l.Fence, runs[0].Fence)
	assert.NotContains(t, fmt.Sprintf("%+v", runs), l.ID, "no lease ID in the history")
	assert.NotContains(t, fmt.Sprintf("%+v", runs), again.ID)
}

func testHistoryNotByALostLease(t *testing.T, env Env) {
	ctx := t.Context()
	const key = "job:history-lost"
	recordRun(t, env, key, 1, fleet.OutcomeSucceeded)
	stale, err := env.Store.Acquire(ctx, key, ttl)
	require.NoError(t, err)
	require.NoError(t, env.Store.Release(ctx, stale.ID)) // released behind its back
	_, err = env.Store.ReleaseWithStatus(ctx, stale, fleet.Status{Occurrence: time.UnixMilli(2), Outcome: fleet.OutcomeFailed})
	require.True(t, errors.Is(err, lease.ErrNotHeld), "%v", err)
	runs, total, err := env.Store.History(ctx, key, 0, 10)
	require.NoError(t, err)
	assert.Equal(t, 1, total, "a lease no longer held records nothing")
	require.Len(t, runs, 1)
	assert.Equal(t, int64(1), runs[0].Occurrence.UnixMilli())
}

func testHistoryUnknownJob(t *testing.T, env Env) {
	runs, total, err := env.Store.History(t.Context(), "job:history-none", 0, 10)
	require.NoError(t, err)
	assert.Zero(t, total)
	assert.Empty(t, runs)
}

func testHistoryValidation(t *testing.T, env Env) {
	ctx := t.Context()
	for name, call := range map[string]func() error{
		"negative offset": func() error { _, _, err := env.Store.History(ctx, "job:h", -1, 10); return err },
		"negative limit":  func() error { _, _, err := env.Store.History(ctx, "job:h", 0, -1); return err },
		"empty key":       func() error { _, _, err := env.Store.History(ctx, "", 0, 10); return err },
		"invalid key":     func() error { _, _, err := env.Store.History(ctx, "bad\xffkey", 0, 10); return err },
	} {
		err := call()
		assert.True(t, errors.Is(err, lease.ErrInvalidArgument), "%s: %v", name, err)
		if strings.HasPrefix(name, "negative") {
			assert.ErrorContains(t, err, "must not be negative", name)
		}
	}
}
