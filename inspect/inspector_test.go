package inspect_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

func TestNew_InvalidArguments(t *testing.T) {
	store, err := memory.New()
	require.NoError(t, err)
	cases := []struct {
		name  string
		store fleet.Store
		opts  []inspect.Option
		rule  string
	}{
		{"NilStore", nil, nil, "store must not be nil"},
		{"NilOption", store, []inspect.Option{nil}, "option must not be nil"},
		{"NilLogger", store, []inspect.Option{inspect.WithLogger(nil)}, "logger must not be nil"},
		{"ZeroConcurrency", store, []inspect.Option{inspect.WithConcurrency(0)}, "n must be from 1 to 256, got 0"},
		{"TooMuchConcurrency", store, []inspect.Option{inspect.WithConcurrency(inspect.MaxConcurrency + 1)}, "got 257"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, err := inspect.New(c.store, c.opts...)
			require.ErrorIs(t, err, lease.ErrInvalidArgument)
			assert.Nil(t, in)
			assert.Contains(t, err.Error(), c.rule)
			assert.True(t, strings.HasPrefix(err.Error(), "inspect: "), err.Error())
		})
	}
}

func TestInspector_Replicas_LiveOnly(t *testing.T) {
	e := newMemEnv(t)
	e.publish(t, "replica-b", reportJob)
	e.publish(t, "replica-a", reportJob, tickJob)
	rs, err := e.in.Replicas(t.Context())
	require.NoError(t, err)
	require.Len(t, rs, 2)
	assert.Equal(t, "replica-a", rs[0].ID)
	assert.Equal(t, "replica-b", rs[1].ID)
	assert.Equal(t, epoch.Add(15*time.Second), rs[0].Expires.UTC())

	e.clock.Advance(15 * time.Second) // both entries lapse
	rs, err = e.in.Replicas(t.Context())
	require.NoError(t, err)
	assert.Empty(t, rs)
}

// Jobs lists the union of the replicas' jobs with their state: holder,
// last occurrence, last run, pause, triggers and next occurrence, all
// measured against the store's time.
func TestInspector_Jobs_State(t *testing.T) {
	e := newMemEnv(t)
	ctx := t.Context()
	e.publish(t, "replica-a", reportJob, tickJob)
	e.publish(t, "replica-b", reportJob)

	// tick ran at 12:00:01 on replica-a and failed; report runs now on replica-b.
	tickOcc := epoch.Truncate(time.Second)
	l := e.run(t, "replica-a", tickJob, tickOcc)
	e.clock.Advance(20 * time.Millisecond)
	e.finish(t, l, tickOcc, 20*time.Millisecond, "failed", "dial postgres://app:hunter2@db/x: refused")
	reportOcc := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	held := e.run(t, "replica-b", reportJob, reportOcc)
	e.clock.Advance(3 * time.Second) // now 12:00:04.270
	require.NoError(t, e.store.SetPause(ctx, tickJob.Key, fleet.Pause{By: "alice", Note: "db migration"}))
	_, err := e.store.AddTrigger(ctx, reportJob.Key, "bob", time.Minute)
	require.NoError(t, err)

	jobs, err := e.in.Jobs(ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	report, tick := jobs[0], jobs[1]
	now := epoch.Add(3020 * time.Millisecond)

	assert.Equal(t, "report", report.Name)
	assert.Equal(t, "job:report", report.Key)
	assert.Equal(t, `cron("*/5 * * * * *")`, report.Schedule)
	assert.Equal(t, []string{"replica-a", "replica-b"}, report.Replicas())
	assert.False(t, report.Conflict)
	assert.Equal(t, now, report.Now)
	require.NotNil(t, report.Holder)
	assert.Equal(t, "replica-b/report", report.Holder.Owner)
	assert.Equal(t, "replica-b", report.Holder.Replica)
	assert.Equal(t, held.Fence, report.Holder.Fence)
	assert.Equal(t, 7*time.Second, report.Holder.Left, "10s lease taken 3s ago, by the store's clock")
	assert.Equal(t, lease.ShortID(leasekit.Hash(held.ID)), report.Holder.LeaseHash)
	assert.NotContains(t, report.Holder.LeaseHash, held.ID[len(held.ID)-6:], "no part of the lease ID is shown")
	assert.Equal(t, reportOcc, report.LastOccurrence)
	assert.Nil(t, report.LastRun)
	assert.Nil(t, report.Pause)
	assert.Equal(t, 1, report.PendingTriggers)
	assert.Equal(t, time.Date(2026, 3, 1, 12, 0, 5, 0, time.UTC), report.Next)

	assert.Equal(t, "tick", tick.Name)
	assert.Equal(t, []string{"replica-a"}, tick.Replicas())
	assert.Nil(t, tick.Holder)
	assert.Equal(t, tickOcc, tick.LastOccurrence)
	require.NotNil(t, tick.LastRun)
	assert.Equal(t, "failed", tick.LastRun.Outcome)
	assert.Equal(t, "replica-a", tick.LastRun.Replica)
	assert.Equal(t, 20*time.Millisecond, tick.LastRun.Duration)
	assert.Equal(t, "dial postgres://***@db/x: refused", tick.LastRun.Error, "credentials never reach the status")
	assert.Equal(t, epoch.Add(20*time.Millisecond), tick.LastRun.Ended())
	require.NotNil(t, tick.Pause)
	assert.Equal(t, fleet.Pause{By: "alice", Note: "db migration", At: now}, *tick.Pause)
	assert.Equal(t, time.Date(2026, 3, 1, 12, 0, 5, 0, time.UTC), tick.Next)
}

// A job registered differently by two replicas is one job, in conflict,
// with both registrations.
func TestInspector_Jobs_Conflict(t *testing.T) {
	cases := []struct {
		name  string
		other fleet.Job
	}{
		{"Schedule", fleet.Job{Name: "report", Key: "job:report", Schedule: `cron("0 * * * * *")`, Spec: "cron:UTC:0 * * * * *", Fingerprint: "other-fp"}},
		{"LeaseKey", fleet.Job{Name: "report", Key: "billing:report", Schedule: reportJob.Schedule, Spec: reportJob.Spec, Fingerprint: reportJob.Fingerprint}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newMemEnv(t)
			e.publish(t, "replica-a", reportJob)
			e.publish(t, "replica-b", c.other)
			e.publish(t, "replica-c", reportJob)
			j, err := e.in.Job(t.Context(), "report")
			require.NoError(t, err)
			assert.True(t, j.Conflict)
			require.Len(t, j.Registrations, 3)
			assert.Equal(t, c.other, j.Registrations[1].Job)
			assert.Equal(t, "replica-b", j.Registrations[1].Replica)
			assert.Equal(t, reportJob.Key, j.Key, "the first registration's key")
		})
	}
}

func TestInspector_Job_Unknown(t *testing.T) {
	e := newMemEnv(t)
	e.publish(t, "replica-a", reportJob)
	_, err := e.in.Job(t.Context(), "nightly")
	require.ErrorIs(t, err, inspect.ErrUnknownJob)
	assert.Equal(t, `inspect: unknown job: job "nightly": no live replica has registered it (1 live replicas)`, err.Error())

	_, err = e.in.Job(t.Context(), "")
	require.ErrorIs(t, err, lease.ErrInvalidArgument)

	e.clock.Advance(15 * time.Second) // the replica lapses: its jobs are gone with it
	_, err = e.in.Job(t.Context(), "report")
	require.ErrorIs(t, err, inspect.ErrUnknownJob)
}

func TestInspector_Jobs_StoreError(t *testing.T) {
	e := newMemEnv(t)
	e.publish(t, "replica-a", reportJob)
	ctx := t.Context()
	in, err := inspect.New(failingStore{Store: e.store, err: lease.ErrUnavailable})
	require.NoError(t, err)
	_, err = in.Jobs(ctx)
	require.ErrorIs(t, err, lease.ErrUnavailable)
	assert.Contains(t, err.Error(), `inspect: jobs: job "report"`)
}

// failingStore fails JobState with err.
type failingStore struct {
	*memory.Store
	err error
}

func (f failingStore) JobState(ctx context.Context, key string) (fleet.JobState, error) {
	return fleet.JobState{}, fmt.Errorf("test: %w", f.err)
}

func TestInspector_PauseResume(t *testing.T) {
	e := newMemEnv(t)
	ctx := t.Context()
	e.publish(t, "replica-a", reportJob)

	require.NoError(t, e.in.Pause(ctx, "report", "alice", "warehouse migration"))
	p, paused, err := e.store.PauseOf(ctx, reportJob.Key)
	require.NoError(t, err)
	require.True(t, paused)
	assert.Equal(t, "alice", p.By)
	assert.Equal(t, "warehouse migration", p.Note)
	assert.True(t, p.At.Equal(epoch), "stamped with the store's time: %s", p.At)
	assert.Contains(t, e.logs.String(), `msg="job paused fleet-wide" job=report by=alice note="warehouse migration"`)

	// A scheduled acquire is refused now.
	_, err = e.store.Acquire(ctx, reportJob.Key, time.Second, lease.WithRoundTime(epoch.Add(4*time.Second), time.Second), lease.WithPauseCheck())
	require.ErrorIs(t, err, lease.ErrPaused)

	was, err := e.in.Resume(ctx, "report")
	require.NoError(t, err)
	assert.True(t, was)
	was, err = e.in.Resume(ctx, "report")
	require.NoError(t, err)
	assert.False(t, was, "not paused any more")
}

func TestInspector_Pause_InvalidArguments(t *testing.T) {
	e := newMemEnv(t)
	e.publish(t, "replica-a", reportJob)
	cases := []struct {
		name, job, by, note string
		want                error
		rule                string
	}{
		{"EmptyBy", "report", "", "x", lease.ErrInvalidArgument, "by must name who asks"},
		{"ControlInBy", "report", "al\nice", "x", lease.ErrInvalidArgument, "control characters"},
		{"LongNote", "report", "alice", strings.Repeat("n", fleet.MaxPauseNoteBytes+1), lease.ErrInvalidArgument, "note must be valid UTF-8 of at most 1024 bytes"},
		{"BadUTF8Note", "report", "alice", "\xff", lease.ErrInvalidArgument, "note must be valid UTF-8"},
		{"EmptyName", "", "alice", "x", lease.ErrInvalidArgument, "job name must be non-empty"},
		{"UnknownJob", "nightly", "alice", "x", inspect.ErrUnknownJob, "no live replica has registered it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := e.in.Pause(t.Context(), c.job, c.by, c.note)
			require.ErrorIs(t, err, c.want)
			assert.Contains(t, err.Error(), c.rule)
		})
	}
	_, err := e.in.Resume(t.Context(), "nightly")
	require.ErrorIs(t, err, inspect.ErrUnknownJob)
}

func TestInspector_ForceRelease(t *testing.T) {
	e := newMemEnv(t)
	ctx := t.Context()
	e.publish(t, "replica-a", reportJob)

	_, err := e.in.ForceRelease(ctx, "report", "alice")
	require.ErrorIs(t, err, inspect.ErrNotHeld)
	require.ErrorIs(t, err, lease.ErrNotFound)

	l := e.run(t, "replica-a", reportJob, epoch.Truncate(time.Second))
	info, err := e.in.ForceRelease(ctx, "report", "alice")
	require.NoError(t, err)
	assert.Equal(t, "replica-a/report", info.Owner)
	assert.Equal(t, l.Fence, info.Fence)
	locked, err := e.store.IsLocked(ctx, reportJob.Key)
	require.NoError(t, err)
	assert.False(t, locked)
	logs := e.logs.String()
	assert.Contains(t, logs, "level=WARN")
	assert.Contains(t, logs, "force-released by an operator")
	assert.Contains(t, logs, "by=alice owner=replica-a/report fence="+strconv.FormatUint(uint64(l.Fence), 10))
	assert.NotContains(t, logs, l.ID, "the lease ID is never logged")

	// The holder learns at its next renewal.
	_, err = l.Extend(ctx, time.Second)
	require.ErrorIs(t, err, lease.ErrNotHeld)

	for _, c := range []struct {
		name, job, by string
		want          error
	}{
		{"EmptyBy", "report", "", lease.ErrInvalidArgument},
		{"UnknownJob", "nightly", "alice", inspect.ErrUnknownJob},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.in.ForceRelease(ctx, c.job, c.by)
			require.ErrorIs(t, err, c.want)
		})
	}
}

// Resume announces the triggers that waited for the pause: the replicas
// that found the job paused do not ask again, so without the announcement
// a trigger waited for the job's next run to end, or lapsed (the
// simulator's seed 3547 of the long mode from 2528). A resume that finds
// no trigger announces nothing.
func TestInspector_Resume_AnnouncesWaitingTriggers(t *testing.T) {
	e := newMemEnv(t)
	ctx := t.Context()
	e.publish(t, "replica-a", reportJob, tickJob)
	heard := make(chan fleet.Message, 16)
	stop, err := e.store.Subscribe(ctx, func(m fleet.Message) { heard <- m })
	require.NoError(t, err)
	defer stop()
	next := func(what string) fleet.Message {
		t.Helper()
		select {
		case m := <-heard:
			return m
		case <-time.After(10 * time.Second): // a bound on a failure, not a wait
			require.FailNow(t, "no announcement: "+what)
			return fleet.Message{}
		}
	}

	require.NoError(t, e.in.Pause(ctx, "report", "alice", "migration"))
	require.NoError(t, e.in.Pause(ctx, "tick", "alice", "migration"))
	_, err = e.store.AddTrigger(ctx, reportJob.Key, "bob", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, reportJob.Key, next("the trigger's own").Key)

	was, err := e.in.Resume(ctx, "tick")
	require.NoError(t, err)
	require.True(t, was)
	was, err = e.in.Resume(ctx, "report")
	require.NoError(t, err)
	require.True(t, was)
	m := next("at the resume")
	assert.Equal(t, fleet.MessageTrigger, m.Kind)
	assert.Equal(t, reportJob.Key, m.Key, "tick had no trigger waiting: the first announcement after the resumes is report's")
	// Messages arrive in publish order: all before the mark are in.
	require.NoError(t, e.store.Publish(ctx, fleet.Message{Kind: fleet.MessageFleet, Replica: "mark"}))
	assert.Equal(t, fleet.MessageFleet, next("the mark").Kind, "one announcement per resume with triggers waiting")
}
