package schedscale

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseOffsets_List(t *testing.T) {
	offs, err := ParseOffsets("-400ms, 0,400ms")
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{-400 * time.Millisecond, 0, 400 * time.Millisecond}, offs)
	offs, err = ParseOffsets("")
	require.NoError(t, err)
	assert.Nil(t, offs)
	_, err = ParseOffsets("-400ms,,1s")
	assert.Error(t, err)
	_, err = ParseOffsets("400")
	assert.Error(t, err, "a duration needs its unit")
}

func TestConfig_Offset_ShorterListRepeats(t *testing.T) {
	cfg := Config{Replicas: 5, Offsets: []time.Duration{-time.Second, time.Second}}
	assert.Equal(t, []time.Duration{-time.Second, time.Second, -time.Second, time.Second, -time.Second},
		[]time.Duration{cfg.Offset(0), cfg.Offset(1), cfg.Offset(2), cfg.Offset(3), cfg.Offset(4)})
	assert.Equal(t, "-1s, 1s, -1s, 1s, -1s", cfg.formatOffsets())
	assert.Zero(t, Config{Replicas: 3}.Offset(2))
	assert.Empty(t, Config{Replicas: 3}.formatOffsets())
}

func TestDefaultChildArgs_Offset(t *testing.T) {
	cfg := Config{Replicas: 3, Offsets: []time.Duration{-400 * time.Millisecond, 0}}
	assert.Contains(t, DefaultChildArgs(cfg, 0), "-scale-offset=-400ms")
	for _, a := range DefaultChildArgs(cfg, 1) {
		assert.NotContains(t, a, "-scale-offset", "no offset, no flag")
	}
}

func TestOffsetClock_Now_MovesNowNotTimers(t *testing.T) {
	fake := clockwork.NewFakeClockAt(time.UnixMilli(1_700_000_000_000))
	c := offsetClock{Clock: fake, offset: -400 * time.Millisecond}
	assert.Equal(t, fake.Now().Add(-400*time.Millisecond), c.Now())
	assert.Equal(t, 400*time.Millisecond, c.Since(fake.Now().Add(-800*time.Millisecond)))
	assert.Equal(t, 1400*time.Millisecond, c.Until(fake.Now().Add(time.Second)))
	timer := c.NewTimer(time.Second)
	fake.Advance(time.Second)
	select {
	case <-timer.Chan():
	default:
		t.Fatal("a timer of the offset clock keeps the real pace")
	}
}

func TestParseStop_Forms(t *testing.T) {
	st, err := ParseStop("replica=1,after=5s,for=2500ms")
	require.NoError(t, err)
	assert.Equal(t, &Stop{Replica: 1, After: 5 * time.Second, For: 2500 * time.Millisecond}, st)
	st2, err := ParseStop(st.String())
	require.NoError(t, err)
	assert.Equal(t, st, st2, "String reads back")
	st, err = ParseStop(" for=1s, replica=0 ,after=0s")
	require.NoError(t, err)
	assert.Equal(t, &Stop{For: time.Second}, st)
	st, err = ParseStop("")
	require.NoError(t, err)
	assert.Nil(t, st)
	for _, bad := range []string{
		"replica=0,after=5s",               // for missing
		"replica=0,after=5s,for=5s,for=1s", // twice
		"replica=-1,after=5s,for=5s",
		"replica=0,after=-1s,for=5s",
		"replica=0,after=5s,for=0s",
		"replica=0,after=5,for=5s",
		"replica=0,after=5s,for=5s,who=me",
		"replica0,after=5s,for=5s",
	} {
		_, err := ParseStop(bad)
		assert.Error(t, err, bad)
	}
}

func TestStop_Check_InsideWindow(t *testing.T) {
	cfg := Config{Replicas: 3, Window: 15 * time.Second}
	assert.NoError(t, Stop{Replica: 2, After: 5 * time.Second, For: 10 * time.Second}.check(cfg))
	assert.Error(t, Stop{Replica: 3, After: 5 * time.Second, For: 5 * time.Second}.check(cfg), "no replica 3")
	assert.Error(t, Stop{Replica: 0, After: 10 * time.Second, For: 6 * time.Second}.check(cfg), "resumed after the window")
}

func TestStop_Pause_StopsThenResumes(t *testing.T) {
	var sent []os.Signal
	signal := func(s os.Signal) error { sent = append(sent, s); return nil }
	start := time.Now().Add(-time.Minute) // both instants passed: no waiting
	stopped, resumed, err := Stop{After: time.Second, For: time.Second}.pause(t.Context(), start, signal)
	require.NoError(t, err)
	assert.Equal(t, []os.Signal{syscall.SIGSTOP, syscall.SIGCONT}, sent)
	assert.False(t, stopped.IsZero())
	assert.False(t, resumed.Before(stopped))
}

func TestStop_Pause_CancelledBeforeSendsNothing(t *testing.T) {
	var sent []os.Signal
	signal := func(s os.Signal) error { sent = append(sent, s); return nil }
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err := Stop{After: time.Second, For: time.Second}.pause(ctx, time.Now().Add(-time.Minute), signal)
	assert.Error(t, err)
	assert.Empty(t, sent)
}

func TestReport_Spread_RatiosToMean(t *testing.T) {
	r := &Report{WindowRuns: []int{150, 100, 50}}
	hi, lo := r.Spread()
	assert.InDelta(t, 1.5, hi, 1e-9)
	assert.InDelta(t, 0.5, lo, 1e-9)
	hi, lo = (&Report{WindowRuns: []int{0, 0}}).Spread()
	assert.Zero(t, hi)
	assert.Zero(t, lo)
}

func TestReport_Check_CountsWindowRunsPerReplica(t *testing.T) {
	start := time.UnixMilli(1_700_000_000_000)
	ms := start.UnixMilli()
	a := &child{done: message{Runs: [][3]int64{{0, ms, 1000}, {0, ms + 1000, 2000}, {0, ms - 1000, 3000}}}}
	b := &child{done: message{Runs: [][3]int64{{1, ms, 1000}}}}
	r := &Report{Config: Config{Jobs: 2, Interval: time.Second, Replicas: 2}}
	r.check([]*child{a, b}, start, start.Add(2*time.Second))
	assert.Equal(t, []int{2, 1}, r.WindowRuns, "the run before the window does not count")
	r.Replicas = make([]Replica, 2)
	assert.Contains(t, r.Markdown(), "| 1.33x / 0.67x |")
	assert.Contains(t, r.Markdown(), "| 2 (1.33x) |")
}

func TestReport_CheckStop_SplitsByReplica(t *testing.T) {
	start := time.UnixMilli(1_700_000_000_000)
	ms := start.UnixMilli()
	st := Stop{Replica: 0, After: 1500 * time.Millisecond, For: 2 * time.Second} // occurrences +2s and +3s
	stopped := &child{done: message{Runs: [][3]int64{
		{0, ms + 1000, 1000},    // before the stop
		{0, ms + 2000, 900_000}, // ran late after SIGCONT: a duplicate
		{1, ms + 4000, 2000},    // after the stop
	}}}
	other := &child{done: message{Runs: [][3]int64{
		{0, ms + 2000, 300_000}, // the backup, within the bound
		{1, ms + 2000, 4000},    // its own first choice
		{0, ms + 3000, 400_000}, // the backup, past the bound
	}}}
	r := &Report{Config: Config{Jobs: 2, Interval: time.Second, Replicas: 2}}
	r.checkStop([]*child{stopped, other}, st, start)
	s := r.Stop
	require.NotNil(t, s)
	assert.Equal(t, start.Add(1500*time.Millisecond), s.From)
	assert.Equal(t, 4, s.Expected, "2 jobs x occurrences +2s, +3s")
	assert.Equal(t, 1, s.Missed, "job 1 at +3s")
	assert.Equal(t, 1, s.Duplicated, "job 0 at +2s ran on both")
	assert.Equal(t, Lateness{N: 4, P50: 300 * time.Millisecond, P99: 900 * time.Millisecond, Max: 900 * time.Millisecond}, s.Late)
	assert.Equal(t, Lateness{N: 3, P50: 300 * time.Millisecond, P99: 400 * time.Millisecond, Max: 400 * time.Millisecond}, s.Others)
	assert.Equal(t, Lateness{N: 1, P50: 900 * time.Millisecond, P99: 900 * time.Millisecond, Max: 900 * time.Millisecond}, s.OnStopped)
	assert.Equal(t, 2, s.OthersOverGrace)
	assert.Equal(t, 1, s.OthersOverBound)
	assert.Contains(t, s.markdown(), "| **missed** | 1 |")
}

func TestSeries_Markdown_StopColumns(t *testing.T) {
	s := &Series{Config: Config{Jobs: 10, Replicas: 3, Window: time.Second}}
	s.Runs = append(s.Runs, &Report{WindowRuns: []int{1, 1, 1}})
	assert.NotContains(t, s.Markdown(), "stopped: missed")
	assert.Contains(t, s.Markdown(), "| 1.00 | 1.00 |", "the spread columns")
	s.Config.Stop = &Stop{Replica: 1, After: time.Second, For: time.Second}
	s.Runs[0].Stop = &StopReport{Missed: 7}
	out := s.Markdown()
	assert.Contains(t, out, "stopped: missed")
	assert.Contains(t, out, "stop replica=1,after=1s,for=1s")
	assert.Contains(t, out, "| 7 |")
}
