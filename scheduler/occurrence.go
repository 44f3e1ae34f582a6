package scheduler

import (
	"strconv"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/robfig/cron/v3"
)

// An occurrence is a scheduled time. Each replica's gocron fires on the
// replica's own clock at a schedule point, never before it (a timer does not
// fire early) but possibly late (a busy process, a GC pause). So the firing
// maps to the latest schedule point at or before local now + firingSlack:
// replicas agree on it whatever their clock offset, and a firing may run up
// to one interval (less the slack) late and still claim its own occurrence
// rather than the next one. The occurrence in Unix milliseconds is the lease
// round.

// firingSlack absorbs a firing that is a hair early on the local clock (a
// clock that steps, a coarse timer): min(gap/10, maxFiringSlack).
const maxFiringSlack = 50 * time.Millisecond

func firingSlack(gap time.Duration) time.Duration { return min(gap/10, maxFiringSlack) }

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

func (p *everyPlan) groupKey() string {
	return "every:" + strconv.FormatInt(int64(p.d), 10) + "+" + strconv.FormatInt(int64(p.offset), 10)
}

func (p *everyPlan) occurrence(now time.Time) (time.Time, time.Duration) {
	k := floorDiv(now.UnixNano()-int64(p.offset)+int64(firingSlack(p.d)), int64(p.d))
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

// groupKey is the expression with the location it is read in (a zoned
// expression names its own, which the spec carries too).
func (p *cronPlan) groupKey() string { return "cron:" + p.spec.Location.String() + ":" + p.expr }

// occurrence returns the latest activation at or before now + slack (the
// first activation after it if there is none in the last five years).
func (p *cronPlan) occurrence(now time.Time) (time.Time, time.Duration) {
	at := now.Add(maxFiringSlack) // cron activations are >= 1s apart: slack <= gap/10
	occ, ok := p.prev(at.Add(time.Nanosecond), 5*366*24*time.Hour)
	if !ok {
		occ = p.spec.Next(now)
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

func (p *atPlan) groupKey() string { return "at:" + strconv.FormatInt(p.t.UnixMilli(), 10) }

func (p *atPlan) occurrence(time.Time) (time.Time, time.Duration) { return p.t, MaxRoundSkew }
