package inspect_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/scheduler"
)

// Twenty triggers while three replicas run the job on its schedule, spread
// over several occurrences: some are asked for while a scheduled run holds
// the job's lease, and scheduled occurrences come due while a triggered
// run holds it. Exactly twenty triggered runs, one per trigger, each on one
// replica; scheduled runs go on between them; no two runs of the job,
// scheduled or triggered, are ever in progress at once; and an occurrence
// whose claim found a triggered run holding the lease is skipped, not run
// late.
func TestInspector_Trigger_TwentyInARow(t *testing.T) {
	t.Parallel()
	const rounds, perRound = 5, 4 // twenty triggers
	f := newLiveFleet(t)
	p := newJobProbe(100 * time.Millisecond)
	ids := []string{"replica-1", "replica-2", "replica-3"}
	for _, id := range ids {
		f.start(t, id, func(s *scheduler.Scheduler) error {
			return s.Register("report", scheduler.Every(time.Second), p.job, scheduler.WithTTL(3*time.Second))
		})
	}
	t.Cleanup(p.releaseAll) // before the replicas shut down: a held run would keep them waiting
	f.waitReplicas(t, ids...)

	asked := map[string]bool{}
	trigger := func() {
		t.Helper()
		res, err := f.in.Trigger(t.Context(), "report", "test")
		require.NoError(t, err)
		asked[res.Trigger.ID] = true
	}
	var firstAsked time.Time
	var skippedDuringTrigger []time.Time // occurrences that came due while a triggered run held the lease
	for round := range rounds {
		// A scheduled run holds the lease while triggers are asked for:
		// they wait in the queue for its end.
		p.holdNext(false)
		sched := p.waitHeld(t, "a scheduled run of report")
		require.Empty(t, sched.run.Trigger)
		if round == 0 {
			firstAsked = time.Now()
		}
		for range perRound - 1 {
			trigger()
		}
		// The first triggered run after it holds the lease until an
		// occurrence that came due meanwhile was skipped; one more trigger
		// is asked for while it runs.
		p.holdNext(true)
		sched.release()
		trig := p.waitHeld(t, "a triggered run of report")
		require.NotEmpty(t, trig.run.Trigger)
		es := f.events.waitFor(t, "an occurrence of report that came due during a triggered run skipped", func(es []scheduler.Event) bool {
			return slices.ContainsFunc(es, skippedAfter(trig.start))
		})
		for _, e := range es {
			if skippedAfter(trig.start)(e) && !slices.ContainsFunc(skippedDuringTrigger, e.Occurrence.Equal) {
				skippedDuringTrigger = append(skippedDuringTrigger, e.Occurrence)
			}
		}
		trigger()
		trig.release()
	}
	require.Len(t, asked, rounds*perRound, "twenty distinct triggers")
	waitUntil(t, "twenty triggered runs ended", func() bool {
		return len(p.triggered()) >= rounds*perRound
	})
	f.events.waitFor(t, "twenty triggered runs released", func(es []scheduler.Event) bool {
		return count(es, func(e scheduler.Event) bool { return e.Kind == scheduler.EventReleased && e.Trigger != "" }) >= rounds*perRound
	})
	j, err := f.in.Job(t.Context(), "report")
	require.NoError(t, err)
	assert.Zero(t, j.PendingTriggers, "every trigger was consumed: no further triggered run can happen")

	// Exactly one run per trigger, each on one replica.
	triggered := p.triggered()
	ranOn := map[string][]string{}
	for _, r := range triggered {
		ranOn[r.trigger] = append(ranOn[r.trigger], r.replica)
	}
	assert.Len(t, triggered, rounds*perRound, "twenty triggered runs")
	assert.Len(t, ranOn, rounds*perRound)
	for id, on := range ranOn {
		assert.True(t, asked[id], "run for trigger %s, which was asked for", id)
		assert.Len(t, on, 1, "trigger %s ran once: on %v", id, on)
	}
	startedOn := map[string][]string{}
	for _, e := range f.events.match(func(e scheduler.Event) bool { return e.Kind == scheduler.EventStarted && e.Trigger != "" }) {
		startedOn[e.Trigger] = append(startedOn[e.Trigger], e.Instance)
	}
	assert.Len(t, startedOn, rounds*perRound, "twenty triggered starts across the replicas")
	for id, on := range startedOn {
		assert.Equal(t, ranOn[id], on, "trigger %s started on one replica, the one that ran it", id)
	}

	// Scheduled runs went on during the triggers, and no two runs of the
	// job overlapped.
	lastTriggeredEnd := slices.MaxFunc(triggered, func(a, b runRecord) int { return a.end.Compare(b.end) }).end
	runs := p.all()
	during := 0
	for _, r := range runs {
		if r.trigger == "" && r.start.After(firstAsked) && r.start.Before(lastTriggeredEnd) {
			during++
		}
	}
	assert.GreaterOrEqual(t, during, rounds-1, "a scheduled run in each round after the first, while triggers were pending or running")
	assert.Equal(t, int32(1), p.maxInflight.Load(), "at most one run of report in progress at any time, across the replicas")
	slices.SortFunc(runs, func(a, b runRecord) int { return a.start.Compare(b.start) })
	for i := 1; i < len(runs); i++ {
		assert.False(t, runs[i].start.Before(runs[i-1].end), "run %d (%s on %s) started before run %d (%s on %s) ended",
			i, kindOf(runs[i]), runs[i].replica, i-1, kindOf(runs[i-1]), runs[i-1].replica)
	}
	require.NotEmpty(t, skippedDuringTrigger)
	for _, occ := range skippedDuringTrigger {
		if !assert.False(t, slices.ContainsFunc(runs, func(r runRecord) bool { return r.trigger == "" && r.occurrence.Equal(occ) }),
			"occurrence %s came due during a triggered run and was skipped: it does not run late", occ) {
			logOccurrence(t, f, runs, occ)
		}
	}
	perReplica := map[string]int{}
	for _, r := range triggered {
		perReplica[r.replica]++
	}
	t.Logf("triggered runs per replica: %v; scheduled runs during the triggers: %d; occurrences skipped during triggered runs: %d; leases lost: %d",
		perReplica, during, len(skippedDuringTrigger), len(f.events.match(is("report", scheduler.EventLeaseLost))))

	_, err = f.in.Trigger(t.Context(), "nightly", "test")
	require.ErrorIs(t, err, inspect.ErrUnknownJob)
}

// skippedAfter returns a filter of the skips of report's occurrences that
// came due after start because the job's lease was held: the claim of the
// occurrence's preferred replica, refused by the store, or its backup's
// read of the job's run. Not SkipRunning: the replica that runs the
// triggered run skips the occurrence at once, without the store, while
// the preferred replica's claim may still be on its way; the triggered
// run released then, that claim wins, and the occurrence runs (late), as
// it should.
func skippedAfter(start time.Time) func(scheduler.Event) bool {
	return func(e scheduler.Event) bool {
		return e.Job == "report" && e.Kind == scheduler.EventSkipped && e.Occurrence.After(start) &&
			e.Reason == scheduler.SkipLocked
	}
}

func kindOf(r runRecord) string {
	if r.trigger != "" {
		return "triggered"
	}
	return "scheduled"
}

// jobProbe is a job function shared by the replicas of a test: it records
// every run of its job with the run's interval, counts the runs in
// progress at once across the replicas, and can hold the next run of one
// kind (scheduled or triggered) until the test releases it.
type jobProbe struct {
	work time.Duration // how long a run that is not held works

	inflight, maxInflight atomic.Int32

	mu    sync.Mutex
	runs  []runRecord
	hold  map[bool]bool // by triggered: hold the next such run
	held  chan *heldRun
	holds []*heldRun // every run held, released at the end of the test
}

// heldRun is a run that waits for the test.
type heldRun struct {
	run   scheduler.Run
	start time.Time
	done  chan struct{}
	once  sync.Once
}

// release lets the run end; safe to call more than once.
func (h *heldRun) release() { h.once.Do(func() { close(h.done) }) }

func newJobProbe(work time.Duration) *jobProbe {
	return &jobProbe{work: work, hold: map[bool]bool{}, held: make(chan *heldRun, 1)}
}

func (p *jobProbe) job(ctx context.Context) error {
	run, _ := scheduler.RunFromContext(ctx)
	n := p.inflight.Add(1)
	for {
		if m := p.maxInflight.Load(); n <= m || p.maxInflight.CompareAndSwap(m, n) {
			break
		}
	}
	rec := runRecord{job: run.Job, replica: run.Replica, trigger: run.Trigger, occurrence: run.Occurrence, start: time.Now()}
	triggered := run.Trigger != ""
	p.mu.Lock()
	var h *heldRun
	if p.hold[triggered] {
		p.hold[triggered] = false
		h = &heldRun{run: run, start: rec.start, done: make(chan struct{})}
		p.holds = append(p.holds, h)
	}
	p.mu.Unlock()
	if h != nil {
		p.held <- h
		select {
		case <-h.done:
		case <-ctx.Done():
		}
	} else {
		timer := time.NewTimer(p.work)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
		}
	}
	rec.end = time.Now() // before the release: the next run starts after it
	p.inflight.Add(-1)
	p.mu.Lock()
	p.runs = append(p.runs, rec)
	p.mu.Unlock()
	return nil
}

// holdNext makes the next run of the kind (triggered or scheduled) wait
// for the test.
func (p *jobProbe) holdNext(triggered bool) {
	p.mu.Lock()
	p.hold[triggered] = true
	p.mu.Unlock()
}

// waitHeld returns the run held, failing the test after waitBound.
func (p *jobProbe) waitHeld(t *testing.T, what string) *heldRun {
	t.Helper()
	timer := time.NewTimer(waitBound)
	defer timer.Stop()
	select {
	case h := <-p.held:
		return h
	case <-timer.C:
		t.Fatalf("gave up after %s waiting for: %s", waitBound, what)
		return nil
	}
}

// releaseAll releases every run held.
func (p *jobProbe) releaseAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = map[bool]bool{}
	for _, h := range p.holds {
		h.release()
	}
}

// all returns the runs that ended.
func (p *jobProbe) all() []runRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.runs)
}

// triggered returns the triggered runs that ended.
func (p *jobProbe) triggered() []runRecord {
	return slices.DeleteFunc(p.all(), func(r runRecord) bool { return r.trigger == "" })
}

// logOccurrence logs what the fleet did around occurrence occ of report,
// for a failure's reader: its events, replica by replica, and the runs
// that started or ended within two seconds of it.
func logOccurrence(t *testing.T, f *liveFleet, runs []runRecord, occ time.Time) {
	t.Helper()
	for _, e := range f.events.match(func(e scheduler.Event) bool { return e.Job == "report" && e.Occurrence.Equal(occ) }) {
		t.Logf("occurrence %s: %s %s reason=%s trigger=%q err=%v", occ.Format("15:04:05.000"), e.Instance, e.Kind, e.Reason, e.Trigger, e.Err)
	}
	for _, r := range runs {
		if r.start.Sub(occ).Abs() < 2*time.Second || r.end.Sub(occ).Abs() < 2*time.Second {
			t.Logf("run %s on %s, occurrence %s, trigger %q, from %s to %s", kindOf(r), r.replica,
				r.occurrence.Format("15:04:05.000"), r.trigger, r.start.Format("15:04:05.000"), r.end.Format("15:04:05.000"))
		}
	}
}
