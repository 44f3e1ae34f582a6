package inspect_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

func TestInspector_Trigger_Queued(t *testing.T) {
	e := newMemEnv(t)
	ctx := t.Context()
	e.publish(t, "replica-a", reportJob)

	res, err := e.in.Trigger(ctx, "report", "alice")
	require.NoError(t, err)
	assert.False(t, res.Done)
	assert.Equal(t, "job:report", res.Trigger.Key)
	assert.Equal(t, "alice", res.Trigger.By)
	assert.NotEmpty(t, res.Trigger.ID)
	assert.Equal(t, inspect.DefaultTriggerTTL, res.Trigger.Expires.Sub(res.Trigger.At))
	assert.Contains(t, e.logs.String(), `msg="job triggered" job=report by=alice trigger=`+res.Trigger.ID)

	res, err = e.in.Trigger(ctx, "report", "alice", inspect.WithTTL(5*time.Second))
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, res.Trigger.Expires.Sub(res.Trigger.At))
	n, err := e.store.PendingTriggers(ctx, "job:report")
	require.NoError(t, err)
	assert.Equal(t, 2, n, "triggers queue")
}

func TestInspector_Trigger_Refused(t *testing.T) {
	e := newMemEnv(t)
	e.publish(t, "replica-a", reportJob)
	require.NoError(t, e.store.SetPause(t.Context(), "job:report", fleet.Pause{By: "alice", Note: "migration"}))
	cases := []struct {
		name, job, by string
		opts          []inspect.TriggerOption
		want          error
		rule          string
	}{
		{"UnknownJob", "nightly", "bob", nil, inspect.ErrUnknownJob, `trigger "nightly": no live replica has registered it`},
		{"Paused", "report", "bob", nil, inspect.ErrPaused, `trigger "report": paused by "alice" since 2026-03-01T12:00:01Z ("migration"): resume it first`},
		{"EmptyBy", "report", "", nil, lease.ErrInvalidArgument, "by must name who asks"},
		{"NilOption", "report", "bob", []inspect.TriggerOption{nil}, lease.ErrInvalidArgument, "option must not be nil"},
		{"ZeroTTL", "report", "bob", []inspect.TriggerOption{inspect.WithTTL(0)}, lease.ErrInvalidArgument, "ttl must be a whole number of milliseconds from 1ms to 24h0m0s, got 0s"},
		{"FractionalTTL", "report", "bob", []inspect.TriggerOption{inspect.WithTTL(1500 * time.Microsecond)}, lease.ErrInvalidArgument, "got 1.5ms"},
		{"LongTTL", "report", "bob", []inspect.TriggerOption{inspect.WithTTL(fleet.MaxTriggerTTL + time.Millisecond)}, lease.ErrInvalidArgument, "from 1ms to 24h0m0s"},
		{"ZeroWait", "report", "bob", []inspect.TriggerOption{inspect.WithWait(0)}, lease.ErrInvalidArgument, "timeout must be positive, got 0s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := e.in.Trigger(t.Context(), c.job, c.by, c.opts...)
			require.ErrorIs(t, err, c.want)
			assert.Contains(t, err.Error(), c.rule)
			assert.Empty(t, res.Trigger.ID)
		})
	}
	n, err := e.store.PendingTriggers(t.Context(), "job:report")
	require.NoError(t, err)
	assert.Zero(t, n, "nothing was queued")
}

// replicaSim plays a replica's part for triggers: it takes each trigger
// of its job as the scheduler does (a trigger acquire, then a release with
// the run's status), and announces the run's end unless told not to.
type replicaSim struct {
	store    *memory.Store
	replica  string
	job      fleet.Job
	outcome  string
	errText  string
	announce bool

	mu  sync.Mutex
	ran []string // trigger IDs run
}

func (r *replicaSim) hear(m fleet.Message) {
	if m.Kind != fleet.MessageTrigger || m.Key != r.job.Key {
		return
	}
	ctx := context.Background()
	l, err := r.store.Acquire(ctx, r.job.Key, 10*time.Second, lease.WithOwner(r.replica+"/"+r.job.Name), lease.WithTrigger())
	if err != nil {
		return
	}
	st := fleet.Status{Occurrence: l.AcquiredAt, Owner: l.Owner, Fence: l.Fence, Started: l.AcquiredAt,
		Duration: 30 * time.Millisecond, Outcome: r.outcome, Error: r.errText, Trigger: l.Trigger}
	if _, err := r.store.ReleaseWithStatus(ctx, l, st); err != nil {
		return
	}
	r.mu.Lock()
	r.ran = append(r.ran, l.Trigger)
	r.mu.Unlock()
	if r.announce {
		_ = r.store.Publish(ctx, fleet.Message{Kind: fleet.MessageDone, Key: r.job.Key, Trigger: l.Trigger,
			Outcome: r.outcome, Error: fleet.SanitizeError(r.errText)})
	}
}

func (r *replicaSim) start(t *testing.T) {
	t.Helper()
	stop, err := r.store.Subscribe(t.Context(), r.hear)
	require.NoError(t, err)
	t.Cleanup(stop)
}

// With WithWait, Trigger returns the run's outcome, announced by the
// replica that ran it, and the run's status.
func TestInspector_Trigger_WaitOutcome(t *testing.T) {
	for _, outcome := range []string{"succeeded", "failed"} {
		t.Run(outcome, func(t *testing.T) {
			e := newMemEnv(t)
			e.publish(t, "replica-a", reportJob)
			sim := &replicaSim{store: e.store, replica: "replica-a", job: reportJob, outcome: outcome, announce: true}
			if outcome == "failed" {
				sim.errText = "warehouse unreachable"
			}
			sim.start(t)

			res, err := e.in.Trigger(t.Context(), "report", "alice", inspect.WithWait(time.Minute))
			require.NoError(t, err)
			assert.True(t, res.Done)
			assert.Equal(t, outcome, res.Outcome)
			assert.Equal(t, sim.errText, res.Error)
			assert.Equal(t, outcome == "succeeded", res.Succeeded())
			require.NotNil(t, res.Run, "the run's status is read after its end")
			assert.Equal(t, res.Trigger.ID, res.Run.Trigger)
			assert.Equal(t, "replica-a", res.Run.Replica)
			assert.Equal(t, 30*time.Millisecond, res.Run.Duration)
		})
	}
}

// A wait that hears nothing times out with ErrWaitTimeout; the trigger
// stays queued.
func TestInspector_Trigger_WaitTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newMemEnv(t)
		e.publish(t, "replica-a", reportJob)
		res, err := e.in.Trigger(t.Context(), "report", "alice", inspect.WithWait(5*time.Second))
		require.ErrorIs(t, err, inspect.ErrWaitTimeout)
		assert.Contains(t, err.Error(), `trigger `+res.Trigger.ID+` of "report" after 5s; it stays queued until 2026-03-01T12:01:01Z`)
		assert.False(t, res.Done)
		assert.NotEmpty(t, res.Trigger.ID)
	})
}

// A run whose end message was lost is found by its status: after a
// resync, or when the wait ends.
func TestInspector_Trigger_WaitStatusFallback(t *testing.T) {
	cases := []struct {
		name   string
		resync bool
	}{
		{"Resync", true},
		{"AtTimeout", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newMemEnv(t)
				e.publish(t, "replica-a", reportJob)
				sim := &replicaSim{store: e.store, replica: "replica-a", job: reportJob, outcome: "succeeded"}
				sim.start(t)
				rs := &resyncStore{Store: e.store, resync: c.resync}
				in, err := inspect.New(rs)
				require.NoError(t, err)
				start := time.Now()
				res, err := in.Trigger(t.Context(), "report", "alice", inspect.WithWait(time.Hour))
				require.NoError(t, err)
				assert.True(t, res.Done)
				assert.Equal(t, "succeeded", res.Outcome)
				require.NotNil(t, res.Run)
				assert.Equal(t, res.Trigger.ID, res.Run.Trigger)
				if c.resync {
					assert.Less(t, time.Since(start), time.Hour, "found at the resync, not at the timeout")
				} else {
					assert.GreaterOrEqual(t, time.Since(start), time.Hour, "found when the wait ended")
				}
			})
		})
	}
}

// resyncStore's subscriptions drop no message but, when resync is set,
// receive a MessageResync once the first trigger message went by, as
// after a restored subscription that lost the end of the run.
type resyncStore struct {
	*memory.Store
	resync bool
}

func (s *resyncStore) Subscribe(ctx context.Context, fn func(fleet.Message)) (func(), error) {
	return s.Store.Subscribe(ctx, func(m fleet.Message) {
		fn(m)
		if m.Kind == fleet.MessageTrigger && s.resync {
			synctest.Wait() // the simulated replica has run the trigger
			fn(fleet.Message{Kind: fleet.MessageResync})
		}
	})
}
