package alerts

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	rulesFile     = "cronguard.rules.yml"
	dashboardFile = "cronguard-dashboard.json"
)

// promql is Prometheus's PromQL parser with its default options.
var promql = parser.NewParser(parser.Options{})

// problems parses expr with the PromQL parser and says what is wrong with
// it: a parse error, or a series or label otelcronguard does not export.
func problems(expr string, ex exported) []string {
	e, err := promql.ParseExpr(expr)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	series := 0
	checkLabels := func(names []string) {
		for _, l := range names {
			if !ex.labels[l] {
				out = append(out, fmt.Sprintf("label %q is not one otelcronguard's metrics carry", l))
			}
		}
	}
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			series++
			name := n.Name
			for _, m := range n.LabelMatchers {
				if m.Name == model.MetricNameLabel {
					name = m.Value
					continue
				}
				checkLabels([]string{m.Name})
			}
			if !ex.names[name] {
				out = append(out, fmt.Sprintf("%q is not a series otelcronguard exports", name))
			}
		case *parser.AggregateExpr:
			checkLabels(n.Grouping)
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				checkLabels(n.VectorMatching.MatchingLabels)
				checkLabels(n.VectorMatching.Include)
			}
		}
		return nil
	})
	if series == 0 {
		out = append(out, "names no series")
	}
	return out
}

// checkExpr fails t with expr's problems.
func checkExpr(t *testing.T, where, expr string, ex exported) {
	t.Helper()
	assert.Empty(t, problems(expr, ex), "%s: %s", where, expr)
}

// The rules parse as Prometheus parses a rule file (rulefmt: YAML, PromQL,
// annotation templates), cover what an operator of cronguard needs alerts
// for, tell the on-call what to do, and name only series and labels
// otelcronguard exports.
func TestRules_ParseAndNameExportedMetrics(t *testing.T) {
	ex := exportedSet(t)
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.LegacyValidation, promql, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.Empty(t, errs, "%s parses as Prometheus parses it", rulesFile)
	require.NotNil(t, groups)

	var alerts []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "%s: only alerting rules", g.Name)
			alerts = append(alerts, r.Alert)
			checkExpr(t, r.Alert, r.Expr, ex)
			assert.NotEmpty(t, r.Labels["severity"], "%s: has a severity", r.Alert)
			assert.NotEmpty(t, r.Annotations["summary"], "%s: has a summary", r.Alert)
			runbook := r.Annotations["runbook"]
			assert.GreaterOrEqual(t, len(runbook), 200, "%s: the runbook says what it means and what to do", r.Alert)
			assert.Contains(t, runbook, "cronguard", "%s: the runbook names the tools to use", r.Alert)
		}
	}
	assert.ElementsMatch(t, []string{
		"CronguardOccurrenceMissed", "CronguardOccurrenceGivenUp", "CronguardNoRecentSuccess",
		"CronguardLeaseLost", "CronguardClockSkewRefused", "CronguardLeaseAcquireFailing",
		"CronguardConflict",
	}, alerts)
}

// A rule naming a series otelcronguard does not export, or a label its
// metrics do not carry, is caught: the check is not vacuous.
func TestRules_CheckCatchesUnknownNames(t *testing.T) {
	ex := exportedSet(t)
	for expr, want := range map[string]string{
		`increase(cronguard_occurrences_missed[5m]) > 0`:                           `"cronguard_occurrences_missed" is not a series`,
		`sum by (job_name) (increase(cronguard_occurrences_missed_total[5m])) > 0`: `label "job_name"`,
		`cronguard_runs_total{outcome="failed"}`:                                   `label "outcome"`,
		`rate(cronguard_run_duration_seconds[5m])`:                                 `"cronguard_run_duration_seconds" is not a series`,
		`sum(rate(cronguard_runs_total[5m]) > 0`:                                   `unclosed left parenthesis`,
		`vector(1)`:                                                                `names no series`,
	} {
		assert.Contains(t, strings.Join(problems(expr, ex), "; "), want, expr)
	}
	assert.Empty(t, problems(`sum by (cronguard_job) (rate(cronguard_runs_total{cronguard_run_outcome="failed"}[5m]))`, ex))
}

// grafanaVars are the dashboard's variables, replaced by values for the
// PromQL parser.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h", "${job}", ".*", "$job", ".*")

// labelValues matches a Grafana label_values(metric, label) query.
var labelValues = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)

// The dashboard is valid JSON, its panel queries parse as PromQL, and it
// queries only series and labels otelcronguard exports.
func TestDashboard_ParsesAndNamesExportedMetrics(t *testing.T) {
	ex := exportedSet(t)
	b, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var dash struct {
		Title      string `json:"title"`
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Type       string `json:"type"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID      int    `json:"id"`
			Title   string `json:"title"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(b, &dash), "%s is JSON", dashboardFile)
	assert.NotEmpty(t, dash.Title)
	assert.NotEmpty(t, dash.UID)
	require.NotEmpty(t, dash.Panels)

	ids := map[int]bool{}
	queried := map[string]bool{}
	for _, p := range dash.Panels {
		assert.False(t, ids[p.ID], "panel IDs are unique: %d", p.ID)
		ids[p.ID] = true
		require.NotEmpty(t, p.Targets, "panel %q queries something", p.Title)
		for _, tg := range p.Targets {
			expr := grafanaVars.Replace(tg.Expr)
			assert.NotContains(t, expr, "$", "panel %q: every variable is known", p.Title)
			checkExpr(t, fmt.Sprintf("panel %q %s", p.Title, tg.RefID), expr, ex)
			e, err := promql.ParseExpr(expr)
			if err == nil {
				for _, sel := range parser.ExtractSelectors(e) {
					for _, m := range sel {
						if m.Name == model.MetricNameLabel {
							queried[m.Value] = true
						}
					}
				}
			}
		}
	}
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		require.NotNil(t, m, "variable %s: a label_values(metric, label) query: %q", v.Name, v.Definition)
		assert.True(t, ex.names[m[1]], "variable %s: %q is exported", v.Name, m[1])
		assert.True(t, ex.labels[m[2]], "variable %s: label %q is exported", v.Name, m[2])
	}

	// Every exported series family is on some panel.
	var missing []string
	for name := range ex.names {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_sum"), "_count"), "_bucket")
		if !queried[name] && !queried[base+"_bucket"] && !queried[base+"_sum"] && !queried[base+"_count"] && !queried[base] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	assert.Empty(t, missing, "series on no panel")
}
