package scheduler

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// maxReleaseBatch is how many releases of ending runs the release batcher
// sends to a fleet.BatchReleaser in one round trip; releaseSenders is how
// many batches it has out at once. One sender alone, waiting for each
// batch's reply before it takes the next, fell behind the runs of a
// replica with thousands of jobs a second on a loaded machine (their
// leases were still held at the next occurrence).
const (
	maxReleaseBatch = 64
	releaseSenders  = 8
)

// releaseTask is a run's release with status handed to the batcher: the
// lease, the status, when the release's tries must end, and where its
// answer goes: a channel (release) or a function (releaseThen).
type releaseTask struct {
	l        *lease.Lease
	st       fleet.Status
	deadline time.Time
	hold     time.Time            // until when it may wait for the claims (release_hold.go); zero: it may not
	answer   chan<- releaseAnswer // buffered: the batcher never waits for the run; nil with then
	then     func(releaseAnswer)  // releaseThen's; nil with answer
}

// releaseAnswer is what ReleaseWithStatus would have returned for a task.
type releaseAnswer struct {
	triggers int
	err      error
}

// releaseBatcher sends the releases with status of the runs that end
// together in one round trip (fleet.BatchReleaser): each of its
// releaseSenders goroutines takes a full batch (maxReleaseBatch) as soon
// as one is queued and it is free, and a part of one only while no other
// part is out; it answers each run. No timer waits for more: a part goes
// at once when none is out, and the releases that end while it is out go
// together in the next call once it is answered (or as soon as they make
// a full batch). Runs that end a few at a time (a replica's part of a
// small firing group, its runs' ends spread by their work) so make one
// call at a time, not one per free sender; a replica whose runs end by
// the thousand fills full batches, which go out side by side. A batch
// taken while the replica's claims are out may wait for them
// (release_hold.go); a part that waits so is not out until its wait
// ends. A run that ends hands its release over and its goroutine
// returns (releaseThen): the rest of its end runs once the batch is
// answered, on one goroutine per batch (Scheduler.releaseThen), so a
// firing group's runs whose releases wait for the claims do not keep
// thousands of goroutines alive, which the runtime keeps the descriptors
// of for as long as the process runs. The Scheduler starts it in Start
// and stops it in Shutdown, after the last run ended.
type releaseBatcher struct {
	store fleet.BatchReleaser
	// claimsIdle, when set, gives a channel closed once this replica's
	// claims are answered: a batch whose tasks may wait waits for it
	// (release_hold.go).
	claimsIdle func() <-chan struct{}

	mu      sync.Mutex
	cond    sync.Cond
	items   []releaseTask // queued from head on
	head    int
	partial int // parts of a batch (fewer than maxReleaseBatch tasks) taken and not answered, less those waiting for the claims (hold)
	closed  bool
	closing chan struct{} // closed by close: a held batch goes at once

	senders atomic.Int32  // goroutines that have not returned
	done    chan struct{} // closed when the last has returned
}

// startReleases starts the release batcher when the runs release with
// status (a control plane) and the store is a fleet.BatchReleaser. Start
// calls it after the control plane started and before any firing.
func (s *Scheduler) startReleases() {
	br, ok := s.store.(fleet.BatchReleaser)
	if !ok || s.control == nil {
		return
	}
	s.releases = startReleaseBatcher(br, releaseSenders, s.queue.idle)
}

// startReleaseBatcher starts a batcher with n senders; claimsIdle may be
// nil (no batch waits).
func startReleaseBatcher(store fleet.BatchReleaser, n int, claimsIdle func() <-chan struct{}) *releaseBatcher {
	b := &releaseBatcher{store: store, claimsIdle: claimsIdle, closing: make(chan struct{}), done: make(chan struct{})}
	b.cond.L = &b.mu
	b.senders.Store(int32(n))
	for range n {
		go b.run()
	}
	return b
}

// stopReleases closes the release batcher, if any, and waits until it
// has returned or ctx is done. A run that ends later releases on its own.
func (s *Scheduler) stopReleases(ctx context.Context) {
	b := s.releases
	if b == nil {
		return
	}
	b.close()
	select {
	case <-b.done:
	case <-ctx.Done():
	}
}

// release sends the release of l with st in the next batch and waits for
// its answer: a batch's try ends at the earliest deadline among its
// tasks, and it may wait for the claims until the earliest hold (zero:
// not at all). ok is false, without I/O, once the batcher is closed: the
// caller releases on its own.
func (b *releaseBatcher) release(l *lease.Lease, st fleet.Status, deadline, hold time.Time) (a releaseAnswer, ok bool) {
	answer := make(chan releaseAnswer, 1)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return releaseAnswer{}, false
	}
	b.items = append(b.items, releaseTask{l: l, st: st, deadline: deadline, hold: hold, answer: answer})
	b.mu.Unlock()
	b.cond.Signal()
	return <-answer, true
}

// releaseThen queues the release of l with st as release does, without
// waiting: then is called with its answer once its batch is answered, on
// a goroutine that calls the then of every such task of the batch in turn
// (each must be quick: one that blocks starts a goroutine of its own). It
// returns false, without I/O and without calling then, once the batcher
// is closed.
func (b *releaseBatcher) releaseThen(l *lease.Lease, st fleet.Status, deadline, hold time.Time, then func(releaseAnswer)) bool {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return false
	}
	b.items = append(b.items, releaseTask{l: l, st: st, deadline: deadline, hold: hold, then: then})
	b.mu.Unlock()
	b.cond.Signal()
	return true
}

// answered is a releaseThen task's continuation with its answer.
type answered struct {
	then func(releaseAnswer)
	a    releaseAnswer
}

// continueAll calls each continuation in turn.
func continueAll(as []answered) {
	for _, x := range as {
		x.then(x.a)
	}
}

// close makes release refuse new tasks; the senders answer the queued
// ones and return (done).
func (b *releaseBatcher) close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.closing)
	}
	b.mu.Unlock()
	b.cond.Broadcast()
}

// run sends batches until the batcher is closed and nothing is queued.
func (b *releaseBatcher) run() {
	defer func() {
		if b.senders.Add(-1) == 0 {
			close(b.done)
		}
	}()
	var (
		buf      []releaseTask
		leases   = make([]*lease.Lease, maxReleaseBatch)
		sts      = make([]fleet.Status, maxReleaseBatch)
		triggers = make([]int, maxReleaseBatch)
		errs     = make([]error, maxReleaseBatch)
	)
	for {
		ts, ok := b.pop(buf[:0])
		if !ok {
			return
		}
		n := len(ts)
		b.hold(ts, n < maxReleaseBatch)
		deadline := ts[0].deadline
		for i, t := range ts {
			leases[i], sts[i], triggers[i], errs[i] = t.l, t.st, 0, nil
			if t.deadline.Before(deadline) {
				deadline = t.deadline
			}
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		b.store.ReleaseWithStatusBatch(ctx, leases[:n], sts[:n], triggers[:n], errs[:n])
		cancel()
		if n < maxReleaseBatch {
			b.partEnded()
		}
		var thens []answered // a fresh slice: its goroutine keeps it
		for i, t := range ts {
			a := releaseAnswer{triggers: triggers[i], err: errs[i]}
			if t.then != nil {
				if thens == nil {
					thens = make([]answered, 0, n-i)
				}
				thens = append(thens, answered{t.then, a})
				continue
			}
			t.answer <- a
		}
		if len(thens) > 0 {
			// Ended by the runs' owners: Shutdown waits for each run's
			// end, which its continuation signals (finish.go).
			go continueAll(thens)
		}
		clear(ts)
		clear(leases[:n])
		clear(sts[:n])
		clear(errs[:n])
		buf = ts
	}
}

// pop appends up to maxReleaseBatch of the oldest tasks to buf, waiting
// for a full batch, or for one task while no part of a batch is out (or
// the batcher is closed: what is queued goes at once); ok is false once
// the batcher is closed and nothing is queued. A part it returns counts
// as out until run calls partEnded (and not while it waits for the
// claims, hold).
func (b *releaseBatcher) pop(buf []releaseTask) (ts []releaseTask, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		queued := len(b.items) - b.head
		if queued >= maxReleaseBatch || queued > 0 && (b.partial == 0 || b.closed) {
			break
		}
		if queued == 0 && b.closed {
			return buf, false
		}
		b.cond.Wait()
	}
	n := min(len(b.items)-b.head, maxReleaseBatch)
	if n < maxReleaseBatch {
		b.partial++
	}
	end := b.head + n
	buf = append(buf, b.items[b.head:end]...)
	clear(b.items[b.head:end])
	b.head = end
	switch {
	case b.head == len(b.items):
		// Drained. While the claims are out the releases of a large
		// firing group queue up (release_hold.go): do not keep a capacity
		// of thousands of tasks for as long as the replica runs.
		b.head = 0
		if cap(b.items) > keptQueueCap {
			b.items = nil
		} else {
			b.items = b.items[:0]
		}
	case b.head >= len(b.items)/2:
		// A queue that never drains moves its tasks to the front once half
		// of it has been taken: each task is moved at most about once.
		n := copy(b.items, b.items[b.head:])
		clear(b.items[n:])
		b.items, b.head = b.items[:n], 0
	}
	return buf, true
}

// partEnded ends the count of a part of a batch that pop returned, once
// it is answered or while it waits for the claims (hold), and wakes a
// sender for what queued meanwhile.
func (b *releaseBatcher) partEnded() {
	b.mu.Lock()
	b.partial--
	b.mu.Unlock()
	b.cond.Signal()
}

// partOut counts a part of a batch as out again once its wait for the
// claims is over and it is sent.
func (b *releaseBatcher) partOut() {
	b.mu.Lock()
	b.partial++
	b.mu.Unlock()
}
