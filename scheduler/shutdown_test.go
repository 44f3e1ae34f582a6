package scheduler

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

// Shutdown mid-run cancels the job's context with ErrShutdown; once the job
// returns its lease is released, and another replica runs the next
// occurrence without waiting for the TTL.
func TestScheduler_Shutdown_CancelsRunAndReleasesLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		base := time.Now()
		time.Sleep(500 * time.Millisecond)
		occ := newOccurrences()
		ranOn := make(chan string, 1)
		causes := make(chan error, 1)
		var calls atomic.Int32
		job := func(ctx context.Context) error {
			_ = occ.record(ctx)
			if calls.Add(1) == 1 {
				r, _ := RunFromContext(ctx)
				ranOn <- r.Replica
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return context.Cause(ctx)
			}
			return nil
		}
		a := newScheduler(t, store, WithInstanceID("a"), ahead(100*time.Millisecond))
		b := newScheduler(t, store, WithInstanceID("b"))
		for _, s := range []*Scheduler{a, b} {
			require.NoError(t, s.Register("report", Every(time.Second), job, WithTTL(30*time.Second)))
			require.NoError(t, s.Start())
		}
		// Occurrence 1s runs on a (from 0.9s) or on b (from 1s), as the
		// replicas' views of each other choose: stop that one.
		holder, other := a, b
		if <-ranOn == "b" {
			holder, other = b, a
		}
		time.Sleep(300 * time.Millisecond)
		require.NoError(t, holder.Shutdown(t.Context()))
		select {
		case cause := <-causes:
			assert.ErrorIs(t, cause, ErrShutdown)
		case <-time.After(5 * time.Second):
			t.Fatal("the run's context was not cancelled by its replica's Shutdown")
		}
		locked, err := store.IsLocked(t.Context(), "job:report")
		require.NoError(t, err)
		assert.False(t, locked, "the lease is released when Shutdown returns")

		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, []int64{base.Add(time.Second).UnixMilli(), base.Add(2 * time.Second).UnixMilli()}, occ.sorted("report"),
			"the other replica ran occurrence 2s, 28s before the TTL would have run out")
		assert.Equal(t, uint64(1), other.Stats().Started)
		assert.NoError(t, holder.Shutdown(t.Context()), "Shutdown twice is safe")
		require.NoError(t, other.Shutdown(t.Context()))
	})
}

// A job that ignores its context keeps its lease until the TTL runs out (its
// heartbeat stops), and Shutdown reports it by name.
func TestScheduler_Shutdown_StuckJobKeepsLeaseUntilTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		base := time.Now()
		time.Sleep(500 * time.Millisecond)
		occ := newOccurrences()
		started, unblock := make(chan struct{}), make(chan struct{})
		var calls atomic.Int32
		job := func(ctx context.Context) error {
			_ = occ.record(ctx)
			if calls.Add(1) == 1 {
				close(started)
				<-unblock // ignores ctx
			}
			return nil
		}
		const ttl = 3 * time.Second
		// The replicas race (no preferred replica): a, ahead, wins.
		a := newScheduler(t, store, WithInstanceID("a"), ahead(100*time.Millisecond), WithoutControlPlane())
		b := newScheduler(t, store, WithInstanceID("b"), WithoutControlPlane())
		for _, s := range []*Scheduler{a, b} {
			require.NoError(t, s.Register("stubborn", Every(time.Second), job, WithTTL(ttl)))
			require.NoError(t, s.Start())
		}
		<-started                           // a runs occurrence 1s from 0.9s
		time.Sleep(2500 * time.Millisecond) // heartbeats renew at 1.9s and 2.9s (ttl/3)
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		err := a.Shutdown(ctx) // at 3.4s
		cancel()
		require.ErrorIs(t, err, ErrJobsStillRunning)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorContains(t, err, "stubborn")
		shutAt := time.Now() // 3.9s; the last renewal (2.9s) set expiry 5.9s

		locked, err := store.IsLocked(t.Context(), "job:stubborn")
		require.NoError(t, err)
		assert.True(t, locked, "the stuck job keeps its lease")

		// The lease is no longer renewed: it stops being live at expiry +
		// lease.ExpiryTolerance = 6.9s, and b runs occurrence 7s.
		time.Sleep(4 * time.Second)
		synctest.Wait()
		ms := occ.sorted("stubborn")
		assert.Equal(t, []int64{base.Add(time.Second).UnixMilli(), base.Add(7 * time.Second).UnixMilli()}, ms,
			"nothing ran while the stuck job held its lease; b ran the first occurrence after the TTL")
		assert.Less(t, time.UnixMilli(ms[1]).Sub(shutAt), ttl+time.Second+time.Second)
		assert.Equal(t, uint64(1), b.Stats().SkipClaimed, "b found 1s claimed by a, which runs it")
		assert.Equal(t, uint64(5), b.Stats().SkipLocked, "b skipped 2s to 6s as locked: a's stuck run overlapped them")

		close(unblock)
		require.NoError(t, a.Shutdown(t.Context()), "a second Shutdown waits for the job that was still running")
	})
}

// When Shutdown's context ends while one job's acquire is still in flight
// and another job runs on, ignoring its context, the error names both.
func TestScheduler_Shutdown_NamesAcquiringAndRunningJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		mem := newMemoryStore(t, nil)
		entered := make(chan struct{}, 1)
		store := &gatedStore{Store: mem, key: "job:slowacquire", gate: gate, entered: entered}
		unblock := make(chan struct{})
		started := make(chan struct{})
		s := newScheduler(t, store)
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, s.Register("stuckjob", Every(time.Second), func(context.Context) error {
			close(started)
			<-unblock // ignores its context
			return nil
		}))
		require.NoError(t, s.Register("slowacquire", Every(time.Second), func(context.Context) error { return nil }))
		require.NoError(t, s.Start())
		<-started
		<-entered // both are under way: one runs, one waits in its acquire
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		err := s.Shutdown(ctx)
		cancel()
		require.ErrorIs(t, err, ErrJobsStillRunning)
		assert.ErrorContains(t, err, "stuckjob", "the running job is named")
		assert.ErrorContains(t, err, "slowacquire", "the acquiring job is named")
		close(gate)
		close(unblock)
		require.NoError(t, s.Shutdown(t.Context()))
	})
}

// gatedStore holds every Acquire of key until gate is closed (or the
// acquire's context ends); entered, if not nil, is sent to (without
// blocking) as each such Acquire starts waiting.
type gatedStore struct {
	lease.Store
	key     string
	gate    chan struct{}
	entered chan struct{}
}

func (g *gatedStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	if key == g.key {
		if g.entered != nil {
			select {
			case g.entered <- struct{}{}:
			default:
			}
		}
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", lease.ErrTimeout, ctx.Err())
		}
	}
	return g.Store.Acquire(ctx, key, ttl, opts...)
}

// Shutdown stops firings before it cancels runs: when a running job's
// context is cancelled with ErrShutdown, the claim queue is closed and
// every job knows the scheduler stops, so no occurrence can start behind
// the cancelled run.
func TestScheduler_Shutdown_StopsFiringsBeforeItCancelsRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s *Scheduler
		var queueClosed, stopping bool
		var cause error
		job := func(ctx context.Context) error {
			<-ctx.Done()
			cause = context.Cause(ctx)
			s.queue.mu.Lock()
			queueClosed = s.queue.closed
			s.queue.mu.Unlock()
			for _, j := range s.jobsSnapshot() {
				j.mu.Lock()
				stopping = j.st.stopping
				j.mu.Unlock()
			}
			return nil
		}
		s = newScheduler(t, newMemoryStore(t, nil))
		require.NoError(t, s.Register("report", Every(time.Second), job))
		require.NoError(t, s.Start())
		time.Sleep(500 * time.Millisecond) // the run of :00 waits for its context
		shutdown(t, s)

		require.ErrorIs(t, cause, ErrShutdown)
		assert.True(t, queueClosed, "claims stopped before the run was cancelled")
		assert.True(t, stopping, "the job knew the scheduler stops before its run was cancelled")
	})
}
