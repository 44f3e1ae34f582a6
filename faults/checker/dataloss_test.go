package checker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/faults/history"
)

// loss records a data loss of kind (redis_wipe, redis_rollback) at at
// (ms), inside a fault from at-50 to at+50; copyStart and copyEnd bound
// the copy a rollback put back (0 for a wipe).
func (h *fleetHistory) loss(kind string, at, copyStart, copyEnd int64) {
	h.fault(kind, history.TargetRedis, at-50, at+50)
	e := ev("harness", history.DataLost, at)
	e.Fault, e.CopyStart, e.CopyEnd = kind, copyStart*msNs, copyEnd*msNs
	h.events = append(h.events, e)
}

func (h *fleetHistory) wipe(at int64) { h.loss(history.FaultRedisWipe, at, 0, 0) }

func (h *fleetHistory) rollback(at, copyStart int64) {
	h.loss(history.FaultRedisRollback, at, copyStart, copyStart+5)
}

// refence adds add to the fences of the runs of occurrences from on, as
// the fence floor raises the fences issued after a data loss.
func (h *fleetHistory) refence(from int64, add uint64) {
	for i := range h.events {
		if h.events[i].Occurrence >= from && h.events[i].Fence != 0 {
			h.events[i].Fence += add
		}
	}
	for i := range h.writes {
		if h.writes[i].Occurrence >= from {
			h.writes[i].Fence += add
		}
	}
}

// rerun records a second run of occurrence o by r with fence, acquired at
// at (ms): it runs 100ms, its write is refused as a duplicate, and it
// releases its lease.
func (h *fleetHistory) rerun(r string, o int64, fence uint64, at int64) {
	base := func(kind history.Kind, t int64) history.Event {
		e := ev(r, kind, t)
		e.Job, e.Occurrence, e.Fence = job.Name, o, fence
		return e
	}
	acq := base(history.Acquire, at+1)
	acq.Sent, acq.AcquiredAt, acq.ExpiresAt = at*msNs, at, at+job.TTL.Milliseconds()
	rej := base(history.WriteRejected, at+99)
	rej.Reason, rej.Err = history.RejectDuplicate, "fencing: advance: fencing: duplicate occurrence"
	rel := base(history.Release, at+102)
	rel.Sent, rel.SentWall = (at+101)*msNs, (at+101)*msNs
	h.events = append(h.events, acq, base(history.RunStart, at+2), rej, base(history.RunEnd, at+100), rel)
}

// dupStart: r1 ran 5000 (acquired 5000, released 5101); redis lost data
// (mutate says how) and r2, retrying within the occurrence, acquired 5000
// again at 5500 with a fence above every earlier one and ran it; its
// write was refused as a duplicate.
func dupStart(mutate func(h *fleetHistory)) *fleetHistory {
	h := cleanHistory()
	h.refence(6000, 100)
	h.rerun("r2", 5000, 105, 5500)
	mutate(h)
	return h
}

func TestCheck_DuplicateStart(t *testing.T) {
	tests := []struct {
		name      string
		mutate    func(h *fleetHistory)
		explained bool
	}{
		{"a wipe after the first claim", func(h *fleetHistory) { h.wipe(5300) }, true},
		{"a rollback to a copy taken before the first claim", func(h *fleetHistory) { h.rollback(5300, 4900) }, true},
		{"no data loss", func(h *fleetHistory) {}, false},
		{"a rollback to a copy that holds the first claim", func(h *fleetHistory) { h.rollback(5300, 5050) }, false},
		{"a wipe before the first claim", func(h *fleetHistory) { h.wipe(4950) }, false},
		{"a wipe after the second claim", func(h *fleetHistory) { h.wipe(5700) }, false},
		{"a later occurrence's claim, made after the wipe, was known", func(h *fleetHistory) {
			// r1 claimed 6000 early, at 5400, on the new data: the round
			// record was then at 6000, and 5000 cannot have been claimed.
			h.wipe(5300)
			h.dropAll(6000)
			h.addRun("r1", 6000, 104, 50, true)
			h.writes[len(h.writes)-1].ID = 6 // in the place of the run dropped
			h.shift(6000, -600)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := dupStart(tt.mutate).check()
			assert.Equal(t, 1, r.Duplicates, "the second write was refused as a duplicate")
			if tt.explained {
				require.Empty(t, r.Violations)
				require.Len(t, r.DuplicateStarts, 1)
				assert.Contains(t, r.DuplicateStarts[0].Explanation, "may have lost the claim")
				assert.Contains(t, r.Table(), "duplicate starts (explained) 1")
				return
			}
			assert.Equal(t, []int{6}, checks(r), "violations: %v", r.Violations)
			assert.Empty(t, r.DuplicateStarts)
		})
	}
}

// shift moves every event of occurrence o's runs by d ms (server times
// included).
func (h *fleetHistory) shift(o, d int64) {
	for i := range h.events {
		e := &h.events[i]
		if e.Occurrence != o || e.Fence == 0 {
			continue
		}
		e.Mono, e.Wall = e.Mono+d*msNs, e.Wall+d*msNs
		for _, v := range []*int64{&e.Sent, &e.SentWall} {
			if *v != 0 {
				*v += d * msNs
			}
		}
		for _, v := range []*int64{&e.AcquiredAt, &e.ExpiresAt} {
			if *v != 0 {
				*v += d
			}
		}
	}
}

// TestCheck_OnceCommitted: one occurrence has at most one committed
// write, even from one lease.
func TestCheck_OnceCommitted(t *testing.T) {
	h := cleanHistory()
	w := h.writes[len(h.writes)-1]
	w.ID++
	h.writes = append(h.writes, w)
	r := h.check()
	require.Equal(t, []int{2}, checks(r), "violations: %v", r.Violations)
	assert.Contains(t, r.Violations[0].Detail, "committed twice")
}

// lostLease: r1's run of 5000 is long: it renews its lease at 5667 (to
// 7667). Redis loses data (mutate says how) and r2 acquires 6000 at 6000;
// r1's next renewal, at 6333, is refused and its run's context ends at
// 6340 (lost), after r2's acquire. Its release finds nothing.
func lostLease(mutate func(h *fleetHistory)) *fleetHistory {
	h := cleanHistory()
	longRun(h)
	h.extend("r1", 5000, 6333, 6335, 0)
	base := func(kind history.Kind, at int64) history.Event {
		e := ev("r1", kind, at)
		e.Job, e.Occurrence, e.Fence = job.Name, 5000, 5
		return e
	}
	done := base(history.CtxDone, 6340)
	done.Cause = history.CauseLost
	rel := base(history.ReleaseError, 6402)
	rel.Reason, rel.Sent, rel.SentWall, rel.Err = "not_held", 6401*msNs, 6401*msNs, "lease/redislease: release: not held"
	h.events = append(h.events, done, base(history.RunEnd, 6400), rel)
	mutate(h)
	return h
}

// The lease of 5000 was valid, as its holder knew, until 7667: both the
// 6000 and the 7000 leases overlap it.
func TestCheck_LeaseLostWithData(t *testing.T) {
	tests := []struct {
		name       string
		mutate     func(h *fleetHistory)
		violations []int
		lost       int // overlaps explained
		exempt     int // handovers exempt from (5) by data loss
	}{
		{"a wipe after the acquire", func(h *fleetHistory) { h.wipe(5750) }, nil, 2, 1},
		{"a rollback to a copy taken before the acquire", func(h *fleetHistory) { h.rollback(5750, 4900) }, nil, 2, 1},
		{"no data loss", func(h *fleetHistory) {}, []int{3, 3, 5}, 0, 0},
		{"a rollback to a copy that holds the acquire", func(h *fleetHistory) {
			// The server knew the lease until 7000, its acquire's expiry,
			// and blocked acquires until 8000.
			h.rollback(5750, 5600)
		}, []int{3, 3, 5}, 0, 0},
		{"a rollback to a copy that holds the renewal", func(h *fleetHistory) { h.rollback(5750, 5700) }, []int{3, 3, 5}, 0, 0},
		{"a wipe after the next acquire", func(h *fleetHistory) {
			h.wipe(6100) // explains the 7000 lease only
		}, []int{3, 5}, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := lostLease(tt.mutate).check()
			assert.Equal(t, tt.violations, checks(r), "violations: %v", r.Violations)
			require.Len(t, r.LostLeases, tt.lost)
			for _, l := range r.LostLeases {
				assert.Contains(t, l.Explanation, "lease 5 of r1")
			}
			assert.Equal(t, tt.exempt, r.ExemptDataLoss, "(5): the holder learned of the loss after the next acquire")
		})
	}
}

// restoredLease: r2's run of 6000 is long: it renews its lease at 6667 (to
// 8667) and 7333 (to 9333) and ends at 7400, releasing it (7000 is skipped:
// held). Redis loses data at 7550 (mutate says how); 8000, 9000 and 10000
// do not run. 8000 and 9000 fall within the restart's reach (redis_down);
// only a lease put back explains 10000.
func restoredLease(mutate func(h *fleetHistory)) *fleetHistory {
	h := historyUntil(12000)
	h.dropKind(6000, history.RunEnd)
	h.dropKind(6000, history.Release)
	h.extend("r2", 6000, 6667, 6668, 8667)
	h.extend("r2", 6000, 7333, 7334, 9333)
	end := ev("r2", history.RunEnd, 7400)
	end.Job, end.Occurrence, end.Fence = job.Name, 6000, 6
	rel := ev("r2", history.Release, 7402)
	rel.Job, rel.Occurrence, rel.Fence, rel.Sent, rel.SentWall = job.Name, 6000, 6, 7401*msNs, 7401*msNs
	h.events = append(h.events, end, rel)
	h.dropAll(7000, 8000, 9000, 10000)
	mutate(h)
	return h
}

func TestCheck_RestoredLease(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(h *fleetHistory)
		want   []int64 // occurrences missed without explanation
	}{
		{"a rollback to a copy that holds the renewal, not the release", func(h *fleetHistory) {
			h.rollback(7550, 7350)
		}, nil},
		{"a rollback to a copy that holds the release", func(h *fleetHistory) {
			h.rollback(7550, 7420)
		}, []int64{10000}},
		{"a wipe", func(h *fleetHistory) { h.wipe(7550) }, []int64{10000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			violations, reasons := verdict(t, restoredLease(tt.mutate))
			assert.Equal(t, tt.want, violations)
			assert.Equal(t, "held", reasons[7000])
			if tt.want == nil {
				assert.Equal(t, "restored", reasons[10000])
			}
		})
	}
}

// TestCheck_WipedLease_NoLongerHeld: a lease the server lost with its data
// explains no miss after the loss, though its holder's last renewal ran
// further (r2 renews 6000's lease to 9333, then Redis loses its data at
// 7550; the renewal at 8000 is refused).
func TestCheck_WipedLease_NoLongerHeld(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(h *fleetHistory)
		want   []int64
	}{
		{"wiped", func(h *fleetHistory) { h.wipe(7550) }, []int64{10000}},
		{"rolled back to a copy that holds the renewal", func(h *fleetHistory) { h.rollback(7550, 7350) }, nil},
		{"no data loss", func(h *fleetHistory) {}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := historyUntil(12000)
			h.dropKind(6000, history.RunEnd)
			h.dropKind(6000, history.Release)
			h.extend("r2", 6000, 6667, 6668, 8667)
			h.extend("r2", 6000, 7333, 7334, 9333)
			h.extend("r2", 6000, 8000, 8002, 0)
			base := func(kind history.Kind, at int64) history.Event {
				e := ev("r2", kind, at)
				e.Job, e.Occurrence, e.Fence = job.Name, 6000, 6
				return e
			}
			done := base(history.CtxDone, 8005)
			done.Cause = history.CauseLost
			h.events = append(h.events, done, base(history.RunEnd, 8050))
			h.dropAll(7000, 8000, 9000, 10000)
			tt.mutate(h)
			violations, reasons := verdict(t, h)
			assert.Equal(t, tt.want, violations)
			if tt.want == nil {
				assert.Contains(t, []string{"held", "restored"}, reasons[10000])
			}
		})
	}
}
