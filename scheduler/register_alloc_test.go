package scheduler

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScheduler_Register_AllocatesPerJobWhateverTheGroupsSize registers
// jobs that share one schedule (one firing group) and compares the bytes
// allocated per job at two sizes: registering must cost the same per job
// at 8,000 jobs as at 2,000. Copying the group's members at each add made
// it grow with the group (about 400 MB for 10,000 jobs).
func TestScheduler_Register_AllocatesPerJobWhateverTheGroupsSize(t *testing.T) {
	perJob := func(n int) float64 {
		s := newScheduler(t, newMemoryStore(t, nil))
		fn := func(context.Context) error { return nil }
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("job-%05d", i)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for _, name := range names {
			require.NoError(t, s.Register(name, Every(time.Minute), fn))
		}
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
	}
	small, large := perJob(2000), perJob(8000)
	t.Logf("bytes allocated per registered job: %.0f at 2,000 jobs, %.0f at 8,000", small, large)
	assert.Less(t, large, 2*small, "registering a job costs more the more jobs share its schedule")
}
