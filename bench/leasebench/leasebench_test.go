package leasebench

import (
	"bytes"
	"encoding/xml"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPercentile_NearestRank(t *testing.T) {
	samples := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	assert.Equal(t, time.Duration(5), Percentile(samples, 50))
	assert.Equal(t, time.Duration(10), Percentile(samples, 99))
	assert.Equal(t, time.Duration(1), Percentile(samples, 1))
	assert.Equal(t, time.Duration(0), Percentile(nil, 50))
}

func TestSummarize_MedianAndSpread(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want Summary
	}{
		{"odd", []float64{3, 1, 2}, Summary{Median: 2, Min: 1, Max: 3}},
		{"even", []float64{4, 1, 3, 2}, Summary{Median: 2.5, Min: 1, Max: 4}},
		{"one", []float64{7}, Summary{Median: 7, Min: 7, Max: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Summarize(tt.in))
		})
	}
	assert.True(t, math.IsNaN(Summarize(nil).Median))
}

func TestRatioSummary_PairsRounds(t *testing.T) {
	s := RatioSummary([]float64{2, 6, 3}, []float64{1, 2, 0})
	assert.Equal(t, Summary{Median: 2.5, Min: 2, Max: 3}, s, "the round with a zero floor is skipped")
}

func TestParseCommandStats_Lines(t *testing.T) {
	info := "# Commandstats\r\ncmdstat_get:calls=3,usec=12,usec_per_call=4.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_evalsha:calls=2,usec=20,usec_per_call=10.00\r\ncmdstat_config|resetstat:calls=1,usec=5\r\n"
	m := ParseCommandStats(info)
	assert.Equal(t, CommandStat{Calls: 3, Usec: 12}, m["get"])
	assert.Equal(t, CommandStat{Calls: 2, Usec: 20}, m["evalsha"])
	assert.Equal(t, int64(2), ScriptCalls(m))
	assert.Equal(t, int64(6), TotalCalls(m))
	assert.Equal(t, int64(42), ParseInfoInt("# Stats\r\ntotal_commands_processed:42\r\n", "total_commands_processed"))
}

func sampleResults() *Results {
	seq, par, con := Scenario{Kind: Sequential}, Scenario{Kind: Parallel, Workers: 64}, Scenario{Kind: Contention, Workers: 16}
	m := func(ops int64, p50 time.Duration, cmds map[string]CommandStat) Measurement {
		return Measurement{Ops: ops, Elapsed: time.Second, P50: p50, P99: 2 * p50, Commands: cmds}
	}
	cmds := map[string]CommandStat{"set": {Calls: 100}, "evalsha": {Calls: 100, Usec: 300}, "get": {Calls: 100}, "del": {Calls: 100}}
	return &Results{
		Contenders: []string{"floor", "other"},
		Scenarios:  []Scenario{seq, par, con},
		Runs: map[Scenario]map[string][]Measurement{
			seq: {"floor": {m(100, 100*time.Microsecond, cmds), m(100, 110*time.Microsecond, cmds)}, "other": {m(50, 200*time.Microsecond, cmds), m(50, 220*time.Microsecond, cmds)}},
			par: {"floor": {m(1000, 0, nil), m(1200, 0, nil)}, "other": {m(500, 0, nil), m(600, 0, nil)}},
			con: {"floor": {m(100, 0, cmds)}, "other": {m(50, 0, cmds)}},
		},
	}
}

func TestTable_Markdown_Shape(t *testing.T) {
	r := sampleResults()
	md := r.LatencyTable(Scenario{Kind: Sequential}).Markdown()
	lines := strings.Split(strings.TrimSpace(md), "\n")
	require.Len(t, lines, 4, "header, separator, two rows")
	assert.Equal(t, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |", lines[1])
	assert.Contains(t, lines[3], "| other | 210.0 | 200.0–220.0 |")
	assert.Contains(t, lines[3], "2.00x (2.00–2.00)")

	tp := r.ThroughputTable(Scenario{Kind: Parallel, Workers: 64}).Markdown()
	assert.Contains(t, tp, "| other | 550 | 500–600 | 0.50x (0.50–0.50) | 0 |")
	con := r.ThroughputTable(Scenario{Kind: Contention, Workers: 16}).Markdown()
	assert.Contains(t, con, "| other | 50 | 50–50 | 0.50x (0.50–0.50) | 8.0 | 2.0 |", "400 commands and 100 scripts over 50 successes")
	ct := r.CommandTable(Scenario{Kind: Sequential}).Markdown()
	assert.Contains(t, ct, "| floor | 4.00 | 1.00 | 3.0 | DEL 1.00 (0.0), EVALSHA 1.00 (3.0), GET 1.00 (0.0), SET 1.00 (0.0) |", "100 calls of each over 100 ops per round")
}

func TestChart_WriteSVG_WellFormed(t *testing.T) {
	r := sampleResults()
	var buf bytes.Buffer
	require.NoError(t, r.SweepChart().WriteSVG(&buf))
	d := xml.NewDecoder(&buf)
	var polylines int
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			polylines++
		}
	}
	assert.Equal(t, 2, polylines, "one line per contender")
	assert.Equal(t, "12k", shortNum(12000))
	assert.Equal(t, 2000.0, niceStep(1500))
}

func TestHeadToHeadTable_CountsRoundsWon(t *testing.T) {
	sc := Scenario{Kind: Parallel, Workers: 64}
	ops := func(rates ...int64) []Measurement {
		ms := make([]Measurement, len(rates))
		for i, n := range rates {
			ms[i] = Measurement{Ops: n, Elapsed: time.Second}
		}
		return ms
	}
	r := &Results{
		Contenders: []string{"floor", "cronguard", "peer", "slow"},
		Runs: map[Scenario]map[string][]Measurement{sc: {
			"floor":     ops(1000, 1000, 1000),
			"cronguard": ops(600, 500, 700),
			"peer":      ops(500, 550, 600),
			"slow":      ops(100, 100, 100),
		}},
	}
	md := r.HeadToHeadTable(sc, "cronguard").Markdown()
	assert.Contains(t, md, "| peer | 2 of 3 | 1.17x (0.91–1.20) |", "won rounds 1 and 3; ratios 1.20, 0.91, 1.17")
	assert.Contains(t, md, "| slow | 3 of 3 | 6.00x (5.00–7.00) |")
	assert.NotContains(t, md, "| floor |", "the floor is not a peer")
	assert.Empty(t, r.HeadToHeadTable(sc, "absent").Rows)
}
