package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/cronguard/cronguard/lease"
)

// A job's lifecycle on this replica has one owner: the job. Everything
// that can happen to it (a firing, a catch-up, a trigger, a claim's
// answer, a run's end, Remove, Register again, Shutdown) is an input to
// job.deliver (an open occurrence to resume, too), which takes the job's
// lock, lets transition decide from the job's state alone, and then carries out what was decided, outside the
// lock: queue a claim, start a run, report a skip. No other code reads or
// writes the state below.
//
// One occurrence, top to bottom: fire.go (schedule and firing groups) →
// claim.go (acquire and its answers) → run.go (the guarded call, heartbeat,
// timeout) → finish.go (outcome, release, what happens next).

// job is a job's owner on this replica. It outlives Remove while a claim
// or run of the job is in progress, so that Register of the same name
// meets the run still going (a replica never runs two of a job at once).
type job struct {
	s    *Scheduler
	name string
	key  string // lease key: prefix + name, NFC

	// stats are the job's running totals (atomic counters: telemetry, not
	// state; nothing decides on them).
	stats jobCounters

	mu sync.Mutex
	st jobState
}

// jobState is the job's state; only transition reads or writes it, with
// job.mu held. Its flags sit together at the end, so that padding does
// not grow every job's heap.
type jobState struct {
	reg       *registration // nil once removed
	lastFired int64         // the latest occurrence (Unix ms) gocron fired here

	// The claim: at most one firing of the job is queued for a claim
	// worker, being claimed, or waiting its turn (OverlapBufferOne:
	// forRun, for the run here; rare.cancelWait, for the lease elsewhere), and
	// at most one more waits behind it (claim_rare.go).
	claim firing
	rare  *claimRare // nil unless a firing waits behind the claim, or the claim waits elsewhere

	run     *run     // the run executing here, or nil
	lastRun *lastRun // the last run this replica ran, for Jobs (last_run.go)

	stopping bool // Shutdown: nothing new starts
	claiming bool
	forRun   bool // the claim waits for the run here to end (OverlapBufferOne)
	// Work that waits for the job to go idle here: the latest occurrence
	// to catch up, and a trigger waiting in the store. A catch-up goes
	// first: a trigger claims a round after it.
	catchUpDue bool
	triggerDue bool
	// triggerRetry: a trigger found the job's lease held elsewhere, or
	// the store failing; a timer asks again when that lease runs out (in
	// case its holder died and never hands the trigger on), or a little
	// later.
	triggerRetry bool
	// triggerHere: the trigger that waits (triggerDue) waited for the run
	// here, whose release said so. No other replica looks for it by
	// itself (those that found the job locked ask again only when that
	// lease runs out), so this one claims it at once, whatever its role.
	triggerHere bool
	// catchUpRetry: a catch-up found the job's lease held elsewhere; a
	// timer asks again when that lease runs out (the holder's replica may
	// owe no catch-up: its clock had not reached the occurrence when its
	// run ended).
	catchUpRetry bool
}

// input is what can happen to a job.
type input struct {
	kind  inputKind
	f     firing       // inFiring, inCatchUp, inClaimed, inResume
	lease *lease.Lease // inClaimed: the lease won
	err   error        // inClaimed: the store's answer
	run   *run         // inRunEnded
	n     int          // inRunEnded: triggers that wait in the store; triggersUnknown or triggersUnread when it did not say
	reg   *registration
}

type inputKind uint8

const (
	inFiring       inputKind = iota + 1 // gocron fired an occurrence
	inCatchUp                           // an occurrence may need catching up (Start, Register, a long run's end)
	inTrigger                           // a trigger waits in the store (control channel, resync, a release)
	inClaimed                           // the store answered the claim (or its wait ended)
	inRunEnded                          // the run here returned and released its lease
	inRemove                            // Remove
	inRegister                          // Register again while a removed run still goes
	inShutdown                          // Shutdown: firings stopped
	inTriggerRetry                      // the timer set when a trigger found the lease held elsewhere
	inCatchUpRetry                      // the timer set when a catch-up found the lease held elsewhere
	inResume                            // an occurrence of the job is open (the fleet's index, a message): f.ms is its round
	inUnclaimed                         // the replica preferred for occurrence f.ms cannot run it (a message)
)

// act is one thing transition decided to do, done outside the lock.
type act struct {
	kind   actKind
	f      firing
	reason SkipReason
	err    error
	lease  *lease.Lease
	run    *run
	ctx    context.Context // actWait: ends the wait (Remove, Shutdown)
	d      time.Duration   // actRetryTrigger
	msg    string
}

type actKind uint8

const (
	actClaim        actKind = iota + 1 // hand f to the claim workers
	actWait                            // wait for the job's lease elsewhere, then claim f (OverlapBufferOne)
	actSkip                            // report f skipped for reason
	actNote                            // a debug line: msg
	actFail                            // report the claim of f failed (err)
	actStart                           // start run
	actGiveBack                        // release a lease won but not run, then report the skip (reason, if any)
	actHandOn                          // a trigger waits that this replica will not run: announce it to the fleet
	actForget                          // the job is removed and idle: drop its owner
	actRetryTrigger                    // ask for the trigger again after d (the lease held elsewhere runs out)
	actRetryCatchUp                    // try the catch-up again after d (the lease held elsewhere runs out)
	actHandOver                        // announce that f, which this replica is preferred for, is left unclaimed
	actRefire                          // fire f again at its occurrence: its claim ahead found the job busy (claim_ahead.go)
)

// acts is what one transition decided; it holds no more than a transition
// can decide, so deciding allocates nothing.
type acts struct {
	a [5]act
	n int
}

func (as *acts) add(a act) { as.a[as.n] = a; as.n++ }

// deliver is the only way into a job's state: transition decides under the
// lock, and what it decided is done after.
func (j *job) deliver(in input) {
	var as acts
	j.decideInto(in, &as)
	for i := range as.n {
		j.s.do(j, as.a[i])
	}
}

// decide runs one transition under the job's lock and returns what it
// decided, for the caller to do.
func (j *job) decide(in input) acts {
	var as acts
	j.decideInto(in, &as)
	return as
}

// decideInto is decide writing into as: deliver, on every run's
// goroutine, does not copy the decisions from frame to frame (its stack
// grew at every run).
func (j *job) decideInto(in input, as *acts) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.transition(in, as)
}

// do carries out one thing a job's transition decided.
func (s *Scheduler) do(j *job, a act) {
	switch a.kind {
	case actClaim:
		s.dispatch(j, a.f) // the preferred replica's gate (backup.go)
	case actWait:
		s.workers.Add(1)
		go func() {
			defer s.workers.Done()
			l, err := s.waitTurn(a.ctx, j, a.f)
			j.deliver(input{kind: inClaimed, f: a.f, lease: l, err: err})
		}()
	case actSkip:
		if a.reason == SkipPaused {
			s.reportMissedBeforePause(j, a.f, a.err)
		}
		s.skip(j, s.occ(a.f), a.reason, a.err)
	case actNote:
		s.debug(j, s.occ(a.f), a.msg)
	case actFail:
		s.log.Error("job lease acquire failed; occurrence not run here",
			slog.String("job", j.name), slog.Time("occurrence", s.occ(a.f)), slog.Any("error", a.err))
		s.emit(j, Event{Kind: EventAcquireFailed, Job: j.name, Occurrence: s.occ(a.f), Err: a.err})
	case actStart:
		go s.execute(a.run)
	case actGiveBack:
		s.giveBack(j, a.f, a.lease, a.reason)
	case actHandOn:
		s.handOn(j)
	case actForget:
		s.forget(j)
	case actRetryTrigger:
		s.cfg.clock.AfterFunc(max(a.d, time.Millisecond), func() { j.deliver(input{kind: inTriggerRetry}) })
	case actRetryCatchUp:
		s.cfg.clock.AfterFunc(max(a.d, time.Millisecond), func() { j.deliver(input{kind: inCatchUpRetry}) })
	case actHandOver:
		s.handOver(j, a.f)
	case actRefire:
		f := a.f
		f.early, f.onTime, f.reg = false, true, nil
		s.cfg.clock.AfterFunc(max(s.occ(f).Sub(s.cfg.clock.Now()), time.Millisecond), func() { j.deliver(input{kind: inFiring, f: f}) })
	}
}

// transition is the job's state machine: every decision about the job.
func (j *job) transition(in input, as *acts) {
	st := &j.st
	switch in.kind {
	case inFiring:
		f := in.f
		occ := f.ms
		switch {
		case st.reg == nil || st.stopping:
			as.add(act{kind: actNote, f: f, msg: "firing of a removed or stopping job: dropped"})
			return
		case occ < st.lastFired || occ == st.lastFired && !f.onTime:
			as.add(act{kind: actNote, f: f, msg: "duplicate firing of an occurrence already handled here: dropped"})
			return
		}
		st.lastFired = occ
		f.reg = st.reg
		j.offer(as, f)

	case inCatchUp, inCatchUpRetry:
		if in.kind == inCatchUpRetry {
			st.catchUpRetry = false
		}
		f, ok := j.catchUpFiring()
		switch {
		case !ok || st.stopping:
		case st.claiming || st.run != nil:
			st.catchUpDue = true // tried when the job goes idle here
		default:
			j.startClaim(as, f)
		}

	case inTrigger, inTriggerRetry:
		if in.kind == inTriggerRetry {
			st.triggerRetry = false
		}
		switch {
		case st.reg == nil || st.stopping:
			// Another replica that has the job takes it (the message
			// reached every replica).
		case st.claiming || st.run != nil:
			st.triggerDue = true
		default:
			j.startClaim(as, firing{kind: firedByTrigger, reg: st.reg})
		}

	case inResume:
		switch {
		case st.reg == nil || st.stopping || st.claiming || st.run != nil:
			// Busy here, or gone: the fleet's index offers it again, and
			// the other replicas that have the job try meanwhile.
		default:
			if _, ok := j.s.attemptsOf(st.reg, time.UnixMilli(in.f.ms)); !ok {
				as.add(act{kind: actNote, f: in.f, msg: "open occurrence not resumed: the job here gets one attempt per occurrence"})
				return
			}
			f := in.f
			f.reg = st.reg
			j.startClaim(as, f)
		}

	case inUnclaimed:
		f, ok := j.unclaimedFiring(in.f.ms)
		switch {
		case !ok || st.claiming || st.run != nil:
			// Not the job's latest occurrence, removed or stopping here,
			// or busy here: the other replicas that have the job take it.
		default:
			j.startClaim(as, f)
		}

	case inClaimed:
		j.claimed(as, in)

	case inRunEnded:
		st.run = nil
		r := in.run
		switch {
		case in.n > 0:
			st.triggerDue, st.triggerHere = true, true
		case in.n < 0 && st.reg != nil && !st.stopping && !st.triggerRetry:
			// The store did not say whether triggers wait (the release
			// failed, or the count did not come): one queued behind the
			// run's lease is told of to no replica (the release would
			// have told this one, and the others ask again only if they
			// heard of it). Ask once the lease can no longer be live
			// (its release failed), or at once (it was released).
			var d time.Duration
			if in.n == triggersUnknown {
				d = r.deadline.Load().Add(lease.ExpiryTolerance).Sub(j.s.storeClock.Now())
			}
			st.triggerRetry = true
			as.add(act{kind: actRetryTrigger, d: d})
		}
		if r.reg.catchUp > 0 {
			if latest, ok := r.reg.plan.prev(j.s.cfg.clock.Now()); ok && latest.After(r.info.Occurrence) {
				st.catchUpDue = true // occurrences came due while it ran, and found it running
			}
		}
		switch {
		case st.claiming && st.forRun: // a buffered occurrence waited for this run
			st.forRun = false
			if j.s.cfg.clock.Now().Before(j.s.retryUntil(st.claim)) {
				as.add(act{kind: actClaim, f: st.claim})
				break
			}
			// Its wait ended before the run did: skipped as the job's
			// lease was held (by the run here).
			st.claiming = false
			as.add(act{kind: actSkip, f: st.claim, reason: SkipLocked})
			j.proceed(as)
		case !st.claiming:
			j.idle(as)
		}

	case inRemove:
		st.reg = nil
		if next, ok := st.nextFiring(); ok {
			// It came due while the job was registered here and waits
			// behind the job's claim here: no later claim of the removed
			// job reports it, so it is reported skipped, as the claim it
			// waits behind is when it waits (dropClaimWaiting).
			as.add(act{kind: actSkip, f: next, reason: SkipLocked})
		}
		st.dropNext()
		st.catchUpDue = false
		j.dropClaimWaiting(as)
		j.idle(as)

	case inRegister:
		st.reg = in.reg // the removed job's run (or claim) still goes: it is the same job

	case inShutdown:
		st.stopping = true
		if next, ok := st.nextFiring(); ok {
			as.add(act{kind: actSkip, f: next, reason: SkipShutdown})
			st.dropNext()
		}
		st.catchUpDue = false
		if st.claiming && st.forRun {
			st.claiming, st.forRun = false, false
			as.add(act{kind: actSkip, f: st.claim, reason: SkipShutdown})
		} // a claim queued, in flight or waiting elsewhere answers by itself (Shutdown ended its wait)
		j.idle(as)
	}
}

// offer takes a firing of the schedule: claimed now, waiting behind the
// claim in progress (replacing one that waited: SkipOverrun), waiting for
// the run here (OverlapBufferOne), or skipped because the job runs here.
func (j *job) offer(as *acts, f firing) {
	st := &j.st
	switch {
	case st.claiming:
		if prev, ok := st.nextFiring(); ok {
			as.add(act{kind: actSkip, f: prev, reason: SkipOverrun})
		}
		st.setNext(f)
	case st.run != nil && f.reg.overlap == OverlapBufferOne:
		// Waits for the run here to end before it asks the store: the
		// run's lease may be gone before its heartbeat noticed, and a
		// claim now would win an occurrence this replica cannot run yet.
		st.claiming, st.claim, st.forRun = true, f, true
		as.add(act{kind: actNote, f: f, msg: "occurrence waits for the job's run here to end (overlap policy: buffer one)"})
		j.handOverIfUnrenewed(as, f) // the run here may outlast the wait
	case st.run != nil && f.early:
		// It may end before the occurrence is due: look again then.
		as.add(act{kind: actRefire, f: f})
	case st.run != nil:
		// An earlier run still executes here: this replica cannot run the
		// occurrence, so it must not claim it (a claimed occurrence is
		// skipped by every other replica and never reported missed).
		as.add(act{kind: actSkip, f: f, reason: SkipRunning})
		j.handOverIfUnrenewed(as, f)
	default:
		j.startClaim(as, f)
	}
}

// handOverIfUnrenewed hands occurrence f over to the replicas that have
// the job (actHandOver) when the job's run here, which keeps this replica
// from running f now, no longer renews its lease (lost, or past its
// timeout) and this replica is chosen for f. The lease is gone or going,
// and f is for another replica to run. As its first choice, this replica
// leaves it to the backup, which claims it after its grace, unless the
// backup is gone too (its registry entry has not lapsed yet); as its
// backup, to the first choice, unless that one is gone or stalled. Then
// nobody would run it, the third replica being chosen for nothing: tell
// them all. A healthy first choice still claims it first (the others hear
// of it a publish later), and the round lets one run it; with
// OverlapBufferOne this replica's own claim, after its run here, is one
// of them.
func (j *job) handOverIfUnrenewed(as *acts, f firing) {
	if j.st.run.unrenewed.Load() && chosen(j.s.view.Load().role(j.key, f.ms)) {
		as.add(act{kind: actHandOver, f: f})
	}
}

func (j *job) startClaim(as *acts, f firing) {
	j.st.claiming, j.st.claim = true, f
	as.add(act{kind: actClaim, f: f})
}

// claimed acts on the store's answer to the claim.
func (j *job) claimed(as *acts, in input) {
	st := &j.st
	f := in.f
	st.claiming = false
	if cancel := st.cancelWait(); cancel != nil {
		cancel() // the wait answered: its context, a child of claimCtx until cancelled, goes with it
	}
	st.setCancelWait(nil)
	switch {
	case in.err == nil && (st.reg == nil || st.stopping):
		reason := SkipShutdown
		if !st.stopping && in.lease.Attempts.Max > 0 {
			// Remove: the occurrence won stays open (its lease is given
			// back without a status), for a replica that has the job to
			// resume, or for the fleet to give up at its deadline.
			reason = 0
		} else if !st.stopping {
			// Remove: its round is claimed, so no later claim's ledger
			// reports it; reported as the occurrences Remove drops while
			// they wait for the lease are.
			reason = SkipLocked
		}
		as.add(act{kind: actGiveBack, f: f, lease: in.lease, reason: reason})
	case in.err == nil && st.run != nil: // unreachable: one claim at a time, none while a run goes
		as.add(act{kind: actGiveBack, f: f, lease: in.lease, reason: SkipRunning})
	case in.err == nil:
		f.reg = st.reg // registered again since the claim was sent: the new registration runs
		st.run = j.s.newRun(j, f, in.lease)
		as.add(act{kind: actStart, run: st.run})
	case f.kind == firedBySchedule && !f.waited && f.reg.overlap == OverlapBufferOne &&
		isLocked(in.err) && st.reg != nil && !st.stopping:
		// The job runs elsewhere: wait for its release, then claim.
		st.claiming, st.claim = true, f
		ctx, cancel := context.WithCancel(j.s.claimCtx)
		st.setCancelWait(cancel)
		f.waited = true
		as.add(act{kind: actWait, f: f, ctx: ctx})
		return
	case f.early && st.reg != nil && !st.stopping &&
		(isLocked(in.err) || errors.Is(in.err, lease.ErrClockSkew)):
		// Claimed ahead: the run that holds the lease may end before the
		// occurrence is due, and the store's clock will have reached it.
		as.add(act{kind: actRefire, f: f})
	default:
		answer(as, f, in.err, st.stopping, st.reg == nil)
		var le *lease.LockedError
		if f.kind == firedByCatchUp && !st.catchUpRetry && st.reg != nil && !st.stopping && errors.As(in.err, &le) {
			// The job runs elsewhere: the replica running it may owe no
			// catch-up (its clock had not reached the occurrence when its
			// run ended), so try again once its lease runs out, while the
			// occurrence is still within the window (catchUpFiring).
			st.catchUpRetry = true
			as.add(act{kind: actRetryCatchUp, d: le.Remaining})
		}
		switch {
		case f.kind != firedByTrigger || st.triggerRetry || st.reg == nil || st.stopping:
		case errors.As(in.err, &le):
			// The holder takes the trigger when its run ends, or hands
			// it on when it stops; if it dies instead, ask again once
			// its lease has run out.
			st.triggerRetry = true
			as.add(act{kind: actRetryTrigger, d: le.Remaining})
		case transient(in.err):
			// The store failed for longer than the claim's retries; the
			// trigger still waits there (no message comes again): ask
			// again until the store answers, which runs it, or says it
			// ran elsewhere or lapsed.
			st.triggerRetry = true
			as.add(act{kind: actRetryTrigger, d: retryMax})
		}
	}
	j.proceed(as)
}

// proceed runs when a claim ended: the firing that waited behind it is
// offered, else the job goes idle.
func (j *job) proceed(as *acts) {
	st := &j.st
	if next, ok := st.nextFiring(); ok && st.reg != nil && !st.stopping {
		st.dropNext()
		j.offer(as, next)
		return
	}
	st.dropNext()
	j.idle(as)
}

// idle runs when nothing of the job is claimed or running here: a due
// catch-up first, then a due trigger; a removed or stopping job hands a
// waiting trigger on to the fleet and, removed, is forgotten.
func (j *job) idle(as *acts) {
	st := &j.st
	if st.claiming || st.run != nil {
		return
	}
	if st.reg == nil || st.stopping {
		if st.triggerDue {
			st.triggerDue, st.triggerHere = false, false
			as.add(act{kind: actHandOn})
		}
		if st.reg == nil {
			as.add(act{kind: actForget})
		}
		return
	}
	if st.catchUpDue {
		st.catchUpDue = false
		if f, ok := j.catchUpFiring(); ok {
			j.startClaim(as, f)
			return
		}
	}
	if st.triggerDue {
		j.startClaim(as, firing{kind: firedByTrigger, reg: st.reg, atOnce: st.triggerHere})
		st.triggerDue, st.triggerHere = false, false
	}
}

// dropClaimWaiting ends a claim that waits (for the run here, or for the
// job's lease elsewhere); a claim queued or in flight answers by itself.
// A waiting occurrence came due while the job was registered here, and no
// later claim of the removed job will report it missed: it is reported
// skipped, as when its wait ends without the lease (SkipLocked).
func (j *job) dropClaimWaiting(as *acts) {
	st := &j.st
	switch {
	case st.forRun:
		st.claiming, st.forRun = false, false
		as.add(act{kind: actSkip, f: st.claim, reason: SkipLocked})
	case st.cancelWait() != nil:
		st.cancelWait()() // its wait ends with lease.ErrAborted, and answers
	}
}

// unclaimedFiring returns the firing of occurrence ms, handed over by the
// replica preferred for it: claimed at once, whatever this replica's role,
// if ms is the job's latest occurrence and the job is registered here and
// not stopping.
func (j *job) unclaimedFiring(ms int64) (firing, bool) {
	reg := j.st.reg
	if reg == nil || j.st.stopping {
		return firing{}, false
	}
	occ, ok := reg.plan.prev(j.s.cfg.clock.Now())
	if !ok || occ.UnixMilli() != ms {
		return firing{}, false
	}
	_, maxSkew := reg.plan.occurrence(occ)
	f := newFiring(occ, maxSkew, firedBySchedule, reg)
	f.atOnce = true
	return f, true
}

// catchUpFiring returns the job's latest occurrence at or before now, if
// it lies within the job's catch-up window (WithCatchUp).
func (j *job) catchUpFiring() (firing, bool) {
	reg := j.st.reg
	if reg == nil || reg.catchUp <= 0 {
		return firing{}, false
	}
	now := j.s.cfg.clock.Now()
	occ, ok := reg.plan.prev(now)
	if !ok || now.Sub(occ) > reg.catchUp {
		return firing{}, false
	}
	_, maxSkew := reg.plan.occurrence(occ)
	return newFiring(occ, maxSkew, firedByCatchUp, reg), true
}

// info returns what Jobs reports of the job.
func (j *job) info() (reg *registration, running bool, last *RunInfo) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.st.lastRun != nil {
		last = j.st.lastRun.info(j.s.cfg.location)
	}
	return j.st.reg, j.st.run != nil, last
}

// registered returns the job's registration, nil once removed.
func (j *job) registered() *registration {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.st.reg
}

// removable reports whether the job is removed and nothing of it goes on
// here, so that its owner can be dropped.
func (j *job) removable() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.st.reg == nil && !j.st.claiming && j.st.run == nil
}

// running returns the run executing here, or nil.
func (j *job) running() *run {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.st.run
}

// busy reports whether a claim of the job is in progress here (Shutdown's
// error names such jobs).
func (j *job) busy() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.st.claiming
}

// setLastRun records the run's outcome as the job's last run here, in
// place after the first (info copies it under the lock): no allocation
// per run.
func (j *job) setLastRun(ri RunInfo) {
	j.mu.Lock()
	if j.st.lastRun == nil {
		j.st.lastRun = new(lastRun)
	}
	j.st.lastRun.set(ri)
	j.mu.Unlock()
}
