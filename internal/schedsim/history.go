package schedsim

import (
	"sync"
	"time"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/scheduler"
)

// History is what one simulation recorded, in the bubble's time (the
// store's time; a replica's own clock may be skewed from it).
type History struct {
	Seed       int64
	Start, End time.Time // the simulated period; operations stop at End
	Jobs       []JobSpec
	Replicas   int

	Ops       []Op
	Events    []EventRec
	Attempts  []*Attempt
	Leases    []*LeaseRec
	Paused    []PausedRound
	Triggers  []TriggerRec
	Regs      []*Reg
	Lives     []*Life
	Shutdowns []*ShutdownRec
	Outages   []Interval
	Wipes     []time.Time
	Pauses    map[string][]Interval // by job name: when it was paused fleet-wide
}

// Interval is a span of time; a zero To means it lasted to the end.
type Interval struct{ From, To time.Time }

// overlaps reports whether iv and [a, b) share an instant.
func (iv Interval) overlaps(a, b time.Time) bool {
	return iv.From.Before(b) && (iv.To.IsZero() || a.Before(iv.To))
}

// Op is one operation of the simulation as applied.
type Op struct {
	At      time.Time
	Kind    string
	Replica string
	Job     string
	Arg     time.Duration
	Err     string // what the operation returned, if it failed
	Skipped string // why it was not applied (the target was not there)
}

// EventRec is a scheduler event with the instant it was emitted.
type EventRec struct {
	At time.Time
	E  scheduler.Event
}

// Attempt is one call of a job function.
type Attempt struct {
	N          int
	Job        string
	Replica    string // the instance ID (incarnation) that called it
	Reg        int    // the registration (Reg.N) whose function was called
	Occurrence time.Time
	Fence      fencing.Token
	Trigger    string
	CatchUp    bool
	Attempt    int // the run's attempt at its occurrence (scheduler.Run.Attempt)
	Behaviour  string

	Start     time.Time
	Return    time.Time // when the function ended (returned, panicked, Goexit); zero if never
	Cancelled time.Time // when its context was done; zero if never
	Cause     string    // context.Cause at Cancelled
	Crashed   time.Time // when its replica crashed while it ran

	Writes []Write
}

// guardEnd is when the attempt stopped being guarded: the first of its
// return, its context's end and its replica's crash; zero if none.
func (a *Attempt) guardEnd() time.Time {
	return firstOf(a.Return, a.Cancelled, a.Crashed)
}

// execEnd is when the function stopped executing on its replica: its
// return, or its replica's crash (a dead process runs nothing).
func (a *Attempt) execEnd() time.Time { return firstOf(a.Return, a.Crashed) }

func firstOf(ts ...time.Time) time.Time {
	var first time.Time
	for _, t := range ts {
		if !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	return first
}

// Write is one fenced write (fencing.AdvanceOnceFromContext) of an attempt.
type Write struct {
	At        time.Time
	Guarded   bool // the attempt's context was not done when it wrote
	Committed bool
	Duplicate bool // refused with fencing.ErrDuplicate: the occurrence's effect was committed already
	Err       string
}

// LeaseRec is a job lease the store granted, with what became of it.
type LeaseRec struct {
	Client    string
	Epoch     int // the store's data generation: a wipe starts a new one
	Key       string
	id        string // never printed
	Fence     fencing.Token
	Round     int64
	PrevRound int64
	Trigger   string
	Attempt   int       // the attempt this lease is (lease.Lease.Attempt)
	Max       int       // the occurrence's attempts in total as the store recorded them; 0: no completion record
	Deadline  time.Time // no attempt of the occurrence starts at or after it (Max > 0)
	Acquired  time.Time
	Expires   time.Time // the latest expiry the store set (acquire or extend)
	Released  time.Time // zero if never released
}

// PausedRound is a round the store recorded as handled because the job
// was paused.
type PausedRound struct {
	At     time.Time
	Client string
	Key    string
	Round  int64
}

// TriggerRec is a trigger the store accepted.
type TriggerRec struct {
	ID, Job     string
	At, Expires time.Time
}

// Reg is one registration of a job on a replica.
type Reg struct {
	N        int
	Replica  string
	Job      string
	From, To time.Time // To: Remove, or the replica's end; zero if it lasted
	Limit    int       // the concurrency limit's n it was registered with
	Err      string    // Register failed: the registration never was
}

// Life is one incarnation of a replica.
type Life struct {
	ID       string
	Base     string
	From, To time.Time // To: Shutdown called or crash; zero if it lasted to the end
	How      string    // "shutdown", "crash", or "" (shut down after End)
	Severed  []Interval
	Jumps    []time.Time // clock jumps
	// Offsets are the replica's clock offsets from the bubble's time, in
	// order: the one it started with, then one per jump.
	Offsets []ClockOffset
}

// ClockOffset is a replica's clock offset from the bubble's time from At on.
type ClockOffset struct {
	At  time.Time
	Off time.Duration
}

// clockAt returns what the replica's clock read at t (the bubble's time).
func (l *Life) clockAt(t time.Time) time.Time {
	var off time.Duration
	for _, o := range l.Offsets {
		if o.At.After(t) {
			break
		}
		off = o.Off
	}
	return t.Add(off)
}

// live reports whether the incarnation was running and reached the store
// at every instant of [a, b).
func (l *Life) live(a, b time.Time) bool {
	if a.Before(l.From) || (!l.To.IsZero() && !b.Before(l.To)) {
		return false
	}
	for _, s := range l.Severed {
		if s.overlaps(a, b) {
			return false
		}
	}
	return true
}

// ShutdownRec is one call of Scheduler.Shutdown.
type ShutdownRec struct {
	Replica  string
	Crash    bool
	Begin    time.Time
	Bound    time.Duration // the context's timeout
	Returned time.Time
	Err      error
}

// recorder collects a History; every method is safe for concurrent use.
type recorder struct {
	mu  sync.Mutex
	h   *History
	ids map[string]*LeaseRec // lease ID -> its record
}

func newRecorder(h *History) *recorder {
	return &recorder{h: h, ids: make(map[string]*LeaseRec)}
}

func (r *recorder) acquired(client string, epoch int, l *lease.Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lr := &LeaseRec{Client: client, Epoch: epoch, Key: l.Key, id: l.ID, Fence: l.Fence, Round: l.Round,
		PrevRound: l.PrevRound, Trigger: l.Trigger, Attempt: l.Attempt, Max: l.Attempts.Max, Deadline: l.Attempts.Deadline,
		Acquired: time.Now(), Expires: l.ExpiresAt}
	r.h.Leases = append(r.h.Leases, lr)
	r.ids[l.ID] = lr
}

func (r *recorder) extended(id string, exp time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if lr := r.ids[id]; lr != nil {
		lr.Expires = exp
	}
}

func (r *recorder) released(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if lr := r.ids[id]; lr != nil && lr.Released.IsZero() {
		lr.Released = time.Now()
	}
}

func (r *recorder) pausedRound(client, key string, round int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Paused = append(r.h.Paused, PausedRound{At: time.Now(), Client: client, Key: key, Round: round})
}

func (r *recorder) event(e scheduler.Event) {
	e.Err = nil // kept small; the kind and reason say enough
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Events = append(r.h.Events, EventRec{At: time.Now(), E: e})
}

func (r *recorder) op(o Op) {
	o.At = time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Ops = append(r.h.Ops, o)
}

// with runs fn on the history under the recorder's lock.
func (r *recorder) with(fn func(h *History)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(r.h)
}
