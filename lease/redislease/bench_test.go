package redislease

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/testutil"
)

// The floor scripts: the cheapest correct release and extend.
var (
	floorRelease = rueidis.NewLuaScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
	floorExtend  = rueidis.NewLuaScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`)
)

// benchServer starts one redis-server and one client, shared by a
// benchmark's Floor and Store sub-benchmarks so their ratio can be read.
func benchServer(b *testing.B) (rueidis.Client, *Store) {
	b.Helper()
	var c rueidis.Client
	if addr := os.Getenv("CRONGUARD_BENCH_REDIS"); addr != "" {
		// A server started by hand, e.g. under valgrind --tool=callgrind
		// to count the instructions the scripts cost (see BENCHMARKS.md).
		var err error
		c, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
	} else {
		c = testutil.StartRedis(b).Client(b)
	}
	st, err := New(c, WithPrefix(uniquePrefix()))
	if err != nil {
		b.Fatal(err)
	}
	return c, st
}

// BenchmarkAcquireRelease: one Acquire and one Release, sequentially
// (Store), against the floor on the same client: SET NX PX, then
// compare-and-delete (Floor). Target: Store within 1.3x of Floor.
func BenchmarkAcquireRelease(b *testing.B) {
	c, st := benchServer(b)
	ctx := context.Background()
	b.Run("Floor", func(b *testing.B) {
		for b.Loop() {
			id := leasekit.NewID()
			if err := c.Do(ctx, c.B().Set().Key("floor:k").Value(id).Nx().PxMilliseconds(30000).Build()).Error(); err != nil {
				b.Fatal(err)
			}
			if n, err := floorRelease.Exec(ctx, c, []string{"floor:k"}, []string{id}).AsInt64(); err != nil || n != 1 {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("Store", func(b *testing.B) {
		for b.Loop() {
			l, err := st.Acquire(ctx, "job:bench", 30*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			if err := st.Release(ctx, l.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkExtend: one Extend of a held lease (Store), against the floor on
// the same client: compare-and-PEXPIRE (Floor).
func BenchmarkExtend(b *testing.B) {
	c, st := benchServer(b)
	ctx := context.Background()
	b.Run("Floor", func(b *testing.B) {
		id := leasekit.NewID()
		if err := c.Do(ctx, c.B().Set().Key("floor:x").Value(id).PxMilliseconds(30000).Build()).Error(); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if n, err := floorExtend.Exec(ctx, c, []string{"floor:x"}, []string{id, "30000"}).AsInt64(); err != nil || n != 1 {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("Store", func(b *testing.B) {
		l, err := st.Acquire(ctx, "job:bench", 30*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := st.Extend(ctx, l.ID, 30*time.Second); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkAcquireReleaseInterleaved alternates one floor cycle and one
// Store cycle (Acquire, then Lease.Release) per iteration and reports both latencies and their ratio, so
// load from other processes hits both alike (the sub-benchmarks above run
// one after the other and drift apart on a busy machine).
func BenchmarkAcquireReleaseInterleaved(b *testing.B) {
	c, st := benchServer(b)
	ctx := context.Background()
	var floor, store time.Duration
	for b.Loop() {
		t0 := time.Now()
		id := leasekit.NewID()
		if err := c.Do(ctx, c.B().Set().Key("floor:k").Value(id).Nx().PxMilliseconds(30000).Build()).Error(); err != nil {
			b.Fatal(err)
		}
		if n, err := floorRelease.Exec(ctx, c, []string{"floor:k"}, []string{id}).AsInt64(); err != nil || n != 1 {
			b.Fatal(n, err)
		}
		t1 := time.Now()
		l, err := st.Acquire(ctx, "job:bench", 30*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil { // the keyed path, as the scheduler releases
			b.Fatal(err)
		}
		floor += t1.Sub(t0)
		store += time.Since(t1)
	}
	b.ReportMetric(float64(floor.Nanoseconds())/float64(b.N), "floor-ns/cycle")
	b.ReportMetric(float64(store.Nanoseconds())/float64(b.N), "store-ns/cycle")
	b.ReportMetric(float64(store)/float64(floor), "store/floor")
}
