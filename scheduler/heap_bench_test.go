package scheduler

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/testutil"
)

// BenchmarkScheduler_Redis_HeapPerRegisteredJob measures the heap a replica
// keeps per registered job, on a real Redis with the control plane: the
// heap after a GC of a replica with 10,000 jobs less that of one with
// 1,000, over the 9,000 jobs between, so that what a replica keeps
// whatever its jobs (the Redis client's buffers, the workers) is left
// out. "B/job" is measured once the replica has published its entry and
// built its view of the fleet, before any run; "B/job-ran" after every
// job ran once here (each keeps its last run, for Jobs).
func BenchmarkScheduler_Redis_HeapPerRegisteredJob(b *testing.B) {
	srv := testutil.StartRedis(b)
	for range b.N {
		ready1k, ran1k := keptHeap(b, srv, 1000)
		ready10k, ran10k := keptHeap(b, srv, 10000)
		b.ReportMetric(float64(int64(ready10k)-int64(ready1k))/9000, "B/job")
		b.ReportMetric(float64(int64(ran10k)-int64(ran1k))/9000, "B/job-ran")
	}
}

// keptHeap registers n jobs, each due once (At) a little after its
// replica read the fleet, and returns the heap after a GC before the
// occurrence and after every job ran (each the least of several samples),
// less the heap before the replica was made.
func keptHeap(b *testing.B, srv *testutil.Redis, n int) (ready, ran uint64) {
	b.Helper()
	before := heapAfterGC() // what the replicas measured before left behind
	client := srv.Client(b)
	store, err := redislease.New(client)
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(store, WithLogger(discardLogger()), WithInstanceID(fmt.Sprintf("heap-%d", n)))
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		client.Close()
	}()
	due := time.Now().Add(3*time.Second + time.Duration(n)*50*time.Microsecond).Truncate(time.Second)
	fn := func(context.Context) error { return nil }
	for i := range n {
		if err := s.Register(fmt.Sprintf("heap-%d-%05d", n, i), At(due), fn); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	waitFor(b, due, func() bool { v := s.view.Load(); return v != nil && len(v.jobs) == n })
	// The least of several samples: the control plane's work after its
	// first read of the fleet (it looks for every job's triggers) may be
	// in flight at one of them, and it is not what a job keeps.
	ready = leastHeap(time.Until(due.Add(-200*time.Millisecond))) - before
	waitFor(b, due.Add(time.Minute), func() bool { return s.Stats().Released == uint64(n) })
	ran = leastHeap(time.Second) - before
	return ready, ran
}

// waitFor polls cond until it holds, failing the benchmark at deadline.
func waitFor(b *testing.B, deadline time.Time, cond func() bool) {
	b.Helper()
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("not reached by %s", deadline.Format(time.TimeOnly))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func heapAfterGC() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// leastHeap returns the least heap after a GC of samples taken every 100
// ms for d (at least one).
func leastHeap(d time.Duration) uint64 {
	least := heapAfterGC()
	for end := time.Now().Add(d); time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
		least = min(least, heapAfterGC())
	}
	return least
}
