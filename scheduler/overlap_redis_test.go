package scheduler

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/testutil"
)

// TestScheduler_BufferOne_RunsBackToBackAcrossReplicasOnRedis is
// TestScheduler_BufferOne_RunsBackToBackAcrossReplicas on a real
// redis-server and the real clock: three replicas, each with its own
// client and store, run a 2s job whose runs take 2.5s with
// OverlapBufferOne. Each occurrence runs at most once, never two runs at
// once, the other replicas' buffered occurrences find the round claimed,
// and each run after the first is the occurrence right after the previous
// run's or the one after it. The occurrence after the first run's waits
// for it and starts before its wait ends (at its next occurrence less
// 0.2s): the run's end woke a waiter (another replica's, through the
// store's notification of the release, or the holder's own), where one
// that is not woken makes its last attempt only when its wait ends.
// That a release wakes the waiters of other processes at once is
// lease/redislease's TestLock_Notified_* tests.
//
// The synctest twin asserts the timing exactly (the instant of each start,
// which occurrences are skipped). This one asserts nothing that depends on
// how fast the machine is beyond the 1.3s by which the first run ends
// before the wait behind it does (a hand-off takes milliseconds, and was
// seen at 356ms on a loaded machine beside other tests), so it runs in
// parallel with the others.
func TestScheduler_BufferOne_RunsBackToBackAcrossReplicasOnRedis(t *testing.T) {
	t.Parallel()
	const (
		every  = 2 * time.Second
		runs   = 2500 * time.Millisecond
		margin = 200 * time.Millisecond // min(every/10, 1s): the wait ends at the next occurrence less this
	)
	srv := testutil.StartRedis(t)
	job := &runLog{d: runs}
	var (
		mu            sync.Mutex
		running, most int
	)
	run := func(ctx context.Context) error {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		defer func() { mu.Lock(); running--; mu.Unlock() }()
		return job.run(ctx)
	}
	var replicas []*Scheduler
	for i := range 3 {
		store, err := redislease.New(srv.Client(t), redislease.WithLogger(discardLogger()))
		require.NoError(t, err)
		s := newScheduler(t, store, WithInstanceID(fmt.Sprintf("replica-%d", i)))
		require.NoError(t, s.Register("slow", Every(every), run, WithOverlap(OverlapBufferOne), WithTTL(3*time.Second)))
		replicas = append(replicas, s)
	}
	for _, s := range replicas {
		require.NoError(t, s.Start())
	}
	// The first occurrence comes within 2s and its run ends 2.5s later;
	// the one buffered behind it starts then and runs 2.5s more.
	waitUntilHolds(t, "the run buffered behind the first started", func() bool { return startedRuns(replicas) >= 2 })
	for _, s := range replicas {
		shutdown(t, s)
	}

	ran := job.sorted()
	defer func() {
		if t.Failed() {
			for _, r := range ran {
				t.Logf("%s ran %s from +%s for %s", r.replica, r.occurrence.Format("15:04:05.000"), r.start.Sub(r.occurrence), r.end.Sub(r.start))
			}
		}
	}()
	seen := make(map[time.Time]bool)
	for _, r := range ran {
		require.False(t, seen[r.occurrence], "occurrence %s ran twice", r.occurrence)
		seen[r.occurrence] = true
	}
	assert.Equal(t, 1, most, "never two runs of the job at once")
	var started, claimed uint64
	for _, s := range replicas {
		st := s.Stats()
		started += st.Started
		claimed += st.SkipClaimed
	}
	assert.Equal(t, uint64(len(ran)), started, "every run started is one of the job's")
	assert.Positive(t, claimed, "the other replicas' buffered occurrences found the round claimed")
	require.GreaterOrEqual(t, len(ran), 2, "the first run and the one buffered behind it")
	for i := 1; i < len(ran); i++ {
		prev, r := ran[i-1], ran[i]
		require.False(t, r.start.Before(prev.end), "run %d (%s) starts after run %d ends", i, r.occurrence, i-1)
		assert.Contains(t, []time.Duration{every, 2 * every}, r.occurrence.Sub(prev.occurrence),
			"run %d (%s): the occurrence right after run %d's or the one after it", i, r.occurrence, i-1)
	}
	next := ran[0].occurrence.Add(every)
	assert.Equal(t, next, ran[1].occurrence, "the occurrence buffered behind the first run ran next")
	assert.True(t, ran[1].start.Before(next.Add(every-margin)),
		"the buffered occurrence started at %s, before its wait's end at %s: woken by the release, not by its last attempt",
		ran[1].start.Format("15:04:05.000"), next.Add(every-margin).Format("15:04:05.000"))
}

// startedRuns returns how many runs the replicas started.
func startedRuns(replicas []*Scheduler) uint64 {
	var n uint64
	for _, s := range replicas {
		n += s.Stats().Started
	}
	return n
}
