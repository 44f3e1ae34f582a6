package redislease

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/testutil"
)

// serverNow reads the server's clock (TIME), in Unix ms.
func serverNow(ctx context.Context, c rueidis.Client) (int64, error) {
	arr, err := c.Do(ctx, c.B().Time().Build()).AsIntSlice()
	if err != nil {
		return 0, err
	}
	if len(arr) != 2 {
		return 0, fmt.Errorf("TIME: %d fields", len(arr))
	}
	return arr[0]*1000 + arr[1]/1000, nil
}

// hold is one holder's time, on the server's clock, in Unix ms: from its
// acquire to a reading of the server's clock taken just before its release
// was sent (so the real hold is at least this long).
type hold struct {
	fence      uint64
	start, end int64
}

// maxOverlap returns the most holds that overlap at one server instant.
// Holds are half-open: one that ends at t and one that starts at t do not
// overlap (the end was read before the release, the start written after).
func maxOverlap(holds []hold) int {
	type edge struct {
		at    int64
		delta int
	}
	edges := make([]edge, 0, 2*len(holds))
	for _, h := range holds {
		edges = append(edges, edge{h.start, +1}, edge{h.end, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.delta - b.delta // ends first
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}

// Thirty goroutines over two clients take turns at a semaphore of three
// for 5s, each holding its slot briefly. Never more than three hold it at
// once: by an in-process count, and by the holds' server times. Fences
// grow in the order the server admitted the holders.
func TestSemaphore_Limit_ThirtyGoroutinesTwoClients(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	prefix := uniquePrefix()
	var sems []*lease.Semaphore
	for _, c := range []rueidis.Client{srv.client, srv.redis.Client(t)} {
		st, err := New(c, WithPrefix(prefix), WithLogger(quietLogger()))
		require.NoError(t, err)
		sem, err := lease.NewSemaphore(st, "exports", 3)
		require.NoError(t, err)
		sems = append(sems, sem)
	}
	admin := srv.redis.Client(t)
	ctx := t.Context()
	const (
		goroutines = 30
		run        = 5 * time.Second
	)
	until := time.Now().Add(run) // real time is the point of this test
	var (
		holding, most atomic.Int64
		mu            sync.Mutex
		holds         []hold
		wg            sync.WaitGroup
	)
	for g := range goroutines {
		sem := sems[g%2]
		wg.Go(func() {
			for time.Now().Before(until) {
				l, err := sem.Acquire(ctx, 2*time.Second, lease.WithMaxWait(run))
				if errors.Is(err, lease.ErrAcquireTimeout) {
					continue
				}
				if !assert.NoError(t, err) {
					return
				}
				n := holding.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(time.Duration(2+rand.IntN(8)) * time.Millisecond) // the work
				end, err := serverNow(ctx, admin)
				assert.NoError(t, err)
				holding.Add(-1)
				assert.NoError(t, l.Release(ctx))
				mu.Lock()
				holds = append(holds, hold{fence: uint64(l.Fence), start: l.AcquiredAt.UnixMilli(), end: end})
				mu.Unlock()
			}
		})
	}
	wg.Wait()

	require.Greater(t, len(holds), 3*goroutines, "the goroutines took turns many times")
	assert.LessOrEqual(t, most.Load(), int64(3), "never more than three holders in process")
	assert.Equal(t, int64(3), most.Load(), "the semaphore was full at times")
	assert.LessOrEqual(t, maxOverlap(holds), 3, "never more than three holds at one server instant")
	slices.SortFunc(holds, func(a, b hold) int { return int(int64(a.fence) - int64(b.fence)) })
	for i := 1; i < len(holds); i++ {
		require.Greater(t, holds[i].fence, holds[i-1].fence, "fences are unique")
		require.GreaterOrEqual(t, holds[i].start, holds[i-1].start, "fences grow in the order holders were admitted")
	}
}

// Two holders on a client whose connection is blackholed keep their slots
// alive with heartbeat; two waiters on another client wait for the slots.
// Every blackholed holder's heartbeat context ends before a waiter gets a
// slot, as the server's clock tells: a reading of it taken after the
// context ended is still before the waiter's acquire.
func TestSemaphore_Blackhole_HeartbeatEndsBeforeSlotsAreTaken(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	proxy := testutil.NewProxy(t, srv.redis.Addr)
	viaProxy, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{proxy.Addr}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(viaProxy.Close)
	prefix := uniquePrefix()
	newSem := func(c rueidis.Client) *lease.Semaphore {
		st, err := New(c, WithPrefix(prefix), WithLogger(quietLogger()))
		require.NoError(t, err)
		sem, err := lease.NewSemaphore(st, "exports", 2)
		require.NoError(t, err)
		return sem
	}
	cut, other := newSem(viaProxy), newSem(srv.redis.Client(t))
	admin := srv.redis.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	const ttl = time.Second

	ended := make(chan int64, 2) // server ms read after each heartbeat context ended
	var stops []heartbeat.Stop
	for range 2 {
		l, err := cut.TryAcquire(ctx, ttl)
		require.NoError(t, err)
		hbCtx, stop, err := heartbeat.Start(ctx, cut.Store(), l, heartbeat.WithLogger(quietLogger()))
		require.NoError(t, err)
		stops = append(stops, stop)
		context.AfterFunc(hbCtx, func() {
			now, err := serverNow(context.Background(), admin)
			assert.NoError(t, err)
			ended <- now
		})
	}
	waiters := make(chan *lease.Lease, 2)
	for range 2 {
		go func() {
			l, err := other.Acquire(ctx, ttl, lease.WithMaxWait(15*time.Second))
			assert.NoError(t, err)
			waiters <- l
		}()
	}
	proxy.Blackhole()
	defer proxy.Restore()

	var firstTaken int64
	for range 2 {
		l := <-waiters
		require.NotNil(t, l)
		if firstTaken == 0 || l.AcquiredAt.UnixMilli() < firstTaken {
			firstTaken = l.AcquiredAt.UnixMilli()
		}
	}
	for range 2 {
		at := <-ended
		assert.Less(t, at, firstTaken, "a holder's context ended (server time %d) before a waiter took a slot (%d)", at, firstTaken)
	}
	for _, stop := range stops {
		assert.ErrorIs(t, stop(), heartbeat.ErrLeaseUnconfirmed, "the holders lost their slots to the blackhole")
	}
}
