package scheduler

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/cronguard/cronguard/internal/cronexpr"
)

// Schedule says when a job's occurrences are. Build one with Cron, Every,
// EveryWithOffset or At; a nil Schedule is refused by Register.
//
// Every schedule offered here has occurrences that are a pure function of
// the wall clock, so every replica computes the same occurrence for a firing
// even when their clocks disagree by less than half the interval. Schedules
// that depend on when a process started or when the last run completed
// (random intervals, interval-from-completion, cron's "@every") are not
// offered: replicas could not agree on their occurrences.
type Schedule interface {
	// String describes the schedule, for logs and errors.
	String() string

	compile(loc *time.Location, now time.Time) (plan, error)
}

// plan is a compiled schedule: how gocron fires it, and how a firing maps to
// its occurrence.
type plan interface {
	// definition returns the gocron definition and options that fire lead
	// before every occurrence after now (claim_ahead.go), or ok=false when
	// nothing is left to fire.
	definition(now time.Time, lead time.Duration) (def gocron.JobDefinition, opts []gocron.JobOption, ok bool)
	// maxLead is the most the claims of an occurrence may be sent ahead
	// of it: half the maximum skew of its round, at the plan's tightest
	// gap (claim_ahead.go).
	maxLead() time.Duration
	// occurrence maps a firing at local time now to its occurrence (the
	// scheduled time) and the maximum clock skew its round may carry.
	occurrence(now time.Time) (occ time.Time, maxSkew time.Duration)
	// groupKey identifies the plan: plans with equal keys fire at the same
	// times and map firings to the same occurrences, so their jobs share
	// one gocron job.
	groupKey() string
	// prev returns the last occurrence at or before t, if there is one.
	prev(t time.Time) (time.Time, bool)
	// next returns the first occurrence strictly after t, or the zero time.
	next(t time.Time) time.Time
	// between counts the occurrences strictly between a and b, up to limit
	// (capped reports more), with the first and last of them.
	between(a, b time.Time, limit int) (n int, first, last time.Time, capped bool)
}

// MaxOccurrenceSkew caps the maximum skew passed with a round
// (lease.WithRoundTime): min(gap to the previous occurrence, gap to the
// next one)/2, capped at MaxOccurrenceSkew.
const MaxOccurrenceSkew = 5 * time.Second

// Cron returns a schedule for a cron expression of 5 fields (minute hour
// day-of-month month day-of-week) or 6 fields (with a leading seconds
// field), in robfig/cron/v3's syntax as gocron uses it, with descriptors
// such as "@hourly" and "@daily". The expression is read in the scheduler's
// location (WithLocation, default UTC) unless it starts with "TZ=<zone>" or
// "CRON_TZ=<zone>" and whitespace. "@every" is refused: use Every, which is
// aligned to the epoch. The expression is checked by Register.
//
// Daylight saving time is decided by the expression alone, as ISC cron
// does, so every replica computes the same occurrences whenever it started:
// an expression with a fixed hour field runs once per local day at each
// listed time (a time inside a spring-forward gap runs at the end of the
// gap; a time inside a repeated fall-back hour runs in its first instance
// only); an expression whose hour field is "*" (or a step over all hours,
// such as "*/2", or @hourly) follows real time: every matching instant,
// both instances of a repeated hour, none of a skipped one. Occurrences
// that fall on the same instant are one occurrence.
func Cron(expr string) Schedule { return cronSchedule{expr: expr} }

type cronSchedule struct{ expr string }

func (c cronSchedule) String() string { return fmt.Sprintf("cron(%q)", c.expr) }

func (c cronSchedule) compile(loc *time.Location, now time.Time) (plan, error) {
	e, err := cronexpr.Parse(c.expr, loc)
	if err != nil {
		return nil, &scheduleError{"cron " + strings.TrimPrefix(err.Error(), "cronexpr: ")}
	}
	if e.Next(now).IsZero() {
		return nil, &scheduleError{fmt.Sprintf("cron %q has no occurrence in the next five years", c.expr)}
	}
	return &cronPlan{expr: e}, nil
}

// Every returns a schedule whose occurrences are the whole multiples of d
// since the Unix epoch (00:00:00 UTC, 1 January 1970): Every(time.Minute)
// fires at the start of every minute on every replica, whenever each one
// started. d must be a whole number of milliseconds, at least 1ms. Locations
// play no part.
func Every(d time.Duration) Schedule { return everySchedule{d: d} }

// EveryWithOffset is Every(d) shifted by offset: occurrences are at
// k*d + offset since the Unix epoch. offset must be a whole number of
// milliseconds with 0 <= offset < d. EveryWithOffset(time.Hour,
// 15*time.Minute) fires at a quarter past every hour (UTC).
func EveryWithOffset(d, offset time.Duration) Schedule {
	return everySchedule{d: d, offset: offset}
}

type everySchedule struct{ d, offset time.Duration }

func (e everySchedule) String() string {
	if e.offset != 0 {
		return fmt.Sprintf("every(%s+%s)", e.d, e.offset)
	}
	return fmt.Sprintf("every(%s)", e.d)
}

func (e everySchedule) compile(*time.Location, time.Time) (plan, error) {
	switch {
	case e.d < time.Millisecond:
		return nil, &scheduleError{fmt.Sprintf("every: interval must be at least 1ms, got %s", e.d)}
	case e.d%time.Millisecond != 0:
		return nil, &scheduleError{fmt.Sprintf("every: interval must be a whole number of milliseconds (occurrences are rounds in Unix ms), got %s", e.d)}
	case e.offset < 0 || e.offset >= e.d:
		return nil, &scheduleError{fmt.Sprintf("every: offset must satisfy 0 <= offset < interval (%s), got %s", e.d, e.offset)}
	case e.offset%time.Millisecond != 0:
		return nil, &scheduleError{fmt.Sprintf("every: offset must be a whole number of milliseconds, got %s", e.offset)}
	}
	return &everyPlan{d: e.d, offset: e.offset}, nil
}

// At returns a one-time schedule with the single occurrence t, which must be
// after the Unix epoch and, when Register is called, in the future. Its
// round is t in Unix milliseconds, so t is truncated to the millisecond.
func At(t time.Time) Schedule { return atSchedule{t: t} }

// oneOff reports whether s has a single occurrence (At).
func oneOff(s Schedule) bool {
	_, ok := s.(atSchedule)
	return ok
}

type atSchedule struct{ t time.Time }

func (a atSchedule) String() string { return fmt.Sprintf("at(%s)", a.t.Format(time.RFC3339Nano)) }

func (a atSchedule) compile(_ *time.Location, now time.Time) (plan, error) {
	switch {
	case a.t.IsZero() || a.t.UnixMilli() <= 0:
		return nil, &scheduleError{fmt.Sprintf("at: time must be after the Unix epoch, got %s", a.t)}
	case !a.t.After(now):
		return nil, &scheduleError{fmt.Sprintf("at: time %s is not in the future (now %s)", a.t.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))}
	}
	return &atPlan{t: time.UnixMilli(a.t.UnixMilli())}, nil
}

// sameSchedule reports whether a and b are equal schedules of this
// package's kinds. It compares only those: a value of another type that
// embeds a Schedule may hold what == cannot compare.
func sameSchedule(a, b Schedule) bool {
	switch a := a.(type) {
	case everySchedule:
		b, ok := b.(everySchedule)
		return ok && a == b
	case cronSchedule:
		b, ok := b.(cronSchedule)
		return ok && a == b
	case atSchedule:
		b, ok := b.(atSchedule)
		return ok && a == b
	}
	return false
}
