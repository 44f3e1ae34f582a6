package inspect_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/scheduler"
)

// cronworkerJobs registers jobs like the cronworker example's: report on a
// cron schedule, tick every second, and rebuild, whose first run holds its
// lease (kept alive by the heartbeat) until the gate opens.
func cronworkerJobs(runs *runLog, rebuild *gate) func(s *scheduler.Scheduler) error {
	return func(s *scheduler.Scheduler) error {
		if err := s.Register("report", scheduler.Cron("*/2 * * * * *"), runs.job(0)); err != nil {
			return err
		}
		if err := s.Register("tick", scheduler.Every(time.Second), runs.job(0), scheduler.WithTTL(2*time.Second)); err != nil {
			return err
		}
		return s.Register("rebuild", scheduler.Every(2*time.Second), rebuild.job, scheduler.WithTTL(3*time.Second))
	}
}

// Three replicas on a real Redis: Jobs lists every job with the replicas
// that have it, the replica that holds a running one, the last outcome
// and the next occurrence. A replica cut off from Redis (as if killed)
// drops out of the registry once its entry lapses, within three refresh
// periods of its last refresh, by the store's clock.
func TestInspector_Jobs_LiveFleet(t *testing.T) {
	t.Parallel()
	f := newLiveFleet(t)
	rebuild := newGate()
	t.Cleanup(rebuild.release)
	ids := []string{"replica-1", "replica-2", "replica-3"}
	replicas := map[string]*replica{}
	for _, id := range ids {
		replicas[id] = f.start(t, id, cronworkerJobs(f.runs, rebuild))
	}
	f.waitReplicas(t, ids...)

	var running scheduler.Run
	select {
	case running = <-rebuild.started:
	case <-time.After(waitBound):
		t.Fatal("rebuild never started")
	}
	f.events.waitFor(t, "report and tick released once each", func(es []scheduler.Event) bool {
		return count(es, is("report", scheduler.EventReleased)) > 0 && count(es, is("tick", scheduler.EventReleased)) > 0
	})

	jobs, err := f.in.Jobs(t.Context())
	require.NoError(t, err)
	require.Len(t, jobs, 3)
	byName := map[string]inspect.Job{}
	for _, j := range jobs {
		byName[j.Name] = j
		assert.Equal(t, ids, j.Replicas(), "job %s is on every replica", j.Name)
		assert.False(t, j.Conflict)
		assert.Equal(t, "job:"+j.Name, j.Key)
		next, err := fleet.Next(specOf(t, j), j.Now)
		require.NoError(t, err)
		assert.Equal(t, next.UTC(), j.Next, "job %s: next occurrence after the store's now", j.Name)
		assert.True(t, j.Next.After(j.Now))
	}
	assert.Equal(t, []string{"rebuild", "report", "tick"}, []string{jobs[0].Name, jobs[1].Name, jobs[2].Name})

	rb := byName["rebuild"]
	require.NotNil(t, rb.Holder, "rebuild runs")
	assert.Equal(t, running.Replica, rb.Holder.Replica)
	assert.Equal(t, running.Replica+"/rebuild", rb.Holder.Owner)
	assert.Equal(t, running.Fence, rb.Holder.Fence)
	assert.Positive(t, rb.Holder.Left)
	assert.LessOrEqual(t, rb.Holder.Left, 3*time.Second, "a 3s lease, renewed by the heartbeat")
	assert.Equal(t, running.Occurrence.UnixMilli(), rb.LastOccurrence.UnixMilli())
	assert.LessOrEqual(t, rb.Next.Sub(rb.Now), 2*time.Second)
	for _, name := range []string{"report", "tick"} {
		j := byName[name]
		require.NotNil(t, j.LastRun, "job %s ran", name)
		assert.Equal(t, "succeeded", j.LastRun.Outcome)
		assert.Contains(t, ids, j.LastRun.Replica)
		assert.False(t, j.LastOccurrence.IsZero())
	}
	assert.LessOrEqual(t, byName["tick"].Next.Sub(byName["tick"].Now), time.Second)
	assert.LessOrEqual(t, byName["report"].Next.Sub(byName["report"].Now), 2*time.Second)

	// Kill a replica that does not hold rebuild.
	victim := replicas[ids[0]]
	if victim.id == running.Replica {
		victim = replicas[ids[1]]
	}
	victim.kill()
	killedAt := f.storeNow(t)
	rs, err := f.in.Replicas(t.Context())
	require.NoError(t, err)
	var entry *fleet.Replica
	for i := range rs {
		if rs[i].ID == victim.id {
			entry = &rs[i]
		}
	}
	require.NotNil(t, entry, "the dead replica's entry lives on until it lapses")
	assert.False(t, entry.Expires.After(killedAt.Add(3*liveRefresh)),
		"its entry lapses within 3 refresh periods of its last refresh, before the kill: expires %s, killed %s", entry.Expires, killedAt)
	waitUntil(t, "the store's clock passes the dead entry's expiry", func() bool { return f.storeNow(t).After(entry.Expires) })
	rs, err = f.in.Replicas(t.Context())
	require.NoError(t, err)
	var live []string
	for _, r := range rs {
		live = append(live, r.ID)
	}
	want := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == victim.id })
	assert.Equal(t, want, live, "the dead replica is gone; the others refresh theirs")
	j, err := f.in.Job(t.Context(), "tick")
	require.NoError(t, err)
	assert.Equal(t, want, j.Replicas())
}

// A pause set while a run is in progress lets that run finish; no
// occurrence of the job runs anywhere until resume (each is skipped as
// paused), other jobs go on, and after resume the next occurrence runs.
func TestInspector_Pause_DuringRun(t *testing.T) {
	t.Parallel()
	f := newLiveFleet(t)
	report := newGate()
	t.Cleanup(report.release)
	ids := []string{"replica-1", "replica-2", "replica-3"}
	for _, id := range ids {
		f.start(t, id, func(s *scheduler.Scheduler) error {
			if err := s.Register("report", scheduler.Every(time.Second), report.job, scheduler.WithTTL(time.Second)); err != nil {
				return err
			}
			return s.Register("tick", scheduler.Every(time.Second), f.runs.job(0))
		})
	}
	f.waitReplicas(t, ids...)

	var first scheduler.Run
	select {
	case first = <-report.started:
	case <-time.After(waitBound):
		t.Fatal("report never started")
	}
	require.NoError(t, f.in.Pause(t.Context(), "report", "alice", "warehouse migration"))
	j, err := f.in.Job(t.Context(), "report")
	require.NoError(t, err)
	require.NotNil(t, j.Pause)
	assert.Equal(t, "alice", j.Pause.By)
	assert.Equal(t, "warehouse migration", j.Pause.Note)
	require.NotNil(t, j.Holder, "the run in progress is not stopped")
	assert.Equal(t, first.Fence, j.Holder.Fence)

	report.release()
	f.events.waitFor(t, "the run in progress succeeds", func(es []scheduler.Event) bool {
		return slices.ContainsFunc(es, func(e scheduler.Event) bool {
			return e.Job == "report" && e.Kind == scheduler.EventSucceeded && e.Fence == first.Fence
		})
	})
	ticksAtPause := len(f.runs.of("tick"))
	paused := func(e scheduler.Event) bool {
		return e.Job == "report" && e.Kind == scheduler.EventSkipped && e.Reason == scheduler.SkipPaused
	}
	f.events.waitFor(t, "three occurrences of report skipped as paused", func(es []scheduler.Event) bool {
		occs := map[int64]bool{}
		for _, e := range es {
			if paused(e) {
				occs[e.Occurrence.UnixMilli()] = true
			}
		}
		return len(occs) >= 3
	})
	started := f.events.match(is("report", scheduler.EventStarted))
	require.Len(t, started, 1, "no occurrence of report ran while paused: only the run in progress at the pause")
	assert.Greater(t, len(f.runs.of("tick")), ticksAtPause, "other jobs are unaffected")

	was, err := f.in.Resume(t.Context(), "report")
	require.NoError(t, err)
	require.True(t, was)
	var lastPaused time.Time
	for _, e := range f.events.match(paused) {
		if e.Occurrence.After(lastPaused) {
			lastPaused = e.Occurrence
		}
	}
	es := f.events.waitFor(t, "report runs after resume", func(es []scheduler.Event) bool {
		return count(es, is("report", scheduler.EventStarted)) >= 2
	})
	after := slices.DeleteFunc(slices.Clone(es), func(e scheduler.Event) bool { return !is("report", scheduler.EventStarted)(e) })[1]
	assert.True(t, after.Occurrence.After(lastPaused), "the next occurrence runs: %s after the last paused %s", after.Occurrence, lastPaused)
	assert.Empty(t, f.events.match(is("report", scheduler.EventMissed)), "paused occurrences are not missed")
}

// A trigger with WithWait returns the run's outcome, from the replica that
// ran it.
func TestInspector_Trigger_WaitLive(t *testing.T) {
	t.Parallel()
	f := newLiveFleet(t)
	ids := []string{"replica-1", "replica-2"}
	for _, id := range ids {
		f.start(t, id, func(s *scheduler.Scheduler) error {
			return s.Register("report", scheduler.Every(time.Hour), f.runs.job(0))
		})
	}
	f.waitReplicas(t, ids...)
	res, err := f.in.Trigger(t.Context(), "report", "test", inspect.WithWait(waitBound))
	require.NoError(t, err)
	assert.True(t, res.Succeeded())
	require.NotNil(t, res.Run)
	assert.Contains(t, ids, res.Run.Replica)
	assert.Equal(t, res.Trigger.ID, res.Run.Trigger)
}

// Two replicas that register report with different schedules both report
// the mismatch, and the Inspector shows it.
func TestInspector_Conflict_TwoSchedules(t *testing.T) {
	t.Parallel()
	f := newLiveFleet(t)
	f.start(t, "replica-a", func(s *scheduler.Scheduler) error {
		return s.Register("report", scheduler.Cron("*/5 * * * * *"), f.runs.job(0))
	})
	f.start(t, "replica-b", func(s *scheduler.Scheduler) error {
		return s.Register("report", scheduler.Every(2*time.Second), f.runs.job(0))
	})
	es := f.events.waitFor(t, "both replicas report the conflict", func(es []scheduler.Event) bool {
		return slices.ContainsFunc(es, func(e scheduler.Event) bool { return e.Kind == scheduler.EventConflict && e.Instance == "replica-a" }) &&
			slices.ContainsFunc(es, func(e scheduler.Event) bool { return e.Kind == scheduler.EventConflict && e.Instance == "replica-b" })
	})
	for _, e := range es {
		if e.Kind == scheduler.EventConflict {
			assert.Equal(t, "report", e.Conflict.Job)
			assert.ElementsMatch(t, []string{"replica-a", "replica-b"}, e.Conflict.Replicas[:])
		}
	}

	j, err := f.in.Job(t.Context(), "report")
	require.NoError(t, err)
	assert.True(t, j.Conflict)
	require.Len(t, j.Registrations, 2)
	assert.Equal(t, `cron("*/5 * * * * *")`, j.Registrations[0].Job.Schedule)
	assert.Equal(t, "every(2s)", j.Registrations[1].Job.Schedule)
	jobs, err := f.in.Jobs(t.Context())
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	assert.True(t, jobs[0].Conflict)
}
