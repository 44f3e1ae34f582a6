package inspect_test

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

func TestInspector_History_PagesNewestFirst(t *testing.T) {
	e := newMemEnv(t)
	e.publish(t, "replica-1", reportJob, tickJob)
	for i := range 30 {
		occ := epoch.Add(time.Duration(i) * 5 * time.Second)
		l := e.run(t, "replica-1", reportJob, occ)
		e.finish(t, l, occ, 800*time.Millisecond, fleet.OutcomeSucceeded, "")
		e.clock.Advance(5 * time.Second)
	}
	e.publish(t, "replica-1", reportJob, tickJob) // the replica's entry is refreshed

	h, err := e.in.History(t.Context(), "report", inspect.HistoryQuery{})
	require.NoError(t, err)
	assert.Equal(t, "report", h.Job)
	assert.Equal(t, 30, h.Total)
	require.Len(t, h.Runs, inspect.DefaultHistoryLimit, "limit 0 is the default")
	assert.True(t, h.Runs[0].Occurrence.Equal(epoch.Add(29*5*time.Second)), "newest first")
	assert.Equal(t, time.UTC, h.Runs[0].Occurrence.Location())
	assert.Equal(t, time.UTC, h.Runs[0].Started.Location())
	assert.Equal(t, time.UTC, h.Runs[0].Ended.Location())
	assert.Equal(t, 800*time.Millisecond, h.Runs[0].Ended.Sub(h.Runs[0].Started))
	assert.Equal(t, 1, h.Runs[0].Attempt, "a status without an attempt is the first")

	page, err := e.in.History(t.Context(), "report", inspect.HistoryQuery{Offset: 25, Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, 30, page.Total)
	require.Len(t, page.Runs, 5)
	assert.True(t, page.Runs[4].Occurrence.Equal(epoch), "the oldest last")

	all, err := e.in.History(t.Context(), "report", inspect.HistoryQuery{Limit: 1_000_000})
	require.NoError(t, err)
	assert.Len(t, all.Runs, 30, "a limit above the store's reads up to it")

	none, err := e.in.History(t.Context(), "tick", inspect.HistoryQuery{})
	require.NoError(t, err)
	assert.Equal(t, inspect.History{Job: "tick"}, none, "a job that never ran has an empty history")
}

func TestInspector_History_CappedAtTheStoreLimit(t *testing.T) {
	clock := clockwork.NewFakeClockAt(epoch)
	store, err := memory.New(memory.WithClock(clock), memory.WithHistoryLimit(5))
	require.NoError(t, err)
	in, err := inspect.New(store, inspect.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	e := memEnv{store: store, clock: clock, in: in}
	e.publish(t, "replica-1", reportJob)
	for i := range 12 {
		occ := epoch.Add(time.Duration(i) * 5 * time.Second)
		e.finish(t, e.run(t, "replica-1", reportJob, occ), occ, time.Second, fleet.OutcomeFailed, "boom")
		clock.Advance(5 * time.Second)
	}
	e.publish(t, "replica-1", reportJob)
	h, err := in.History(t.Context(), "report", inspect.HistoryQuery{Limit: 50})
	require.NoError(t, err)
	assert.Equal(t, 5, h.Total)
	assert.Len(t, h.Runs, 5)
}

func TestInspector_History_InvalidArguments(t *testing.T) {
	e := newMemEnv(t)
	e.publish(t, "replica-1", reportJob)
	for name, tc := range map[string]struct {
		job  string
		q    inspect.HistoryQuery
		want string
	}{
		"negative offset": {"report", inspect.HistoryQuery{Offset: -1}, "offset must not be negative, got -1"},
		"negative limit":  {"report", inspect.HistoryQuery{Limit: -5}, "limit must not be negative, got -5"},
		"empty name":      {"", inspect.HistoryQuery{}, "job name must be non-empty"},
	} {
		_, err := e.in.History(t.Context(), tc.job, tc.q)
		assert.True(t, errors.Is(err, lease.ErrInvalidArgument), "%s: %v", name, err)
		assert.ErrorContains(t, err, tc.want, name)
	}
	_, err := e.in.History(t.Context(), "nosuch", inspect.HistoryQuery{})
	assert.True(t, errors.Is(err, inspect.ErrUnknownJob), "%v", err)
}

func TestInspector_Histories_EachJobInOrder(t *testing.T) {
	e := newMemEnv(t)
	e.publish(t, "replica-1", reportJob, tickJob)
	for i := range 3 {
		occ := epoch.Add(time.Duration(i) * 5 * time.Second)
		l := e.run(t, "replica-1", reportJob, occ)
		_, err := e.store.ReleaseWithStatus(t.Context(), l, fleet.Status{Occurrence: occ, Owner: l.Owner, Fence: l.Fence,
			Started: l.AcquiredAt, Duration: time.Second, Outcome: fleet.OutcomeGivenUp, Missed: i})
		require.NoError(t, err)
		e.clock.Advance(5 * time.Second)
	}
	e.publish(t, "replica-1", reportJob, tickJob)

	jobs, err := e.in.Jobs(t.Context())
	require.NoError(t, err)
	hs, err := e.in.Histories(t.Context(), jobs, inspect.HistoryQuery{Limit: 2})
	require.NoError(t, err)
	require.Len(t, hs, len(jobs))
	for i, h := range hs {
		assert.Equal(t, jobs[i].Name, h.Job, "in the order of the jobs")
		if h.Job == "report" {
			assert.Equal(t, 3, h.Total)
			require.Len(t, h.Runs, 2)
			assert.Equal(t, 2, h.Runs[0].Missed, "newest first, with its missed count")
			assert.Equal(t, fleet.OutcomeGivenUp, h.Runs[0].Outcome)
			assert.Equal(t, time.UTC, h.Runs[0].Started.Location())
		} else {
			assert.Zero(t, h.Total)
		}
	}

	_, err = e.in.Histories(t.Context(), jobs, inspect.HistoryQuery{Offset: -1})
	assert.True(t, errors.Is(err, lease.ErrInvalidArgument), "%v", err)
}
