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
	a := &child{done: message{Runs: [][2]int64{{0, ms}, {0, ms + 1000}, {1, ms}, {1, ms + 2000}, {0, ms - 1000}}}}
	b := &child{done: message{Runs: [][2]int64{{0, ms + 2000}, {1, ms}, {1, ms + 3000}}}}
	r := &Report{Config: Config{Jobs: 2, Interval: time.Second}}
	r.check([]*child{a, b}, start, end)
	assert.Equal(t, 6, r.Expected, "2 jobs x 3 occurrences; runs outside the window are ignored")
	assert.Equal(t, 1, r.Missed, "job 1 at +1s never ran")
	assert.Equal(t, 1, r.Duplicated, "job 1 at +0s ran twice")
	assert.Equal(t, 5, r.Ran)
	assert.Equal(t, []string{"job-00001@" + start.Add(time.Second).UTC().Format("15:04:05")}, r.MissedJobs)
}

func TestJobName_RoundTrip(t *testing.T) {
	assert.Equal(t, 1234, jobIndex(JobName(1234)))
	assert.Equal(t, -1, jobIndex("other"))
}
