package scheduler

import (
	"context"
	"sync"
	"time"

	"github.com/cronguard/cronguard/lease"
)

// dispatch sends a claim that a job's owner decided on (actClaim) the way
// this replica's role for its occurrence says (prefer.go): to the claim
// workers now, to the backup pass after BackupGrace, or, for a scheduled
// firing this replica is not chosen for, nowhere: the job is answered at
// once with errNotChosen. Every claim of every firing kind passes here.
func (s *Scheduler) dispatch(j *job, f firing) {
	r := s.view.Load().role(j.key, f.ms)
	switch {
	case roundChecked(f) && f.maxSkew() < BackupGrace:
		// Occurrences less than two graces apart: a backup's claim would
		// come after the next occurrence's, too late to run it. Race.
		r = roleRace
	case f.kind == firedByCatchUp:
		// A catch-up is claimed at once by whichever replica owes it: the
		// one whose run outlived the occurrence (its chosen replicas found
		// the job locked and skipped it), or one that just started. Held
		// back a grace, it loses to a trigger another replica takes as the
		// run's lease is released, whose round comes after it.
		r = roleRace
	}
	switch r {
	case roleOther:
		if f.kind == firedBySchedule {
			j.deliver(input{kind: inClaimed, f: f, err: errNotChosen})
			return
		}
		s.backups.add(s, claimTask{job: j, f: f}) // it may be the only one to know
	case roleBackup:
		s.backups.add(s, claimTask{job: j, f: f})
	default:
		s.push(claimTask{job: j, f: f})
	}
}

// push hands t to the claim workers, or answers it errClaimStopped once
// Shutdown closed their queue.
func (s *Scheduler) push(t claimTask) {
	if !s.queue.push(t) {
		t.job.deliver(input{kind: inClaimed, f: t.f, err: errClaimStopped})
	}
}

// backupQueue holds the claims this replica makes as a backup until their
// grace ends. One goroutine (backupPass) takes them in order of their due
// time, which is their arrival time plus BackupGrace.
type backupQueue struct {
	mu     sync.Mutex
	items  []backupTask
	head   int
	closed bool
	wake   chan struct{} // capacity 1: the pass has something new to look at
}

type backupTask struct {
	t   claimTask
	due time.Time
}

func newBackupQueue() *backupQueue { return &backupQueue{wake: make(chan struct{}, 1)} }

// add queues t, due BackupGrace from now; after Shutdown it answers t
// errClaimStopped.
func (q *backupQueue) add(s *Scheduler, t claimTask) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		t.job.deliver(input{kind: inClaimed, f: t.f, err: errClaimStopped})
		return
	}
	q.items = append(q.items, backupTask{t: t, due: s.cfg.clock.Now().Add(BackupGrace)})
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take returns the tasks due at now, in order, and how long until the next
// one is due (0: none waits). closed reports that the queue was closed: the
// tasks returned are all that were left.
func (q *backupQueue) take(now time.Time, buf []claimTask) (due []claimTask, next time.Duration, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.head < len(q.items) {
		it := q.items[q.head]
		if !q.closed && it.due.After(now) {
			next = it.due.Sub(now)
			break
		}
		buf = append(buf, it.t)
		q.items[q.head] = backupTask{}
		q.head++
	}
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return buf, next, q.closed
}

// close makes add answer errClaimStopped and the pass drain what waits.
func (q *backupQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// backupPass is the goroutine of the backup queue, started by Start and
// counted in s.workers:
// it waits for each task's grace to end, checks the due tasks' rounds
// together (checkBackups), and ends when Shutdown closed the queue and it
// is drained.
func (s *Scheduler) backupPass() {
	defer s.workers.Done()
	q := s.backups
	var buf []claimTask
	for {
		due, next, closed := q.take(s.cfg.clock.Now(), buf[:0])
		if len(due) > 0 {
			if closed {
				for _, t := range due {
					t.job.deliver(input{kind: inClaimed, f: t.f, err: errClaimStopped})
				}
			} else {
				s.checkBackups(due)
			}
		}
		if closed {
			return
		}
		buf = due
		if next == 0 {
			<-q.wake
			continue
		}
		timer := s.cfg.clock.NewTimer(next)
		select {
		case <-timer.Chan():
		case <-q.wake:
			timer.Stop()
		}
	}
}

// checkBackups claims the backup tasks ts whose round is still unclaimed.
// With a lease.RoundReader, one pipelined read of their round records
// tells which: a task whose round was claimed is answered errBackupClaimed
// (a skip, as when its acquire is refused); the others, and all of them
// without a RoundReader or when the read fails, go to the claim workers,
// whose acquire decides. Only a scheduled firing or a catch-up is checked
// so: a trigger's round is the store's to choose, and any other firing
// (an attempt of a round already claimed) is for its acquire to decide.
func (s *Scheduler) checkBackups(ts []claimTask) {
	rr, ok := s.store.(lease.RoundReader)
	if !ok {
		for _, t := range ts {
			s.push(t)
		}
		return
	}
	keys := make([]string, 0, len(ts))
	occs := make([]int64, 0, len(ts))
	for _, t := range ts {
		if roundChecked(t.f) {
			keys = append(keys, t.job.key)
			occs = append(occs, t.f.ms)
		}
	}
	rounds := make([]int64, len(keys))
	var err error
	if len(keys) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), MaxCleanup)
		err = rr.LastRounds(ctx, keys, rounds)
		cancel()
	}
	// The rounds still unclaimed: the first choice is gone, or it found
	// the job running (a refused acquire records no round). The span of
	// the job's last run tells which: a scheduled occurrence that came due
	// while the job ran is skipped, as the first choice skipped it
	// (OverlapSkip), not run late once the run ended within the grace. A
	// catch-up is claimed: such occurrences are what it is for.
	var open []int // indexes into keys
	if err == nil {
		for i := range keys {
			if rounds[i] < occs[i] {
				open = append(open, i)
			}
		}
	}
	running := map[int]bool{}
	if len(open) > 0 {
		okeys := make([]string, len(open))
		for n, i := range open {
			okeys[n] = keys[i]
		}
		spans := make([]lease.RunSpan, len(open))
		ctx, cancel := context.WithTimeout(context.Background(), MaxCleanup)
		rerr := rr.LastRuns(ctx, okeys, spans)
		cancel()
		for n, i := range open {
			if rerr == nil && spans[n].Covers(time.UnixMilli(occs[i])) {
				running[i] = true
			}
		}
	}
	i := 0
	for _, t := range ts {
		if !roundChecked(t.f) {
			s.push(t)
			continue
		}
		k := i
		i++
		switch {
		case err == nil && rounds[k] >= t.f.ms:
			t.job.deliver(input{kind: inClaimed, f: t.f, err: errBackupClaimed})
		case running[k] && t.f.kind == firedBySchedule: // a catch-up is for such occurrences
			t.job.deliver(input{kind: inClaimed, f: t.f, err: errBackupLocked})
		default:
			s.push(t)
		}
	}
}

// roundChecked reports whether a backup reads the round of firing f
// before it claims: a scheduled firing or a catch-up, whose acquire
// claims the round of its occurrence for the first time.
func roundChecked(f firing) bool {
	return f.kind == firedBySchedule || f.kind == firedByCatchUp
}
