package checker

import (
	"sort"
	"time"

	"github.com/cronguard/cronguard/faults/history"
)

// leaseRec is one recorded lease: its acquire and what followed.
type leaseRec struct {
	replica    string
	job        string
	fence      uint64
	occurrence int64
	acquiredAt int64 // server ms
	expiresAt  int64 // last confirmed, server ms
	releasedAt int64 // server ms lower bound (Release send wall), 0 if not released
	// mayEndAt is the server ms lower bound of a Release whose outcome is
	// unknown: its reply was lost, or the replica was killed after its run
	// returned. 0 if none.
	mayEndAt int64
	// extendMayRunUntil is the latest server ms at which an Extend whose
	// outcome its replica never learned (it was in flight when the replica
	// was paused or killed) may have run, 0 if none: see unrecordedExtends.
	extendMayRunUntil int64
	sent, mono        int64 // acquire send and reply, CLOCK_MONOTONIC ns

	runStart, runEnd, ctxDone int64 // CLOCK_MONOTONIC ns, 0 if not recorded
	runEndWall                int64 // Unix ns, 0 if not recorded
	releaseSeen               bool  // a release or release_error was recorded
	cause                     string

	// Completion (7): the lease's attempt at its occurrence (1 for the
	// first), the earlier occurrence its acquire superseded (0: none),
	// how its run ended, and what its release did to the occurrence.
	attempt    int
	superseded int64
	runErr     string // the run's error; "" if it returned nil (or did not return)
	close      string // the Close of a release that succeeded, "" if none
	releasedOK int64  // Unix ns when a release that succeeded was recorded, 0 if none
	writeWall  int64  // Unix ns when its accepted write was recorded, 0 if none

	// ops are the acquire (first) and the extends that succeeded, and
	// releases the releases that succeeded, with when the server may have
	// run them: what a data loss may have kept or discarded.
	ops      []leaseOp
	releases []leaseOp
}

// end is the end of the lease's validity in server ms: the earliest it may
// have ended, counting a Release whose outcome is unknown as done.
func (l *leaseRec) end() int64 {
	end := l.expiresAt
	for _, at := range [...]int64{l.releasedAt, l.mayEndAt} {
		if at != 0 && at < end {
			end = at
		}
	}
	return end
}

// ttl is the lease's TTL, from its acquire's expiry.
func (l *leaseRec) ttl() int64 {
	if len(l.ops) == 0 {
		return 0
	}
	return l.ops[0].expiresAt - l.ops[0].sent
}

// blocksUntil is when the lease stops blocking an acquire, in server ms:
// its release, or its expiry plus the server's tolerance. It is the latest
// the lease may have ended: a Release whose outcome is unknown may not have
// run, and an Extend whose outcome is unknown may have moved the expiry to
// the instant it ran plus ttl, the lease's TTL.
func (l *leaseRec) blocksUntil(ttl time.Duration) int64 {
	expires := l.expiresAt
	if l.extendMayRunUntil != 0 {
		expires = max(expires, l.extendMayRunUntil+ttl.Milliseconds())
	}
	if l.releasedAt != 0 && l.releasedAt < expires {
		return l.releasedAt
	}
	return expires + Tolerance.Milliseconds()
}

// fault is one injected fault, or a stall the harness recorded, with both
// clocks.
type fault struct {
	kind, target       string
	startMono, endMono int64
	startWall, endWall int64 // Unix ns
	recoveredWall      int64 // for kill: the restarted replica's Ready; else endWall
	recoveredMono      int64
	ended              bool
}

// hits reports whether f affected replica: it targeted it, or it is a
// stall (which the checker takes for a pause of every replica).
func (f *fault) hits(replica string) bool {
	return f.target == replica || f.kind == history.FaultStall
}

// pauses reports whether f paused replica: a SIGSTOP of it, or a stall.
func (f *fault) pauses(replica string) bool {
	return f.hits(replica) && (f.kind == history.FaultStop || f.kind == history.FaultStall)
}

// redisDown reports whether f restarted redis-server.
func (f *fault) redisDown() bool {
	switch f.kind {
	case history.FaultRedisRestart, history.FaultRedisWipe, history.FaultRedisRollback:
		return true
	}
	return false
}

type key struct {
	job string
	occ int64
}

type indexed struct {
	acquires []*leaseRec                     // in acquire reply order (Mono)
	byFence  map[string]map[uint64]*leaseRec // job -> fence
	attempts map[key][]history.Event         // acquire, acquire_error and skip by occurrence
	runs     map[key][]*leaseRec
	faults   []*fault    // injected faults and stalls, in start order
	losses   []*dataLoss // data losses, in order
	replicas map[string]bool
	ready    map[string][]int64 // replica -> Ready walls (ns)
	shutdown int64              // first Shutdown wall (ns)
	// history holds each replica's (and the harness's) events in Mono
	// order.
	history map[string][]history.Event
	// extendErrors are the failed Extends, in Mono order.
	extendErrors []history.Event

	// Completion (7), by occurrence: the recorded leases (acquire
	// order), the given_up reports, the interrupted reports, the store's
	// marks of given up (an acquire that superseded it, a resume told
	// given_up first, a release that closed it given up, a GiveUp that
	// marked it) and the writes refused as duplicates.
	leasesOf    map[key][]*leaseRec
	givenUp     map[key][]history.Event
	interrupted map[key][]history.Event
	marks       map[key][]history.Event
	dupRejects  map[key][]history.Event
}

// index reads events into an indexed run; slack is Input.Slack.
func index(events []history.Event, slack time.Duration) *indexed {
	ix := &indexed{
		byFence:  map[string]map[uint64]*leaseRec{},
		attempts: map[key][]history.Event{},
		runs:     map[key][]*leaseRec{},
		replicas: map[string]bool{},
		ready:    map[string][]int64{},
		history:  map[string][]history.Event{},

		leasesOf:    map[key][]*leaseRec{},
		givenUp:     map[key][]history.Event{},
		interrupted: map[key][]history.Event{},
		marks:       map[key][]history.Event{},
		dupRejects:  map[key][]history.Event{},
	}
	evs := append([]history.Event(nil), events...)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Mono < evs[j].Mono })
	open := map[string]*fault{}       // kind+target -> open fault
	byLease := map[string]*leaseRec{} // replica and short lease ID
	get := func(e history.Event) *leaseRec {
		if e.Job == "" && e.Lease != "" {
			// A release retried after its first attempt, recorded
			// without its job by an older recording store.
			return byLease[e.Replica+" "+e.Lease]
		}
		if m := ix.byFence[e.Job]; m != nil {
			return m[e.Fence]
		}
		return nil
	}
	for _, e := range evs {
		ix.history[e.Replica] = append(ix.history[e.Replica], e)
		switch e.Kind {
		case history.Ready:
			ix.replicas[e.Replica] = true
			ix.ready[e.Replica] = append(ix.ready[e.Replica], e.Wall)
			for _, f := range ix.faults {
				if f.kind == history.FaultKill && f.target == e.Replica && f.ended && f.recoveredWall == 0 {
					f.recoveredWall, f.recoveredMono = e.Wall, e.Mono
				}
			}
		case history.Shutdown:
			if ix.shutdown == 0 {
				ix.shutdown = e.Wall
			}
		case history.FaultStart:
			f := &fault{kind: e.Fault, target: e.Target, startMono: e.Mono, startWall: e.Wall}
			ix.faults = append(ix.faults, f)
			open[e.Fault+"/"+e.Target] = f
		case history.DataLost:
			ix.losses = append(ix.losses, lossFrom(e))
		case history.FaultEnd:
			if f := open[e.Fault+"/"+e.Target]; f != nil {
				f.endMono, f.endWall, f.ended = e.Mono, e.Wall, true
				if f.kind != history.FaultKill {
					f.recoveredWall, f.recoveredMono = e.Wall, e.Mono
				}
				delete(open, e.Fault+"/"+e.Target)
			}
		case history.Acquire:
			l := &leaseRec{replica: e.Replica, job: e.Job, fence: e.Fence, occurrence: e.Occurrence,
				acquiredAt: e.AcquiredAt, expiresAt: e.ExpiresAt, sent: e.Sent, mono: e.Mono,
				ops:     []leaseOp{{sent: e.AcquiredAt, done: e.AcquiredAt, expiresAt: e.ExpiresAt}},
				attempt: attemptOf(e), superseded: e.Superseded}
			ix.acquires = append(ix.acquires, l)
			if ix.byFence[e.Job] == nil {
				ix.byFence[e.Job] = map[uint64]*leaseRec{}
			}
			ix.byFence[e.Job][e.Fence] = l
			byLease[e.Replica+" "+e.Lease] = l
			k := key{e.Job, e.Occurrence}
			ix.attempts[k] = append(ix.attempts[k], e)
			ix.leasesOf[k] = append(ix.leasesOf[k], l)
			if e.Superseded != 0 {
				ix.marks[key{e.Job, e.Superseded}] = append(ix.marks[key{e.Job, e.Superseded}], e)
			}
		case history.AcquireError, history.Skip:
			k := key{e.Job, e.Occurrence}
			ix.attempts[k] = append(ix.attempts[k], e)
			if e.Kind == history.AcquireError && e.Reason == history.AcquireGivenUp && e.First {
				ix.marks[k] = append(ix.marks[k], e)
			}
		case history.GiveUpMarked:
			k := key{e.Job, e.Occurrence}
			ix.marks[k] = append(ix.marks[k], e)
		case history.GivenUp:
			k := key{e.Job, e.Occurrence}
			ix.givenUp[k] = append(ix.givenUp[k], e)
		case history.Interrupted:
			k := key{e.Job, e.Occurrence}
			ix.interrupted[k] = append(ix.interrupted[k], e)
		case history.WriteRejected:
			if e.Reason == history.RejectDuplicate {
				k := key{e.Job, e.Occurrence}
				ix.dupRejects[k] = append(ix.dupRejects[k], e)
			}
		case history.WriteAccepted:
			if l := get(e); l != nil && l.writeWall == 0 {
				l.writeWall = e.Wall
			}
		case history.Extend:
			if l := get(e); l != nil {
				l.expiresAt = max(l.expiresAt, e.ExpiresAt)
				l.ops = append(l.ops, leaseOp{sent: sentMs(e), done: e.Wall / 1e6, expiresAt: e.ExpiresAt})
			}
		case history.ExtendError:
			ix.extendErrors = append(ix.extendErrors, e)
		case history.Release:
			if l := get(e); l != nil {
				l.releasedAt, l.releaseSeen = e.SentWall/1e6, true
				l.releases = append(l.releases, leaseOp{sent: e.SentWall / 1e6, done: e.Wall / 1e6})
				if l.releasedOK == 0 {
					l.releasedOK, l.close = e.Wall, e.Close
				}
				if e.Close == history.CloseGivenUp {
					k := key{l.job, l.occurrence}
					ix.marks[k] = append(ix.marks[k], e)
				}
			}
		case history.ReleaseError:
			if l := get(e); l != nil {
				l.releaseSeen = true
				if outcomeUnknown(e) && e.SentWall != 0 && (l.mayEndAt == 0 || e.SentWall/1e6 < l.mayEndAt) {
					l.mayEndAt = e.SentWall / 1e6 // the first that may have run
				}
			}
		case history.RunStart:
			if l := get(e); l != nil {
				l.runStart = e.Mono
				k := key{e.Job, e.Occurrence}
				ix.runs[k] = append(ix.runs[k], l)
			} else {
				// A run whose acquire line was lost: keep it as a run.
				l := &leaseRec{replica: e.Replica, job: e.Job, fence: e.Fence, occurrence: e.Occurrence, runStart: e.Mono}
				k := key{e.Job, e.Occurrence}
				ix.runs[k] = append(ix.runs[k], l)
			}
		case history.CtxDone:
			if l := get(e); l != nil && l.ctxDone == 0 {
				l.ctxDone, l.cause = e.Mono, e.Cause
			}
		case history.RunEnd:
			if l := get(e); l != nil {
				l.runEnd, l.runEndWall, l.runErr = e.Mono, e.Wall, e.Err
			}
		}
	}
	// A replica killed after a run returned may have sent (and Redis run)
	// the Release without recording it. The Release is sent after the run
	// returns, so its server instant is at least the run's end: that lower
	// bound is the earliest the lease may have ended.
	for _, l := range ix.acquires {
		if l.runEndWall != 0 && !l.releaseSeen && ix.killedIn(l.replica, l.runEndWall, l.expiresAt*1e6) {
			l.mayEndAt = l.runEndWall / 1e6
		}
	}
	ix.unrecordedExtends(slack)
	return ix
}

// attemptOf is e's attempt, 1 when not recorded.
func attemptOf(e history.Event) int {
	return max(e.Attempt, 1)
}

// sentMs is when the request e records was sent, in wall ms: its Sent
// (CLOCK_MONOTONIC) on e's wall clock, or e's own time if Sent is missing.
func sentMs(e history.Event) int64 {
	if e.Sent == 0 {
		return e.Wall / 1e6
	}
	return wallAt(e, e.Sent) / 1e6
}

// killedIn reports whether replica was killed in [from, to] (Unix ns).
func (ix *indexed) killedIn(replica string, from, to int64) bool {
	for _, f := range ix.faultsOn(replica) {
		if f.kind == history.FaultKill && f.startWall >= from && f.startWall <= to {
			return true
		}
	}
	return false
}

// faultsOn returns the faults that hit replica (see fault.hits).
func (ix *indexed) faultsOn(replica string) []*fault {
	var out []*fault
	for _, f := range ix.faults {
		if f.hits(replica) {
			out = append(out, f)
		}
	}
	return out
}
