package checker

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cronguard/cronguard/faults/history"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const msNs = int64(time.Millisecond)

// fleetHistory is a synthetic fault run: replicas r1 and r2 run job "j"
// (every 1s, TTL 2s) at occurrences 1000..10000 (Unix ms; historyUntil
// goes further), alternately, each run taking 100ms and releasing its
// lease. Both clocks read the same (Mono == Wall), which keeps the
// arithmetic readable.
type fleetHistory struct {
	events []history.Event
	writes []history.Write
}

var job = Job{Name: "j", Every: time.Second, TTL: 2 * time.Second}

func at(t int64) (mono, wall int64) { return t * msNs, t * msNs }

func ev(replica string, kind history.Kind, t int64) history.Event {
	m, w := at(t)
	return history.Event{Replica: replica, Kind: kind, Mono: m, Wall: w}
}

func cleanHistory() *fleetHistory { return historyUntil(10000) }

// historyUntil is cleanHistory with occurrences 1000..last; the replicas
// shut down one interval after last.
func historyUntil(last int64) *fleetHistory {
	h := &fleetHistory{}
	h.events = append(h.events, ev("r1", history.Ready, 0), ev("r2", history.Ready, 0))
	for i, o := 0, int64(1000); o <= last; i, o = i+1, o+1000 {
		r := []string{"r1", "r2"}[i%2]
		fence := uint64(i + 1)
		h.addRun(r, o, fence, 100, true)
	}
	h.events = append(h.events, ev("r1", history.Shutdown, last+1000), ev("r2", history.Shutdown, last+1000))
	return h
}

// addRun records a run of occurrence o by r with fence, lasting d ms.
func (h *fleetHistory) addRun(r string, o int64, fence uint64, d int64, release bool) {
	base := func(kind history.Kind, t int64) history.Event {
		e := ev(r, kind, t)
		e.Job, e.Occurrence, e.Fence = job.Name, o, fence
		return e
	}
	acq := base(history.Acquire, o+1)
	acq.Sent, acq.AcquiredAt, acq.ExpiresAt = o*msNs, o, o+job.TTL.Milliseconds()
	h.events = append(h.events, acq, base(history.RunStart, o+2))
	w := base(history.WriteAccepted, o+d-1)
	w.WriteID = int64(len(h.writes) + 1)
	h.writes = append(h.writes, history.Write{ID: w.WriteID, Replica: r, Job: job.Name, Occurrence: o, Fence: fence})
	h.events = append(h.events, w, base(history.RunEnd, o+d))
	if release {
		rel := base(history.Release, o+d+2)
		rel.Sent, rel.SentWall = (o+d+1)*msNs, (o+d+1)*msNs
		h.events = append(h.events, rel)
	}
}

// releaseFailed replaces the Release of occurrence o with a release_error
// of reason, sent at ms.
func (h *fleetHistory) releaseFailed(o int64, reason string, sent int64) {
	i := slices.IndexFunc(h.events, func(e history.Event) bool { return e.Occurrence == o && e.Kind == history.Release })
	e := &h.events[i]
	e.Kind, e.Reason, e.Err = history.ReleaseError, reason, "lease/redislease: release: "+reason
	e.Sent, e.SentWall, e.Mono, e.Wall = sent*msNs, sent*msNs, (sent+1000)*msNs, (sent+1000)*msNs
}

// drop removes the events of occurrence o (and its writes).
func (h *fleetHistory) drop(o int64) {
	h.events = slices.DeleteFunc(h.events, func(e history.Event) bool { return e.Occurrence == o })
	h.writes = slices.DeleteFunc(h.writes, func(w history.Write) bool { return w.Occurrence == o })
}

// dropKind removes the events of kind for occurrence o.
func (h *fleetHistory) dropKind(o int64, kind history.Kind) {
	h.events = slices.DeleteFunc(h.events, func(e history.Event) bool { return e.Occurrence == o && e.Kind == kind })
}

func (h *fleetHistory) fault(kind, target string, start, end int64) {
	s := ev("harness", history.FaultStart, start)
	s.Fault, s.Target = kind, target
	e := ev("harness", history.FaultEnd, end)
	e.Fault, e.Target = kind, target
	h.events = append(h.events, s, e)
}

func (h *fleetHistory) check() Report {
	return Check(Input{Events: h.events, Writes: h.writes, Jobs: []Job{job}})
}

func checks(r Report) []int {
	var out []int
	for _, v := range r.Violations {
		out = append(out, v.Check)
	}
	return out
}

func TestCheck_CleanHistory_Passes(t *testing.T) {
	r := cleanHistory().check()
	assert.Empty(t, r.Violations)
	assert.Empty(t, r.Misses)
	assert.Equal(t, 10, r.Runs)
	assert.Equal(t, 10, r.Occurrences)
	assert.Equal(t, 10, r.Accepted)
	assert.Equal(t, 9, r.Handovers)
	assert.Contains(t, r.Table(), "violations                   0")
}

func TestCheck_Violations(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(h *fleetHistory)
		want   int
	}{
		{"(1) lower token accepted after a higher one", func(h *fleetHistory) {
			h.writes[4].Fence = 3 // id 5 carries token 3 after id 4 carried token 4
		}, 1},
		{"(2) occurrence accepted twice", func(h *fleetHistory) {
			h.writes = append(h.writes, history.Write{ID: 99, Replica: "r2", Job: "j", Occurrence: 1000, Fence: 10})
		}, 2},
		{"(3) lease acquired while another was valid", func(h *fleetHistory) {
			h.dropKind(5000, history.Release) // valid until 7000; the 6000 lease overlaps
		}, 3},
		{"(3) lease acquired while the holder's release said not held", func(h *fleetHistory) {
			h.releaseFailed(5000, "not_held", 5101) // the server's answer: the release did not run
		}, 3},
		{"(3) lease acquired before a release of unknown outcome was sent", func(h *fleetHistory) {
			h.releaseFailed(5000, "unknown", 6500) // the 6000 lease came first
		}, 3},
		{"(4) occurrence missed without explanation", func(h *fleetHistory) {
			h.drop(5000)
		}, 4},
		{"(5) run still live after the next acquire", func(h *fleetHistory) {
			// The 5000 holder is cut off: no renewal, no release, and its
			// run goes on without its context ending until 8500, after the
			// 8000 lease was acquired. 6000 and 7000 are skipped (held).
			h.drop(6000)
			h.drop(7000)
			h.dropKind(5000, history.Release)
			h.dropKind(5000, history.RunEnd)
			end := ev("r1", history.RunEnd, 8500)
			end.Job, end.Occurrence, end.Fence = "j", 5000, 5
			h.events = append(h.events, end)
		}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := cleanHistory()
			tt.mutate(h)
			r := h.check()
			require.Equal(t, []int{tt.want}, checks(r), "violations: %v", r.Violations)
			assert.Contains(t, r.Table(), "("+string(rune('0'+tt.want))+")")
		})
	}
}

// TestCheck_ReleaseReplyLost_EndsAtSend: a release whose reply was lost
// (the replica's proxy went dark after forwarding it) may have run on the
// server; the next lease, acquired after it was sent but before the old
// lease's expiry, shows that it did. Not a violation of (3).
func TestCheck_ReleaseReplyLost_EndsAtSend(t *testing.T) {
	h := cleanHistory()
	h.releaseFailed(5000, "unknown", 5101)
	r := h.check()
	assert.Empty(t, r.Violations)
	assert.Empty(t, r.Misses)
}

func TestCheck_Misses_Explained(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(h *fleetHistory)
		reason string
	}{
		{"held by a long run", func(h *fleetHistory) {
			// The 4000 run renews its lease and releases it at 5500 only;
			// 5000 is skipped.
			h.drop(5000)
			h.dropKind(4000, history.Release)
			ext := ev("r2", history.Extend, 4700)
			ext.Job, ext.Occurrence, ext.Fence, ext.ExpiresAt = "j", 4000, 4, 6700
			rel := ev("r2", history.Release, 5501)
			rel.Job, rel.Occurrence, rel.Fence, rel.SentWall = "j", 4000, 4, 5500*msNs
			h.events = append(h.events, ext, rel)
		}, "held"},
		{"redis restarting", func(h *fleetHistory) {
			h.drop(5000)
			h.fault(history.FaultRedisRestart, "redis", 4900, 5300)
		}, "redis_down"},
		{"acquire reply lost", func(h *fleetHistory) {
			h.drop(5000)
			e := ev("r1", history.AcquireError, 5010)
			e.Job, e.Occurrence, e.Reason, e.Err = "j", 5000, "error", "lease/redislease: acquire: timeout"
			h.events = append(h.events, e)
		}, "lost_reply"},
		{"no healthy replica", func(h *fleetHistory) {
			h.drop(5000)
			h.fault(history.FaultStop, "r1", 4500, 5600)
			h.fault(history.FaultCut, "r2", 4600, 5700)
		}, "no_healthy_replica"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := cleanHistory()
			tt.mutate(h)
			r := h.check()
			require.Empty(t, r.Violations)
			require.NotEmpty(t, r.Misses)
			for _, m := range r.Misses {
				assert.Equal(t, tt.reason, m.Reason, m.Explanation)
			}
		})
	}
}

func TestCheck_PausedHolder_ExemptFromCancellation(t *testing.T) {
	h := cleanHistory()
	h.drop(6000)
	h.drop(7000)
	h.dropKind(5000, history.Release)
	h.dropKind(5000, history.RunEnd)
	end := ev("r1", history.RunEnd, 8500)
	end.Job, end.Occurrence, end.Fence = "j", 5000, 5
	h.events = append(h.events, end)
	h.fault(history.FaultStop, "r1", 5200, 8400)
	r := h.check()
	assert.Empty(t, r.Violations)
	assert.Equal(t, 1, r.Exempt)
}

func TestCheck_KilledAfterRun_UnrecordedReleaseBoundedByRunEnd(t *testing.T) {
	h := cleanHistory()
	h.dropKind(5000, history.Release) // r1 released, then was killed before recording it
	h.fault(history.FaultKill, "r1", 5150, 5400)
	h.events = append(h.events, ev("r1", history.Ready, 5500))
	r := h.check()
	assert.Empty(t, r.Violations)
}

func TestCheck_StaleWriteRejected_NotAViolation(t *testing.T) {
	h := cleanHistory()
	rej := ev("r1", history.WriteRejected, 6500)
	rej.Job, rej.Occurrence, rej.Fence = "j", 5000, 5
	h.events = append(h.events, rej)
	r := h.check()
	assert.Empty(t, r.Violations)
	assert.Equal(t, 1, r.Rejected)
}
