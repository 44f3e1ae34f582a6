package checker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/faults/history"
)

// stall records a stall of the machine from start to end (ms), as the
// harness's watchdog does.
func (h *fleetHistory) stall(start, end int64) {
	h.fault(history.FaultStall, history.TargetMachine, start, end)
}

// A stall is a pause of every replica: it explains what such a pause
// explains, nothing more.
func TestCheck_Stall_Misses(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(h *fleetHistory)
		want   []int64 // occurrences missed without explanation
		reason map[int64]string
	}{
		{"a miss inside a stall", func(h *fleetHistory) {
			h.dropAll(5000)
			h.stall(4500, 5600)
		}, nil, map[int64]string{5000: "stall"}},
		{"a miss long after a stall", func(h *fleetHistory) {
			h.dropAll(5000)
			h.stall(2000, 2500) // ended (with the slack after it) by 4000
		}, []int64{5000}, nil},
		{"an acquire in flight across a stall", func(h *fleetHistory) {
			// r3's acquire of 5000, sent at 5000, fails after the stall
			// (5010..7110) ends: it may have held the lease until 7120 +
			// TTL + tolerance = 10120, which explains 9000, not 11000 (as
			// a reply lost outside a pause would).
			h.forget("r3", 5000, 6000, 7000)
			h.attempt("r3", 5000, acquireError, 5000, 7120)
			h.stall(5010, 7110)
			h.dropAll(5000, 6000, 7000, 9000, 11000)
		}, []int64{11000}, map[int64]string{9000: "in_flight"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := historyUntil(12000)
			h.bystander(12000)
			tt.mutate(h)
			violations, reasons := verdict(t, h)
			assert.Equal(t, tt.want, violations)
			for o, want := range tt.reason {
				assert.Equal(t, want, reasons[o], "occurrence %d", o)
			}
			r := h.check()
			assert.Equal(t, 1, r.Stalls)
			assert.Empty(t, r.Faults, "a stall is not an injected fault")
		})
	}
}

// A holder still running after the next acquire is exempt from (5) when a
// stall paused it during its lease, as a SIGSTOP would.
func TestCheck_Stall_Cancellation(t *testing.T) {
	tests := []struct {
		name       string
		start, end int64 // the stall
		exempt     bool
	}{
		{"stalled during the lease", 5200, 8400, true},
		{"stalled after the handover", 9000, 9500, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := cleanHistory()
			h.drop(6000)
			h.drop(7000)
			h.dropKind(5000, history.Release)
			h.dropKind(5000, history.RunEnd)
			end := ev("r1", history.RunEnd, 8500)
			end.Job, end.Occurrence, end.Fence = "j", 5000, 5
			h.events = append(h.events, end)
			h.stall(tt.start, tt.end)
			r := h.check()
			if tt.exempt {
				require.Empty(t, r.Violations)
				assert.Equal(t, 2, r.Exempt, "the 5000 holder, and r2's 8000 lease, acquired within the stall")
				return
			}
			assert.Contains(t, checks(r), 5, "violations: %v", r.Violations)
		})
	}
}
