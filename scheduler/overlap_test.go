package scheduler

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ranRun is one run as the job saw it, in the bubble's time.
type ranRun struct {
	replica    string
	occurrence time.Time
	start, end time.Time
}

// runLog is a job function that records its runs and takes d.
type runLog struct {
	d    time.Duration
	mu   sync.Mutex
	runs []ranRun
}

func (l *runLog) run(ctx context.Context) error {
	r, _ := RunFromContext(ctx)
	start := time.Now()
	time.Sleep(l.d)
	l.mu.Lock()
	l.runs = append(l.runs, ranRun{replica: r.Replica, occurrence: r.Occurrence, start: start, end: time.Now()})
	l.mu.Unlock()
	return nil
}

// sorted returns the runs by start.
func (l *runLog) sorted() []ranRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.runs)
	slices.SortFunc(out, func(a, b ranRun) int { return a.start.Compare(b.start) })
	return out
}

// A 1s job whose runs take 1.5s, with OverlapBufferOne, on three
// replicas: an occurrence that finds the previous run going waits for it
// and starts the instant it ends, once, on one replica; an occurrence that
// cannot start before its next occurrence is skipped. So the job runs back
// to back, and of every three occurrences two run: the one that started
// when due (k), the one that waited for it (k+1, from k+1.5s to k+3s), and
// not k+2, whose wait ends 0.1s before k+3 (its next occurrence, less the
// margin), while k+1 still runs.
func TestScheduler_BufferOne_RunsBackToBackAcrossReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		job := &runLog{d: 1500 * time.Millisecond}
		var replicas []*Scheduler
		for i := range 3 {
			s := newScheduler(t, store, WithInstanceID(fmt.Sprintf("replica-%d", i)))
			require.NoError(t, s.Register("slow", Every(time.Second), job.run, WithOverlap(OverlapBufferOne), WithTTL(3*time.Second)))
			replicas = append(replicas, s)
		}
		for _, s := range replicas {
			require.NoError(t, s.Start())
		}
		time.Sleep(12 * time.Second)
		for _, s := range replicas {
			shutdown(t, s)
		}

		runs := job.sorted()
		require.GreaterOrEqual(t, len(runs), 7, "12s of 1.5s runs back to back")
		first := runs[0].occurrence
		assert.Equal(t, first.UnixMilli(), runs[0].start.UnixMilli(), "the first run starts when due")
		seen := map[time.Time]bool{}
		for i, r := range runs {
			require.False(t, seen[r.occurrence], "occurrence %s ran twice", r.occurrence)
			seen[r.occurrence] = true
			k := int(r.occurrence.Sub(first) / time.Second)
			assert.NotEqual(t, 2, k%3, "run %d: occurrence k+%d cannot start before its next one", i, k)
			if i == 0 {
				continue
			}
			assert.Equal(t, runs[i-1].end.UnixMilli(), r.start.UnixMilli(), "run %d (k+%d) starts the instant the previous run ends", i, k)
			if k%3 == 1 {
				assert.Equal(t, r.occurrence.Add(500*time.Millisecond).UnixMilli(), r.start.UnixMilli(), "run %d: a buffered occurrence, late by the overlap", i)
			}
		}
		var claimed, locked uint64
		for _, s := range replicas {
			st := s.Stats()
			claimed += st.SkipClaimed
			locked += st.SkipLocked
		}
		assert.Positive(t, claimed, "the other replicas' buffered occurrences found the round claimed")
		assert.Positive(t, locked, "occurrences that could not start in time are skipped as locked")
	})
}

// On a single replica, OverlapBufferOne still buffers: the occurrence that
// finds the job running on this very replica waits for the run to end and
// starts at once, rather than being skipped as running here.
func TestScheduler_BufferOne_OnTheReplicaRunningTheJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		job := &runLog{d: 1500 * time.Millisecond}
		var ev events
		s := newScheduler(t, store, WithObserver(ev.observe))
		require.NoError(t, s.Register("slow", Every(time.Second), job.run, WithOverlap(OverlapBufferOne), WithTTL(3*time.Second)))
		require.NoError(t, s.Start())
		time.Sleep(6 * time.Second)
		shutdown(t, s)

		runs := job.sorted()
		require.GreaterOrEqual(t, len(runs), 3, "6s of 1.5s runs back to back")
		for i := 1; i < len(runs); i++ {
			assert.Equal(t, runs[i-1].end.UnixMilli(), runs[i].start.UnixMilli(), "run %d starts the instant the previous run ends", i)
		}
		for _, e := range ev.of(EventSkipped) {
			assert.NotEqual(t, SkipRunning, e.Reason, "an occurrence buffered on the replica running the job is not skipped as running here")
		}
	})
}

// OverlapBufferOne on the replica whose run lost its lease unnoticed (the
// store dropped it): the buffered occurrence waits for the run here to
// end before it asks the store, so the replica never runs two of the job
// at once, and claims no round it cannot run yet.
func TestScheduler_BufferOne_LostLeaseWaitsForTheRunHere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var mu sync.Mutex
		running, most := 0, 0
		var first sync.Once
		job := func(ctx context.Context) error {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			defer func() { mu.Lock(); running--; mu.Unlock() }()
			first.Do(func() {
				time.Sleep(300 * time.Millisecond)
				_, err := store.ForceRelease(context.Background(), JobKeyPrefix+"tick")
				assert.NoError(t, err)
				time.Sleep(1200 * time.Millisecond) // ignores ctx: outlives the next occurrence
			})
			return nil
		}
		var ev events
		s := newScheduler(t, store, WithObserver(ev.observe))
		require.NoError(t, s.Register("tick", Every(time.Second), job, WithOverlap(OverlapBufferOne), WithTTL(6*time.Second)))
		require.NoError(t, s.Start())
		time.Sleep(3500 * time.Millisecond)
		shutdown(t, s)

		assert.Equal(t, 1, most, "never two runs of the job at once on one replica")
		started := ev.of(EventStarted)
		require.GreaterOrEqual(t, len(started), 3, "the buffered occurrence ran after the first run, and the next ones on time")
		assert.Equal(t, started[0].Occurrence.Add(time.Second), started[1].Occurrence, "the occurrence that found the job running here ran once it ended")
		for _, e := range ev.of(EventSkipped) {
			assert.NotEqual(t, SkipRunning, e.Reason)
		}
	})
}

// Shutdown ends an occurrence that waits for the job's running one: it is
// skipped with SkipShutdown, and Shutdown does not wait for the holder.
func TestScheduler_BufferOne_ShutdownEndsTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var ev events
		s := newScheduler(t, store, WithObserver(ev.observe))
		require.NoError(t, s.Register("slow", Every(time.Minute), func(context.Context) error { return nil }, WithOverlap(OverlapBufferOne)))
		holder, err := store.Acquire(t.Context(), JobKeyPrefix+"slow", time.Hour)
		require.NoError(t, err)
		require.NoError(t, s.Start()) // the first occurrence is due at once
		time.Sleep(30 * time.Second)
		synctest.Wait() // the occurrence waits for the holder, up to 59s
		require.Empty(t, ev.of(EventSkipped), "the occurrence waits rather than skips")
		before := time.Now()
		shutdown(t, s)
		assert.Zero(t, time.Since(before), "Shutdown ends the wait at once")
		skips := ev.of(EventSkipped)
		require.Len(t, skips, 1)
		assert.Equal(t, SkipShutdown, skips[0].Reason)
		assert.Empty(t, ev.of(EventStarted))
		require.NoError(t, holder.Release(t.Context()))
	})
}

func TestWithOverlap_Invalid(t *testing.T) {
	s := newScheduler(t, newMemoryStore(t, nil))
	for _, p := range []OverlapPolicy{0, OverlapBufferOne + 1, -1} {
		err := s.Register("job", Every(time.Minute), func(context.Context) error { return nil }, WithOverlap(p))
		require.ErrorIs(t, err, ErrInvalidArgument, "policy %d", p)
	}
	assert.Equal(t, "buffer one", OverlapBufferOne.String())
	assert.Equal(t, "skip", OverlapSkip.String())
}
