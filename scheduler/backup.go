package scheduler

import (
	"context"
	"slices"
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
	ch := s.view.Load().choose(j.key, f.ms)
	r := ch.role
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
	case f.kind == firedBySchedule && f.reg != nil && oneOff(f.reg.schedule):
		// A one-off occurrence (At) has no next one whose claim would
		// report it missed: with its first choice and backup both gone
		// (two replicas that died together, their registry entries not
		// lapsed yet), it would run nowhere, unreported. Every replica
		// that has the job claims it; the round lets one win.
		r = roleRace
	case f.atOnce:
		// A trigger that waited for the run here (the release told this
		// replica first, and the others do not look again by
		// themselves), or an occurrence handed over by its preferred
		// replica, which cannot run it.
		r = roleRace
	}
	switch r {
	case roleOther:
		if f.kind == firedBySchedule {
			j.deliver(input{kind: inClaimed, f: f, err: errNotChosen})
			return
		}
		s.backups.add(s, claimTask{job: j, f: f}, ch) // it may be the only one to know
	case roleBackup:
		s.backups.add(s, claimTask{job: j, f: f}, ch)
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
// wait ends. One goroutine (backupPass) takes them in order of their due
// time: their arrival plus the choice's backupWait at first, a recheck
// later while their first choice is seen claiming (checkBackups).
type backupQueue struct {
	mu     sync.Mutex
	items  backupHeap
	closed bool
	wake   chan struct{} // capacity 1: the pass has something new to look at
}

// backupTask is a claim waiting in the backup queue.
type backupTask struct {
	t     claimTask
	due   time.Time // when the pass looks at it (next)
	until time.Time // the last time the pass may put it back for a first choice still claiming (add)
	first string    // its first choice's replica ID ("" with none)
}

func newBackupQueue() *backupQueue { return &backupQueue{wake: make(chan struct{}, 1)} }

// add queues t, due after the backup's wait for choice ch from its
// occurrence for a scheduled firing, from now for any other; after
// Shutdown it answers t errClaimStopped. Only a scheduled firing waits for
// the first choice's clock: each replica fires it when its own clock
// reaches the occurrence. A trigger or a resumed attempt reaches every
// replica at the same moment, whatever its clock, and waits the grace
// alone.
//
// A scheduled firing's wait runs from the occurrence, not from when the
// firing reached the job here, if that was less than a grace after it: a
// firing group is delivered to its jobs one after the other, the last of
// 10,000 some tens of ms after the first on a loaded replica, and the
// first choice delivers its own in the same order and claims as it goes.
// Counted from the delivery, that delay came on top of the grace for the
// occurrences of a stalled first choice. A firing that reaches the backup
// pass later than that waited here (behind the job's previous claim, or
// for its run here, OverlapBufferOne), as its first choice's may have
// waited: it waits the grace from now, or until the first choice's own
// firing has had its grace if that is later (backupDue). A firing that comes ahead of its
// occurrence (claim_ahead.go) waits from the occurrence.
//
// A scheduled firing may wait for a first choice seen claiming until its
// claim's retries would end (retryUntil: the next occurrence less
// min(gap/10, 1s)): a loaded first choice works through a large firing
// group for most of the gap, and a backup that stopped waiting at half of
// it doubled the claims of the load that made it late.
func (q *backupQueue) add(s *Scheduler, t claimTask, ch choice) {
	due := backupDue(s.cfg.clock.Now(), s.occ(t.f), t.f.kind == firedBySchedule, ch)
	until := due
	if t.f.kind == firedBySchedule {
		if u := s.retryUntil(t.f); u.After(until) {
			until = u
		}
	}
	q.put(backupTask{t: t, due: due, until: until, first: ch.firstID()})
}

// backupDue is when a backup claim that reaches the backup pass at now
// is looked at, for choice ch: the grace from now, or for a scheduled
// firing (scheduled) of occurrence occ, the wait for ch's first choice
// (backupWait: the grace, plus how far this replica's clock runs ahead of
// the first choice's) from the occurrence, when the firing came less than
// a grace after it, or when that is later. A firing that waited here (for
// the job's run, OverlapBufferOne) reaches the pass when the wait ends,
// an event of the store's, not of either clock: it waits the grace, not
// the clocks' difference on top, unless its first choice's own firing,
// by its clock, is later still. (It waited both once: a backup whose
// clock ran 2.3 s ahead claimed a buffered occurrence 2.6 s after the run
// before it ended, with the lease free, and a trigger waiting behind that
// claim lapsed: the simulator's seed 72876 of the lighter fleet.)
func backupDue(now, occ time.Time, scheduled bool, ch choice) time.Time {
	due := now.Add(BackupGrace)
	if scheduled {
		byClock := occ.Add(ch.backupWait())
		if now.Sub(occ) < BackupGrace || byClock.After(due) {
			due = byClock
		}
	}
	return due
}

// put queues bt (again); after Shutdown it answers it errClaimStopped.
func (q *backupQueue) put(bt backupTask) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		bt.t.job.deliver(input{kind: inClaimed, f: bt.t.f, err: errClaimStopped})
		return
	}
	q.items.push(bt)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take returns the tasks due at now, in order of their due time, and how
// long until the next one is due (0: none waits). closed reports that the
// queue was closed: the tasks returned are all that were left.
func (q *backupQueue) take(now time.Time, buf []backupTask) (due []backupTask, next time.Duration, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) > 0 {
		if it := q.items[0]; !q.closed && it.due.After(now) {
			next = it.due.Sub(now)
			break
		}
		buf = append(buf, q.items.pop())
	}
	if len(q.items) == 0 && cap(q.items) > keptQueueCap {
		q.items = nil // a large firing's capacity is not kept
	}
	return buf, next, q.closed
}

// backupHeap orders backup tasks by due time: a binary heap, as
// container/heap keeps one, without its interface, which boxed every task
// pushed and popped (two allocations per backup claim).
type backupHeap []backupTask

// push adds bt.
func (h *backupHeap) push(bt backupTask) {
	*h = append(*h, bt)
	h.up(len(*h) - 1)
}

// pop removes and returns the task due first; h must not be empty.
func (h *backupHeap) pop() backupTask {
	old := *h
	n := len(old) - 1
	old[0], old[n] = old[n], old[0]
	h.down(0, n)
	bt := old[n]
	old[n] = backupTask{}
	*h = old[:n]
	return bt
}

func (h backupHeap) less(i, j int) bool { return h[i].due.Before(h[j].due) }

func (h backupHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2 // parent
		if !h.less(j, i) {
			break
		}
		h[i], h[j] = h[j], h[i]
		j = i
	}
}

func (h backupHeap) down(i, n int) {
	for {
		j := 2*i + 1
		if j >= n {
			return
		}
		if r := j + 1; r < n && h.less(r, j) {
			j = r // the earlier child
		}
		if !h.less(j, i) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
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
	var buf []backupTask
	for {
		due, next, closed := q.take(s.cfg.clock.Now(), buf[:0])
		if len(due) > 0 {
			if closed {
				for _, bt := range due {
					bt.t.job.deliver(input{kind: inClaimed, f: bt.t.f, err: errClaimStopped})
				}
			} else {
				s.checkBackups(due)
			}
		}
		if closed {
			return
		}
		buf = due
		if cap(buf) > keptQueueCap {
			buf = nil // a large firing's capacity is not kept
		}
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

// checkBackups claims the backup tasks bts whose round is still unclaimed.
// With a lease.RoundReader, one pipelined read of their round records
// tells which: a task whose round was claimed is answered errBackupClaimed
// (a skip, as when its acquire is refused); the others, and all of them
// without a RoundReader or when the read fails, go to the claim workers,
// whose acquire decides. Only a scheduled firing or a catch-up is checked
// so: a trigger's round is the store's to choose, and any other firing
// (an attempt of a round already claimed) is for its acquire to decide.
//
// The job's last run is read for the tasks decided at this look, not for
// those put back to wait: a task's occurrence that came due while the job
// ran is skipped at the look that decides it. Read at every look, it was
// 5.4% of a replica's CPU samples at 10,000 jobs x 3 (a GET and a JSON
// decode per task and look, for first choices that claimed late).
//
// A first choice that is seen claiming is waited for: when some of the
// tasks of a first choice have their round claimed and others not, it is
// alive and working through its firing (a loaded replica claims the jobs
// of a large firing group one batch after another), so its unclaimed
// scheduled tasks are looked at again a while later (backupRecheck), as
// long as their until allows, instead of adding a second claim per
// occurrence to the load that made it late. A first choice that claimed
// none of them (stalled, dead, partitioned) is not waited for.
func (s *Scheduler) checkBackups(bts []backupTask) {
	rr, ok := s.store.(lease.RoundReader)
	if !ok {
		for _, bt := range bts {
			s.push(bt.t)
		}
		return
	}
	keys := make([]string, 0, len(bts))
	occs := make([]int64, 0, len(bts))
	for _, bt := range bts {
		if roundChecked(bt.t.f) {
			keys = append(keys, bt.t.job.key)
			occs = append(occs, bt.t.f.ms)
		}
	}
	rounds := make([]int64, len(keys))
	var err error
	if len(keys) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), MaxCleanup)
		err = rr.LastRounds(ctx, keys, rounds)
		cancel()
	}
	// read(i): keys[i]'s round was read. A record the store cannot read
	// leaves its task alone unknown (lease.UnreadableKeysError); any other
	// error, every task. An unknown task is claimed, as without a reader:
	// its acquire decides.
	read := readKeys(err)
	now := s.cfg.clock.Now()
	// The first choices seen claiming, and the tasks put back to wait for
	// them (by index into keys).
	claiming := map[string]bool{}
	waiting := map[int]bool{}
	{
		i := 0
		for _, bt := range bts {
			if !roundChecked(bt.t.f) {
				continue
			}
			if read(i) && rounds[i] >= occs[i] && bt.first != "" {
				claiming[bt.first] = true
			}
			i++
		}
	}
	// The rounds still unclaimed: the first choice is gone, or late, or
	// it found the job running (a refused acquire records no round). The
	// span of the job's last run tells the last: a scheduled occurrence
	// that came due while the job ran is skipped, as the first choice
	// skipped it (OverlapSkip), not run late once the run ended within
	// the grace. A catch-up is claimed: such occurrences are what it is
	// for.
	var open []int // indexes into keys
	{
		i := 0
		for _, bt := range bts {
			if !roundChecked(bt.t.f) {
				continue
			}
			if read(i) && rounds[i] < occs[i] {
				open = append(open, i)
				if bt.t.f.kind == firedBySchedule && claiming[bt.first] && now.Before(bt.until) {
					waiting[i] = true
				}
			}
			i++
		}
	}
	// The last runs of the tasks decided at this look (see above).
	running := map[int]bool{}
	var decide []int // open tasks not put back, by index into keys
	for _, i := range open {
		if !waiting[i] {
			decide = append(decide, i)
		}
	}
	if len(decide) > 0 {
		okeys := make([]string, len(decide))
		for n, i := range decide {
			okeys[n] = keys[i]
		}
		spans := make([]lease.RunSpan, len(decide))
		ctx, cancel := context.WithTimeout(context.Background(), MaxCleanup)
		ran := readKeys(rr.LastRuns(ctx, okeys, spans))
		cancel()
		for n, i := range decide {
			if ran(n) && spans[n].Covers(time.UnixMilli(occs[i])) {
				running[i] = true
			}
		}
	}
	i := 0
	for _, bt := range bts {
		t := bt.t
		if !roundChecked(t.f) {
			s.push(t)
			continue
		}
		k := i
		i++
		switch {
		case read(k) && rounds[k] >= t.f.ms:
			t.job.deliver(input{kind: inClaimed, f: t.f, err: errBackupClaimed})
		case running[k] && t.f.kind == firedBySchedule: // a catch-up is for such occurrences
			t.job.deliver(input{kind: inClaimed, f: t.f, err: errBackupLocked})
		case waiting[k]:
			bt.due = minTime(now.Add(backupRecheck), bt.until)
			s.backups.put(bt)
		default:
			s.push(t)
		}
	}
}

// readKeys returns whether a read of many keys that returned err answered
// key i: every key when err is nil, every key but those an
// *lease.UnreadableKeysError names, and none on any other error.
func readKeys(err error) func(i int) bool {
	unread, rest := lease.UnreadKeys(err)
	if !rest {
		return func(int) bool { return false }
	}
	return func(i int) bool { return !slices.Contains(unread, i) }
}

// backupRecheck is how long a backup waits before it looks again at the
// rounds of a first choice seen claiming.
const backupRecheck = BackupGrace / 2

// roundChecked reports whether a backup reads the round of firing f
// before it claims: a scheduled firing or a catch-up, whose acquire
// claims the round of its occurrence for the first time.
func roundChecked(f firing) bool {
	return f.kind == firedBySchedule || f.kind == firedByCatchUp
}
