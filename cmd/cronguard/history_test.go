package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/scheduler"
)

// historyJobs registers tick, every second, and quiet, which never comes
// due during a test (its runs are written by the test).
func historyJobs(s *scheduler.Scheduler) error {
	ok := func(context.Context) error { return nil }
	return errors.Join(
		s.Register("tick", scheduler.Every(time.Second), ok),
		s.Register("quiet", scheduler.At(time.Now().Add(24*time.Hour)), ok),
		s.Register("idle", scheduler.At(time.Now().Add(24*time.Hour)), ok),
	)
}

// recordRuns records n runs of job:<name> as a replica's releases do, the
// odd ones failed, run i after i%3 missed occurrences, and returns their leases, oldest first.
func recordRuns(t *testing.T, f *testFleet, name string, n int) []*lease.Lease {
	t.Helper()
	store, err := redislease.New(f.admin, redislease.WithPrefix(f.prefix), redislease.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	var leases []*lease.Lease
	for i := range n {
		l, err := store.Acquire(t.Context(), "job:"+name, time.Minute, lease.WithOwner("replica-9/"+name))
		require.NoError(t, err)
		st := fleet.Status{Occurrence: time.UnixMilli(1_800_000_000_000 + int64(i)*60_000), Owner: l.Owner, Replica: "replica-9",
			Attempt: 1, Fence: l.Fence, Started: l.AcquiredAt, Duration: 1500 * time.Millisecond, Outcome: fleet.OutcomeSucceeded, Missed: i % 3}
		if i%2 == 1 {
			st.Outcome, st.Error = fleet.OutcomeFailed, fmt.Sprintf("run %d: dial postgres://app:hunter2@db/x:\nrefused", i)
		}
		_, err = store.ReleaseWithStatus(t.Context(), l, st)
		require.NoError(t, err)
		leases = append(leases, l)
	}
	return leases
}

func TestCLI_History(t *testing.T) {
	f := newTestFleet(t)
	f.start(t, "replica-1", historyJobs)
	f.waitReplicas(t, "replica-1")
	leases := recordRuns(t, f, "quiet", 25)

	t.Run("Table", func(t *testing.T) {
		r := f.cli(t, "history", "quiet")
		require.Equal(t, exitOK, r.code, r.stderr)
		ls := lines(r.stdout)
		require.Len(t, ls, 22, r.stdout)
		assert.Regexp(t, `^OCCURRENCE\s+ATTEMPT\s+REPLICA\s+STARTED\s+ENDED\s+TOOK\s+OUTCOME\s+MISSED\s+FENCE\s+ERROR$`, ls[0])
		const ts = `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`
		newest := leases[24]
		assert.Regexp(t, `^`+ts+`\s+1\s+replica-9\s+(`+ts+`|(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d)\s+(`+ts+`|(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d)\s+1\.5s\s+succeeded\s+0\s+`+fmt.Sprint(uint64(newest.Fence))+`$`, ls[1])
		assert.Regexp(t, `\s+failed\s+2\s+`+fmt.Sprint(uint64(leases[23].Fence))+`\s+run 23: dial postgres://\*\*\*@db/x: refused$`, ls[2])
		assert.Equal(t, "runs 1-20 of 25, newest first; older: cronguard history quiet --offset 20", ls[21])

		r = f.cli(t, "history", "quiet", "--offset", "20")
		require.Equal(t, exitOK, r.code, r.stderr)
		ls = lines(r.stdout)
		require.Len(t, ls, 7, r.stdout)
		assert.Contains(t, ls[5], " "+fmt.Sprint(uint64(leases[0].Fence)), "the oldest run is last")
		assert.Equal(t, "runs 21-25 of 25, newest first", ls[6])

		r = f.cli(t, "history", "quiet", "--offset", "30")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, "quiet has 25 runs recorded: none past --offset 30\n", r.stdout)
		r = f.cli(t, "history", "idle")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, "no run of idle recorded yet\n", r.stdout)
	})

	t.Run("JSON", func(t *testing.T) {
		r := f.cli(t, "history", "quiet", "--limit", "3", "--offset", "1", "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		var out historyJSON
		decode(t, r.stdout, &out)
		assert.Equal(t, "quiet", out.Job)
		assert.Equal(t, 25, out.Total)
		assert.Equal(t, 1, out.Offset)
		require.Len(t, out.Runs, 3)
		for i, run := range out.Runs {
			l := leases[23-i]
			assert.Equal(t, int64(1_800_000_000_000+int64(23-i)*60_000), run.Occurrence.UnixMilli())
			assert.Equal(t, time.UTC, run.Occurrence.Location())
			assert.Equal(t, 1, run.Attempt)
			assert.Equal(t, "replica-9", run.Replica)
			assert.Equal(t, l.AcquiredAt.UnixMilli(), run.Started.UnixMilli())
			assert.Equal(t, 1500*time.Millisecond, run.Ended.Sub(run.Started))
			assert.Equal(t, uint64(l.Fence), run.Fence)
			assert.Empty(t, run.Trigger)
			assert.Equal(t, (23-i)%3, run.Missed, "run %d: missed", 23-i)
		}
		assert.Equal(t, "failed", out.Runs[0].Outcome)
		assert.Equal(t, "run 23: dial postgres://***@db/x: refused", out.Runs[0].Error)
		assert.Equal(t, "succeeded", out.Runs[1].Outcome)
		for _, l := range leases {
			assert.NotContains(t, r.stdout, l.ID, "lease IDs are never printed")
		}
		assert.NotContains(t, r.stdout, "hunter2")

		r = f.cli(t, "history", "idle", "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.JSONEq(t, `{"job":"idle","total":0,"offset":0,"runs":[]}`, r.stdout)
	})

	t.Run("ScheduledRuns", func(t *testing.T) {
		for range 2 {
			f.events.waitFor(t, "tick released", func(e scheduler.Event) bool { return e.Job == "tick" && e.Kind == scheduler.EventReleased })
		}
		waitUntil(t, "two runs of tick recorded", func() bool {
			r := f.cli(t, "history", "tick", "--json")
			var out historyJSON
			decode(t, r.stdout, &out)
			return out.Total >= 2
		})
		r := f.cli(t, "history", "tick", "--json", "--limit", "2")
		var out historyJSON
		decode(t, r.stdout, &out)
		for _, run := range out.Runs {
			assert.Equal(t, "replica-1", run.Replica, "the scheduler records its instance ID")
			assert.Equal(t, 1, run.Attempt)
			assert.Equal(t, "succeeded", run.Outcome)
			assert.False(t, run.Ended.Before(run.Started))
		}
		assert.True(t, out.Runs[0].Occurrence.After(out.Runs[1].Occurrence), "newest first")
	})

	t.Run("UnknownJob", func(t *testing.T) {
		r := f.cli(t, "history", "nosuch")
		assert.Equal(t, exitNotFound, r.code)
		assert.True(t, strings.HasPrefix(r.stderr, `cronguard: unknown job: history "nosuch": no live replica has registered it`), r.stderr)
	})
}
