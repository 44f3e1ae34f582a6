package scheduler

import (
	"strconv"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/cronguard/cronguard/internal/cronexpr"
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

// skewFor returns the maximum skew for the round of an occurrence whose
// neighbours are before and after it (zero: no neighbour):
// min(before, after)/2, capped at MaxOccurrenceSkew, at least 1ms. A replica
// whose clock runs further ahead than that could claim the round before
// the previous occurrence is due and so hide it, or claim the next one in
// its place.
func skewFor(before, after time.Duration) time.Duration {
	gap := 2 * MaxOccurrenceSkew
	for _, g := range []time.Duration{before, after} {
		if g > 0 {
			gap = min(gap, g)
		}
	}
	s := min(gap/2, MaxOccurrenceSkew)
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

// index returns k of the last occurrence at or before t.
func (p *everyPlan) index(t time.Time) int64 {
	return floorDiv(t.UnixNano()-int64(p.offset), int64(p.d))
}

func (p *everyPlan) definition(now time.Time, lead time.Duration) (gocron.JobDefinition, []gocron.JobOption, bool) {
	// Start from the last occurrence at or before now + lead, lead before
	// it; gocron steps forward by d from there, so it stays on the epoch
	// grid, lead ahead of it.
	last := p.point(p.index(now.Add(lead))).Add(-lead)
	return gocron.DurationJob(p.d), []gocron.JobOption{
		gocron.WithStartAt(gocron.WithStartDateTimePast(last.In(now.Location()))),
	}, true
}

func (p *everyPlan) maxLead() time.Duration { return skewFor(p.d, p.d) / 2 }

func (p *everyPlan) groupKey() string {
	return "every:" + strconv.FormatInt(int64(p.d), 10) + "+" + strconv.FormatInt(int64(p.offset), 10)
}

func (p *everyPlan) occurrence(now time.Time) (time.Time, time.Duration) {
	return p.point(p.index(now.Add(firingSlack(p.d)))), skewFor(p.d, p.d)
}

func (p *everyPlan) prev(t time.Time) (time.Time, bool) { return p.point(p.index(t)), true }
func (p *everyPlan) next(t time.Time) time.Time         { return p.point(p.index(t) + 1) }

func (p *everyPlan) between(a, b time.Time, limit int) (int, time.Time, time.Time, bool) {
	first := p.next(a)
	last, _ := p.prev(b.Add(-time.Nanosecond))
	if !first.Before(b) {
		return 0, time.Time{}, time.Time{}, false
	}
	n := int64(last.Sub(first)/p.d) + 1
	if n > int64(limit) {
		return limit, first, last, true
	}
	return int(n), first, last, false
}

// cronPlan: a cron expression in a fixed location, with cronexpr's
// daylight-saving rules. The same expression drives gocron (cronSpec) and
// maps firings to occurrences, so the two can never disagree.
type cronPlan struct{ expr *cronexpr.Expr }

func (p *cronPlan) definition(now time.Time, lead time.Duration) (gocron.JobDefinition, []gocron.JobOption, bool) {
	spec := cronSpec{p.expr, lead}
	opts := []gocron.JobOption{gocron.WithCronImplementation(spec)}
	// The first firing is given, not left to gocron: gocron takes a first
	// run in the same wall-clock second as the time it computes it from
	// for the second instance of a time repeated by a daylight-saving
	// fall-back, and skips to the run after it. A firing lead ahead is not
	// on a whole second, so a group scheduled in the second before its
	// first firing would lose that occurrence. (Allowed in the past: gocron
	// steps from a start time that has passed to the next firing.)
	if first := spec.Next(now); !first.IsZero() {
		opts = append(opts, gocron.WithStartAt(gocron.WithStartDateTimePast(first.In(now.Location()))))
	}
	return gocron.CronJob(p.expr.String(), true), opts, true
}

// maxLead: occurrences of a cron expression are at least a second apart,
// so the skew of a round is at least half a second.
func (p *cronPlan) maxLead() time.Duration { return skewFor(time.Second, time.Second) / 2 }

// groupKey is the expression with the location it is read in (a zoned
// expression names its own).
func (p *cronPlan) groupKey() string {
	return "cron:" + p.expr.Location().String() + ":" + p.expr.String()
}

// occurrence returns the latest occurrence at or before now + slack (the
// first one after it if there is none in the last five years).
func (p *cronPlan) occurrence(now time.Time) (time.Time, time.Duration) {
	occ, ok := p.expr.Prev(now.Add(maxFiringSlack)) // occurrences are >= 1s apart: slack <= gap/10
	if !ok {
		occ = p.expr.Next(now)
	}
	return occ, skewFor(p.expr.Gaps(occ))
}

func (p *cronPlan) prev(t time.Time) (time.Time, bool) { return p.expr.Prev(t) }
func (p *cronPlan) next(t time.Time) time.Time         { return p.expr.Next(t) }

func (p *cronPlan) between(a, b time.Time, limit int) (int, time.Time, time.Time, bool) {
	return p.expr.Between(a, b, limit)
}

// cronSpec adapts a cron expression to gocron.Cron, firing lead before
// each occurrence. Its times are in UTC: gocron drops a next run that reads
// the same wall time as the last one, which would lose the second instance
// of a repeated hour.
type cronSpec struct {
	expr *cronexpr.Expr
	lead time.Duration
}

func (c cronSpec) IsValid(string, *time.Location, time.Time) error { return nil }

// Next is the firing lead before the first occurrence after the one t
// fired (t + lead).
func (c cronSpec) Next(t time.Time) time.Time {
	n := c.expr.Next(t.Add(c.lead))
	if n.IsZero() {
		return n
	}
	return n.Add(-c.lead)
}

// atPlan: a single occurrence.
type atPlan struct{ t time.Time }

func (p *atPlan) definition(now time.Time, lead time.Duration) (gocron.JobDefinition, []gocron.JobOption, bool) {
	if !p.t.After(now) {
		return nil, nil, false
	}
	at := p.t.Add(-lead)
	if !at.After(now) {
		at = p.t // too close to claim ahead: claimed at the occurrence
	}
	return gocron.OneTimeJob(gocron.OneTimeJobStartDateTime(at)), nil, true
}

func (p *atPlan) maxLead() time.Duration { return skewFor(0, 0) / 2 }

func (p *atPlan) groupKey() string { return "at:" + strconv.FormatInt(p.t.UnixMilli(), 10) }

func (p *atPlan) occurrence(time.Time) (time.Time, time.Duration) { return p.t, skewFor(0, 0) }

func (p *atPlan) prev(t time.Time) (time.Time, bool) {
	if p.t.After(t) {
		return time.Time{}, false
	}
	return p.t, true
}

func (p *atPlan) next(t time.Time) time.Time {
	if p.t.After(t) {
		return p.t
	}
	return time.Time{}
}

func (p *atPlan) between(a, b time.Time, _ int) (int, time.Time, time.Time, bool) {
	if p.t.After(a) && p.t.Before(b) {
		return 1, p.t, p.t, false
	}
	return 0, time.Time{}, time.Time{}, false
}
