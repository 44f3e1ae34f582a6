package scheduler

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// batchStore counts the releases with status of an in-process store, one
// by one and in batches; batchErr, when set, answers every entry of a
// batch with its error instead of releasing it.
type batchStore struct {
	*memory.Store
	singles  atomic.Int32 // ReleaseWithStatus calls
	batches  atomic.Int32 // ReleaseWithStatusBatch calls
	entries  atomic.Int32 // entries of those batches
	batchErr error
}

func (b *batchStore) ReleaseWithStatus(ctx context.Context, l *lease.Lease, st fleet.Status) (int, error) {
	b.singles.Add(1)
	return b.Store.ReleaseWithStatus(ctx, l, st)
}

func (b *batchStore) ReleaseWithStatusBatch(ctx context.Context, ls []*lease.Lease, sts []fleet.Status, triggers []int, errs []error) {
	b.batches.Add(1)
	b.entries.Add(int32(len(ls)))
	if b.batchErr != nil {
		for i := range ls {
			triggers[i], errs[i] = 0, b.batchErr
		}
		return
	}
	b.Store.ReleaseWithStatusBatch(ctx, ls, sts, triggers, errs)
}

// The runs' releases with status go to a fleet.BatchReleaser through the
// batcher, and not one by one; each run still reports its release, and
// the next occurrences run.
func TestScheduler_Release_GoesThroughTheBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &batchStore{Store: newMemoryStore(t, nil)}
		var ev events
		s := newScheduler(t, store, WithObserver(ev.observe))
		time.Sleep(500 * time.Millisecond)
		for i := range 3 {
			require.NoError(t, s.Register(fmt.Sprintf("batched-%d", i), Every(time.Second), func(context.Context) error { return nil }))
		}
		require.NoError(t, s.Start())
		time.Sleep(2 * time.Second) // occurrences 1s and 2s
		synctest.Wait()
		shutdown(t, s)
		select {
		case <-s.releases.done:
		default:
			t.Fatal("Shutdown returned before the batcher")
		}

		assert.Len(t, ev.of(EventSucceeded), 6)
		assert.Len(t, ev.of(EventReleased), 6, "every run released its lease")
		assert.Equal(t, int32(6), store.entries.Load(), "every release went in a batch")
		assert.Zero(t, store.singles.Load(), "none went one by one")
		assert.LessOrEqual(t, store.batches.Load(), int32(6))
		assert.Equal(t, uint64(6), s.Stats().Released)
	})
}

// A batched release that fails with a transient error is tried again one
// by one, as a release's first try would be (the retry is logged at
// debug, and the lease released); one answered with an error that is not
// transient is not tried again.
func TestScheduler_Release_BatchErrorFallsBackToRetries(t *testing.T) {
	for name, tc := range map[string]struct {
		batchErr error
		singles  int32
		released int
	}{
		"transient": {fmt.Errorf("%w: connection reset", lease.ErrUnavailable), 1, 1},
		"not held":  {&lease.NotHeldError{Op: "release", Reason: lease.ReasonExpired}, 0, 0},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &batchStore{Store: newMemoryStore(t, nil), batchErr: tc.batchErr}
				var ev events
				logs := &logRecorder{}
				s := newScheduler(t, store, WithObserver(ev.observe), WithLogger(logs.logger()))
				time.Sleep(500 * time.Millisecond)
				require.NoError(t, s.Register("fallback", Every(time.Minute), func(context.Context) error { return nil }))
				require.NoError(t, s.Start())
				time.Sleep(time.Minute) // occurrence 1m
				synctest.Wait()

				assert.Len(t, ev.of(EventSucceeded), 1)
				assert.Equal(t, int32(1), store.batches.Load(), "the first try went in a batch")
				assert.Equal(t, tc.singles, store.singles.Load(), "the tries after it went one by one")
				assert.Len(t, ev.of(EventReleased), tc.released)
				assert.Equal(t, tc.singles > 0, logs.has("DEBUG", "job lease release failed; retrying"))
				locked, err := store.IsLocked(t.Context(), "job:fallback")
				require.NoError(t, err)
				assert.Equal(t, tc.released == 0, locked, "released by the retry, or left to its TTL")
				shutdown(t, s)
			})
		})
	}
}

// Shutdown stops the batcher once the last run ended and waits for it; a
// run that outlives a Shutdown whose context ended releases on its own
// when it returns.
func TestScheduler_Shutdown_WaitsForTheReleaseBatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &batchStore{Store: newMemoryStore(t, nil)}
		var ev events
		s := newScheduler(t, store, WithObserver(ev.observe))
		time.Sleep(500 * time.Millisecond)
		started, unblock := make(chan struct{}), make(chan struct{})
		var calls atomic.Int32
		require.NoError(t, s.Register("quick", Every(time.Second), func(context.Context) error { return nil }))
		require.NoError(t, s.Register("stuck", Every(time.Second), func(context.Context) error {
			if calls.Add(1) == 1 {
				close(started)
				<-unblock // ignores its context
			}
			return nil
		}))
		require.NoError(t, s.Start())
		<-started
		synctest.Wait()
		require.NotNil(t, s.releases, "a BatchReleaser with a control plane batches")

		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		require.ErrorIs(t, s.Shutdown(ctx), ErrJobsStillRunning)
		cancel()
		synctest.Wait()
		select {
		case <-s.releases.done:
		default:
			t.Fatal("the batcher still runs after Shutdown")
		}
		singles := store.singles.Load()
		close(unblock)
		require.NoError(t, s.Shutdown(t.Context()))
		assert.Equal(t, singles+1, store.singles.Load(), "the run that outlived Shutdown released on its own")
		assert.Len(t, ev.of(EventReleased), len(ev.of(EventSucceeded)))
	})
}

// Without a control plane, runs release without status: no batcher.
func TestScheduler_Start_NoReleaseBatcherWithoutControlPlane(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &batchStore{Store: newMemoryStore(t, nil)}
		var ev events
		s := newScheduler(t, store, WithObserver(ev.observe), WithoutControlPlane())
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, s.Register("plain", Every(time.Second), func(context.Context) error { return nil }))
		require.NoError(t, s.Start())
		time.Sleep(time.Second)
		synctest.Wait()
		shutdown(t, s)
		assert.Nil(t, s.releases)
		assert.Len(t, ev.of(EventReleased), 1)
		assert.Zero(t, store.batches.Load()+store.singles.Load())
	})
}

// gatedBatches holds its first batch until gate is closed.
type gatedBatches struct {
	gate    chan struct{}
	mu      sync.Mutex
	batches [][]string // the keys of each batch
}

func (g *gatedBatches) ReleaseWithStatusBatch(_ context.Context, ls []*lease.Lease, _ []fleet.Status, triggers []int, errs []error) {
	g.mu.Lock()
	first := len(g.batches) == 0
	keys := make([]string, len(ls))
	for i, l := range ls {
		keys[i] = l.Key
		triggers[i], errs[i] = i, nil
	}
	g.batches = append(g.batches, keys)
	g.mu.Unlock()
	if first {
		<-g.gate
	}
}

// A sender sends what is queued as soon as it is free: releases that
// arrive while its batch is out go together in the next one, and each run
// gets its own answer.
func TestReleaseBatcher_Release_TakesWhatIsQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &gatedBatches{gate: make(chan struct{})}
		b := startReleaseBatcher(store, 1, nil)
		deadline := time.Now().Add(time.Second)
		answers := make([]releaseAnswer, 4)
		var wg sync.WaitGroup
		release := func(i int) {
			defer wg.Done()
			a, ok := b.release(&lease.Lease{Key: fmt.Sprintf("k%d", i)}, fleet.Status{}, deadline, time.Time{})
			assert.True(t, ok)
			answers[i] = a
		}
		wg.Add(1)
		go release(0)
		synctest.Wait() // the first batch is out, held
		for i := 1; i < 4; i++ {
			wg.Add(1)
			go release(i)
		}
		synctest.Wait() // the others are queued
		close(store.gate)
		wg.Wait()
		b.close()
		<-b.done

		assert.Equal(t, [][]string{{"k0"}, {"k1", "k2", "k3"}}, sortedBatches(store.batches))
		assert.Equal(t, 0, answers[0].triggers)
		for i := 1; i < 4; i++ {
			assert.NoError(t, answers[i].err)
		}
		_, ok := b.release(&lease.Lease{Key: "late"}, fleet.Status{}, deadline, time.Time{})
		assert.False(t, ok, "a closed batcher takes nothing")
	})
}

// sortedBatches sorts the keys within each batch (the runs queue in any
// order).
func sortedBatches(bs [][]string) [][]string {
	for _, b := range bs {
		slices.Sort(b)
	}
	return bs
}

// releaseThen queues a release without waiting: each task's continuation
// gets its own answer once its batch is answered, a task queued before
// close is still answered, and a closed batcher takes nothing (false, and
// the continuation is never called).
func TestReleaseBatcher_ReleaseThen_AnswersEachContinuation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &gatedBatches{gate: make(chan struct{})}
		b := startReleaseBatcher(store, 1, nil)
		deadline := time.Now().Add(time.Second)
		var mu sync.Mutex
		got := map[string]releaseAnswer{}
		then := func(key string) func(releaseAnswer) {
			return func(a releaseAnswer) {
				mu.Lock()
				defer mu.Unlock()
				got[key] = a
			}
		}
		require.True(t, b.releaseThen(&lease.Lease{Key: "k0"}, fleet.Status{}, deadline, time.Time{}, then("k0")))
		synctest.Wait() // the first batch is out, held
		for _, k := range []string{"k1", "k2"} {
			require.True(t, b.releaseThen(&lease.Lease{Key: k}, fleet.Status{}, deadline, time.Time{}, then(k)))
		}
		synctest.Wait()
		mu.Lock()
		assert.Empty(t, got, "no answer before the batch's")
		mu.Unlock()
		b.close() // k1 and k2 are queued: still sent and answered
		close(store.gate)
		<-b.done
		synctest.Wait() // the continuations' goroutines

		assert.Equal(t, [][]string{{"k0"}, {"k1", "k2"}}, sortedBatches(store.batches))
		assert.Equal(t, map[string]releaseAnswer{"k0": {triggers: 0}, "k1": {triggers: 0}, "k2": {triggers: 1}}, got,
			"each continuation got its own entry's answer")
		assert.False(t, b.releaseThen(&lease.Lease{Key: "late"}, fleet.Status{}, deadline, time.Time{}, func(releaseAnswer) {
			t.Error("a closed batcher's continuation was called")
		}))
		synctest.Wait()
	})
}

// While one sender's batch holds only part of maxReleaseBatch, the
// releases queued after it wait for its answer and go together in the
// next call, however many senders are free: a replica whose runs end a
// few at a time makes one call at a time, not one per sender. A full
// batch goes at once.
func TestReleaseBatcher_Release_OnePartialBatchOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &gatedBatches{gate: make(chan struct{})}
		b := startReleaseBatcher(store, releaseSenders, nil)
		deadline := time.Now().Add(time.Second)
		var wg sync.WaitGroup
		release := func(key string) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, ok := b.release(&lease.Lease{Key: key}, fleet.Status{}, deadline, time.Time{})
				assert.True(t, ok)
			}()
		}
		release("first")
		synctest.Wait() // the first batch is out, held
		for i := range 3 {
			release(fmt.Sprintf("a%d", i))
			synctest.Wait()
		}
		store.mu.Lock()
		assert.Len(t, store.batches, 1, "no second part of a batch while one is out")
		store.mu.Unlock()

		for i := range maxReleaseBatch {
			release(fmt.Sprintf("b%02d", i))
		}
		synctest.Wait()
		store.mu.Lock()
		require.Len(t, store.batches, 2, "a full batch goes while a part of one is out")
		assert.Len(t, store.batches[1], maxReleaseBatch)
		store.mu.Unlock()

		close(store.gate)
		wg.Wait()
		b.close()
		<-b.done
		assert.Len(t, store.batches, 3, "the rest in one call once the part was answered")
		var n int
		for _, keys := range store.batches {
			n += len(keys)
		}
		assert.Equal(t, 1+3+maxReleaseBatch, n, "every release sent once")
	})
}
