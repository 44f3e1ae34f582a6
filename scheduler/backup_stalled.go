package scheduler

import (
	"context"
	"time"

	"github.com/cronguard/cronguard/lease"
)

// stalledFirsts is what the backup pass remembers from one look to the
// next: the first choices it saw claiming none of the rounds it found
// open, with when it saw that. At its next looks the last runs of their
// tasks are read beside the rounds (earlyRuns), not after them. Only the
// backup pass (backupPass, through checkBackups) reads or writes it.
type stalledFirsts map[string]time.Time

// stalledMemory is how long a first choice seen stalled is remembered
// without being seen so again: one that left the fleet is forgotten.
const stalledMemory = time.Minute

// saw records what a look at now saw of first: claiming some of its
// tasks' rounds (it is forgotten), or none of those it left open (it is
// remembered).
func (sf stalledFirsts) saw(first string, claiming bool, now time.Time) {
	switch {
	case first == "":
	case claiming:
		delete(sf, first)
	default:
		sf[first] = now
	}
}

// lastRuns returns the early read of a look at now at the tasks bts: the
// tasks whose round is checked (roundChecked) and whose first choice was
// seen stalled. It first forgets the first choices not seen stalled
// within stalledMemory.
func (sf stalledFirsts) lastRuns(now time.Time, bts []backupTask) *earlyRuns {
	for first, at := range sf {
		if now.Sub(at) > stalledMemory {
			delete(sf, first)
		}
	}
	e := &earlyRuns{}
	if len(sf) == 0 {
		return e
	}
	i := 0
	for _, bt := range bts {
		if !roundChecked(bt.t.f) {
			continue
		}
		if _, ok := sf[bt.first]; ok {
			if e.at == nil {
				e.at = map[int]int{}
			}
			e.at[i] = len(e.keys)
			e.keys = append(e.keys, bt.t.job.key)
		}
		i++
	}
	return e
}

// earlyRuns is a read of the last runs of some of a look's tasks, made
// while their rounds are read.
type earlyRuns struct {
	at    map[int]int // a task's index among those whose round is checked -> its key's
	keys  []string
	spans []lease.RunSpan
	read  func(i int) bool // nil until the read has ended
}

// start reads the runs on a goroutine of its own and returns the function
// that waits for it to end; the caller calls it before span.
func (e *earlyRuns) start(rr lease.RoundReader) (wait func()) {
	if len(e.keys) == 0 {
		return func() {}
	}
	e.spans = make([]lease.RunSpan, len(e.keys))
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), MaxCleanup)
		defer cancel()
		err = rr.LastRuns(ctx, e.keys, e.spans)
	}()
	return func() {
		<-done
		e.read = readKeys(err)
	}
}

// span returns the last run of task i (by its index among the tasks whose
// round is checked), and false if it was not read early.
func (e *earlyRuns) span(i int) (lease.RunSpan, bool) {
	n, ok := e.at[i]
	if !ok || e.read == nil || !e.read(n) {
		return lease.RunSpan{}, false
	}
	return e.spans[n], true
}
