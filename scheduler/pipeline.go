package scheduler

import (
	"sync"
	"time"
)

// firing is one occurrence of a job to acquire, as mapped at a firing of
// its group (or chosen for a catch-up).
type firing struct {
	occ     time.Time
	maxSkew time.Duration
	catchUp bool // a late claim of a missed occurrence (WithCatchUp), not a gocron firing
	trigger bool // a run of a queued trigger (package fleet), not a gocron firing
}

// pipeline is a job's place in this replica's acquire path: at most one
// firing of the job queued or being acquired (busy), and at most one more
// waiting behind it (next). Its methods are the only transitions; they
// decide under one mutex and return what to do, which the caller does
// outside the lock.
type pipeline struct {
	mu        sync.Mutex
	lastFired int64 // the latest occurrence (Unix ms) gocron fired here
	busy      bool
	next      firing
	hasNext   bool
	trigger   bool // a trigger arrived while busy: acquire one when idle
}

// offerResult says what to do with an offered firing.
type offerResult int

const (
	offerQueue     offerResult = iota + 1 // queue it now: the job was idle
	offerWait                             // it waits behind the busy firing
	offerDuplicate                        // gocron fired an occurrence already handled here: drop it
	offerLate                             // a catch-up while the job is busy with a newer firing: drop it
	offerDeferred                         // a trigger while the job is busy: acquired when it is done
)

// offer takes a firing of the job. A firing that waits replaces the one
// that was waiting (superseded, ok): that one is skipped as an overrun, so
// the firings that reach the store stay in order and the newest wins. A
// catch-up is never a duplicate of a gocron firing, and is dropped when
// the job is busy (whatever is being acquired is at least as new). A
// trigger never displaces a firing: while the job is busy it is deferred,
// and acquired once the job is done (triggers wait in the store until one
// replica runs them).
func (p *pipeline) offer(f firing) (res offerResult, superseded firing, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f.trigger {
		if p.busy {
			p.trigger = true
			return offerDeferred, firing{}, false
		}
		p.busy = true
		return offerQueue, firing{}, false
	}
	if !f.catchUp {
		occ := f.occ.UnixMilli()
		if occ <= p.lastFired {
			return offerDuplicate, firing{}, false
		}
		p.lastFired = occ
	}
	switch {
	case !p.busy:
		p.busy = true
		return offerQueue, firing{}, false
	case f.catchUp:
		return offerLate, firing{}, false
	}
	superseded, ok = p.next, p.hasNext
	p.next, p.hasNext = f, true
	return offerWait, superseded, ok
}

// done ends the busy firing: it returns the waiting firing, which becomes
// the busy one, else a deferred trigger (its occurrence is set by the
// store when it runs), or ok=false when the job goes idle.
func (p *pipeline) done() (next firing, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.hasNext:
		next, p.hasNext = p.next, false
		return next, true
	case p.trigger:
		p.trigger = false
		return firing{trigger: true}, true
	}
	p.busy = false
	return firing{}, false
}

// acquiring reports whether a firing of the job is queued or being
// acquired.
func (p *pipeline) acquiring() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.busy
}
