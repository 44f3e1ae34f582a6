package scheduler

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A job that ends with runtime.Goexit (t.FailNow, require in shared code)
// neither returns nor panics. Its heartbeat still stops, its lease is
// released, and the run is reported as failed, so the next occurrence runs
// and Shutdown has nothing left to wait for.
func TestScheduler_Run_GoexitIsAFailureAndReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var ev events
		var calls atomic.Int32
		s := newScheduler(t, store, WithObserver(ev.observe))
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, s.Register("exits", Every(time.Second), func(context.Context) error {
			calls.Add(1)
			runtime.Goexit()
			return nil
		}, WithTTL(30*time.Second)))
		require.NoError(t, s.Start())
		time.Sleep(3 * time.Second) // occurrences 1s, 2s, 3s
		synctest.Wait()

		assert.Equal(t, int32(3), calls.Load(), "each occurrence ran: the lease was released after each Goexit")
		failed := ev.of(EventFailed)
		require.Len(t, failed, 3)
		for _, e := range failed {
			assert.ErrorIs(t, e.Err, ErrGoexit)
		}
		assert.Len(t, ev.of(EventReleased), 3)
		assert.Empty(t, ev.of(EventSkipped), "no occurrence found the lease held")
		locked, err := store.IsLocked(t.Context(), "job:exits")
		require.NoError(t, err)
		assert.False(t, locked)
		assert.Equal(t, uint64(3), s.Stats().Failed)
		shutdown(t, s) // nothing is left running
	})
}

// The run context of a job with WithTimeout carries a real deadline, so
// that database drivers see it; at the timeout the scheduler reports it (an
// event and a warning) while the job still runs, and a run that returns
// after its timeout is reported as timed out, not as succeeded, even when
// it returns nil.
func TestScheduler_Run_TimeoutIsADeadlineAndAnOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var ev events
		logs := &logRecorder{}
		const timeout = 2 * time.Second
		type seen struct {
			deadline time.Time
			ok       bool
			began    time.Time
		}
		seenc := make(chan seen, 1)
		var calls atomic.Int32
		s := newScheduler(t, store, WithObserver(ev.observe), WithLogger(logs.logger()))
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, s.Register("slow", Every(time.Minute), func(ctx context.Context) error {
			if calls.Add(1) > 1 {
				return nil
			}
			d, ok := ctx.Deadline()
			seenc <- seen{d, ok, time.Now()}
			time.Sleep(timeout + time.Second) // ignores ctx
			return nil
		}, WithTimeout(timeout), WithTTL(10*time.Second)))
		require.NoError(t, s.Start())
		sn := <-seenc
		require.True(t, sn.ok, "the run context has a deadline")
		assert.Equal(t, sn.began.Add(timeout), sn.deadline)

		time.Sleep(timeout + 100*time.Millisecond)
		synctest.Wait()
		cancelled := ev.of(EventCancelled)
		require.Len(t, cancelled, 1, "the timeout is reported while the job still runs")
		assert.ErrorIs(t, cancelled[0].Err, ErrTimeout)
		assert.Empty(t, ev.of(EventTimedOut), "the job has not returned yet")
		assert.True(t, logs.has("WARN", "job timed out"), "a warning at the timeout")

		time.Sleep(time.Second)
		synctest.Wait()
		out := ev.of(EventTimedOut)
		require.Len(t, out, 1, "the run that returned after its timeout is reported as timed out")
		assert.ErrorIs(t, out[0].Err, ErrTimeout)
		assert.Equal(t, timeout+time.Second, out[0].Duration)
		assert.Empty(t, ev.of(EventSucceeded), "not as succeeded")
		assert.Equal(t, uint64(1), s.Stats().TimedOut)
	})
}

// A replica never starts a job while an earlier run of that job still
// executes on it, even when that run's lease ran out after its timeout: it
// skips with SkipRunning, and another replica takes the occurrence. So a
// replica holds at most one goroutine per job. A run that returns after its
// lease stopped being renewed is reported with a warning.
func TestScheduler_Run_NeverTwoRunsOfAJobOnOneReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		const ttl = 3 * time.Second
		release := make(chan struct{})
		perReplica := map[string]*atomic.Int32{"a": {}, "b": {}}
		job := func(ctx context.Context) error {
			r, _ := RunFromContext(ctx)
			if perReplica[r.Owner[:1]].Add(1) == 1 && r.Owner[:1] == "a" {
				<-release // a's first run ignores its context entirely
			}
			return nil
		}
		time.Sleep(500 * time.Millisecond) // off the grid: nothing fires at Start
		logsA := &logRecorder{}
		var evA events
		// The replicas race (no preferred replica): a, ahead, wins.
		a := newScheduler(t, store, WithInstanceID("a"), ahead(100*time.Millisecond), WithObserver(evA.observe), WithLogger(logsA.logger()), WithoutControlPlane())
		b := newScheduler(t, store, WithInstanceID("b"), WithoutControlPlane())
		for _, s := range []*Scheduler{a, b} {
			require.NoError(t, s.Register("stuck", Every(10*time.Second), job, WithTTL(ttl), WithTimeout(2*time.Second)))
			require.NoError(t, s.Start())
		}
		// a runs 10s (from 9.9s) and times out at 11.9s; its lease runs out
		// by ~15s (without the control plane nothing resumes 10s). At 19.9s
		// a fires again: its first run still executes, so it skips; b takes
		// 20s, and 30s.
		time.Sleep(35 * time.Second)
		synctest.Wait()
		assert.Equal(t, int32(1), perReplica["a"].Load(), "a started no second run while its first still ran")
		assert.Equal(t, int32(2), perReplica["b"].Load(), "b ran 20s and 30s")
		skippedRunning := 0
		for _, e := range evA.of(EventSkipped) {
			if e.Reason == SkipRunning {
				skippedRunning++
			}
		}
		assert.Equal(t, 2, skippedRunning, "a skipped 20s and 30s: its run of 10s still executed")
		assert.Equal(t, uint64(2), a.Stats().SkipRunning)

		close(release)
		synctest.Wait()
		assert.True(t, logsA.has("WARN", "run outlived its lease"), "the late return is reported")
		assert.Len(t, evA.of(EventTimedOut), 1)
	})
}
