package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// Completion: an occurrence is done once. Each test drives two replicas in
// a synctest bubble on the in-process store; completion_redis_test.go runs
// the same scenarios on a real redis-server.

// mortalStore is a replica's view of a shared in-process store that can
// die: from kill on, every call fails as unavailable and no message
// reaches the replica, as for a process that crashed or was cut off.
// Leases it hands out are attached to it, so their renewals die too.
type mortalStore struct {
	*memory.Store
	dead atomic.Bool
}

var errDead = fmt.Errorf("%w: the replica is dead", lease.ErrUnavailable)

func (m *mortalStore) kill() { m.dead.Store(true) }

func (m *mortalStore) check() error {
	if m.dead.Load() {
		return errDead
	}
	return nil
}

func (m *mortalStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	l, err := m.Store.Acquire(ctx, key, ttl, opts...)
	if err != nil {
		return nil, err
	}
	return lease.Attach(m, l), nil
}

func (m *mortalStore) Extend(ctx context.Context, id string, ttl time.Duration) (time.Time, error) {
	if err := m.check(); err != nil {
		return time.Time{}, err
	}
	return m.Store.Extend(ctx, id, ttl)
}

func (m *mortalStore) Release(ctx context.Context, id string) error {
	if err := m.check(); err != nil {
		return err
	}
	return m.Store.Release(ctx, id)
}

func (m *mortalStore) ReleaseWithStatus(ctx context.Context, l *lease.Lease, st fleet.Status) (int, error) {
	if err := m.check(); err != nil {
		return 0, err
	}
	return m.Store.ReleaseWithStatus(ctx, l, st)
}

// ReleaseWithStatusBatch keeps a dead replica's batched releases from
// reaching the shared store (the embedded store's would).
func (m *mortalStore) ReleaseWithStatusBatch(ctx context.Context, ls []*lease.Lease, sts []fleet.Status, triggers []int, errs []error) {
	for i, l := range ls {
		triggers[i], errs[i] = m.ReleaseWithStatus(ctx, l, sts[i])
	}
}

func (m *mortalStore) Publish(ctx context.Context, msg fleet.Message) error {
	if err := m.check(); err != nil {
		return err
	}
	return m.Store.Publish(ctx, msg)
}

// PublishBatch keeps a dead replica's announcements from reaching the
// shared store (the embedded store's would).
func (m *mortalStore) PublishBatch(ctx context.Context, msgs []fleet.Message) error {
	if err := m.check(); err != nil {
		return err
	}
	return m.Store.PublishBatch(ctx, msgs)
}

func (m *mortalStore) IndexOccurrence(ctx context.Context, key string, round int64, deadline, at time.Time) error {
	if err := m.check(); err != nil {
		return err
	}
	return m.Store.IndexOccurrence(ctx, key, round, deadline, at)
}

func (m *mortalStore) DueOccurrences(ctx context.Context, limit int) ([]fleet.Due, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	return m.Store.DueOccurrences(ctx, limit)
}

func (m *mortalStore) Subscribe(ctx context.Context, fn func(fleet.Message)) (func(), error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	return m.Store.Subscribe(ctx, func(msg fleet.Message) {
		if !m.dead.Load() {
			fn(msg)
		}
	})
}

// attemptLog records each attempt of a job as it starts and ends.
type attemptLog struct {
	mu       sync.Mutex
	attempts []attemptRec
	started  chan Run // each start, buffered
}

type attemptRec struct {
	run   Run
	at    time.Time // when it started (the bubble's time)
	ended time.Time
	err   error
}

func newAttemptLog() *attemptLog { return &attemptLog{started: make(chan Run, 16)} }

// begin records the start of the run in ctx and returns its index.
func (l *attemptLog) begin(ctx context.Context) (Run, int) {
	r, _ := RunFromContext(ctx)
	l.mu.Lock()
	l.attempts = append(l.attempts, attemptRec{run: r, at: time.Now()})
	i := len(l.attempts) - 1
	l.mu.Unlock()
	l.started <- r
	return r, i
}

func (l *attemptLog) end(i int, err error) error {
	l.mu.Lock()
	l.attempts[i].ended, l.attempts[i].err = time.Now(), err
	l.mu.Unlock()
	return err
}

func (l *attemptLog) all() []attemptRec {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]attemptRec(nil), l.attempts...)
}

// firstAttemptCut returns a job whose first attempt runs until its
// context ends (Shutdown, a lost lease) and whose later attempts commit
// their effect in fx; log records each.
func firstAttemptCut(log *attemptLog, fx *effects) func(context.Context) error {
	return func(ctx context.Context) error {
		r, i := log.begin(ctx)
		if r.Attempt == 1 {
			<-ctx.Done()
			return log.end(i, context.Cause(ctx))
		}
		return log.end(i, fx.commit(r))
	}
}

// effects is a fenced resource in the manner of fencing.AdvanceOnce: one
// effect per occurrence; a later attempt of a committed occurrence gets
// fencing.ErrDuplicate.
type effects struct {
	mu        sync.Mutex
	committed map[int64]fencing.Token // by occurrence
}

func newEffects() *effects { return &effects{committed: make(map[int64]fencing.Token)} }

func (e *effects) commit(r Run) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.committed[r.Occurrence.UnixMilli()]; ok {
		return fmt.Errorf("commit occurrence %s: %w", r.Occurrence, fencing.ErrDuplicate)
	}
	e.committed[r.Occurrence.UnixMilli()] = r.Fence
	return nil
}

func (e *effects) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.committed)
}

// Shutdown during a run: a reports the run interrupted (a warning, no
// failure), releases it open and announces it; b resumes it at once as
// attempt 2 of the same occurrence with a greater fence, and its effect
// commits once.
func TestScheduler_Completion_ShutdownResumesOnAnotherReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		log, fx := newAttemptLog(), newEffects()
		job := firstAttemptCut(log, fx) // a long nightly run, cut by Shutdown
		time.Sleep(30 * time.Second)    // off the hourly grid
		logs := map[string]*logRecorder{"a": {}, "b": {}}
		evs := map[string]*events{"a": {}, "b": {}}
		scheds := map[string]*Scheduler{}
		for _, id := range []string{"a", "b"} {
			scheds[id] = newScheduler(t, store, WithInstanceID(id), WithObserver(evs[id].observe), WithLogger(logs[id].logger()))
		}
		for _, s := range scheds {
			require.NoError(t, s.Register("nightly", Every(time.Hour), job))
			require.NoError(t, s.Start())
		}
		first := <-log.started // on the occurrence's first choice
		require.Equal(t, 1, first.Attempt)
		holder, other := first.Replica, map[string]string{"a": "b", "b": "a"}[first.Replica]

		shutdown(t, scheds[holder])
		released := time.Now()
		second := <-log.started
		synctest.Wait()

		assert.Equal(t, other, second.Replica)
		assert.Equal(t, 2, second.Attempt)
		assert.True(t, second.Occurrence.Equal(first.Occurrence), "the same occurrence")
		assert.Greater(t, second.Fence, first.Fence, "a new, greater fence")
		assert.Less(t, log.all()[1].at.Sub(released), 2*time.Second, "resumed within 2s of the release")
		assert.Equal(t, 1, fx.count(), "the effect committed once")

		evA := evs[holder]
		require.Len(t, evA.of(EventInterrupted), 1)
		assert.ErrorIs(t, evA.of(EventInterrupted)[0].Err, ErrShutdown)
		assert.Equal(t, 1, evA.of(EventInterrupted)[0].Attempt)
		assert.Empty(t, evA.of(EventFailed), "an interrupted run is no failure")
		assert.True(t, logs[holder].has("WARN", "job interrupted: it did not end by itself"))
		assert.Equal(t, uint64(1), scheds[holder].Stats().Interrupted)
		assert.Zero(t, scheds[holder].Stats().Failed)
		assert.Equal(t, uint64(1), scheds[other].Stats().Resumed)
		assert.Equal(t, uint64(1), scheds[other].Stats().Succeeded)

		runs, _, err := store.History(t.Context(), "job:nightly", 0, 10)
		require.NoError(t, err)
		require.Len(t, runs, 2)
		assert.Equal(t, fleet.OutcomeSucceeded, runs[0].Outcome)
		assert.Equal(t, 2, runs[0].Attempt)
		assert.Equal(t, fleet.OutcomeInterrupted, runs[1].Outcome)
	})
}

// A replica that dies during a run (no release, no renewal): another
// replica resumes its occurrence within TTL + 2s of its death, through the
// fleet's index; the effect commits once.
func TestScheduler_Completion_DeadHolderResumedAfterItsTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := newMemoryStore(t, nil)
		stores := map[string]*mortalStore{"a": {Store: shared}, "b": {Store: shared}}
		log, fx := newAttemptLog(), newEffects()
		job := firstAttemptCut(log, fx)
		const ttl = 3 * time.Second
		time.Sleep(30 * time.Second)
		evs := map[string]*events{"a": {}, "b": {}}
		scheds := map[string]*Scheduler{}
		for _, id := range []string{"a", "b"} {
			scheds[id] = newScheduler(t, stores[id], WithInstanceID(id), WithObserver(evs[id].observe))
		}
		for _, s := range scheds {
			require.NoError(t, s.Register("nightly", Every(time.Hour), job, WithTTL(ttl)))
			require.NoError(t, s.Start())
		}
		first := <-log.started
		holder, other := first.Replica, map[string]string{"a": "b", "b": "a"}[first.Replica]
		time.Sleep(10 * time.Second) // the holder renews its lease a few times
		second, took := resumeAfter(log, stores[holder].kill)

		assertResumedAfterDeath(t, first, second, other, took, ttl, fx)
		assert.Equal(t, uint64(1), scheds[other].Stats().Succeeded)
		assert.Empty(t, evs[other].of(EventGivenUp))
	})
}

// resumeAfter calls kill (the holder's death, and any others'), waits for
// the next attempt to start and for the bubble to settle, and returns that
// attempt and how long after the death it started.
func resumeAfter(log *attemptLog, kill func()) (Run, time.Duration) {
	kill()
	died := time.Now()
	second := <-log.started
	took := time.Since(died)
	synctest.Wait()
	return second, took
}

// assertResumedAfterDeath checks that second, the attempt after first's
// holder died, ran on replica on as attempt 2 of the same occurrence with
// a greater fence, within TTL + 2s of the death (took), and that the
// effect committed once.
func assertResumedAfterDeath(t *testing.T, first, second Run, on string, took, ttl time.Duration, fx *effects) {
	t.Helper()
	assert.Equal(t, on, second.Replica)
	assert.Equal(t, 2, second.Attempt)
	assert.True(t, second.Occurrence.Equal(first.Occurrence), "the same occurrence")
	assert.Greater(t, second.Fence, first.Fence, "a new, greater fence")
	assert.LessOrEqual(t, took, ttl+2*time.Second, "resumed within TTL + 2s of the death")
	assert.Equal(t, 1, fx.count(), "the effect committed once")
}

// An attempt that committed its effect and died before it returned: the
// next attempt finds the effect committed (fencing.ErrDuplicate), which is
// a success; the occurrence is done and nothing runs a third time.
func TestScheduler_Completion_DuplicateIsSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := newMemoryStore(t, nil)
		stores := map[string]*mortalStore{"a": {Store: shared}, "b": {Store: shared}}
		log, fx := newAttemptLog(), newEffects()
		job := func(ctx context.Context) error {
			r, i := log.begin(ctx)
			err := fx.commit(r)
			if r.Attempt == 1 && err == nil {
				stores[r.Replica].kill() // committed, then the process died before it returned
				<-ctx.Done()
				return log.end(i, context.Cause(ctx))
			}
			return log.end(i, err)
		}
		const ttl = 3 * time.Second
		time.Sleep(30 * time.Second)
		evs := map[string]*events{"a": {}, "b": {}}
		for _, id := range []string{"a", "b"} {
			s := newScheduler(t, stores[id], WithInstanceID(id), WithObserver(evs[id].observe))
			require.NoError(t, s.Register("nightly", Every(time.Hour), job, WithTTL(ttl)))
			require.NoError(t, s.Start())
		}
		<-log.started
		second := <-log.started
		time.Sleep(time.Minute) // nothing else happens within the hour
		synctest.Wait()

		assert.Equal(t, 2, second.Attempt)
		all := log.all()
		require.Len(t, all, 2, "no third attempt")
		assert.ErrorIs(t, all[1].err, fencing.ErrDuplicate)
		evB := evs[second.Replica]
		require.Len(t, evB.of(EventSucceeded), 1, "the duplicate is a success")
		assert.Empty(t, evB.of(EventFailed))
		assert.Equal(t, 1, fx.count())
		runs, _, err := shared.History(t.Context(), "job:nightly", 0, 10)
		require.NoError(t, err)
		require.NotEmpty(t, runs)
		assert.Equal(t, fleet.OutcomeSucceeded, runs[0].Outcome)
	})
}

// WithRetry: a job that fails twice and then succeeds runs three attempts
// of one occurrence, on whichever replica, each after the backoff and
// within a read of the fleet's index after it; a job that always fails is
// given up once, after its last attempt.
func TestScheduler_Completion_RetryFailures(t *testing.T) {
	const wait = 10 * time.Second
	for _, tc := range []struct {
		name      string
		failures  int
		attempts  int
		succeeded int
		givenUp   int
	}{
		{"FailsTwiceThenSucceeds", 2, 3, 1, 0},
		{"AlwaysFailsIsGivenUpOnce", 99, 3, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := newMemoryStore(t, nil)
				log := newAttemptLog()
				var calls atomic.Int32
				job := func(ctx context.Context) error {
					_, i := log.begin(ctx)
					if int(calls.Add(1)) <= tc.failures {
						return log.end(i, errors.New("upstream unavailable"))
					}
					return log.end(i, nil)
				}
				time.Sleep(30 * time.Second)
				var ev [2]events
				var replicas []*Scheduler
				for i, id := range []string{"a", "b"} {
					s := newScheduler(t, store, WithInstanceID(id), WithObserver(ev[i].observe), ahead(time.Duration(1-i)*100*time.Millisecond))
					require.NoError(t, s.Register("billing", Every(time.Hour), job,
						WithRetry(3, backoff.NewConstantBackOff(wait))))
					require.NoError(t, s.Start())
					replicas = append(replicas, s)
				}
				<-log.started
				time.Sleep(5 * time.Minute)
				synctest.Wait()

				all := log.all()
				require.Len(t, all, tc.attempts)
				for i, a := range all {
					assert.Equal(t, i+1, a.run.Attempt)
					assert.True(t, a.run.Occurrence.Equal(all[0].run.Occurrence))
					if i > 0 {
						assert.GreaterOrEqual(t, a.at.Sub(all[i-1].ended), wait, "attempt %d waited the backoff", i+1)
						assert.LessOrEqual(t, a.at.Sub(all[i-1].ended), wait+resumePoll, "attempt %d started within a read of the index after the backoff", i+1)
						assert.Greater(t, a.run.Fence, all[i-1].run.Fence)
					}
				}
				var succeeded, failed, givenUp int
				for i := range ev {
					succeeded += len(ev[i].of(EventSucceeded))
					failed += len(ev[i].of(EventFailed))
					givenUp += len(ev[i].of(EventGivenUp))
				}
				assert.Equal(t, tc.succeeded, succeeded)
				assert.Equal(t, tc.attempts-tc.succeeded, failed)
				assert.Equal(t, tc.givenUp, givenUp, "given up exactly once fleet-wide")
				var gu uint64
				for _, s := range replicas {
					gu += s.Stats().GivenUp
				}
				assert.Equal(t, uint64(tc.givenUp), gu)
			})
		})
	}
}

// A job without WithRetry is not attempted again after a failure, and a
// job whose window is too short to resume in pays nothing: its claims
// carry no attempts.
func TestScheduler_Completion_FailureNotRetriedWithoutWithRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var calls atomic.Int32
		time.Sleep(30 * time.Second)
		s := newScheduler(t, store)
		require.NoError(t, s.Register("billing", Every(time.Hour), func(context.Context) error {
			calls.Add(1)
			return errors.New("boom")
		}))
		require.NoError(t, s.Start())
		time.Sleep(time.Hour) // the occurrence at 1h, then 30s more
		synctest.Wait()
		assert.Equal(t, int32(1), calls.Load())
		assert.Equal(t, uint64(1), s.Stats().Failed)
		assert.Zero(t, s.Stats().GivenUp)
	})
}

// The rule that turns completion off: one attempt asked for, no control
// plane, or a window shorter than the TTL plus the time to find a dead
// holder.
func TestScheduler_AttemptsOf_Rule(t *testing.T) {
	store, err := memory.New()
	require.NoError(t, err)
	occ := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		sch     Schedule
		opts    []JobOption
		control bool
		want    bool
	}{
		{"Nightly", Cron("0 2 * * *"), nil, true, true},
		{"EverySecond", Every(time.Second), nil, true, false},
		{"EveryMinuteDefaultTTL", Every(time.Minute), nil, true, true},
		{"Every30sDefaultTTL", Every(30 * time.Second), nil, true, false},
		{"Every10sShortTTL", Every(10 * time.Second), []JobOption{WithTTL(3 * time.Second)}, true, true},
		{"OneAttempt", Cron("0 2 * * *"), []JobOption{WithAttempts(1)}, true, false},
		{"NoControlPlane", Cron("0 2 * * *"), nil, false, false},
		{"LongWindow", Every(time.Second), []JobOption{WithAttemptWindow(time.Minute)}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(store, WithLogger(discardLogger()))
			require.NoError(t, err)
			if tc.control {
				s.control = &controlPlane{}
			}
			require.NoError(t, s.Register("job", tc.sch, func(context.Context) error { return nil }, tc.opts...))
			a, ok := s.attemptsOf(s.jobByKey("job:job").registered(), occ)
			assert.Equal(t, tc.want, ok)
			if ok {
				assert.GreaterOrEqual(t, a.Max, 2)
				assert.True(t, a.Deadline.After(occ))
			}
		})
	}
}

// A trigger's run claims a round after every claimed one, so an
// occurrence still open when it starts can never be resumed: the replica
// that runs the trigger reports it given up, once (here the occurrence of
// a replica that died before its run was indexed, so nobody resumed it).
func TestScheduler_Completion_TriggerSupersedesAnOpenOccurrence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		time.Sleep(30 * time.Second)
		occ := time.Now().Add(-30 * time.Second).Truncate(time.Millisecond)
		dead, err := store.Acquire(t.Context(), "job:nightly", 3*time.Second, lease.WithRound(occ.UnixMilli()),
			lease.WithAttempts(lease.Attempts{Max: 3, Deadline: occ.Add(time.Hour)}))
		require.NoError(t, err)
		time.Sleep(dead.TTL + 2*time.Second) // its holder died: running, no live lease

		var runs atomic.Int32
		var ev events
		s := newScheduler(t, store, WithObserver(ev.observe))
		require.NoError(t, s.Register("nightly", Every(time.Hour), func(context.Context) error {
			runs.Add(1)
			return nil
		}))
		require.NoError(t, s.Start())
		for range 2 {
			synctest.Wait()
			_, err = store.AddTrigger(t.Context(), "job:nightly", "ops", time.Minute)
			require.NoError(t, err)
			synctest.Wait()
		}

		assert.Equal(t, int32(2), runs.Load(), "both triggers ran")
		given := ev.of(EventGivenUp)
		require.Len(t, given, 1, "the superseded occurrence is reported given up, once")
		assert.True(t, given[0].Occurrence.Equal(occ), "occurrence %s, want %s", given[0].Occurrence, occ)
		assert.Equal(t, 1, given[0].Attempt)
		assert.Equal(t, uint64(1), s.Stats().GivenUp)
		_, err = store.Acquire(t.Context(), "job:nightly", time.Minute, lease.WithResume(occ.UnixMilli()))
		require.ErrorIs(t, err, lease.ErrRoundClaimed)
		hist, _, err := store.History(t.Context(), "job:nightly", 0, 10)
		require.NoError(t, err)
		var givenUp int
		for _, r := range hist {
			if r.Outcome == fleet.OutcomeGivenUp {
				givenUp++
				assert.True(t, r.Occurrence.Equal(occ))
			}
		}
		assert.Equal(t, 1, givenUp, "one given_up entry in the history")
	})
}
