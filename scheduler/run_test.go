package scheduler

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/heartbeat"
)

// ahead is a real (bubble) clock that runs d ahead of the store's, so its
// scheduler fires first and wins the race.
func ahead(d time.Duration) Option {
	return WithClock(skewedClock{clockwork.NewRealClock(), d})
}

// A job that runs for 3 x TTL keeps its lease through heartbeats; the
// occurrences that fall during it are skipped (locked) on the other replica
// and counted, and run nowhere.
func TestScheduler_Run_LongJobKeepsLeaseThroughHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		const ttl = time.Second
		base := time.Now() // the bubble starts on a whole second
		time.Sleep(500 * time.Millisecond)
		var runs atomic.Int32
		var longErr atomic.Value
		occ := newOccurrences()
		job := func(ctx context.Context) error {
			_ = occ.record(ctx)
			if runs.Add(1) == 1 {
				select {
				case <-time.After(3*ttl + 200*time.Millisecond):
					longErr.Store("ok")
				case <-ctx.Done():
					longErr.Store(context.Cause(ctx).Error())
				}
			}
			return nil
		}
		// The replicas race (no preferred replica): a, ahead, wins.
		a := newScheduler(t, store, WithInstanceID("a"), ahead(100*time.Millisecond), WithoutControlPlane())
		b := newScheduler(t, store, WithInstanceID("b"), WithoutControlPlane())
		for _, s := range []*Scheduler{a, b} {
			require.NoError(t, s.Register("long", Every(time.Second), job, WithTTL(ttl)))
			require.NoError(t, s.Start())
		}
		// a wins occurrence 1s at 0.9s and runs until 4.1s; occurrences 2s,
		// 3s and 4s fall during the run; a wins 5s at 4.9s.
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, "ok", longErr.Load(), "the long run kept its lease (its context was not cancelled)")
		assert.Equal(t, []int64{base.Add(time.Second).UnixMilli(), base.Add(5 * time.Second).UnixMilli()}, occ.sorted("long"),
			"the occurrences during the long run ran nowhere")
		assert.Equal(t, uint64(3), b.Stats().SkipLocked, "b skipped 2s, 3s and 4s as locked: a's run of 1s overlapped them")
		assert.Equal(t, uint64(2), b.Stats().SkipClaimed, "b found 1s (running on a) and 5s claimed by a")
		assert.Equal(t, uint64(3), a.Stats().SkipRunning, "a skipped them unasked: it was running the job")
		assert.Zero(t, a.Stats().SkipLocked)
		assert.Equal(t, uint64(2), a.Stats().Started)
		assert.Zero(t, b.Stats().Started)
	})
}

// A job whose lease is released behind its back sees its context cancelled
// with the lease-lost cause; its fence is in its context.
func TestScheduler_Run_LeaseDeletedCancelsWithLeaseLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		started := make(chan Run, 1)
		type result struct {
			cause error
			fence fencing.Token
			ok    bool
		}
		done := make(chan result, 1)
		var calls atomic.Int32
		var runCtx atomic.Value
		job := func(ctx context.Context) error {
			if calls.Add(1) > 1 {
				return nil
			}
			r, _ := RunFromContext(ctx)
			runCtx.Store(ctx)
			started <- r
			<-ctx.Done()
			f, ok := fencing.FromContext(ctx)
			done <- result{context.Cause(ctx), f, ok}
			return context.Cause(ctx)
		}
		var ev events
		s := newScheduler(t, store, WithObserver(ev.observe))
		require.NoError(t, s.Register("victim", Every(10*time.Second), job, WithTTL(3*time.Second)))
		require.NoError(t, s.Start())

		r := <-started
		require.NotZero(t, r.Fence)
		fence, ok := fencing.FromContext(runCtx.Load().(context.Context))
		require.True(t, ok)
		assert.Equal(t, r.Fence, fence, "the fence, for fencing.Advance")
		occ, ok := fencing.OccurrenceFromContext(runCtx.Load().(context.Context))
		require.True(t, ok)
		assert.True(t, occ.Equal(r.Occurrence), "and the occurrence, for fencing.AdvanceOnce")
		require.NoError(t, store.Release(t.Context(), r.LeaseID))
		res := <-done // the next heartbeat (ttl/3) finds the lease gone
		assert.ErrorIs(t, res.cause, heartbeat.ErrLeaseLost)
		require.True(t, res.ok)
		assert.Equal(t, r.Fence, res.fence)

		synctest.Wait()
		lost := ev.of(EventLeaseLost)
		require.Len(t, lost, 1)
		assert.ErrorIs(t, lost[0].Err, heartbeat.ErrLeaseLost)
		assert.Equal(t, "victim", lost[0].Job)
		require.Len(t, ev.of(EventInterrupted), 1, "a run whose lease was lost is interrupted")
		assert.Empty(t, ev.of(EventFailed), "not failed")
		assert.Empty(t, ev.of(EventReleased), "a lost lease is not released")
	})
}

// A panicking job is recovered, reported to the observer, and its lease
// released.
func TestScheduler_Run_PanicRecoveredAndReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var ev events
		s := newScheduler(t, store, WithObserver(ev.observe))
		time.Sleep(500 * time.Millisecond) // off the grid: nothing fires at Start
		require.NoError(t, s.Register("boom", Every(time.Minute), func(context.Context) error {
			panic("kaboom")
		}))
		require.NoError(t, s.Start())
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()

		p := ev.of(EventPanicked)
		require.Len(t, p, 1)
		assert.ErrorIs(t, p[0].Err, ErrPanic)
		assert.ErrorContains(t, p[0].Err, "kaboom")
		assert.Len(t, ev.of(EventReleased), 1)
		locked, err := store.IsLocked(t.Context(), "job:boom")
		require.NoError(t, err)
		assert.False(t, locked)
		st := s.Stats()
		assert.Equal(t, uint64(1), st.Panicked)
		assert.Equal(t, uint64(1), st.Failed, "a panic counts as a failure too")
		assert.Equal(t, uint64(1), st.Released)
	})
}

// A job that outlives WithTimeout sees its context cancelled with ErrTimeout.
func TestScheduler_Run_TimeoutCancelsWithErrTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		causes := make(chan error, 1)
		s := newScheduler(t, store)
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, s.Register("slow", Every(time.Minute), func(ctx context.Context) error {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil
		}, WithTimeout(2*time.Second)))
		require.NoError(t, s.Start())
		begin := time.Now()
		cause := <-causes
		assert.ErrorIs(t, cause, ErrTimeout)
		assert.Equal(t, time.Minute-500*time.Millisecond+2*time.Second, time.Since(begin), "fired at 1m, timed out 2s later")
	})
}

// A goroutine the job leaves behind sees the job's context done once the
// job has returned, with cause heartbeat.ErrStopped (the run's heartbeat
// stopped at its end), with and without a timeout; while the job runs the
// context is live.
func TestScheduler_Run_ContextDoneOnceTheJobReturned(t *testing.T) {
	for name, opts := range map[string][]JobOption{"plain": nil, "timeout": {WithTimeout(time.Hour)}} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newScheduler(t, newMemoryStore(t, nil))
				time.Sleep(500 * time.Millisecond)
				live := make(chan error, 1)
				after := make(chan error, 1)
				require.NoError(t, s.Register("leaves", Every(time.Minute), func(ctx context.Context) error {
					live <- ctx.Err()
					go func() {
						<-ctx.Done()
						after <- context.Cause(ctx)
					}()
					return nil
				}, opts...))
				require.NoError(t, s.Start())
				require.NoError(t, <-live, "the context is live while the job runs")
				assert.ErrorIs(t, <-after, heartbeat.ErrStopped)
				shutdown(t, s)
			})
		})
	}
}

// A job that ignores its timeout stops being renewed at the timeout: its
// lease runs out within one TTL (plus the store's expiry tolerance) and the
// next occurrence runs on the other replica, rather than the job holding it
// forever. (Its own replica skips it: the stuck run still executes there.)
func TestScheduler_Run_TimeoutStopsRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		const ttl = 3 * time.Second
		release := make(chan struct{})
		var runs atomic.Int32
		// The replicas race (no preferred replica): a, ahead, wins.
		a := newScheduler(t, store, WithInstanceID("a"), ahead(100*time.Millisecond), WithoutControlPlane())
		b := newScheduler(t, store, WithInstanceID("b"), WithoutControlPlane())
		time.Sleep(500 * time.Millisecond)
		for _, s := range []*Scheduler{a, b} {
			require.NoError(t, s.Register("stuck", Every(10*time.Second), func(ctx context.Context) error {
				if runs.Add(1) == 1 {
					<-release // ignores ctx entirely
				}
				return nil
			}, WithTTL(ttl), WithTimeout(2*time.Second), WithAttempts(1))) // one attempt: the stuck one is not resumed
			require.NoError(t, s.Start())
		}
		defer close(release)
		// The first run starts on a at 9.9s and times out at 11.9s. Renewed
		// at 10.9s, its lease expires by 14.9s (+1s tolerance), long before 20s.
		time.Sleep(19 * time.Second)
		synctest.Wait()
		locked, err := store.IsLocked(t.Context(), "job:stuck")
		require.NoError(t, err)
		assert.False(t, locked, "the stuck run's lease ran out after its timeout")
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, int32(2), runs.Load(), "the next occurrence ran while the stuck run still hangs")
		assert.Equal(t, uint64(1), b.Stats().Started, "on the other replica")
		assert.Equal(t, uint64(1), a.Stats().SkipRunning)
	})
}

// Errors returned by the job are reported as failed, and the lease is
// released.
func TestScheduler_Run_ErrorReportedAndReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var ev events
		errJob := errors.New("disk full")
		s := newScheduler(t, store, WithObserver(ev.observe))
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, s.Register("fails", Every(time.Second), func(context.Context) error { return errJob }))
		require.NoError(t, s.Start())
		time.Sleep(time.Second)
		synctest.Wait()
		f := ev.of(EventFailed)
		require.Len(t, f, 1)
		assert.ErrorIs(t, f[0].Err, errJob)
		assert.Len(t, ev.of(EventReleased), 1)
	})
}
