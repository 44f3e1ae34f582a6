package scheduler

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/cronguard/cronguard/lease"
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
//  2. The group's task maps the firing to its occurrence once, and delivers
//     it to each member job's owner (job.go), which decides. It never waits
//     on the store.
//  3. A fixed pool of claim workers (WithAcquireConcurrency) takes the
//     claims the owners queue and asks the store (claim.go); a won
//     occurrence runs in its own goroutine (run.go).
//
// A job has at most one claim queued, in flight or waiting on a replica. A
// firing that finds its job's previous claim still pending waits as the
// job's next and is claimed right after, in order (a round is claimed only
// if newer than the last, so an out-of-order claim would be a miss); only
// when a third firing arrives before that is the middle one skipped
// (SkipOverrun). So the queue never holds more entries than jobs, and a
// store that stalls on one job delays no other job's claim beyond taking
// one worker.

// firing is one occurrence of a job to claim. It is kept small: a job's
// state holds two.
type firing struct {
	ms     int64         // the occurrence in Unix ms (its round); 0 for a trigger, whose round the store chooses
	reg    *registration // the registration it is claimed for
	skewMs int32         // the maximum skew of its round, in ms (at most MaxOccurrenceSkew)
	kind   firingKind
	waited bool // it waited for the job's lease (OverlapBufferOne): no second wait
	// early: fired ahead of its occurrence (claim_ahead.go); its run
	// waits for the occurrence. onTime: sent again at the occurrence,
	// after a claim ahead found the job busy or was refused as early.
	early  bool
	onTime bool
	// atOnce: claimed at once, whatever this replica's role: a trigger
	// that waited for the job's run here (its release said so), or an
	// occurrence its preferred replica handed over (MessageUnclaimed).
	atOnce bool
}

// newFiring returns a firing of the occurrence occ whose round may lie
// maxSkew ahead of the store's clock.
func newFiring(occ time.Time, maxSkew time.Duration, kind firingKind, reg *registration) firing {
	return firing{ms: occ.UnixMilli(), skewMs: int32(maxSkew.Milliseconds()), kind: kind, reg: reg}
}

// maxSkew is how far ahead of the store's clock the firing's round may lie.
func (f firing) maxSkew() time.Duration { return time.Duration(f.skewMs) * time.Millisecond }

// occ returns the occurrence of firing f in the scheduler's location.
func (s *Scheduler) occ(f firing) time.Time { return time.UnixMilli(f.ms).In(s.cfg.location) }

// firingKind says what started a firing.
type firingKind uint8

const (
	firedBySchedule firingKind = iota // gocron fired the occurrence
	firedByCatchUp                    // a late claim of a missed occurrence (WithCatchUp)
	firedByTrigger                    // a run now (package fleet); the store chooses its round
	firedByResume                     // the next attempt of an open occurrence (resume.go); ms is its round
)

// quiet reports whether a firing that finds nothing to do is no skip: a
// catch-up or a trigger.
func (f firing) quiet() bool { return f.kind != firedBySchedule }

// group is the jobs that share one schedule, fired by one gocron job.
type group struct {
	key  string
	plan plan // the first member's; every member's plan is equal to it
	// schedule is the first member's; a member's equal to it is this one,
	// kept once.
	schedule Schedule
	lead     time.Duration             // how far ahead of its occurrences it fires (claim_ahead.go)
	id       atomic.Pointer[uuid.UUID] // the gocron job's ID, once scheduled

	mu sync.Mutex
	// jobs is never changed within a slice members returned: add appends
	// past its length (into spare capacity, or a new array), remove
	// builds a new slice.
	jobs   []*job
	last   int64     // the occurrence (Unix ms) of the group's latest firing; 0 before the first
	lastAt time.Time // when that firing came, on the local clock (with its monotonic reading)
	// floor is the first occurrence (Unix ms) gocron can fire the group
	// for: the first at or after the time it was scheduled (Start, or
	// Register after it). No firing maps to an earlier one.
	floor int64
}

// scheduledAt records that gocron fires g for the occurrences after now
// (the local time it was scheduled at): those it fires for lead before
// them, so the first is the first at or after now + lead. An occurrence
// within the lead after now is past its firing time: gocron fires the
// group first for the one after it. (A millisecond less, so that an
// occurrence at now + lead itself, which gocron fires at once, is the
// first.)
func (g *group) scheduledAt(now time.Time) {
	first := g.plan.next(now.Add(g.lead - time.Millisecond))
	g.mu.Lock()
	defer g.mu.Unlock()
	if !first.IsZero() {
		g.floor = first.UnixMilli()
	}
}

// add appends j. Copying the members at each add (as remove does) made
// registering n jobs of one schedule copy n*n/2 pointers: 400 MB for
// 10,000 jobs.
func (g *group) add(j *job) {
	g.mu.Lock()
	g.jobs = append(g.jobs, j)
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

// fireGroup is the gocron task of group g: it maps the firing to its
// occurrence and delivers it to every member. A firing ahead of its
// occurrence (claim_ahead.go) is held back by as much as this replica's
// clock runs ahead of the store's: a timer delivers it then, which
// Shutdown waits for (the task itself never waits: gocron's shutdown
// spins on a task in progress).
func (s *Scheduler) fireGroup(g *group) {
	now := s.cfg.clock.Now()
	occ, maxSkew := g.occurrence(now)
	f := newFiring(occ, maxSkew, firedBySchedule, nil) // each job's owner gives it its registration
	if g.lead > 0 && now.Before(occ) {
		f.early = true
		if d := s.holdBack(min(g.lead, occ.Sub(now))); d >= time.Millisecond {
			s.workers.Add(1) // before gocron's shutdown returns, and so before Shutdown waits
			s.cfg.clock.AfterFunc(d, func() {
				defer s.workers.Done()
				deliverFiring(g, f)
			})
			return
		}
	}
	deliverFiring(g, f)
}

// deliverFiring delivers firing f to every member of g.
func deliverFiring(g *group, f firing) {
	for _, j := range g.members() {
		j.deliver(input{kind: inFiring, f: f})
	}
}

// occurrence maps a firing of the group at local time now to its
// occurrence: the latest schedule point at or before now (plan.occurrence),
// unless the group fired that point already. Such a firing is one of two
// things:
//   - It comes at least half the gap after the group's last firing: gocron
//     sets each timer from the time it scheduled before, so it is the timer
//     of the next point after the last one fired, set on a clock that has
//     since stepped back (NTP). It is that point's firing, and its round is
//     held to the usual skew by the store. Mapped to the point already
//     fired, it would be dropped as a duplicate and its own occurrence
//     would run nowhere, unreported.
//   - It comes sooner: the process was stopped (SIGSTOP, a long pause, CPU
//     throttling) and gocron delivers its late firings in a burst. It is a
//     duplicate of the last one, and the job drops it. Mapped forward, each
//     would claim an occurrence ahead of time (refused as clock skew), and
//     every later firing would map one more occurrence ahead.
//
// The group's first firing has no last one to be told from: one that maps
// before the first occurrence gocron can fire it for (floor) is that
// occurrence's, on a clock that stepped back since gocron set its timer.
// Mapped to the point before, it would claim an occurrence that ran
// before the group was scheduled (refused as claimed), or run one that
// did not late under the wrong occurrence, and its own would run nowhere.
//
// A group that fires lead ahead (claim_ahead.go) maps its firings as if
// they came lead later.
func (g *group) occurrence(now time.Time) (time.Time, time.Duration) {
	now = now.Add(g.lead)
	occ, maxSkew := g.plan.occurrence(now)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last == 0 && occ.UnixMilli() < g.floor {
		occ, maxSkew = g.plan.occurrence(time.UnixMilli(g.floor).In(now.Location()))
	}
	if g.last != 0 && occ.UnixMilli() <= g.last {
		last := time.UnixMilli(g.last)
		if next := g.plan.next(last); !next.IsZero() && now.Sub(g.lastAt) >= next.Sub(last)/2 {
			occ, maxSkew = g.plan.occurrence(next)
		}
	}
	if occ.UnixMilli() > g.last {
		g.last, g.lastAt = occ.UnixMilli(), now
	}
	return occ, maxSkew
}

// claimTask is a queue entry: claim firing f of job.
type claimTask struct {
	job *job
	f   firing
}

// maxClaimBatch is how many queued claims a worker sends to a
// lease.BatchAcquirer in one round trip: the jobs of a firing group are
// queued together, and their acquires go out in batches of this size.
const maxClaimBatch = 64

// worker runs claims from the queue until the queue is closed and empty:
// one at a time, or, when the store is a lease.BatchAcquirer, whatever is
// queued up to maxClaimBatch in one round trip (claimBatch).
func (s *Scheduler) worker() {
	defer s.workers.Done()
	ba, batching := s.store.(lease.BatchAcquirer)
	var buf []claimTask
	for {
		if batching {
			ts, ok := s.queue.popBatch(buf[:0], maxClaimBatch, s.cfg.acquireConcurrency)
			if !ok {
				return
			}
			if len(ts) > 1 {
				s.claimBatch(ba, ts)
			} else {
				l, err := s.claim(ts[0].job, ts[0].f)
				ts[0].job.deliver(input{kind: inClaimed, f: ts[0].f, lease: l, err: err})
			}
			s.queue.done(len(ts))
			clear(ts)
			buf = ts
			continue
		}
		t, ok := s.queue.pop()
		if !ok {
			return
		}
		l, err := s.claim(t.job, t.f)
		t.job.deliver(input{kind: inClaimed, f: t.f, lease: l, err: err})
	}
}

// startWorkersLocked starts claim workers up to min(jobs, concurrency).
// s.mu must be held.
func (s *Scheduler) startWorkersLocked() {
	for s.nworkers < min(len(s.order), s.cfg.acquireConcurrency) {
		s.nworkers++
		s.workers.Add(1)
		go s.worker()
	}
}

// claimQueue is an unbounded FIFO of claims; it never holds more than one
// entry per job.
type claimQueue struct {
	mu       sync.Mutex
	cond     sync.Cond
	items    []claimTask
	head     int
	inflight int // tasks taken by popBatch and not yet done
	calls    int // the batches those tasks were taken in
	closed   bool
	// idleC is closed while no task is queued or in flight, and replaced
	// by an open channel when a task comes: releases wait on it for the
	// claims to be answered first (release_hold.go).
	idleC chan struct{}
}

func newClaimQueue() *claimQueue {
	q := &claimQueue{idleC: make(chan struct{})}
	close(q.idleC)
	q.cond.L = &q.mu
	return q
}

// settle closes or replaces idleC after a change of the queue: closed
// when no task is queued or in flight, open otherwise. q.mu is held.
func (q *claimQueue) settle() {
	idle := q.head == len(q.items) && q.inflight == 0
	select {
	case <-q.idleC:
		if !idle {
			q.idleC = make(chan struct{})
		}
	default:
		if idle {
			close(q.idleC)
		}
	}
}

// idle returns a channel that is closed once no claim is queued or in
// flight (already closed if none is).
func (q *claimQueue) idle() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.idleC
}

// push appends t; it reports false if the queue is closed.
func (q *claimQueue) push(t claimTask) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, t)
	q.settle()
	q.mu.Unlock()
	q.cond.Signal()
	return true
}

// pop removes the oldest task, waiting for one; ok is false once the queue
// is closed and empty.
func (q *claimQueue) pop() (t claimTask, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.head == len(q.items) && !q.closed {
		q.cond.Wait()
	}
	if q.head == len(q.items) {
		return claimTask{}, false
	}
	t = q.items[q.head]
	q.items[q.head] = claimTask{}
	q.head++
	if q.head == len(q.items) {
		q.drained()
	}
	q.settle() // a single claim is not counted in flight
	return t, true
}

// popBatch appends up to n of the oldest tasks to buf, waiting for one,
// and counts them in flight, as one call, until done: it waits while
// limit calls are in flight (WithAcquireConcurrency). ok is false once the
// queue is closed and empty.
func (q *claimQueue) popBatch(buf []claimTask, n, limit int) (ts []claimTask, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		queued := len(q.items) - q.head
		switch {
		case queued > 0 && q.calls < limit:
			end := q.head + min(n, queued)
			buf = append(buf, q.items[q.head:end]...)
			clear(q.items[q.head:end])
			q.inflight += end - q.head
			q.calls++
			q.head = end
			if q.head == len(q.items) {
				q.drained()
			} else if q.calls < limit {
				q.cond.Signal() // the next batch, for another worker
			}
			return buf, true
		case queued == 0 && q.closed:
			return buf, false
		}
		q.cond.Wait()
	}
}

// keptQueueCap is the most tasks' capacity the claim and backup queues
// keep once drained. A firing group of 10,000 jobs grows them to its
// size; kept, that capacity is some 40 (claims) and 100 (backups) bytes
// per job for as long as the replica runs, to spare about a dozen
// appends at the next firing.
const keptQueueCap = 256

// drained empties the queue, keeping at most keptQueueCap of its
// capacity. q.mu is held.
func (q *claimQueue) drained() {
	q.head = 0
	if cap(q.items) > keptQueueCap {
		q.items = nil
		return
	}
	q.items = q.items[:0]
}

// done ends the call of n tasks popBatch counted in flight.
func (q *claimQueue) done(n int) {
	q.mu.Lock()
	q.inflight -= n
	q.calls--
	q.settle()
	q.mu.Unlock()
	// One worker, which wakes the next if there is more to take
	// (popBatch): waking every idle worker at each answer was a herd.
	q.cond.Signal()
}

// close makes push fail and wakes the workers; they drain what is queued
// (each claim answers ErrShutdown without asking the store).
func (q *claimQueue) close() {
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
