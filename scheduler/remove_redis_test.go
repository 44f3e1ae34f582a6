package scheduler

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/testutil"
)

// redisWaitBound bounds every wait for something the replicas on a real
// redis-server are to do; it is a bound against hanging, never a timing
// assertion.
const redisWaitBound = 30 * time.Second

// Three replicas on a real redis-server, each with its own client, run a
// 1s job; a fires first, so it wins while it has the job. Remove on a,
// while a runs the job: that run finishes and releases its lease as usual;
// a never runs the job again, neither scheduled nor triggered, and drops
// it from Jobs and from its registry entry, while it goes on with its
// other job; b and c run every later occurrence, each once; and the name
// can be registered again on a.
func TestScheduler_Remove_OneReplicaStopsOnRedis(t *testing.T) {
	t.Parallel()
	srv := testutil.StartRedis(t)
	admin, err := redislease.New(srv.Client(t))
	require.NoError(t, err)
	p := newRemovalProbe()
	var ev events
	replicas := map[string]*Scheduler{}
	for _, id := range []string{"a", "b", "c"} {
		store, err := redislease.New(srv.Client(t))
		require.NoError(t, err)
		opts := []Option{WithInstanceID(id), WithObserver(ev.observe), WithRegistryRefresh(200 * time.Millisecond)}
		if id == "a" {
			opts = append(opts, WithClock(skewedClock{clockwork.NewRealClock(), 100 * time.Millisecond}))
		}
		s := newScheduler(t, store, opts...)
		require.NoError(t, s.Register("report", Every(time.Second), p.job, WithTTL(3*time.Second)))
		require.NoError(t, s.Register("other", Every(time.Second), nop))
		replicas[id] = s
	}
	for _, s := range replicas {
		require.NoError(t, s.Start())
	}
	t.Cleanup(p.releaseAll) // before the replicas shut down: a held run would keep them waiting
	a := replicas["a"]

	p.waitRuns(t, "a ran report twice", func(rs []probedRun) bool { return len(on(rs, "a")) >= 2 })
	p.holdNext("a")
	inProgress := p.waitHeld(t)
	removedAt := time.Now()
	require.NoError(t, a.Remove("report"))
	require.ErrorIs(t, a.Remove("report"), ErrUnknownJob, "report is no longer registered on a")
	assert.Equal(t, []string{"other"}, jobNames(a.Jobs()), "a lists only its other job")
	for _, id := range []string{"b", "c"} {
		assert.Equal(t, []string{"report", "other"}, jobNames(replicas[id].Jobs()), "%s keeps report", id)
	}
	p.release()

	// The run in progress finishes and releases its lease as usual.
	waitUntilHolds(t, "a's run in progress released its lease", func() bool {
		return slices.ContainsFunc(ev.of(EventReleased), func(e Event) bool {
			return e.Instance == "a" && e.Job == "report" && e.Fence == inProgress.Fence
		})
	})
	assert.True(t, slices.ContainsFunc(ev.of(EventSucceeded), func(e Event) bool {
		return e.Instance == "a" && e.Job == "report" && e.Fence == inProgress.Fence
	}), "a's run in progress succeeded")

	// b and c run every later occurrence, each once.
	const later = 5
	rs := p.waitRuns(t, "five occurrences of report after the one in progress at the removal", func(rs []probedRun) bool {
		return len(scheduledAfter(rs, inProgress.Occurrence)) >= later
	})
	var after []int64
	for _, r := range scheduledAfter(rs, inProgress.Occurrence) {
		assert.Contains(t, []string{"b", "c"}, r.run.Replica, "occurrence %s ran on another replica", r.run.Occurrence)
		after = append(after, r.run.Occurrence.UnixMilli())
	}
	slices.Sort(after)
	assert.Equal(t, inProgress.Occurrence.Add(time.Second).UnixMilli(), after[0], "the occurrence after the removal ran")
	requireOncePerStep(t, "report", after, time.Second)

	// A trigger of report runs on b or c.
	tr, err := admin.AddTrigger(t.Context(), JobKeyPrefix+"report", "test", time.Minute)
	require.NoError(t, err)
	rs = p.waitRuns(t, "the trigger ran", func(rs []probedRun) bool {
		return slices.ContainsFunc(rs, func(r probedRun) bool { return r.run.Trigger == tr.ID })
	})
	for _, r := range rs {
		if r.run.Trigger == tr.ID {
			assert.Contains(t, []string{"b", "c"}, r.run.Replica, "the trigger ran on a replica that has the job")
		}
	}

	// a's registry entry drops report; b's and c's keep it.
	waitUntilHolds(t, "the registry lists report on b and c only", func() bool {
		reps, err := admin.Replicas(t.Context())
		if err != nil || len(reps) != 3 {
			return false
		}
		for _, r := range reps {
			has := slices.ContainsFunc(r.Jobs, func(j fleet.Job) bool { return j.Name == "report" })
			if has == (r.ID == "a") {
				return false
			}
		}
		return true
	})

	// a goes on with its other job.
	waitUntilHolds(t, "a ran other after the removal", func() bool {
		return slices.ContainsFunc(ev.of(EventStarted), func(e Event) bool {
			return e.Instance == "a" && e.Job == "other" && e.Occurrence.After(removedAt)
		})
	})

	// a never ran report again: its runs and starts all came before the
	// removal.
	onA := on(p.all(), "a")
	require.NotEmpty(t, onA)
	for _, r := range onA {
		assert.True(t, r.start.Before(removedAt), "a started report (%s, trigger %q) after Remove", r.run.Occurrence, r.run.Trigger)
	}
	startsOnA := slices.DeleteFunc(ev.of(EventStarted), func(e Event) bool { return e.Instance != "a" || e.Job != "report" })
	assert.Len(t, startsOnA, len(onA), "a started report only for the runs before the removal")
	assert.Empty(t, slices.DeleteFunc(ev.of(EventSkipped), func(e Event) bool {
		return e.Instance != "a" || e.Job != "report" || !e.Occurrence.After(inProgress.Occurrence)
	}), "a's firings of report after the removal are dropped, not skipped")
	t.Logf("report: %d runs on a before the removal; %d occurrences after it, on b and c", len(onA), len(after))

	// The name can be registered again, and a runs it again.
	reRegistered := time.Now()
	require.NoError(t, a.Register("report", Every(time.Second), p.job, WithTTL(3*time.Second)))
	p.waitRuns(t, "a runs report again", func(rs []probedRun) bool {
		return slices.ContainsFunc(on(rs, "a"), func(r probedRun) bool { return r.start.After(reRegistered) })
	})
}

// jobNames returns the names of jobs.
func jobNames(jobs []JobInfo) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Name)
	}
	return out
}

// waitUntilHolds polls cond every 20ms until it holds, failing the test
// after redisWaitBound.
func waitUntilHolds(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(redisWaitBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s waiting for: %s", redisWaitBound, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// probedRun is one run of the probe's job, as the job saw it.
type probedRun struct {
	run   Run
	start time.Time
}

// on returns the runs on replica id.
func on(rs []probedRun, id string) []probedRun {
	return slices.DeleteFunc(slices.Clone(rs), func(r probedRun) bool { return r.run.Replica != id })
}

// scheduledAfter returns the scheduled runs of occurrences after occ.
func scheduledAfter(rs []probedRun, occ time.Time) []probedRun {
	return slices.DeleteFunc(slices.Clone(rs), func(r probedRun) bool { return r.run.Trigger != "" || !r.run.Occurrence.After(occ) })
}

// removalProbe is a job function shared by the replicas of a test: it
// records every run as it starts, and can hold the next run on one
// replica until the test releases it.
type removalProbe struct {
	mu      sync.Mutex
	runs    []probedRun
	changed chan struct{} // closed and replaced at each run
	holdOn  string        // the replica whose next run is held
	held    chan Run
	resume  chan struct{}
	resumed bool
}

func newRemovalProbe() *removalProbe {
	return &removalProbe{changed: make(chan struct{}), held: make(chan Run, 1), resume: make(chan struct{})}
}

func (p *removalProbe) job(ctx context.Context) error {
	run, _ := RunFromContext(ctx)
	p.mu.Lock()
	p.runs = append(p.runs, probedRun{run: run, start: time.Now()})
	close(p.changed)
	p.changed = make(chan struct{})
	hold := p.holdOn != "" && p.holdOn == run.Replica
	if hold {
		p.holdOn = ""
	}
	p.mu.Unlock()
	if hold {
		p.held <- run
		select {
		case <-p.resume:
		case <-ctx.Done():
		}
		return nil
	}
	timer := time.NewTimer(100 * time.Millisecond) // a run takes a little while
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	return nil
}

// holdNext makes the next run on replica id wait for release.
func (p *removalProbe) holdNext(id string) {
	p.mu.Lock()
	p.holdOn = id
	p.mu.Unlock()
}

// waitHeld returns the run held, failing the test after redisWaitBound.
func (p *removalProbe) waitHeld(t *testing.T) Run {
	t.Helper()
	timer := time.NewTimer(redisWaitBound)
	defer timer.Stop()
	select {
	case r := <-p.held:
		return r
	case <-timer.C:
		t.Fatalf("gave up after %s waiting for a held run", redisWaitBound)
		return Run{}
	}
}

// release lets the held run end; releaseAll also stops any hold not yet
// taken. Both are safe to call more than once.
func (p *removalProbe) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.resumed {
		close(p.resume)
		p.resumed = true
	}
}

func (p *removalProbe) releaseAll() {
	p.holdNext("")
	p.release()
}

// all returns the runs so far.
func (p *removalProbe) all() []probedRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.runs)
}

// waitRuns waits until done holds for the runs so far, failing the test
// after redisWaitBound, and returns them.
func (p *removalProbe) waitRuns(t *testing.T, what string, done func([]probedRun) bool) []probedRun {
	t.Helper()
	timer := time.NewTimer(redisWaitBound)
	defer timer.Stop()
	for {
		p.mu.Lock()
		rs, changed := slices.Clone(p.runs), p.changed
		p.mu.Unlock()
		if done(rs) {
			return rs
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("gave up after %s waiting for: %s", redisWaitBound, what)
		}
	}
}
