package checker

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/faults/history"
)

// verdict runs the checker on h and returns the occurrences missed without
// explanation and the reasons of the explained misses.
func verdict(t *testing.T, h *fleetHistory) (violations []int64, reasons map[int64]string) {
	t.Helper()
	r := h.check()
	for _, v := range r.Violations {
		require.Equal(t, 4, v.Check, v.String())
		violations = append(violations, v.Occurrence)
	}
	reasons = map[int64]string{}
	for _, m := range r.Misses {
		reasons[m.Occurrence] = m.Reason
	}
	return violations, reasons
}

// An acquire whose reply was lost may have run on the server from the
// moment it was sent, not only when its failure was recorded: Redis
// stalled, the acquire timed out long after it was sent.
func TestCheck_LostReply_FromSend(t *testing.T) {
	tests := []struct {
		name       string
		sent, fail int64 // the lost acquire of 5000 by r2, ms
		want       []int64
	}{
		{"sent within the firing window, failed after it", 5000, 5800, nil},
		{"sent after the firing window", 5600, 7100, []int64{5000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := cleanHistory()
			h.dropAll(5000)
			h.attempt("r2", 5000, acquireError, tt.sent, tt.fail)
			violations, reasons := verdict(t, h)
			assert.Equal(t, tt.want, violations)
			if tt.want == nil {
				assert.Equal(t, "lost_reply", reasons[5000])
			}
		})
	}
}

// lateLease makes r2's lease of 4000 a late one: its acquire, queued
// behind a slow one, ran at 5600; the run lasts until 5800 and releases
// at 5801.
func lateLease(h *fleetHistory) {
	h.dropAll(4000)
	base := func(kind history.Kind, at int64) history.Event {
		e := ev("r2", kind, at)
		e.Job, e.Occurrence, e.Fence = job.Name, 4000, 4
		return e
	}
	acq := base(history.Acquire, 5601)
	acq.Sent, acq.AcquiredAt, acq.ExpiresAt = 5599*msNs, 5600, 7600
	rel := base(history.Release, 5802)
	rel.Sent, rel.SentWall = 5801*msNs, 5801*msNs
	w := base(history.WriteAccepted, 5799)
	w.WriteID = 4
	h.events = append(h.events, acq, base(history.RunStart, 5602), w, base(history.RunEnd, 5800), rel)
	h.writes = append(h.writes, history.Write{ID: 4, Replica: "r2", Job: job.Name, Occurrence: 4000, Fence: 4})
}

// A lease acquired after an occurrence's usual firing window still
// explains its miss when every replica's acquire of the occurrence, late
// too, was told "locked" while that lease may have been valid.
func TestCheck_LockedOut(t *testing.T) {
	tests := []struct {
		name   string
		r1, r2 [2]int64 // the locked acquires of 5000: sent, told
		want   []int64
	}{
		{"every replica met the late lease", [2]int64{5650, 5652}, [2]int64{5660, 5663}, nil},
		{"one replica was told locked after the lease was released", [2]int64{5650, 5652}, [2]int64{5850, 5852}, []int64{5000}},
		{"one replica was told locked before the lease was acquired", [2]int64{5400, 5402}, [2]int64{5660, 5663}, []int64{5000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := cleanHistory()
			lateLease(h)
			h.dropAll(5000)
			h.attempt("r1", 5000, reasonLocked, tt.r1[0], tt.r1[1])
			h.attempt("r2", 5000, reasonLocked, tt.r2[0], tt.r2[1])
			violations, reasons := verdict(t, h)
			assert.Equal(t, tt.want, violations)
			if tt.want == nil {
				assert.Equal(t, "held", reasons[5000])
			}
		})
	}
}

// claimedNotRun: r2 acquires 5000's lease (claiming the round), releases
// it at once and skips the occurrence (an earlier run of the job still
// executes there); r1 is told "claimed". Nobody runs 5000.
func claimedNotRun(h *fleetHistory) {
	h.dropAll(5000)
	base := func(kind history.Kind, at int64) history.Event {
		e := ev("r2", kind, at)
		e.Job, e.Occurrence, e.Fence = job.Name, 5000, 5
		return e
	}
	acq := base(history.Acquire, 5001)
	acq.Sent, acq.AcquiredAt, acq.ExpiresAt = 5000*msNs, 5000, 7000
	rel := base(history.Release, 5004)
	rel.Sent, rel.SentWall = 5003*msNs, 5003*msNs
	skip := ev("r2", history.Skip, 5005)
	skip.Job, skip.Occurrence, skip.Reason = job.Name, 5000, "running here"
	h.events = append(h.events, acq, rel, skip)
	h.attempt("r1", 5000, "claimed", 5001, 5002)
}

// A replica that won an occurrence's round and did not run it lost the
// occurrence: Redis was answering and no other replica could claim it.
// Only the winner's death explains that, whatever else went on.
func TestCheck_ClaimedNotRun(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(h *fleetHistory)
		want   []int64
		reason string
	}{
		{"declined", func(h *fleetHistory) {}, []int64{5000}, ""},
		{"declined, within a redis restart's reach", func(h *fleetHistory) {
			h.fault(history.FaultRedisRestart, history.TargetRedis, 4400, 4500) // + slack covers 5000
		}, []int64{5000}, ""},
		{"killed before starting the run", func(h *fleetHistory) {
			h.dropKind(5000, history.Release)
			h.events = slices.DeleteFunc(h.events, func(e history.Event) bool { return e.Kind == history.Skip })
			h.fault(history.FaultKill, "r2", 5002, 5500)
			h.restart("r2", 5600)
			h.dropAll(6000) // the dead holder's lease blocked it
		}, nil, "killed_winner"},
		{"killed, the acquire recorded after the kill's start", func(h *fleetHistory) {
			// The harness records FaultStart, then sends SIGKILL: the
			// dying process recorded its acquire in between.
			h.dropKind(5000, history.Release)
			h.events = slices.DeleteFunc(h.events, func(e history.Event) bool { return e.Kind == history.Skip })
			h.fault(history.FaultKill, "r2", 5000, 5500)
			h.restart("r2", 5600)
			h.dropAll(6000)
			h.pids("r2", 5600, 100) // the killed process: every event of r2 until the restart
			h.pids("r2", 1e9, 0)    // (events after it keep no PID)
		}, nil, "killed_winner"},
		{"declined by a process other than the one killed", func(h *fleetHistory) {
			h.fault(history.FaultKill, "r2", 5000, 5500)
			h.restart("r2", 5600)
			h.pids("r2", 5000, 100)
			for i, e := range h.events {
				if e.Replica == "r2" && e.Occurrence == 5000 {
					h.events[i].PID = 200 // not the process whose last event came before the kill
				}
			}
		}, []int64{5000}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := cleanHistory()
			claimedNotRun(h)
			tt.mutate(h)
			violations, reasons := verdict(t, h)
			assert.Equal(t, tt.want, violations)
			if tt.reason != "" {
				assert.Equal(t, tt.reason, reasons[5000])
			} else {
				assert.Contains(t, h.check().Violations[0].Detail, "did not run it (skipped: running here)")
			}
		})
	}
}

// pids gives pid to r's events before ms that have none.
func (h *fleetHistory) pids(r string, before int64, pid int) {
	for i, e := range h.events {
		if e.Replica == r && e.Mono < before*msNs && e.PID == 0 {
			h.events[i].PID = pid
		}
	}
}

// A replica that skipped an occurrence as running there, while the lease
// of its run of the occurrence before was released only after the
// occurrence came due, explains the miss: the lease may still have been
// held (OverlapSkip). A release confirmed before the occurrence does not.
func TestCheck_SkippedWhileTheReleaseWasInFlight(t *testing.T) {
	tests := []struct {
		name      string
		confirmed int64 // when r2's release of 4000 was recorded, ms
		want      []int64
	}{
		{"confirmed after the occurrence", 5004, nil},
		{"confirmed before the occurrence", 4999, []int64{5000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := cleanHistory()               // r2 runs 4000
			sent := min(4999, tt.confirmed-2) // the release is sent before the occurrence
			for i, e := range h.events {
				switch {
				case e.Occurrence != 4000:
				case e.Kind == history.RunEnd:
					h.events[i].Mono, h.events[i].Wall = (sent-2)*msNs, (sent-2)*msNs
				case e.Kind == history.Release:
					h.events[i].Sent, h.events[i].SentWall = sent*msNs, sent*msNs
					h.events[i].Mono, h.events[i].Wall = tt.confirmed*msNs, tt.confirmed*msNs
				}
			}
			h.dropAll(5000)
			skip := ev("r2", history.Skip, 5002)
			skip.Job, skip.Occurrence, skip.Reason = job.Name, 5000, "running_here"
			h.events = append(h.events, skip)
			violations, reasons := verdict(t, h)
			assert.Equal(t, tt.want, violations)
			if tt.want == nil {
				assert.Equal(t, "held", reasons[5000])
			}
		})
	}
}
