package inspect_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/scheduler"
	"github.com/cronguard/cronguard/testutil"
)

// liveRefresh is the registry refresh of the replicas in the live tests:
// an entry lapses 3*liveRefresh after its replica's last refresh.
const liveRefresh = 200 * time.Millisecond

// waitBound bounds every wait for something the fleet is to do; it is a
// bound against hanging, never a timing assertion.
const waitBound = 30 * time.Second

// liveFleet is a redis-server, replicas running schedulers in this process
// (each with its own client, through its own proxy, so that it can be cut
// off), and an Inspector on an admin client.
type liveFleet struct {
	redis  *testutil.Redis
	prefix string // the lease/redislease key prefix
	admin  rueidis.Client
	store  *redislease.Store // the admin's
	in     *inspect.Inspector
	events *eventLog
	runs   *runLog
}

var prefixSeq atomic.Int64

func newLiveFleet(t *testing.T) *liveFleet {
	t.Helper()
	r := testutil.StartRedis(t)
	f := &liveFleet{redis: r, prefix: fmt.Sprintf("it%d", prefixSeq.Add(1)), admin: r.Client(t), events: newEventLog(), runs: &runLog{}}
	var err error
	f.store, err = redislease.New(f.admin, redislease.WithPrefix(f.prefix))
	require.NoError(t, err)
	f.in, err = inspect.New(f.store, inspect.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	return f
}

// replica is one scheduler of the fleet.
type replica struct {
	id    string
	sched *scheduler.Scheduler
	proxy *testutil.Proxy
}

// kill cuts the replica off from Redis, as if its process died: its
// registry entry is no longer refreshed, nor removed.
func (r *replica) kill() { r.proxy.Cut() }

// start starts a replica whose jobs register adds; it is shut down when
// the test ends.
func (f *liveFleet) start(t *testing.T, id string, register func(s *scheduler.Scheduler) error, opts ...scheduler.Option) *replica {
	t.Helper()
	proxy := testutil.NewProxy(t, f.redis.Addr)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{proxy.Addr}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	store, err := redislease.New(client, redislease.WithPrefix(f.prefix))
	require.NoError(t, err)
	opts = append([]scheduler.Option{
		scheduler.WithInstanceID(id),
		scheduler.WithRegistryRefresh(liveRefresh),
		scheduler.WithObserver(f.events.add),
		scheduler.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	}, opts...)
	s, err := scheduler.New(store, opts...)
	require.NoError(t, err)
	require.NoError(t, register(s))
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx) // a killed replica cannot drop its entry: that is its point
	})
	return &replica{id: id, sched: s, proxy: proxy}
}

// waitReplicas waits until the registry lists exactly ids and every one of
// them has subscribed to the control channel.
func (f *liveFleet) waitReplicas(t *testing.T, ids ...string) {
	t.Helper()
	slices.Sort(ids)
	waitUntil(t, fmt.Sprintf("replicas %v registered and subscribed", ids), func() bool {
		rs, err := f.in.Replicas(t.Context())
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
		n, err := f.admin.Do(t.Context(), f.admin.B().PubsubNumsub().Channel(f.prefix+":control").Build()).AsIntMap()
		return err == nil && n[f.prefix+":control"] >= int64(len(ids))
	})
}

// storeNow returns the Redis server's time.
func (f *liveFleet) storeNow(t *testing.T) time.Time {
	t.Helper()
	st, err := f.store.JobState(t.Context(), "clock")
	require.NoError(t, err)
	return st.Now
}

// waitUntil polls cond every 20ms until it holds, failing the test after
// waitBound.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s waiting for: %s", waitBound, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// eventLog keeps every replica's events.
type eventLog struct {
	mu      sync.Mutex
	events  []scheduler.Event
	changed chan struct{}
}

func newEventLog() *eventLog { return &eventLog{changed: make(chan struct{})} }

func (l *eventLog) add(e scheduler.Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// all returns the events so far.
func (l *eventLog) all() []scheduler.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// match returns the events for which keep holds.
func (l *eventLog) match(keep func(scheduler.Event) bool) []scheduler.Event {
	var out []scheduler.Event
	for _, e := range l.all() {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// waitFor waits until done holds for the events so far, failing the test
// after waitBound, and returns them.
func (l *eventLog) waitFor(t *testing.T, what string, done func([]scheduler.Event) bool) []scheduler.Event {
	t.Helper()
	timer := time.NewTimer(waitBound)
	defer timer.Stop()
	for {
		l.mu.Lock()
		events, changed := slices.Clone(l.events), l.changed
		l.mu.Unlock()
		if done(events) {
			return events
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("gave up after %s waiting for: %s", waitBound, what)
		}
	}
}

// is returns a filter of events of job of kind.
func is(job string, kind scheduler.EventKind) func(scheduler.Event) bool {
	return func(e scheduler.Event) bool { return e.Job == job && e.Kind == kind }
}

// count counts the events for which keep holds.
func count(events []scheduler.Event, keep func(scheduler.Event) bool) int {
	n := 0
	for _, e := range events {
		if keep(e) {
			n++
		}
	}
	return n
}

// runRecord is one run of a job, as the job function saw it.
type runRecord struct {
	job, replica, trigger string
	occurrence            time.Time
	start, end            time.Time
}

// runLog keeps the runs of the jobs that record themselves.
type runLog struct {
	mu   sync.Mutex
	runs []runRecord
}

// job returns a job function that records its run, working for d (on the
// real clock: the run's length is what is observed).
func (l *runLog) job(d time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		run, _ := scheduler.RunFromContext(ctx)
		rec := runRecord{job: run.Job, replica: run.Replica, trigger: run.Trigger, occurrence: run.Occurrence, start: time.Now()}
		if d > 0 {
			timer := time.NewTimer(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
			}
		}
		rec.end = time.Now()
		l.mu.Lock()
		l.runs = append(l.runs, rec)
		l.mu.Unlock()
		return nil
	}
}

func (l *runLog) of(job string) []runRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []runRecord
	for _, r := range l.runs {
		if r.job == job {
			out = append(out, r)
		}
	}
	return out
}

// gate is a job that blocks its first run until opened.
type gate struct {
	once    atomic.Bool
	started chan scheduler.Run
	open    chan struct{}
	closed  sync.Once
}

func newGate() *gate { return &gate{started: make(chan scheduler.Run, 1), open: make(chan struct{})} }

func (g *gate) job(ctx context.Context) error {
	if g.once.Swap(true) {
		return nil
	}
	run, _ := scheduler.RunFromContext(ctx)
	g.started <- run
	select {
	case <-g.open:
	case <-ctx.Done():
	}
	return nil
}

// release lets the first run end; safe to call more than once.
func (g *gate) release() { g.closed.Do(func() { close(g.open) }) }

// specOf returns a registration's schedule spec, for fleet.Next.
func specOf(t *testing.T, j inspect.Job) string {
	t.Helper()
	_, err := fleet.Next(j.Spec, j.Now)
	require.NoError(t, err, "job %s has a readable spec", j.Name)
	return j.Spec
}
