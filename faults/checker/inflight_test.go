package checker

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/faults/history"
)

// bystander adds replica r3 to h: ready at 0, it fires every occurrence up
// to last and is told "locked" 3ms later; it runs nothing.
func (h *fleetHistory) bystander(last int64) {
	h.events = append(h.events, ev("r3", history.Ready, 0), ev("r3", history.Shutdown, last+1000))
	for o := int64(1000); o <= last; o += 1000 {
		h.attempt("r3", o, "locked", o, o+3)
	}
}

// attempt records an acquire of occurrence o by r that failed with reason
// (locked, claimed, error), sent at sent and recorded at done (ms).
func (h *fleetHistory) attempt(r string, o int64, reason string, sent, done int64) {
	e := ev(r, history.AcquireError, done)
	e.Job, e.Occurrence, e.Reason, e.Sent = job.Name, o, reason, sent*msNs
	e.Err = "lease/redislease: acquire: " + reason
	if reason == acquireError {
		e.Err = "lease/redislease: acquire: context deadline exceeded"
	}
	h.events = append(h.events, e)
}

// forget removes r's failed acquires of occurrences os.
func (h *fleetHistory) forget(r string, os ...int64) {
	h.events = slices.DeleteFunc(h.events, func(e history.Event) bool {
		return e.Replica == r && e.Kind == history.AcquireError && slices.Contains(os, e.Occurrence)
	})
}

// restart records r's new process: booted at boot, ready 100ms later.
func (h *fleetHistory) restart(r string, boot int64) {
	h.events = append(h.events, ev(r, history.Boot, boot), ev(r, history.Ready, boot+100))
}

// dropAll drops the runs of occurrences os (their lease's events and
// writes), keeping the other replicas' failed acquires.
func (h *fleetHistory) dropAll(os ...int64) {
	h.events = slices.DeleteFunc(h.events, func(e history.Event) bool {
		return slices.Contains(os, e.Occurrence) && e.Fence != 0
	})
	h.writes = slices.DeleteFunc(h.writes, func(w history.Write) bool { return slices.Contains(os, w.Occurrence) })
}

// pausedAcquire: r3's acquire of 5000, sent at 5000, is in flight when r3
// is stopped at 5010; Redis runs it, and r3 unknowingly holds the lease,
// so r1 and r2 are told "locked" for 5000, 6000 and 7000 (those runs are
// dropped). On SIGCONT at 7110 the acquire fails with its deadline
// (recorded at 7120). The lease may have lived until 7120 + TTL + the
// tolerance = 10120.
func pausedAcquire(h *fleetHistory) {
	h.forget("r3", 5000, 6000, 7000)
	h.attempt("r3", 5000, acquireError, 5000, 7120)
	h.fault(history.FaultStop, "r3", 5010, 7110)
	h.dropAll(5000, 6000, 7000)
}

// killedAcquire: r3's acquire of 5000 is in flight when r3 is killed at
// 5010: no outcome is recorded. Redis ran it; r1 and r2 are told "locked"
// for 5000, 6000 and 7000. The lease may have lived until 5010 + TTL + the
// tolerance = 8010. r3's new process is ready at 6500.
func killedAcquire(h *fleetHistory) {
	h.forget("r3", 5000, 6000)
	h.fault(history.FaultKill, "r3", 5010, 6000)
	h.restart("r3", 6400)
	h.dropAll(5000, 6000, 7000)
}

func TestCheck_AcquireInFlight_Explained(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(h *fleetHistory)
	}{
		{"across a pause, failed after the resume", pausedAcquire},
		{"across a kill, never answered", killedAcquire},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := cleanHistory()
			h.bystander(10000)
			tt.mutate(h)
			r := h.check()
			require.Empty(t, r.Violations)
			var missed []int64
			for _, m := range r.Misses {
				missed = append(missed, m.Occurrence)
				assert.Equal(t, "in_flight", m.Reason, m.Explanation)
			}
			assert.Equal(t, []int64{5000, 6000, 7000}, missed)
		})
	}
}

func TestCheck_AcquireInFlight_NotExplained(t *testing.T) {
	tests := []struct {
		name   string
		last   int64 // the history's last occurrence
		mutate func(h *fleetHistory)
		want   []int64 // occurrences missed without explanation
	}{
		{"pause: outcome learned before the pause", 10000, func(h *fleetHistory) {
			// r3 was told "locked" for 5000 at 5003, then stopped.
			h.forget("r3", 6000, 7000)
			h.fault(history.FaultStop, "r3", 5010, 7110)
			h.dropAll(5000)
		}, []int64{5000}},
		{"pause: outcome learned after the resume", 10000, func(h *fleetHistory) {
			// The answer, "locked", was read after SIGCONT.
			h.forget("r3", 5000, 6000, 7000)
			h.attempt("r3", 5000, "locked", 5000, 7115)
			h.fault(history.FaultStop, "r3", 5010, 7110)
			h.dropAll(5000)
		}, []int64{5000}},
		{"pause: began after the acquire failed", 10000, func(h *fleetHistory) {
			// A reply lost before the pause explains misses until
			// 5400 + TTL + tolerance + slack = 9900 (lost_reply); a flight
			// ending at the resume (7600) would also explain 10000.
			h.forget("r3", 5000, 6000, 7000)
			h.attempt("r3", 5000, acquireError, 5000, 5400)
			h.fault(history.FaultStop, "r3", 5500, 7600)
			h.dropAll(10000)
		}, []int64{10000}},
		{"pause: acquire sent after the resume", 10000, func(h *fleetHistory) {
			// The firing of 5000 waited out the pause: its acquire was sent
			// at 6610 and failed at 7000. It cannot have claimed 5000's
			// round or blocked 6000 before it was sent.
			h.forget("r3", 5000, 6000)
			h.attempt("r3", 5000, acquireError, 6610, 7000)
			h.fault(history.FaultStop, "r3", 4500, 6600)
			h.dropAll(5000, 6000)
		}, []int64{5000, 6000}},
		{"pause: miss fired before the acquire was sent", 10000, func(h *fleetHistory) {
			// r3's acquire of 5000 waited behind a slow one and was sent
			// at 6700, just before the pause: r1 and r2 had acquired 6000
			// long before, so its lease cannot explain 6000's miss.
			h.forget("r3", 5000, 6000, 7000)
			h.attempt("r3", 5000, acquireError, 6700, 8820)
			h.fault(history.FaultStop, "r3", 6710, 8810)
			h.dropAll(6000)
		}, []int64{6000}},
		{"pause: miss after the lease's bound", 12000, func(h *fleetHistory) {
			pausedAcquire(h)
			h.dropAll(11000) // the lease lived until 10120 at most
		}, []int64{11000}},
		{"kill: outcome learned before the kill", 10000, func(h *fleetHistory) {
			// r3 was told "locked" for 5000 at 5003 and killed at 5500,
			// before it fired 6000: nothing was in flight.
			h.forget("r3", 6000)
			h.fault(history.FaultKill, "r3", 5500, 6500)
			h.restart("r3", 6600)
			h.dropAll(5000, 6000)
		}, []int64{5000, 6000}},
		{"kill: miss after the lease's bound", 10000, func(h *fleetHistory) {
			killedAcquire(h)
			h.dropAll(9000) // the lease lived until 8010 at most
		}, []int64{9000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := historyUntil(tt.last)
			h.bystander(tt.last)
			tt.mutate(h)
			r := h.check()
			var got []int64
			for _, v := range r.Violations {
				require.Equal(t, 4, v.Check, v.String())
				got = append(got, v.Occurrence)
			}
			assert.Equal(t, tt.want, got, "misses explained: %v", r.Misses)
		})
	}
}

// extend records an Extend of occurrence o's lease by r, sent at sent and
// recorded at done (ms), that confirmed expires, or failed if expires is 0.
func (h *fleetHistory) extend(r string, o, sent, done, expires int64) {
	e := ev(r, history.Extend, done)
	e.Job, e.Occurrence, e.Fence, e.Sent, e.ExpiresAt = job.Name, o, uint64(o/1000), sent*msNs, expires
	if expires == 0 {
		e.Kind, e.Err = history.ExtendError, "lease/redislease: extend: context deadline exceeded"
	}
	h.events = append(h.events, e)
}

// longRun makes r1's run of 5000 a long one: it renews its lease at 5667
// (to 7667), is told "locked" for 6000 by its own lease, and has not
// returned by the end of the history unless the caller records its end.
func longRun(h *fleetHistory) {
	h.dropKind(5000, history.RunEnd)
	h.dropKind(5000, history.Release)
	h.extend("r1", 5000, 5667, 5668, 7667)
	h.attempt("r1", 6000, "locked", 6000, 6002)
}

func TestCheck_ExtendInFlight(t *testing.T) {
	tests := []struct {
		name   string
		last   int64
		mutate func(h *fleetHistory)
		want   []int64 // occurrences missed without explanation
	}{
		{"killed while its heartbeat ran", 10000, func(h *fleetHistory) {
			// An extend in flight at the kill (6300) may have run: the
			// lease blocks until 6300 + TTL + tolerance = 9300, not only
			// until its confirmed 7667 + tolerance.
			longRun(h)
			h.fault(history.FaultKill, "r1", 6300, 7000)
			h.restart("r1", 7100)
			h.dropAll(6000, 7000, 8000, 9000)
		}, nil},
		{"killed after its run returned", 10000, func(h *fleetHistory) {
			// The heartbeat stopped with the run, at 6100.
			longRun(h)
			end := ev("r1", history.RunEnd, 6100)
			end.Job, end.Occurrence, end.Fence = job.Name, 5000, 5
			h.events = append(h.events, end)
			h.fault(history.FaultKill, "r1", 6300, 7000)
			h.restart("r1", 7100)
			h.dropAll(6000, 7000, 8000, 9000)
		}, []int64{9000}},
		{"paused with an extend in flight", 12000, func(h *fleetHistory) {
			// The extend sent at 6333 fails after the resume (9910); it
			// may have run, but only while the lease was live (until 7667
			// + tolerance): the lease blocks until 8667 + TTL + tolerance
			// = 11667.
			pausedExtend(h, 9910)
			h.dropAll(6000, 7000, 8000, 9000, 10000, 11000)
		}, nil},
		{"paused after the extend was refused", 12000, func(h *fleetHistory) {
			pausedExtend(h, 6335) // refused before the pause began
			h.refused(6335)
			h.dropAll(6000, 7000, 8000, 9000, 10000, 11000)
		}, []int64{9000, 10000, 11000}},
		{"paused after the extend's reply was lost", 12000, func(h *fleetHistory) {
			// A lost reply before the pause: the extend may have run by its
			// failure plus the slack (7835), which the pause does not move:
			// the lease blocks until 7835 + TTL + tolerance = 10835.
			pausedExtend(h, 6335)
			h.dropAll(6000, 7000, 8000, 9000, 10000, 11000)
		}, []int64{11000}},
		{"paused with an extend in flight: miss after the bound", 13000, func(h *fleetHistory) {
			// Not 9910 + TTL + tolerance: the extend cannot have run on an
			// expired lease.
			pausedExtend(h, 9910)
			h.dropAll(6000, 7000, 8000, 9000, 10000, 11000, 12000)
		}, []int64{12000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := historyUntil(tt.last)
			tt.mutate(h)
			r := h.check()
			var got []int64
			for _, v := range r.Violations {
				require.Equal(t, 4, v.Check, v.String())
				got = append(got, v.Occurrence)
			}
			assert.Equal(t, tt.want, got, "misses explained: %v", r.Misses)
			for _, m := range r.Misses {
				assert.Equal(t, "held", m.Reason, m.Explanation)
			}
		})
	}
}

// pausedExtend is longRun with r1 stopped from 6340 to 9900 while the
// extend it sent at 6333 was in flight; the extend's failure is recorded
// at failed. After the resume the run's context ends (unconfirmed), it
// returns, and the release's reply is lost.
func pausedExtend(h *fleetHistory, failed int64) {
	longRun(h)
	h.extend("r1", 5000, 6333, failed, 0)
	h.fault(history.FaultStop, "r1", 6340, 9900)
	base := func(kind history.Kind, at int64) history.Event {
		e := ev("r1", kind, at)
		e.Job, e.Occurrence, e.Fence = job.Name, 5000, 5
		return e
	}
	done := base(history.CtxDone, 9905)
	done.Cause = history.CauseUnconfirmed
	h.events = append(h.events, done, base(history.RunEnd, 9950))
	h.releaseLost(5000, 9951)
}

// releaseLost records a Release of occurrence o's lease whose reply was
// lost, sent at sent (ms).
func (h *fleetHistory) releaseLost(o, sent int64) {
	e := ev("r1", history.ReleaseError, sent+1)
	e.Job, e.Occurrence, e.Fence, e.Reason = job.Name, o, uint64(o/1000), "unknown"
	e.Sent, e.SentWall, e.Err = sent*msNs, sent*msNs, "lease/redislease: release: connection reset"
	h.events = append(h.events, e)
}

// The scheduler retries a failed acquire within its occurrence: a replica
// killed after recording an error for 5000 (at 5300) and before firing
// 6000 may have had a retry of 5000 in flight, not only an acquire of a
// later occurrence.
func TestIndexed_Flights_KilledDuringRetry(t *testing.T) {
	tests := []struct {
		name   string
		reason string // the outcome r3 recorded for 5000 at 5300
		want   []flight
	}{
		{"after an error: a retry may be in flight", acquireError, []flight{{first: 5000, last: 5000, sent: 5300, latest: 5900}}},
		{"after locked: nothing in flight", reasonLocked, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := cleanHistory()
			h.bystander(10000)
			h.forget("r3", 5000, 6000)
			h.attempt("r3", 5000, tt.reason, 5000, 5300)
			h.fault(history.FaultKill, "r3", 5900, 6300)
			h.restart("r3", 6400)
			got := index(h.events, DefaultSlack).flights(job)
			for i := range got {
				got[i].what = ""
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// refused makes the extend_error recorded at done (ms) the server's "not
// held": the extend did nothing.
func (h *fleetHistory) refused(done int64) {
	i := slices.IndexFunc(h.events, func(e history.Event) bool {
		return e.Kind == history.ExtendError && e.Wall == done*msNs
	})
	h.events[i].Reason, h.events[i].Err = history.OutcomeNotHeld, "lease/redislease: extend: lease: not held: not found"
}

// An Extend whose reply was lost (a timeout, a broken connection) may have
// run, as a lost acquire may: from its send to its failure, plus the
// slack; only while the lease was live.
func TestCheck_ExtendReplyLost(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(h *fleetHistory)
		want   []int64 // occurrences missed without explanation
	}{
		{"reply lost", func(h *fleetHistory) {
			// It may have run by 6334 + slack = 7834: the lease blocked
			// until 7834 + TTL + tolerance = 10834.
		}, []int64{11000}},
		{"refused: not held", func(h *fleetHistory) {
			h.refused(6334) // the lease blocked until 7667 + tolerance
		}, []int64{9000, 10000, 11000}},
		{"a second reply lost, sent while the lease may have lived", func(h *fleetHistory) {
			// The first may have extended the lease to 9834; the second,
			// sent at 7000 and failed at 7400, may have run by 8900: the
			// lease blocked until 11900.
			h.extend("r1", 5000, 7000, 7400, 0)
		}, nil},
		{"a second reply lost, sent after the lease surely ended", func(h *fleetHistory) {
			h.extend("r1", 5000, 10900, 10950, 0) // after 9834 + tolerance
		}, []int64{11000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := historyUntil(12000)
			longRun(h)
			h.extend("r1", 5000, 6333, 6334, 0)
			tt.mutate(h)
			base := func(kind history.Kind, at int64) history.Event {
				e := ev("r1", kind, at)
				e.Job, e.Occurrence, e.Fence = job.Name, 5000, 5
				return e
			}
			done := base(history.CtxDone, 11040)
			done.Cause = history.CauseUnconfirmed
			h.events = append(h.events, done, base(history.RunEnd, 11050))
			h.dropAll(6000, 7000, 8000, 9000, 10000, 11000)
			violations, reasons := verdict(t, h)
			assert.Equal(t, tt.want, violations)
			for o, reason := range reasons {
				assert.Equal(t, "held", reason, "occurrence %d", o)
			}
		})
	}
}
