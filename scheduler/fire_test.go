package scheduler

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

// delayStore delays Acquire by delay(key) (on the bubble's clock), or until
// gate is closed when gate is set.
type delayStore struct {
	lease.Store
	delay func(key string) time.Duration
	gate  chan struct{}

	mu       sync.Mutex
	inFlight int
	maxIn    int
}

func (d *delayStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	d.mu.Lock()
	d.inFlight++
	d.maxIn = max(d.maxIn, d.inFlight)
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.inFlight--
		d.mu.Unlock()
	}()
	if d.gate != nil {
		select {
		case <-d.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if d.delay != nil {
		time.Sleep(d.delay(key))
	}
	return d.Store.Acquire(ctx, key, ttl, opts...)
}

// lateRuns records, per job, each run's occurrence and how late it started.
type lateRuns struct {
	mu   sync.Mutex
	occ  map[string][]int64
	late map[string][]time.Duration
}

func newLateRuns() *lateRuns {
	return &lateRuns{occ: make(map[string][]int64), late: make(map[string][]time.Duration)}
}

func (l *lateRuns) record(ctx context.Context) error {
	r, _ := RunFromContext(ctx)
	l.mu.Lock()
	l.occ[r.Job] = append(l.occ[r.Job], r.Occurrence.UnixMilli())
	l.late[r.Job] = append(l.late[r.Job], time.Since(r.Occurrence))
	l.mu.Unlock()
	return nil
}

// A store that takes 2.3 intervals to answer for one job delays no other
// job: with two acquire workers, the fast jobs run every occurrence on
// time while the slow job holds one worker. The slow job's firings stay in
// order: one waits as its next, and the one it supersedes is skipped as an
// overrun.
func TestScheduler_Dispatch_SlowStoreDelaysNoOtherJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &delayStore{Store: newMemoryStore(t, nil), delay: func(key string) time.Duration {
			if key == "job:slow" {
				return 2300 * time.Millisecond
			}
			return 0
		}}
		base := time.Now() // the bubble starts on a whole second
		time.Sleep(500 * time.Millisecond)
		runs := newLateRuns()
		s := newScheduler(t, store, WithAcquireConcurrency(2))
		require.NoError(t, s.Register("slow", Every(time.Second), func(ctx context.Context) error {
			time.Sleep(100 * time.Millisecond) // still running when the next firing is taken
			return runs.record(ctx)
		}))
		for i := range 5 {
			require.NoError(t, s.Register(fmt.Sprintf("fast-%d", i), Every(time.Second), runs.record))
		}
		require.NoError(t, s.Start())
		time.Sleep(6 * time.Second)
		synctest.Wait()
		shutdown(t, s)

		want := make([]int64, 0, 6)
		for k := 1; k <= 6; k++ {
			want = append(want, base.Add(time.Duration(k)*time.Second).UnixMilli())
		}
		runs.mu.Lock()
		defer runs.mu.Unlock()
		for i := range 5 {
			name := fmt.Sprintf("fast-%d", i)
			assert.Equal(t, want, runs.occ[name], "%s ran every occurrence, each its own", name)
			for _, late := range runs.late[name] {
				assert.Less(t, late, 10*time.Millisecond, "%s started on time", name)
			}
		}
		// slow: 1s acquired 1s-3.3s and run 3.3s-3.4s; 2s waits, 3s
		// supersedes it (overrun) and is taken at 3.3s, while 1s runs: it
		// is skipped unasked (running here). 4s acquired 4s-6.3s and run;
		// 5s waits, 6s supersedes it and is taken at 6.3s, while 4s runs.
		assert.Equal(t, []int64{want[0], want[3]}, runs.occ["slow"], "slow ran its occurrences in order, each its own")
		assert.Equal(t, uint64(2), s.Stats().SkipOverrun, "2s and 5s were superseded while slow's acquire was in flight")
		assert.Equal(t, uint64(2), s.Stats().SkipRunning, "3s and 6s came while slow ran")
	})
}

// A store round trip of 0.8 interval makes every run late by that much,
// yet each run claims its own occurrence, not the next one, and none is
// skipped.
func TestScheduler_Dispatch_LateAcquireRunsItsOwnOccurrence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &delayStore{Store: newMemoryStore(t, nil), delay: func(string) time.Duration { return 800 * time.Millisecond }}
		base := time.Now()
		time.Sleep(500 * time.Millisecond)
		runs := newLateRuns()
		s := newScheduler(t, store)
		require.NoError(t, s.Register("late", Every(time.Second), runs.record))
		require.NoError(t, s.Start())
		time.Sleep(4*time.Second + 400*time.Millisecond)
		synctest.Wait()
		shutdown(t, s)

		runs.mu.Lock()
		defer runs.mu.Unlock()
		want := []int64{base.Add(time.Second).UnixMilli(), base.Add(2 * time.Second).UnixMilli(),
			base.Add(3 * time.Second).UnixMilli(), base.Add(4 * time.Second).UnixMilli()}
		assert.Equal(t, want, runs.occ["late"])
		for _, late := range runs.late["late"] {
			assert.Equal(t, 800*time.Millisecond, late)
		}
		st := s.Stats()
		assert.Zero(t, st.SkipOverrun+st.SkipClaimed+st.SkipLocked)
	})
}

// While the store answers nothing, firings pile up nowhere: the acquires in
// flight never exceed the worker count, the goroutine count stays flat
// whatever the number of firings, and each job keeps at most one pending
// firing (the rest are counted as overruns).
func TestScheduler_Dispatch_StalledStoreBoundsGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &delayStore{Store: newMemoryStore(t, nil), gate: make(chan struct{})}
		const jobs, workers = 50, 4
		time.Sleep(50 * time.Millisecond) // off the grid
		s := newScheduler(t, store, WithAcquireConcurrency(workers))
		for i := range jobs {
			require.NoError(t, s.Register(fmt.Sprintf("j%02d", i), Every(100*time.Millisecond), func(context.Context) error { return nil }))
		}
		require.NoError(t, s.Start())
		time.Sleep(100 * time.Millisecond) // one firing, at 100ms
		synctest.Wait()
		after1 := runtime.NumGoroutine()
		time.Sleep(2 * time.Second) // 20 more firings of 50 jobs, 200ms-2.1s
		synctest.Wait()
		// 1,000 firings later: a few of gocron's goroutines may be mid-firing,
		// but nothing grows with the firings.
		assert.LessOrEqual(t, runtime.NumGoroutine(), after1+5, "no goroutine per firing")
		store.mu.Lock()
		assert.Equal(t, workers, store.maxIn, "acquires in flight are bounded by the workers")
		store.mu.Unlock()
		// 21 firings per job: 1 in flight or queued, 1 pending, 19 overruns.
		assert.Equal(t, uint64(jobs*19), s.Stats().SkipOverrun)
		close(store.gate)
		shutdown(t, s)
	})
}
