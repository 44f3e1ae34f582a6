// Package cronexpr parses cron expressions and computes their occurrences
// in a time zone, for the scheduler: the same code drives gocron's firing
// and maps each firing to the occurrence all replicas claim.
//
// # Syntax
//
// An expression has 5 fields (minute hour day-of-month month day-of-week)
// or 6 (with a leading seconds field), separated by any whitespace, in
// robfig/cron/v3's syntax: lists, ranges, steps, "*" and "?", month and
// weekday names; or one of the descriptors @yearly, @annually, @monthly,
// @weekly, @daily, @midnight and @hourly. A "TZ=<zone>" or
// "CRON_TZ=<zone>" prefix names the IANA zone it is read in. @every is
// refused: it counts from when the schedule is loaded, so replicas could
// not agree on its occurrences. So is an expression that never fires, one
// longer than MaxLength, and text that is not UTF-8. Parse never panics.
//
// # Daylight saving time
//
// Occurrences are a function of the expression alone (ISC cron's rule),
// identical on every replica whenever it started:
//
//   - An expression whose hour field is fixed runs once per local day at
//     each listed wall time. A listed time inside a spring-forward gap runs
//     at the end of the gap (the transition instant); a listed time inside
//     a repeated (fall-back) hour runs in its first instance only.
//   - An expression whose hour field is a wildcard ("*", "?", a step over
//     all hours such as "*/2", "0-23/3" or "0/4", the full range "0-23",
//     and @hourly) follows real time: every instant whose wall time
//     matches, so both instances of a repeated hour and none of a skipped
//     one.
//   - Listed times that land on the same instant (02:00 and 02:30 inside
//     one gap) are one occurrence.
//
// Formally, with wall(s) the wall time instant s reads at: a real-time
// expression's occurrences are the instants s with wall(s) listed; a fixed
// one's are, for each listed wall time w, the first instant s with
// wall(s) >= w.
//
// # Guarantees and limits
//
// Occurrences are whole seconds and returned in UTC (a local time would
// read the same for both instances of a repeated hour). Next and Prev look
// about five years ahead and back; Next, Prev, Gaps and Between cost a few
// zone lookups and calendar steps, never a scan of the seconds of a day.
// Locations with UTC offsets beyond ±24 hours are not supported (no real
// zone has them; Parse refuses a fixed zone with one). Leap seconds do not exist here, as in package time.
package cronexpr
