package scheduler

import (
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/robfig/cron/v3"
)

// An occurrence is a scheduled time. Each replica fires on its own clock and
// maps the firing to the schedule point nearest to its local time, so
// replicas whose clocks differ by less than half the interval agree on it.
// The occurrence in Unix milliseconds is the lease round.

// skewFor returns the maximum skew for a round whose occurrence is gap away
// from its neighbour: min(gap/2, MaxRoundSkew), at least 1ms.
func skewFor(gap time.Duration) time.Duration {
	s := min(gap/2, MaxRoundSkew)
	return max(s.Truncate(time.Millisecond), time.Millisecond)
}

// everyPlan: occurrences at k*d + offset since the Unix epoch.
type everyPlan struct{ d, offset time.Duration }

// floorDiv is a / b rounded towards negative infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// point returns the k-th occurrence.
func (p *everyPlan) point(k int64) time.Time {
	return time.Unix(0, k*int64(p.d)+int64(p.offset))
}

func (p *everyPlan) definition(now time.Time) (gocron.JobDefinition, []gocron.JobOption, bool) {
	// Start from the last occurrence at or before now; gocron steps forward
	// by d from there, so it stays on the epoch grid.
	last := p.point(floorDiv(now.UnixNano()-int64(p.offset), int64(p.d)))
	return gocron.DurationJob(p.d), []gocron.JobOption{
		gocron.WithStartAt(gocron.WithStartDateTimePast(last.In(now.Location()))),
	}, true
}

func (p *everyPlan) occurrence(now time.Time) (time.Time, time.Duration) {
	k := floorDiv(now.UnixNano()-int64(p.offset)+int64(p.d)/2, int64(p.d))
	return p.point(k), skewFor(p.d)
}

// cronPlan: a robfig/cron calendar schedule in a fixed location.
type cronPlan struct {
	expr string
	spec *cron.SpecSchedule
}

func (p *cronPlan) definition(time.Time) (gocron.JobDefinition, []gocron.JobOption, bool) {
	// gocron fires on exactly the schedule this package maps occurrences
	// with: the parsed spec, passed as the job's cron implementation.
	return gocron.CronJob(p.expr, true), []gocron.JobOption{gocron.WithCronImplementation(gocronSpec{p.spec})}, true
}

// occurrence returns the activation nearest to now: the first at or after
// now, or the last before now if that one is closer.
func (p *cronPlan) occurrence(now time.Time) (time.Time, time.Duration) {
	next := p.spec.Next(now.Add(-time.Nanosecond)) // first activation >= now
	window := 5 * 366 * 24 * time.Hour
	if !next.IsZero() {
		window = next.Sub(now)
	}
	occ := next
	if prev, ok := p.prev(now, window); ok && (next.IsZero() || now.Sub(prev) <= next.Sub(now)) {
		occ = prev
	}
	gap := MaxRoundSkew * 2
	if after := p.spec.Next(occ); !after.IsZero() {
		gap = after.Sub(occ)
	}
	return occ, skewFor(gap)
}

// prev returns the last activation before now, if there is one no further
// back than window. Activations are whole seconds, and spec.Next(t-1ns) is
// the first activation at or after t, so "an activation lies in [t, now)" is
// monotone in t: binary search over whole seconds finds the last one.
func (p *cronPlan) prev(now time.Time, window time.Duration) (time.Time, bool) {
	has := func(s int64) bool { // an activation in [s, now)
		n := p.spec.Next(time.Unix(s, 0).Add(-time.Nanosecond))
		return !n.IsZero() && n.Before(now)
	}
	lo := now.Add(-window).Unix()
	if !has(lo) {
		return time.Time{}, false
	}
	hi := now.Unix() + 1 // has(hi) is false: hi > now
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if has(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return time.Unix(lo, 0), true
}

// gocronSpec adapts a parsed spec to gocron.Cron.
type gocronSpec struct{ spec *cron.SpecSchedule }

func (g gocronSpec) IsValid(string, *time.Location, time.Time) error { return nil }
func (g gocronSpec) Next(t time.Time) time.Time                      { return g.spec.Next(t) }

// atPlan: a single occurrence.
type atPlan struct{ t time.Time }

func (p *atPlan) definition(now time.Time) (gocron.JobDefinition, []gocron.JobOption, bool) {
	if !p.t.After(now) {
		return nil, nil, false
	}
	return gocron.OneTimeJob(gocron.OneTimeJobStartDateTime(p.t)), nil, true
}

func (p *atPlan) occurrence(time.Time) (time.Time, time.Duration) { return p.t, MaxRoundSkew }
