package leasebench

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0 < p <= 100) of samples by the
// nearest-rank method, or 0 for no samples. It sorts samples in place.
func Percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	slices.Sort(samples)
	rank := int(math.Ceil(p / 100 * float64(len(samples))))
	rank = max(rank, 1)
	rank = min(rank, len(samples))
	return samples[rank-1]
}

// Summary is a value measured once per round.
type Summary struct {
	Median, Min, Max float64
}

// Summarize returns the median and the spread (min and max) of per-round
// values. The median of an even count is the mean of the two middle values.
func Summarize(perRound []float64) Summary {
	if len(perRound) == 0 {
		return Summary{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	s := slices.Clone(perRound)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Summary{Median: med, Min: s[0], Max: s[n-1]}
}

// RatioSummary summarizes the per-round ratios values[i]/floor[i] (pairs
// from the same round), skipping rounds where either is missing or the
// floor is zero.
func RatioSummary(values, floor []float64) Summary {
	var r []float64
	for i := range min(len(values), len(floor)) {
		if floor[i] != 0 && !math.IsNaN(values[i]) && !math.IsNaN(floor[i]) {
			r = append(r, values[i]/floor[i])
		}
	}
	return Summarize(r)
}
