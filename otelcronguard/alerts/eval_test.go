package alerts

import (
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ruleExprs returns the rule file's expressions by alert name.
func ruleExprs(t *testing.T) map[string]string {
	t.Helper()
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.LegacyValidation, promql, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.Empty(t, errs)
	out := map[string]string{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			out[r.Alert] = r.Expr
		}
	}
	return out
}

// The rules evaluated by Prometheus's engine on series a scrape of a few
// replicas gives (one sample a minute): they fire for the jobs they are
// about, including a counter's first increment (a series that appears at
// 1), and stay quiet for the others.
func TestRules_Evaluate(t *testing.T) {
	exprs := ruleExprs(t)
	const series = `load 1m
	cronguard_occurrences_missed_total{cronguard_job="new", instance="r1"} _x60 1x10
	cronguard_occurrences_missed_total{cronguard_job="old", instance="r1"} 3x70
	cronguard_occurrences_missed_total{cronguard_job="growing", instance="r1"} 0x60 1x10
	cronguard_runs_total{cronguard_job="failing", cronguard_run_outcome="failed", instance="r1"} 0+1x70
	cronguard_runs_total{cronguard_job="flaky", cronguard_run_outcome="failed", instance="r1"} 0+1x70
	cronguard_runs_total{cronguard_job="flaky", cronguard_run_outcome="succeeded", instance="r2"} 0+1x70
	cronguard_runs_total{cronguard_job="recovered", cronguard_run_outcome="failed", instance="r1"} 0+1x70
	cronguard_runs_total{cronguard_job="recovered", cronguard_run_outcome="succeeded", instance="r3"} _x60 1x10
	cronguard_runs_total{cronguard_job="healthy", cronguard_run_outcome="succeeded", instance="r1"} 0+1x70
	cronguard_runs_total{cronguard_job="daily", cronguard_run_outcome="failed", instance="r1"} 1x70
	cronguard_runs_total{cronguard_job="nightly", cronguard_run_outcome="interrupted", instance="r1"} _x60 1x10
	cronguard_runs_total{cronguard_job="nightly", cronguard_run_outcome="given_up", instance="r2"} _x65 1x5
	cronguard_runs_total{cronguard_job="resumed", cronguard_run_outcome="interrupted", instance="r1"} _x60 1x10
	cronguard_runs_total{cronguard_job="resumed", cronguard_run_outcome="succeeded", instance="r2"} _x61 1x9
	cronguard_runs_total{cronguard_job="longago", cronguard_run_outcome="given_up", instance="r1"} 1x70
	cronguard_occurrences_skipped_total{cronguard_job="stuck", cronguard_skip_reason="locked", instance="r2"} 0+1x70
	cronguard_occurrences_skipped_total{cronguard_job="healthy", cronguard_skip_reason="claimed", instance="r2"} 0+1x70
	cronguard_occurrences_skipped_total{cronguard_job="healthy", cronguard_skip_reason="clock_skew", instance="r3"} _x62 1x8
	cronguard_lease_losses_total{cronguard_job="flaky", cronguard_lease_loss_cause="unconfirmed", instance="r1"} 0x60 1x10
	cronguard_lease_losses_total{cronguard_job="healthy", cronguard_lease_loss_cause="lost", instance="r1"} 2x70
	cronguard_lease_acquire_failures_total{cronguard_job="healthy", error_type="timeout", instance="r1"} 5x70
	cronguard_lease_acquire_failures_total{cronguard_job="failing", error_type="auth", instance="r2"} _x65 1x5
	cronguard_conflicts_total{cronguard_job="report", instance="r1"} _x50 1x20
	cronguard_conflicts_total{cronguard_job="report", instance="r2"} _x50 1x20
	cronguard_conflicts_total{cronguard_job="deployed", instance="r1"} 1x70
	cronguard_conflicts_total{cronguard_job="again", instance="r1"} 1x60 2x10
`
	storage := promqltest.LoadedStorage(t, series)
	engine := promqltest.NewTestEngine(t, false, 0, 100_000)
	at := time.Unix(0, 0).Add(68 * time.Minute)
	firing := func(alert string) []string {
		t.Helper()
		expr, ok := exprs[alert]
		require.True(t, ok, alert)
		q, err := engine.NewInstantQuery(t.Context(), storage, nil, expr, at)
		require.NoError(t, err)
		defer q.Close()
		res := q.Exec(t.Context())
		require.NoError(t, res.Err)
		vec, err := res.Vector()
		require.NoError(t, err)
		var jobs []string
		for _, s := range vec {
			name := s.Metric.Get("cronguard_job")
			if inst := s.Metric.Get("instance"); inst != "" {
				name += "@" + inst
			}
			jobs = append(jobs, name)
		}
		slices.Sort(jobs)
		return jobs
	}
	assert.Equal(t, []string{"growing", "new"}, firing("CronguardOccurrenceMissed"), "a new miss, and a first one")
	assert.Equal(t, []string{"failing", "nightly", "stuck"}, firing("CronguardNoRecentSuccess"),
		"runs failed, were interrupted and given up, or the lease stayed held, and none succeeded (a first success counts: an interrupted run resumed elsewhere is quiet)")
	assert.Equal(t, []string{"flaky"}, firing("CronguardLeaseLost"))
	assert.Equal(t, []string{"healthy@r3"}, firing("CronguardClockSkewRefused"), "per replica")
	assert.Equal(t, []string{"failing"}, firing("CronguardLeaseAcquireFailing"), "an old count is not a new failure")
	assert.Equal(t, []string{"again", "report"}, firing("CronguardConflict"),
		"a conflict found in the last hour, on its first count or again; not one found over an hour ago")
	assert.Equal(t, []string{"nightly"}, firing("CronguardOccurrenceGivenUp"),
		"an occurrence given up in the last hour, on its first count; not one given up over an hour ago")
}
