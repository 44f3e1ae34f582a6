package schedscale

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestReport_Check_CountsMissedAndDuplicated(t *testing.T) {
	start := time.UnixMilli(1_700_000_000_000)
	end := start.Add(3 * time.Second)
	ms := start.UnixMilli()
	a := &child{done: message{Runs: [][3]int64{{0, ms, 1000}, {0, ms + 1000, 2000}, {1, ms, 3000}, {1, ms + 2000, 4000}, {0, ms - 1000, 9e6}}}}
	b := &child{done: message{Runs: [][3]int64{{0, ms + 2000, 5000}, {1, ms, 1_500_000}, {1, ms + 3000, 9e6}}}}
	r := &Report{Config: Config{Jobs: 2, Interval: time.Second}}
	r.check([]*child{a, b}, start, end)
	assert.Equal(t, 6, r.Expected, "2 jobs x 3 occurrences; runs outside the window are ignored")
	assert.Equal(t, 1, r.Missed, "job 1 at +1s never ran")
	assert.Equal(t, 1, r.Duplicated, "job 1 at +0s ran twice")
	assert.Equal(t, 5, r.Ran)
	assert.Equal(t, 3*time.Millisecond, r.LateP50, "lateness of the 6 runs in the window, nearest rank")
	assert.Equal(t, 1500*time.Millisecond, r.LateP99)
	assert.Equal(t, 1, r.LateOver1s)
	assert.Equal(t, []string{"job-00001@" + start.Add(time.Second).UTC().Format("15:04:05")}, r.MissedJobs)
}

func TestJobName_RoundTrip(t *testing.T) {
	assert.Equal(t, 1234, jobIndex(JobName(1234)))
	assert.Equal(t, -1, jobIndex("other"))
}

func TestSchedulerOptions_Names(t *testing.T) {
	opts, err := SchedulerOptions([]string{"acquire-concurrency=8", "claim=preferred", "control-plane=true"})
	assert.NoError(t, err)
	assert.Len(t, opts, 1, "the preferred replica and the control plane are the defaults")
	opts, err = SchedulerOptions([]string{"claim=racing"})
	assert.NoError(t, err)
	assert.Len(t, opts, 1, "racing is a scheduler without the control plane")
	opts, err = SchedulerOptions([]string{"claim-lead=250ms"})
	assert.NoError(t, err)
	assert.Len(t, opts, 1)
	_, err = SchedulerOptions([]string{"claim-lead=soon"})
	assert.Error(t, err)
	_, err = SchedulerOptions([]string{"claim=nowhere"})
	assert.Error(t, err)
	_, err = SchedulerOptions([]string{"nosuch=1"})
	assert.Error(t, err)
}

func TestSeries_Markdown_Medians(t *testing.T) {
	s := &Series{Config: Config{Jobs: 10, Replicas: 3, Window: time.Second}}
	for _, missed := range []int{5, 1, 3} {
		s.Runs = append(s.Runs, &Report{Missed: missed})
	}
	assert.Contains(t, s.Markdown(), "| **median** | 3 |")
}
