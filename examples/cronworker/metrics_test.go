package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// watchWriter is a syncBuffer that closes signal the first time a write
// contains match.
type watchWriter struct {
	syncBuffer
	match  string
	signal chan struct{}
	once   sync.Once
}

func (w *watchWriter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.match) {
		w.once.Do(func() { close(w.signal) })
	}
	return w.syncBuffer.Write(p)
}

// metricsURL returns the address the run printed for -metrics.
func metricsURL(out string) (string, error) {
	m := regexp.MustCompile(`(?m)^metrics: (\S+)$`).FindStringSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("no metrics line in:\n%s", out)
	}
	return m[1], nil
}

// scrape reads url's metrics in the Prometheus text format. It closes its
// connection, so that no client goroutine outlives the test.
func scrape(url string) (map[string]*dto.MetricFamily, error) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	return parser.TextToMetricFamilies(resp.Body)
}

// counter sums the samples of the family name whose labels include labels,
// by replica.
func counter(families map[string]*dto.MetricFamily, name string, labels map[string]string) map[string]float64 {
	out := map[string]float64{}
	f := families[name]
	if f == nil {
		return out
	}
next:
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if got[k] != v {
				continue next
			}
		}
		out[got["cronguard_replica"]] += m.GetCounter().GetValue()
	}
	return out
}

// replicaRow is one row of the summary's replica table.
type replicaRow struct{ runs, succeeded, failed, claimed, locked, leaseLost int }

// replicaRows parses the summary's replica table.
func replicaRows(t *testing.T, out string) map[string]replicaRow {
	t.Helper()
	rows := map[string]replicaRow{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 11 || !strings.HasPrefix(f[0], "replica-") {
			continue
		}
		n := make([]int, 10)
		for i := range n {
			v, err := strconv.Atoi(f[i+1])
			require.NoError(t, err, line)
			n[i] = v
		}
		rows[f[0]] = replicaRow{runs: n[0], succeeded: n[1], failed: n[2], claimed: n[3], locked: n[4], leaseLost: n[7]}
	}
	require.Len(t, rows, 3, "a row per replica in:\n%s", out)
	return rows
}

// With -metrics, /metrics serves otelcronguard's instruments for every
// replica while the run goes on, and once the replicas have shut down its
// counters are exactly the summary's.
func TestRun_Metrics_ServedDuringTheRunAndMatchTheSummary(t *testing.T) {
	t.Parallel()
	var out, errs syncBuffer
	logs := &watchWriter{match: "job lease released", signal: make(chan struct{})}
	c, err := parseFlags([]string{"-for", "5s", "-db", filepath.Join(t.TempDir(), "runs.db"), "-metrics", "127.0.0.1:0"}, &errs)
	require.NoError(t, err)
	var final map[string]*dto.MetricFamily
	var finalErr error
	c.afterShutdown = func() {
		url, err := metricsURL(out.String())
		if err != nil {
			finalErr = err
			return
		}
		final, finalErr = scrape(url)
	}
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		ok, err := work(t.Context(), c, &out, newLogHandler(logs, false))
		done <- result{ok, err}
	}()

	var res result
	select {
	case <-logs.signal: // a run has ended: scrape while the replicas run
		url, err := metricsURL(out.String())
		require.NoError(t, err)
		during, err := scrape(url)
		require.NoError(t, err)
		assert.Contains(t, during, "cronguard_runs_total")
		assert.Contains(t, during, "cronguard_run_duration_seconds")
		succeeded := counter(during, "cronguard_runs_total", map[string]string{"cronguard_run_outcome": "succeeded"})
		var sum float64
		for _, v := range succeeded {
			sum += v
		}
		assert.GreaterOrEqual(t, sum, 1.0, "the run that ended is counted")
		res = <-done
	case res = <-done:
		t.Fatalf("the run ended before any job lease was released; logs:\n%s", logs.String())
	}

	require.NoError(t, res.err, "logs:\n%s", logs.String())
	require.True(t, res.ok, "stdout:\n%s", out.String())
	require.NoError(t, finalErr)
	rows := replicaRows(t, out.String())
	succeeded := counter(final, "cronguard_runs_total", map[string]string{"cronguard_run_outcome": "succeeded"})
	all := counter(final, "cronguard_runs_total", nil)
	// An interrupted run (Shutdown cut it: its occurrence is resumed
	// elsewhere) and a given-up occurrence are outcomes of their own, not
	// failures.
	interrupted := counter(final, "cronguard_runs_total", map[string]string{"cronguard_run_outcome": "interrupted"})
	givenUp := counter(final, "cronguard_runs_total", map[string]string{"cronguard_run_outcome": "given_up"})
	claimed := counter(final, "cronguard_occurrences_skipped_total", map[string]string{"cronguard_skip_reason": "claimed"})
	locked := counter(final, "cronguard_occurrences_skipped_total", map[string]string{"cronguard_skip_reason": "locked"})
	lost := counter(final, "cronguard_lease_losses_total", nil)
	var totalSucceeded, summarySucceeded float64
	for name, row := range rows {
		assert.Equal(t, float64(row.succeeded), succeeded[name], "%s: succeeded", name)
		assert.Equal(t, float64(row.runs), all[name]-givenUp[name], "%s: runs (every started run ended)", name)
		assert.Equal(t, float64(row.failed), all[name]-succeeded[name]-interrupted[name]-givenUp[name], "%s: failed", name)
		assert.Equal(t, float64(row.claimed), claimed[name], "%s: skipped, claimed", name)
		assert.Equal(t, float64(row.locked), locked[name], "%s: skipped, locked", name)
		assert.Equal(t, float64(row.leaseLost), lost[name], "%s: lease lost", name)
		totalSucceeded += succeeded[name]
		summarySucceeded += float64(row.succeeded)
	}
	assert.Equal(t, summarySucceeded, totalSucceeded, "succeeded runs summed over replicas")
	assert.Positive(t, totalSucceeded)
}
