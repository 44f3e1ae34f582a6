package checker

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/faults/history"
)

// nightly is a job with completion: every 10s, TTL 2s, attempted until
// the next occurrence.
var nightly = Job{Name: "n", Every: 10 * time.Second, TTL: 2 * time.Second, Completion: true}

// attemptHistory is a synthetic run of nightly's occurrence 10000 (Unix
// ms) by replicas r1 and r2, ready at 0, which shut down at end. Clocks
// read the same (Mono == Wall).
type attemptHistory struct {
	events []history.Event
	writes []history.Write
	end    int64
}

func newAttemptHistory(end int64) *attemptHistory {
	return &attemptHistory{end: end, events: []history.Event{ev("r1", history.Ready, 0), ev("r2", history.Ready, 0)}}
}

func (h *attemptHistory) add(r string, kind history.Kind, t int64, fence uint64, set func(e *history.Event)) {
	e := ev(r, kind, t)
	e.Job, e.Occurrence, e.Fence = nightly.Name, 10000, fence
	if set != nil {
		set(&e)
	}
	h.events = append(h.events, e)
}

// attempt records attempt n of occurrence 10000 by r with fence, acquired
// at t (ms): the acquire and the run's start.
func (h *attemptHistory) attempt(r string, n int, fence uint64, t int64) {
	h.add(r, history.Acquire, t+1, fence, func(e *history.Event) {
		e.Sent, e.AcquiredAt, e.ExpiresAt, e.Attempt = t*msNs, t, t+nightly.TTL.Milliseconds(), n
	})
	h.add(r, history.RunStart, t+2, fence, func(e *history.Event) { e.Attempt = n })
}

// commit records fence's accepted write at t.
func (h *attemptHistory) commit(r string, fence uint64, t int64) {
	id := int64(len(h.writes) + 1)
	h.add(r, history.WriteAccepted, t, fence, func(e *history.Event) { e.WriteID = id })
	h.writes = append(h.writes, history.Write{ID: id, Replica: r, Job: nightly.Name, Occurrence: 10000, Fence: fence})
}

// end records the end of fence's run at t with err ("" for nil) and its
// release, which closed the occurrence as close.
func (h *attemptHistory) finish(r string, fence uint64, t int64, err, close string) {
	h.add(r, history.RunEnd, t, fence, func(e *history.Event) { e.Err = err })
	h.add(r, history.Release, t+2, fence, func(e *history.Event) {
		e.Sent, e.SentWall, e.Close = (t+1)*msNs, (t+1)*msNs, close
	})
}

// supersede records r's acquire of the next occurrence, 20000, at t with
// fence, which found 10000 open and marked it given up, and its run.
func (h *attemptHistory) supersede(r string, fence uint64, t int64) {
	next := func(kind history.Kind, at int64) history.Event {
		e := ev(r, kind, at)
		e.Job, e.Occurrence, e.Fence = nightly.Name, 20000, fence
		return e
	}
	acq := next(history.Acquire, t+1)
	acq.Superseded, acq.Sent, acq.AcquiredAt, acq.ExpiresAt = 10000, t*msNs, t, t+2000
	w := next(history.WriteAccepted, t+300)
	w.WriteID = int64(len(h.writes) + 1)
	h.writes = append(h.writes, history.Write{ID: w.WriteID, Replica: r, Job: nightly.Name, Occurrence: 20000, Fence: fence})
	rel := next(history.Release, t+302)
	rel.Sent, rel.SentWall, rel.Close = (t+301)*msNs, (t+301)*msNs, history.CloseDone
	h.events = append(h.events, acq, next(history.RunStart, t+2), w, next(history.RunEnd, t+301), rel)
}

func (h *attemptHistory) givenUp(r string, t int64, attempt int) {
	h.add(r, history.GivenUp, t, 0, func(e *history.Event) { e.Attempt = attempt })
}

func (h *attemptHistory) fault(kind, target string, start, end int64) {
	s := ev("harness", history.FaultStart, start)
	s.Fault, s.Target = kind, target
	e := ev("harness", history.FaultEnd, end)
	e.Fault, e.Target = kind, target
	h.events = append(h.events, s, e)
}

// committedThenGivenUp records attempt 1 by r1 (fence 1), whose write
// committed before its job failed (released open), and attempt 2 by r2
// (fence 2), which failed and was reported given up at 11404.
func (h *attemptHistory) committedThenGivenUp() {
	h.attempt("r1", 1, 1, 10000)
	h.commit("r1", 1, 10300)
	h.finish("r1", 1, 10400, "boom after the commit", history.CloseOpen)
	h.attempt("r2", 2, 2, 11000)
	h.finish("r2", 2, 11400, "boom", history.CloseGivenUp)
	h.givenUp("r2", 11404, 2)
}

// doneAsDuplicate records the end of fence's attempt (acquired at 13000):
// its write refused as a duplicate, which succeeds, and its release done.
func (h *attemptHistory) doneAsDuplicate(r string, fence uint64) {
	h.add(r, history.WriteRejected, 13300, fence, func(e *history.Event) { e.Reason = history.RejectDuplicate })
	h.finish(r, fence, 13400, "fencing: duplicate", history.CloseDone)
}

// rollback records a rollback at t to a copy taken at copied (ms).
func (h *attemptHistory) rollback(t, copied int64) {
	h.fault(history.FaultRedisRollback, history.TargetRedis, t-100, t+100)
	d := ev("harness", history.DataLost, t)
	d.Fault, d.CopyStart, d.CopyEnd = history.FaultRedisRollback, copied*msNs, (copied+1)*msNs
	h.events = append(h.events, d)
}

func (h *attemptHistory) wipe(t int64) {
	h.fault(history.FaultRedisWipe, history.TargetRedis, t-100, t+100)
	d := ev("harness", history.DataLost, t)
	d.Fault = history.FaultRedisWipe
	h.events = append(h.events, d)
}

// check runs the checker with (4) limited to occurrence 10000, and
// returns the report and the violations of (7); it fails the test on any
// other violation.
func (h *attemptHistory) check(t *testing.T) (Report, []Violation) {
	t.Helper()
	evs := append(append([]history.Event(nil), h.events...), ev("r1", history.Shutdown, h.end), ev("r2", history.Shutdown, h.end))
	r := Check(Input{Events: evs, Writes: h.writes, Jobs: []Job{nightly},
		From: time.UnixMilli(10000), To: time.UnixMilli(10000)})
	var sevens []Violation
	for _, v := range r.Violations {
		if v.Check == 7 {
			sevens = append(sevens, v)
			continue
		}
		t.Errorf("unexpected violation %s", v)
	}
	return r, sevens
}

func TestCheckCompletion_Done(t *testing.T) {
	tests := []struct {
		name                string
		build               func(h *attemptHistory)
		resumed, retried    int
		completed, givenUps int
	}{
		{"first attempt succeeds", func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.commit("r1", 1, 10500)
			h.finish("r1", 1, 10501, "", history.CloseDone)
		}, 0, 0, 1, 0},
		{"resumed after its holder was killed", func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.fault(history.FaultKill, "r1", 11000, 12000)
			h.events = append(h.events, ev("r1", history.Ready, 12500))
			h.attempt("r2", 2, 2, 14000)
			h.commit("r2", 2, 14500)
			h.finish("r2", 2, 14501, "", history.CloseDone)
		}, 1, 0, 1, 0},
		{"resumed after Shutdown interrupted it", func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.add("r1", history.Interrupted, 10400, 1, func(e *history.Event) { e.Attempt, e.Cause = 1, history.CauseShutdown })
			h.finish("r1", 1, 10401, "scheduler: shutting down", history.CloseOpen)
			h.attempt("r2", 2, 2, 10500)
			h.commit("r2", 2, 11000)
			h.finish("r2", 2, 11001, "", history.CloseDone)
		}, 1, 0, 1, 0},
		{"resumed from a paused holder, whose run then failed", func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.fault(history.FaultStop, "r1", 10500, 14500)
			h.attempt("r2", 2, 2, 14000)
			h.finish("r1", 1, 14600, "boom", history.CloseOpen)
			h.commit("r2", 2, 14700)
			h.finish("r2", 2, 14701, "", history.CloseDone)
		}, 1, 0, 1, 0},
		{"retried after a failure", func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.finish("r1", 1, 10400, "boom", history.CloseOpen)
			h.attempt("r2", 2, 2, 10700)
			h.commit("r2", 2, 11000)
			h.finish("r2", 2, 11001, "", history.CloseDone)
		}, 0, 1, 1, 0},
		{"given up after its last failure", func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.finish("r1", 1, 10400, "boom", history.CloseGivenUp)
			h.givenUp("r1", 10404, 1)
		}, 0, 0, 0, 1},
		{"given up when the next occurrence superseded it", func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.fault(history.FaultStop, "r1", 11000, 20500)
			h.supersede("r2", 2, 20000)
			h.givenUp("r2", 20002, 1)
		}, 0, 0, 1, 1}, // 20000 completed
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newAttemptHistory(60000)
			tt.build(h)
			r, sevens := h.check(t)
			assert.Empty(t, sevens)
			assert.Empty(t, r.Completion.Exceptions)
			c := r.Completion
			assert.Equal(t, tt.resumed, c.Resumed, "resumed")
			assert.Equal(t, tt.retried, c.Retried, "retried")
			assert.Equal(t, tt.completed, c.Completed, "completed")
			assert.Equal(t, tt.givenUps, c.GivenUp, "given up")
		})
	}
}

func TestCheckCompletion_Violations(t *testing.T) {
	tests := []struct {
		name   string
		build  func(h *attemptHistory)
		detail string
	}{
		{"left open", func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.finish("r1", 1, 10400, "boom", history.CloseOpen)
		}, "neither completed nor reported given up"},
		{"committed and given up", func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.commit("r1", 1, 10300)
			h.finish("r1", 1, 10400, "", history.CloseDone)
			h.givenUp("r2", 21000, 1)
		}, "released done"},
		{"committed, given up, done by a later attempt, nothing lost before it", func(h *attemptHistory) {
			h.committedThenGivenUp()
			h.attempt("r1", 3, 3, 13000)
			h.doneAsDuplicate("r1", 3)
			h.wipe(14000) // after the later attempt's acquire: it explains nothing
		}, "released done by lease 3"},
		{"committed, given up, done by a later attempt after a rollback that kept the report", func(h *attemptHistory) {
			h.committedThenGivenUp()
			h.rollback(12000, 11500) // its copy was taken after the report
			h.attempt("r1", 3, 3, 13000)
			h.doneAsDuplicate("r1", 3)
		}, "released done by lease 3"},
		{"given up twice", func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.finish("r1", 1, 10400, "boom", history.CloseGivenUp)
			h.givenUp("r1", 10404, 1)
			h.givenUp("r2", 20002, 1)
		}, "given up twice"},
		{"attempted after it was given up", func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.finish("r1", 1, 10400, "boom", history.CloseGivenUp)
			h.givenUp("r1", 10404, 1)
			h.attempt("r2", 2, 2, 11000)
			h.commit("r2", 2, 11300)
			h.finish("r2", 2, 11400, "", history.CloseDone)
		}, "reported it given up"},
		{"attempted after it was done", func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.commit("r1", 1, 10300)
			h.finish("r1", 1, 10400, "", history.CloseDone)
			h.attempt("r2", 2, 2, 11000)
			h.add("r2", history.WriteRejected, 11300, 2, func(e *history.Event) { e.Reason = history.RejectDuplicate })
			h.finish("r2", 2, 11400, "fencing: duplicate", history.CloseDone)
		}, "released it done"},
		{"refused as a duplicate with nothing committed", func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.add("r1", history.WriteRejected, 10300, 1, func(e *history.Event) { e.Reason = history.RejectDuplicate })
			h.finish("r1", 1, 10400, "fencing: duplicate", history.CloseDone)
		}, "refused as a duplicate"},
		{"marked given up and never reported", func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.fault(history.FaultStop, "r1", 11000, 20500)
			h.supersede("r2", 2, 20000)
		}, "never reported it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newAttemptHistory(60000)
			tt.build(h)
			_, sevens := h.check(t)
			require.NotEmpty(t, sevens)
			assert.True(t, slices.ContainsFunc(sevens, func(v Violation) bool {
				return v.Occurrence == 10000 && strings.Contains(v.Detail, tt.detail)
			}), "no violation of (7) at 10000 says %q: %v", tt.detail, sevens)
		})
	}
}

func TestCheckCompletion_Exceptions(t *testing.T) {
	tests := []struct {
		name   string
		end    int64
		build  func(h *attemptHistory)
		reason string // "" for a violation
	}{
		// Released open at 10401: it blocks nothing; it must be resolved
		// by its deadline 20000 + one interval + the slack: 31500.
		{"open, replicas shut down before it had to be resolved", 31500, func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.finish("r1", 1, 10400, "boom", history.CloseOpen)
		}, "open_at_end"},
		{"open, replicas shut down after it had to be resolved", 31501, func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.finish("r1", 1, 10400, "boom", history.CloseOpen)
		}, ""},
		{"open, Redis wiped before it had to be resolved", 60000, func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.finish("r1", 1, 10400, "boom", history.CloseOpen)
			h.wipe(31000)
		}, "data_lost"},
		{"open, Redis wiped after it had to be resolved", 60000, func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.finish("r1", 1, 10400, "boom", history.CloseOpen)
			h.wipe(32000)
		}, ""},
		{"marked given up for a replica killed before it reported it", 60000, func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.finish("r1", 1, 10400, "boom", history.CloseOpen)
			h.supersede("r2", 2, 20000)
			h.fault(history.FaultKill, "r2", 20003, 21000)
			h.events = append(h.events, ev("r2", history.Ready, 21500))
		}, "report_lost"},
		// The report of the give-up is lost with Redis's data (a rollback to
		// before it), and a later attempt finds the occurrence open again:
		// its write is refused as a duplicate, and it releases it done.
		{"committed, given up, the report lost with the data, done by a later attempt", 60000, func(h *attemptHistory) {
			h.committedThenGivenUp()
			h.rollback(12000, 10900) // to a copy taken before the report: the fault run of seed 20261209
			h.attempt("r1", 2, 3, 13000)
			h.doneAsDuplicate("r1", 3)
		}, "data_lost"},
		// Redis rolls back to a copy taken before the last attempt's
		// acquire; the attempt's release, sent as Redis came back, fails,
		// and its retry finds the lease gone, which its scheduler takes for
		// its own earlier try: it reports the occurrence given up, after the
		// data loss. The record put back says the attempt before it is
		// open, and another replica takes the occurrence again: the loss
		// came after the acquire the report rests on (the fault run of seed
		// 511394725).
		{"given up by a replica whose lease was lost with the data, then attempted again", 60000, func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.rollback(10300, 9000)
			h.add("r1", history.RunEnd, 10400, 1, func(e *history.Event) { e.Err = "boom" })
			h.add("r1", history.ReleaseError, 10402, 1, func(e *history.Event) {
				e.Sent, e.SentWall, e.Close, e.Reason = 10401*msNs, 10401*msNs, history.CloseGivenUp, "not_held"
			})
			h.givenUp("r1", 10404, 1)
			h.attempt("r2", 1, 2, 11000)
			h.commit("r2", 2, 11300)
			h.finish("r2", 2, 11400, "", history.CloseDone)
		}, "data_lost"},
		{"committed by a holder killed before its release, then given up", 60000, func(h *attemptHistory) {
			h.attempt("r1", 1, 1, 10000)
			h.commit("r1", 1, 10300)
			h.fault(history.FaultKill, "r1", 10301, 11000)
			h.events = append(h.events, ev("r1", history.Ready, 11500))
			h.supersede("r2", 2, 20000)
			h.givenUp("r2", 20002, 1)
		}, "commit_unreported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newAttemptHistory(tt.end)
			tt.build(h)
			r, sevens := h.check(t)
			if tt.reason == "" {
				require.Len(t, sevens, 1, "violations of (7): %v", sevens)
				assert.Empty(t, r.Completion.Exceptions)
				return
			}
			assert.Empty(t, sevens)
			require.Len(t, r.Completion.Exceptions, 1)
			assert.Equal(t, tt.reason, r.Completion.Exceptions[0].Reason, r.Completion.Exceptions[0].Explanation)
			assert.Contains(t, r.Table(), tt.reason)
			assert.Contains(t, r.Details(), "not completed ("+tt.reason+")")
		})
	}
}

// Attempts of one occurrence are not duplicate starts (6); one attempt
// started by two leases is, as before completion.
func TestCheckStarts_Attempts(t *testing.T) {
	tests := []struct {
		name          string
		second        int // the attempt of r2's lease
		wantViolation bool
	}{
		{"a later attempt", 2, false},
		{"the same attempt again", 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newAttemptHistory(60000)
			h.attempt("r1", 1, 1, 10000)
			h.finish("r1", 1, 10400, "boom", history.CloseOpen)
			h.attempt("r2", tt.second, 2, 10700)
			h.commit("r2", 2, 11000)
			h.finish("r2", 2, 11001, "", history.CloseDone)
			evs := append(append([]history.Event(nil), h.events...), ev("r1", history.Shutdown, h.end), ev("r2", history.Shutdown, h.end))
			r := Check(Input{Events: evs, Writes: h.writes, Jobs: []Job{nightly},
				From: time.UnixMilli(10000), To: time.UnixMilli(10000)})
			if tt.wantViolation {
				assert.Equal(t, []int{6}, checks(r), "violations: %v", r.Violations)
			} else {
				assert.Empty(t, r.Violations)
			}
		})
	}
}
