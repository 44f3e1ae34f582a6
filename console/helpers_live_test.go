package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/scheduler"
	"github.com/cronguard/cronguard/testutil"
)

// liveRefresh is the live replicas' registry refresh.
const liveRefresh = 200 * time.Millisecond

// waitBound bounds every wait for the fleet or the browser; it is a bound
// against hanging, never a timing assertion.
const waitBound = 30 * time.Second

// liveFleet is a redis-server with schedulers running in this process,
// each on its own client, and an Inspector on an admin client.
type liveFleet struct {
	redis  *testutil.Redis
	prefix string
	admin  rueidis.Client
	in     *inspect.Inspector
	runs   *runCounter
}

var prefixSeq atomic.Int64

func newLiveFleet(t testing.TB) *liveFleet {
	t.Helper()
	r := testutil.StartRedis(t)
	f := &liveFleet{redis: r, prefix: fmt.Sprintf("console%d", prefixSeq.Add(1)), admin: r.Client(t), runs: newRunCounter()}
	store, err := redislease.New(f.admin, redislease.WithPrefix(f.prefix))
	require.NoError(t, err)
	f.in, err = inspect.New(store, inspect.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	return f
}

// start starts a replica whose jobs register adds, shut down when the
// test ends.
func (f *liveFleet) start(t testing.TB, id string, register func(*scheduler.Scheduler) error) {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{f.redis.Addr}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	store, err := redislease.New(client, redislease.WithPrefix(f.prefix))
	require.NoError(t, err)
	s, err := scheduler.New(store, scheduler.WithInstanceID(id), scheduler.WithRegistryRefresh(liveRefresh),
		scheduler.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	require.NoError(t, register(s))
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
}

// waitReplicas waits until the registry lists exactly ids and each has
// subscribed to the control channel (so that a trigger reaches it).
func (f *liveFleet) waitReplicas(t testing.TB, ids ...string) {
	t.Helper()
	slices.Sort(ids)
	waitUntil(t, fmt.Sprintf("replicas %v registered and subscribed", ids), func() bool {
		rs, err := f.in.Replicas(context.Background())
		if err != nil {
			return false
		}
		var got []string
		for _, r := range rs {
			got = append(got, r.ID)
		}
		if !slices.Equal(got, ids) {
			return false
		}
		ch := f.prefix + ":control"
		n, err := f.admin.Do(context.Background(), f.admin.B().PubsubNumsub().Channel(ch).Build()).AsIntMap()
		return err == nil && n[ch] >= int64(len(ids))
	})
}

// job reads a job as the fleet sees it.
func (f *liveFleet) job(t testing.TB, name string) inspect.Job {
	t.Helper()
	j, err := f.in.Job(context.Background(), name)
	require.NoError(t, err)
	return j
}

// waitUntil polls cond every 20ms until it holds, failing the test after
// waitBound.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s waiting for: %s", waitBound, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runCounter counts the runs of each job, across the replicas of the
// process, by the job functions themselves.
type runCounter struct {
	mu   sync.Mutex
	runs map[string][]scheduler.Run
}

func newRunCounter() *runCounter { return &runCounter{runs: map[string][]scheduler.Run{}} }

// job returns a job function that counts its runs.
func (c *runCounter) job(ctx context.Context) error {
	run, _ := scheduler.RunFromContext(ctx)
	c.mu.Lock()
	c.runs[run.Job] = append(c.runs[run.Job], run)
	c.mu.Unlock()
	return nil
}

// of returns the runs of job so far.
func (c *runCounter) of(job string) []scheduler.Run {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.runs[job])
}
