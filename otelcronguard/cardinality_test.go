package otelcronguard

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/cronguard/cronguard/scheduler"
)

// 1,000 runs of one job make one time series per instrument and outcome
// or reason, not one per run: no fence, lease ID, occurrence or replica
// reaches a metric.
func TestTelemetry_Cardinality_OneSeriesPerOutcomeNotPerRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const runs = 1000
		h := newHarness(t)
		store := newMemoryStore(t)
		fast := newScheduler(t, store, h.tel, scheduler.WithInstanceID("fast"), ahead())
		slow := newScheduler(t, store, h.tel, scheduler.WithInstanceID("slow"))
		time.Sleep(500 * time.Millisecond)
		for _, s := range []*scheduler.Scheduler{fast, slow} {
			require.NoError(t, s.Register("tick", scheduler.Every(time.Second), func(context.Context) error { return nil }))
			require.NoError(t, s.Start())
		}
		time.Sleep(runs*time.Second - 100*time.Millisecond) // occurrences 1s .. 1000s
		synctest.Wait()
		shutdown(t, fast)
		shutdown(t, slow)

		ms := h.metrics(t)
		job := AttrJob.String("tick")
		want := map[string][]attribute.KeyValue{
			MetricRuns:        {job, AttrOutcome.String("succeeded")},
			MetricRunDuration: {job, AttrOutcome.String("succeeded")},
			MetricRunLateness: {job, AttrCatchUp.Bool(false)},
			MetricActiveRuns:  {job},
			MetricSkipped:     {job, AttrSkipReason.String("claimed")},
		}
		for name, attrs := range want {
			series := seriesOf(t, ms, name)
			require.Len(t, series, 1, "%s: one series", name)
			wantSet := attribute.NewSet(attrs...)
			assert.True(t, series[0].attrs.Equals(&wantSet), "%s: attributes %v", name, series[0].attrs.ToSlice())
		}
		assert.Equal(t, int64(runs), value(t, ms, MetricRuns, want[MetricRuns]...))
		assert.Equal(t, int64(runs), value(t, ms, MetricRunDuration, want[MetricRunDuration]...))
		assert.Equal(t, int64(runs), value(t, ms, MetricRunLateness, want[MetricRunLateness]...))
		assert.Equal(t, int64(runs), value(t, ms, MetricSkipped, want[MetricSkipped]...), "slow lost every race")
		assert.Zero(t, value(t, ms, MetricActiveRuns, job))
		for name, m := range ms {
			if _, listed := want[name]; !listed {
				assert.Empty(t, seriesOf(t, ms, name), "%s: nothing happened that it counts (%v)", name, m.Data)
			}
		}
		assert.Len(t, h.spans.Ended(), runs, "but one span per run")
		assert.Zero(t, h.tel.runs.len())
		assert.Len(t, h.tel.attrs.sets, 4, "attribute sets built once: job; job+outcome; job+catch-up; job+reason")
	})
}
