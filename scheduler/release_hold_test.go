package scheduler

import (
	"context"
	"runtime"
	"strings"
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

// The claim queue is idle while no claim is queued or in flight: its
// channel closes when the last batch taken is done, not when it is taken.
func TestClaimQueue_IdleOnceTheClaimsAreAnswered(t *testing.T) {
	q := newClaimQueue()
	closed := func() bool {
		select {
		case <-q.idle():
			return true
		default:
			return false
		}
	}
	require.True(t, closed(), "a new queue is idle")
	require.True(t, q.push(claimTask{}))
	require.True(t, q.push(claimTask{}))
	assert.False(t, closed(), "claims queued")
	ts, ok := q.popBatch(nil, 64, 256)
	require.True(t, ok)
	require.Len(t, ts, 2)
	assert.False(t, closed(), "claims in flight")
	idle := q.idle()
	q.done(1)
	assert.False(t, closed(), "one claim still in flight")
	q.done(1)
	assert.True(t, closed(), "every claim answered")
	select {
	case <-idle:
	default:
		t.Fatal("the channel taken while the claims were in flight did not close")
	}
	require.True(t, q.push(claimTask{}))
	assert.False(t, closed(), "a new claim: busy again")
}

// releaseOne releases a lease named key through b, held until hold, and
// reports when its batch went out.
func releaseOne(t *testing.T, wg *sync.WaitGroup, b *releaseBatcher, key string, hold time.Time, sent *time.Time) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, ok := b.release(&lease.Lease{Key: key}, fleet.Status{}, time.Now().Add(5*time.Second), hold)
		assert.True(t, ok)
		*sent = time.Now()
	}()
}

// A release that may wait goes when the claims are answered, or when its
// hold passes if they are not, or when the batcher closes; one that may
// not wait (a zero hold) goes at once, claims or not.
func TestReleaseBatcher_Hold_WaitsForTheClaimsUpToItsHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &gatedBatches{gate: make(chan struct{})}
		close(store.gate)
		claims := make(chan struct{}) // open: claims in flight
		var mu sync.Mutex
		b := startReleaseBatcher(store, 1, func() <-chan struct{} { mu.Lock(); defer mu.Unlock(); return claims })
		var wg sync.WaitGroup
		start := time.Now()

		var atOnce time.Time
		releaseOne(t, &wg, b, "at-once", time.Time{}, &atOnce)
		wg.Wait()
		assert.Equal(t, start, atOnce, "a zero hold goes at once")

		var answered time.Time
		releaseOne(t, &wg, b, "answered", start.Add(maxReleaseHold), &answered)
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		assert.True(t, answered.IsZero(), "held while the claims are in flight")
		mu.Lock()
		close(claims)
		mu.Unlock()
		wg.Wait()
		assert.Equal(t, start.Add(100*time.Millisecond), answered, "sent when the claims were answered")

		mu.Lock()
		claims = make(chan struct{})
		mu.Unlock()
		var bounded time.Time
		releaseOne(t, &wg, b, "bounded", time.Now().Add(maxReleaseHold), &bounded)
		wg.Wait()
		assert.Equal(t, start.Add(100*time.Millisecond+maxReleaseHold), bounded, "sent when its hold passed")

		var closing time.Time
		releaseOne(t, &wg, b, "closing", time.Now().Add(maxReleaseHold), &closing)
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		b.close()
		wg.Wait()
		<-b.done
		assert.Equal(t, start.Add(110*time.Millisecond+maxReleaseHold), closing, "sent when the batcher closed")
		assert.Equal(t, [][]string{{"at-once"}, {"answered"}, {"bounded"}, {"closing"}}, store.batches)
	})
}

// A release waits for the claims only while some are queued or in flight,
// at most maxReleaseHold and a quarter of its own time, and not at all when
// its job's next claim comes before the run's lease would expire by itself
// (its TTL from now, plus lease.ExpiryTolerance): a replica that stalled
// while it held the release would hold the lease into the next occurrence.
func TestScheduler_ReleaseHold_IsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(t, newMemoryStore(t, nil))
		noop := func(context.Context) error { return nil }
		require.NoError(t, s.Register("minutely", Every(time.Minute), noop)) // the default TTL, 30s
		require.NoError(t, s.Register("short-ttl", Every(10*time.Second), noop, WithTTL(5*time.Second)))
		require.NoError(t, s.Register("tight", Every(time.Second), noop, WithTTL(3*time.Second)))
		run := func(name string) *run { j := s.jobByKey("job:" + name); return &run{job: j, reg: j.registered()} }
		time.Sleep(20 * time.Second) // "minutely" is 40s from its next occurrence, "short-ttl" 10s
		now := time.Now()
		far := now.Add(time.Minute)

		assert.True(t, s.releaseHold(run("minutely"), far).IsZero(), "no claim waits: no hold")

		require.True(t, s.queue.push(claimTask{}))
		assert.Equal(t, now.Add(maxReleaseHold), s.releaseHold(run("minutely"), far), "at most maxReleaseHold")
		assert.Equal(t, now.Add(100*time.Millisecond), s.releaseHold(run("minutely"), now.Add(400*time.Millisecond)), "a quarter of its own time")
		assert.Equal(t, now.Add(maxReleaseHold), s.releaseHold(run("short-ttl"), far), "its next claim, 10s away, comes after its lease would expire (6s)")
		assert.True(t, s.releaseHold(run("tight"), far).IsZero(), "its next claim, 1s away, comes before its lease would expire (4s)")

		time.Sleep(5 * time.Second) // "short-ttl" 5s from its next occurrence, "minutely" 35s
		assert.True(t, s.releaseHold(run("short-ttl"), far).IsZero(), "its next claim, 5s away, comes before its lease would expire (6s)")
		time.Sleep(5 * time.Second) // "minutely" 30s from its next occurrence
		assert.True(t, s.releaseHold(run("minutely"), far).IsZero(), "its next claim, 30s away, comes before its lease would expire (31s)")
	})
}

// gatedClaims is a memory store whose acquires of gated wait until gate
// is closed (or their context ends): a claim that stays in flight.
type gatedClaims struct {
	*memory.Store
	gated string
	gate  chan struct{}
}

func (g *gatedClaims) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	if key == g.gated {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Store.Acquire(ctx, key, ttl, opts...)
}

func (g *gatedClaims) AcquireBatch(ctx context.Context, reqs []lease.AcquireRequest, res []lease.AcquireResult) {
	acquireEach(ctx, g.Acquire, reqs, res)
}

// runsEnding counts the goroutines that are ending a run (in finish).
func runsEnding() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "scheduler.(*Scheduler).finish(")
}

// A run whose release waits for this replica's claims does not keep its
// goroutine while it waits: it hands its release to the batcher and
// returns, and its end (the released event, the owner told) follows the
// batch's answer. Before, the run's goroutine waited for the answer, and a
// firing group of 10,000 runs kept 10,000 goroutines alive at once, whose
// descriptors the runtime keeps for as long as the process runs
// (BenchmarkScheduler_Redis_HeapPerRegisteredJob: 566-743 B per job once
// the jobs had run, against 354 B before).
func TestScheduler_ReleaseHold_TheRunsGoroutineDoesNotWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &gatedClaims{Store: newMemoryStore(t, nil), gated: "job:stuck", gate: make(chan struct{})}
		var released atomic.Int32
		s := newScheduler(t, store, WithObserver(func(e Event) {
			if e.Kind == EventReleased && e.Job == "quick" {
				released.Add(1)
			}
		}))
		noop := func(context.Context) error { return nil }
		time.Sleep(10 * time.Second) // off the minute: quick's first occurrence is the next minute
		start := time.Now()
		// stuck's claim is in flight from 2s before quick's occurrence
		// until the gate opens (or its try's 5s end).
		require.NoError(t, s.Register("stuck", At(start.Add(48*time.Second)), noop))
		require.NoError(t, s.Register("quick", Every(time.Minute), noop))
		require.NoError(t, s.Start())

		time.Sleep(time.Until(start.Truncate(time.Minute).Add(time.Minute + 10*time.Millisecond)))
		synctest.Wait()
		st, _ := s.JobStats("quick")
		require.Equal(t, uint64(1), st.Started, "quick ran while stuck's claim is in flight")
		assert.Zero(t, released.Load(), "its release waits for the claim in flight")
		assert.Zero(t, runsEnding(), "no goroutine waits in the run's end")

		close(store.gate)
		synctest.Wait()
		assert.Equal(t, int32(1), released.Load(), "released once the claims are answered")
		shutdown(t, s)
	})
}

// A part of a batch that waits for the claims is not out: a release that
// may not wait (a zero hold), queued while it waits, goes at once in a
// call of its own, as it would with no batch held (the one part of a
// batch out at a time is a part being sent, release_batch.go).
func TestReleaseBatcher_Hold_HeldPartKeepsNoReleaseThatMayNotWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &gatedBatches{gate: make(chan struct{})}
		close(store.gate)
		claims := make(chan struct{}) // open: claims in flight
		b := startReleaseBatcher(store, releaseSenders, func() <-chan struct{} { return claims })
		var wg sync.WaitGroup
		start := time.Now()

		var held, atOnce time.Time
		releaseOne(t, &wg, b, "held", start.Add(maxReleaseHold), &held)
		synctest.Wait() // taken, waiting for the claims
		releaseOne(t, &wg, b, "at-once", time.Time{}, &atOnce)
		synctest.Wait()
		assert.Equal(t, start, atOnce, "a zero hold goes at once, beside a held part")
		assert.True(t, held.IsZero(), "the held part still waits")

		close(claims)
		wg.Wait()
		b.close()
		<-b.done
		assert.Equal(t, [][]string{{"at-once"}, {"held"}}, store.batches)
	})
}
