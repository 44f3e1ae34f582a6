package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLastRun_GivesBackWhatWasRecorded: the compact record of a job's last
// run gives back the RunInfo it was given, the occurrence in the
// scheduler's location and the start in its own, zero times included.
func TestLastRun_GivesBackWhatWasRecorded(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	occ := time.Date(2026, 3, 29, 2, 30, 0, 0, time.UTC).In(paris)
	var l lastRun // one record, set in place, as a job's is
	for _, ri := range []RunInfo{
		{Occurrence: occ, Started: time.UnixMilli(1774751400123), Duration: 1500 * time.Millisecond,
			Outcome: "failed", Error: "disk full", Trigger: "t-1"},
		{Occurrence: occ, Started: time.Date(2026, 3, 29, 0, 30, 0, 7, time.UTC), Outcome: "succeeded"},
		{Occurrence: occ, Started: time.UnixMilli(1774751400456), Outcome: "succeeded", Trigger: "t-2"},
		{Occurrence: occ, Started: time.UnixMilli(1774751400789), Outcome: "failed", Error: "timeout"},
		{}, // zero times: UnixNano is undefined for them
		// Far from now: a zero start a claim ahead waited from (a store
		// that gave no time), and a start past 2262.
		{Occurrence: occ, Started: time.Time{}.Add(250 * time.Millisecond), Outcome: "succeeded"},
		{Occurrence: time.Date(2300, 1, 1, 0, 0, 0, 5, time.UTC).In(paris), Started: time.Date(2300, 1, 1, 0, 0, 1, 0, time.UTC), Outcome: "succeeded"},
	} {
		l.set(ri)
		got := l.info(paris)
		want := ri
		if !ri.Occurrence.IsZero() {
			want.Occurrence = ri.Occurrence.In(paris)
		}
		assert.Equal(t, want, *got)
		assert.Equal(t, ri.Started.Location(), got.Started.Location(), "the start keeps its location")
	}
}
