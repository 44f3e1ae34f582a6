package scheduler

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// Firings reach the store through three steps, so that neither gocron nor
// one slow job holds up the others:
//
//  1. Jobs that share a schedule form a firing group, and gocron holds one
//     job per group: 10,000 jobs on Every(time.Second) are one gocron job
//     that fires once a second, not 10,000 that fire at the same instant
//     (gocron hands every firing through its single scheduler goroutine
//     several times, which at that rate made firings late by more than an
//     interval and lost them).
//  2. The group's task maps the firing to its occurrence once, and hands
//     each member job to the acquire queue. It never waits on the store.
//  3. A fixed pool of acquire workers (WithAcquireConcurrency) takes jobs
//     from the queue and runs the guarded acquire; a won run executes in its
//     own goroutine, as before.
//
// A job has at most one acquire queued or in flight on a replica. A firing
// that finds its job's previous acquire still pending is kept as the job's
// next occurrence and acquired right after, in order (a round is claimed
// only if newer than the last, so an out-of-order acquire would be a miss);
// only when a third firing arrives before that is the middle one skipped
// (SkipOverrun). So the queue never holds more entries than jobs, and a
// store that stalls on one job delays no other job's acquire beyond taking
// one worker.

// group is the jobs that share one schedule, fired by one gocron job.
type group struct {
	key  string
	plan plan                      // the first member's; every member's plan is equal to it
	id   atomic.Pointer[uuid.UUID] // the gocron job's ID, once scheduled

	mu   sync.Mutex
	jobs []*job // copied on write: a slice returned by members never changes
}

func (g *group) add(j *job) {
	g.mu.Lock()
	g.jobs = append(slices.Clip(g.jobs), j)
	g.mu.Unlock()
}

// remove drops j and reports whether the group is now empty.
func (g *group) remove(j *job) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.jobs = slices.DeleteFunc(slices.Clone(g.jobs), func(m *job) bool { return m == j })
	return len(g.jobs) == 0
}

func (g *group) members() []*job {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.jobs
}

// acquireTask is a queue entry: acquire the lease of job for firing.
type acquireTask struct {
	job *job
	f   firing
}

// fireGroup is the gocron task of group g.
func (s *Scheduler) fireGroup(g *group) {
	occ, maxSkew := g.plan.occurrence(s.cfg.clock.Now())
	f := firing{occ: occ.In(s.cfg.location), maxSkew: maxSkew}
	for _, j := range g.members() {
		s.dispatch(j, f)
	}
}

// dispatch hands one firing of j to the acquire queue, or keeps it as j's
// next firing while an earlier one is pending.
func (s *Scheduler) dispatch(j *job, f firing) {
	res, superseded, ok := j.pipe.offer(f)
	switch res {
	case offerQueue:
		s.enqueue(j, f)
	case offerWait:
		if ok {
			s.skip(j, superseded.occ, SkipOverrun, nil)
		}
	case offerDuplicate:
		s.debug(j, f.occ, "duplicate firing of an occurrence already handled here: dropped")
	case offerLate:
		s.debug(j, f.occ, "catch-up dropped: a newer occurrence of the job is being acquired")
	case offerDeferred:
		s.debug(j, f.occ, "trigger deferred: the job is being acquired")
	}
}

// dispatchTrigger hands a trigger of j to the acquire queue: a run now, if
// this replica wins the job's lease and the trigger (package fleet).
func (s *Scheduler) dispatchTrigger(j *job) {
	if s.base.Err() != nil || j.removed.Load() {
		return
	}
	s.dispatch(j, firing{occ: s.cfg.clock.Now().In(s.cfg.location), trigger: true})
}

// enqueue hands the busy firing f of j to the acquire workers. Once the
// queue is closed (Shutdown), f and any firing waiting behind it are
// skipped instead, and j goes idle.
func (s *Scheduler) enqueue(j *job, f firing) {
	for !s.queue.push(acquireTask{job: j, f: f}) {
		s.skip(j, f.occ, SkipShutdown, nil)
		var ok bool
		if f, ok = j.pipe.done(); !ok {
			return
		}
	}
}

// worker runs acquires from the queue until the queue is closed and empty.
func (s *Scheduler) worker() {
	defer s.workers.Done()
	for {
		t, ok := s.queue.pop()
		if !ok {
			return
		}
		if s.attempt(t.job, t.f) {
			continue // it waits for the job's running occurrence, and then hands on (bufferOne)
		}
		if next, ok := t.job.pipe.done(); ok {
			s.enqueue(t.job, next)
		}
	}
}

// startWorkersLocked starts acquire workers up to min(jobs, concurrency).
// s.mu must be held.
func (s *Scheduler) startWorkersLocked() {
	for s.nworkers < min(len(s.order), s.cfg.acquireConcurrency) {
		s.nworkers++
		s.workers.Add(1)
		go s.worker()
	}
}

// acquireQueue is an unbounded FIFO of acquire tasks; it never holds more
// than one entry per job.
type acquireQueue struct {
	mu     sync.Mutex
	cond   sync.Cond
	items  []acquireTask
	head   int
	closed bool
}

func newAcquireQueue() *acquireQueue {
	q := &acquireQueue{}
	q.cond.L = &q.mu
	return q
}

// push appends t; it reports false if the queue is closed.
func (q *acquireQueue) push(t acquireTask) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, t)
	q.mu.Unlock()
	q.cond.Signal()
	return true
}

// pop removes the oldest task, waiting for one; ok is false once the queue
// is closed and empty.
func (q *acquireQueue) pop() (t acquireTask, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.head == len(q.items) && !q.closed {
		q.cond.Wait()
	}
	if q.head == len(q.items) {
		return acquireTask{}, false
	}
	t = q.items[q.head]
	q.items[q.head] = acquireTask{}
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return t, true
}

// close makes push fail and wakes the workers; they drain what is queued.
func (q *acquireQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// debug logs a debug line about one occurrence of j, building nothing when
// debug logging is off.
func (s *Scheduler) debug(j *job, occ time.Time, msg string, attrs ...slog.Attr) {
	if !s.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	s.log.LogAttrs(context.Background(), slog.LevelDebug, msg, append([]slog.Attr{slog.String("job", j.name), slog.Time("occurrence", occ)}, attrs...)...)
}
