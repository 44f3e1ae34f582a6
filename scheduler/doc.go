// Package scheduler runs scheduled jobs once across all the replicas of a
// service. Every replica builds a Scheduler on the same lease store,
// registers the same jobs, and starts it; for each scheduled occurrence only
// the replica that wins the job's lease runs the job.
//
//	s, err := scheduler.New(store) // e.g. a lease/redis Store
//	err = s.Register("invoices", scheduler.Cron("0 2 * * *"), runInvoices,
//		scheduler.WithTTL(time.Minute))
//	err = s.Start()
//	...
//	err = s.Shutdown(ctx)
//
// It wraps gocron/v2 for the timing and adds, per firing, the guarded run:
//
//  1. Map the firing to its occurrence, the scheduled time: the latest
//     schedule point at or before this replica's clock (gocron never fires
//     early; a firing delayed by load still maps to its own occurrence).
//     Jobs with equal schedules share one gocron job, so the mapping is done
//     once per firing for all of them, and each job is handed to a queue of
//     lease acquires served by a fixed pool of workers
//     (WithAcquireConcurrency): neither gocron nor a slow store round trip
//     for one job delays the other jobs. A job has at most one acquire
//     queued or in flight per replica; a firing that arrives meanwhile waits
//     as the job's next and is acquired right after, in order (a later one
//     replaces it, and the replaced occurrence is skipped as SkipOverrun).
//  2. Acquire the lease "job:<name>" with the occurrence in Unix
//     milliseconds as its round (lease.WithRoundTime). Losing (the lease is
//     held, or the round already claimed) is a quiet skip: a debug log, an
//     EventSkipped with its SkipReason, a count in Stats.
//  3. On a win, start a heartbeat that renews the lease every ttl/3, and
//     call the job with a context that carries the fencing token
//     (fencing.FromContext) and the Run (RunFromContext), and that is
//     cancelled with a cause: heartbeat.ErrLeaseLost or
//     heartbeat.ErrLeaseUnconfirmed when the lease can no longer be trusted,
//     ErrTimeout after WithTimeout, ErrShutdown on Shutdown.
//  4. Recover a panic into an error wrapping ErrPanic (the stack goes to the
//     log), stop the heartbeat, and release the lease with a fresh context
//     bounded by min(ttl, MaxCleanup) — never the cancelled run context.
//
// # Guarantees
//
// Once per occurrence: a round can be claimed once, so an occurrence runs
// at most once however many replicas fire it; and since each replica fires
// on its own clock at a schedule point and maps the firing back to that
// point, replicas agree on every occurrence whatever their clock offsets.
// Clock skew matters only against the store's clock: skew of less than half
// the interval (capped at MaxRoundSkew) causes neither duplicates nor
// misses. A replica whose clock runs further ahead is refused
// by the store (lease.ErrClockSkew, SkipClockSkew, logged as an error) and
// the others run the occurrence when it is due. For Cron the interval is
// the gap to the next activation; for At it is taken as 2*MaxRoundSkew.
//
// Overlap policy "skip": the lease is the job's, not the occurrence's. While
// one occurrence of a job runs anywhere, later occurrences of that job are
// skipped everywhere (SkipLocked) — including on the replica running it:
// firings never queue behind a run, which executes in a goroutine owned by
// the Scheduler. A skipped occurrence is not made up later.
//
// Shutdown: no new runs; running jobs are cancelled with ErrShutdown and
// waited for until Shutdown's context is done; a job that returned has
// released its lease, so another replica runs the next occurrence without
// waiting for the TTL. A job still running keeps its lease, no longer
// renewed, until the TTL runs out, so no second run can overlap it, and
// Shutdown returns an error wrapping ErrJobsStillRunning that names it.
//
// Safety against a stale holder comes from fencing, not from the lease: a
// job whose replica pauses past its TTL may still be running when another
// replica takes over. Guard the job's writes with its fencing token
// (package fencing).
//
// # What it does not do
//
//   - Schedules whose occurrences depend on one process (random intervals,
//     interval-from-completion, cron's "@every") are not offered: replicas
//     could not agree on their occurrences. Every is aligned to the Unix
//     epoch instead.
//   - Missed occurrences (every replica down, the store unreachable, the
//     job's previous run still going) are not run later.
//   - A firing delayed by a whole interval or more (an overloaded or
//     paused process) finds its occurrence's round already claimed, or
//     claims it late if no other replica ran it: a late run is possible, a
//     second run is not. An acquire that waits in the queue keeps the
//     occurrence its firing mapped to, however late it reaches the store.
//   - Throughput is the store's: every replica asks the store once per
//     occurrence of every job, and the winner once more to release. When
//     the acquires of one interval take longer than the interval, the
//     backlog grows, a job's next acquire follows its previous one closely,
//     and an occurrence can find the previous run's lease still held on
//     every replica (SkipLocked everywhere: a miss). See BENCHMARKS.md for
//     what one Redis on a small machine sustains.
//   - Go cannot stop a goroutine: a job that ignores its context keeps
//     running after its lease is lost or after Shutdown returns.
//   - Jobs are identified by name only: replicas that register one name
//     with different schedules or functions are not detected.
//   - Mutual exclusion is as good as the store: Redis replication is
//     asynchronous, and a failover can lose a lease (see lease/redis).
//
// Register works before and after Start. Start and Register fail with
// ErrShutdown after Shutdown; Start twice fails with ErrAlreadyStarted.
// The default logger is slog.Default(): errors that need an operator (a
// fast clock, an unreachable store, a panicking job) are visible unless
// WithLogger says otherwise.
package scheduler
