// Package scheduler runs scheduled jobs once across all the replicas of a
// service. Every replica builds a Scheduler on the same lease store,
// registers the same jobs, and starts it; for each scheduled occurrence only
// the replica that wins the job's lease runs the job.
//
//	s, err := scheduler.New(store) // e.g. a lease/redislease Store
//	err = s.Register("invoices", scheduler.Cron("0 2 * * *"), runInvoices,
//		scheduler.WithTTL(time.Minute), scheduler.WithCatchUp(time.Hour))
//	err = s.Start()
//	...
//	err = s.Shutdown(ctx)
//
// # Words
//
// One word per concept, the same in the API, events, logs (in snake case),
// metrics and JSON:
//
//   - occurrence: a scheduled time of a job (Run.Occurrence); for a
//     triggered run, the time the store gave it (see trigger).
//   - round: an occurrence as the store records it, in Unix milliseconds.
//     The store lets a round be claimed once, and only when it is newer
//     than every round claimed before it for the job.
//   - firing: gocron's timer going off for a firing group (the jobs that
//     share a schedule); it maps to one occurrence.
//   - claim: the acquire of the job's lease for a round. Its answers: won,
//     or a skip (below), or a failure the store could not answer
//     (EventAcquireFailed); a transient failure is tried again (a try,
//     Event.Try) while the occurrence is current.
//   - catch-up: a late claim of the latest occurrence that ran nowhere
//     (WithCatchUp).
//   - trigger: a request to run a job now (package fleet); its claim
//     consumes it, and the store gives the run a round after every round
//     claimed before it.
//   - run: one call of the job's function under a won claim, with a lease,
//     a fencing token and a heartbeat that renews the lease (a renewal,
//     EventRenewed).
//   - attempt: a run of an occurrence (Run.Attempt, 1 for the first).
//     Attempt k+1 of an open occurrence has the same round and a new,
//     greater fence; it is a resume (of an interrupted attempt) or a retry
//     (of a failed one, WithRetry).
//   - open: an occurrence whose last attempt was interrupted, or failed
//     under WithRetry, and that may be attempted again: attempts remain
//     and its deadline (WithAttemptWindow; default the next occurrence)
//     has not passed. Its store record decides; the fleet's index of open
//     occurrences is how replicas find it.
//   - given up: an open occurrence that ran out of attempts or of time, or
//     that a later occurrence's claim overtook; reported once fleet-wide
//     (EventGivenUp).
//   - outcome: how a run ended: succeeded (nil, or an error wrapping
//     fencing.ErrDuplicate), failed, panicked, timed_out (the three are
//     failures), interrupted (Shutdown or a lost lease ended it).
//   - skip reasons (SkipReason): locked, claimed, clock_skew, shutdown,
//     overrun, running_here, paused, concurrency_limit.
//   - missed: occurrences the ledger shows no replica claimed (EventMissed).
//
// # One occurrence
//
// It wraps gocron/v2 for the timing and adds, per firing, the guarded run.
// Each job has one owner on a replica (job.go): every firing, catch-up,
// trigger, claim answer, run end, Remove, Register and Shutdown goes
// through it, and it decides what happens next. Read in order, the files
// follow one occurrence: fire.go, claim.go, run.go, finish.go.
//
//  1. Fire: map the firing to its occurrence, the scheduled time: the
//     latest schedule point at or before this replica's clock (gocron
//     never fires early; a firing delayed by load still maps to its own
//     occurrence). With WithClaimLead, gocron fires each schedule a lead
//     ahead of its occurrences, and the firing maps as if it came the lead
//     later.
//     Jobs with equal schedules share one gocron job, so the mapping is done
//     once per firing for all of them, and each job's owner decides: claim
//     now, through a queue served by a fixed pool of workers
//     (WithAcquireConcurrency), so that neither gocron nor a slow store
//     round trip for one job delays the other jobs; or wait behind the
//     job's claim in progress (a later firing replaces it, and the replaced
//     occurrence is skipped as SkipOverrun); or skip it, when the job still
//     runs here (SkipRunning).
//  2. Claim the lease "job:<name>" with the occurrence in Unix
//     milliseconds as its round (lease.WithRoundTime). A transient failure
//     (the store unavailable, a timeout) is retried with backoff while the
//     occurrence is current: until the next occurrence less min(gap/10,
//     1s) and the claim lead, AtRetryWindow for At, and within the job's
//     catch-up window. An
//     answer is not retried: the round already claimed (another replica won,
//     SkipClaimed), the lease held for an earlier occurrence (SkipLocked:
//     an overlap), the job paused (SkipPaused), or the clock refused
//     (SkipClockSkew). Skips are quiet: a debug log, an EventSkipped with
//     its SkipReason, a count in Stats.
//  3. Run: on a win, report the occurrences that ran nowhere (EventMissed;
//     see below), start a heartbeat that renews the lease every ttl/3, wait
//     for the occurrence if the claim was sent ahead of it (a run claimed
//     ahead has begun: Remove and a pause do not stop it, Shutdown waits
//     for it, and one cancelled by Shutdown before its occurrence is not
//     called, is skipped, and is released open for another replica to
//     resume when the job has attempts), and call the job (through any WithMiddleware) with a context that carries
//     the fencing token (fencing.FromContext), the occurrence
//     (fencing.OccurrenceFromContext) and the Run (RunFromContext), that has
//     the job's WithTimeout as its deadline, and that is cancelled with a
//     cause: heartbeat.ErrLeaseLost or heartbeat.ErrLeaseUnconfirmed when the
//     lease can no longer be trusted, ErrTimeout at the timeout, ErrShutdown
//     on Shutdown, and heartbeat.ErrStopped once the job has returned (for
//     the goroutines it left behind).
//  4. Finish: however the job ends (a return, a panic, runtime.Goexit), stop
//     the heartbeat, report the outcome (succeeded, failed, panicked,
//     timed_out), and release the lease with a fresh context bounded by
//     min(ttl, MaxCleanup), retrying transient errors within that bound —
//     never with the cancelled run context. A release with status that
//     ends while this replica's claims are queued or in flight waits for
//     them to be answered first, up to 250ms, when the job's next claim
//     comes after the run's lease would expire by itself (release_hold.go);
//     the run's goroutine hands it to
//     the release batcher and returns, and the rest of its end follows
//     the batch's answer. Then the job's owner decides
//     what comes next: an occurrence that waited for the run
//     (OverlapBufferOne), a catch-up of occurrences the run outlived, a
//     trigger that waited for it.

// # Preferred replica
//
// With the control plane, the replicas do not all claim every occurrence.
// Each keeps a view of the registry (which live replicas have each job,
// with the same fingerprint) and ranks them for each occurrence by
// rendezvous hashing of (replica, job, occurrence): the first choice claims
// at the firing (a lead ahead of the occurrence with WithClaimLead), the
// backup BackupGrace after the occurrence if the round is still unclaimed, and the others send nothing, log nothing above debug and
// report no event. The choice uses the occurrence, not a clock, so work
// spreads evenly over the replicas that have a job. A catch-up is claimed
// at once by the replica that owes it (its run outlived the occurrence,
// which the chosen replicas found locked, or it just started). A trigger,
// which may reach only one replica able to take it, is claimed by the
// others as by the backup. Rounds stay the safety net: a stale view (a
// replica that just stopped, or just started) costs a grace of lateness,
// or, when both chosen replicas are gone before the view shows it, the
// occurrence (reported missed by the next run's ledger); never a second
// run. Replicas race as before without the control plane
// (WithoutControlPlane), before they appear in the registry, for a job in
// conflict, and for occurrences less than two graces (2 × BackupGrace)
// from their neighbours, where a backup would claim too late.

// # Guarantees
//
// Once per occurrence: a round can be claimed once, so an occurrence runs
// at most once however many replicas fire it; and since each replica fires
// on its own clock at a schedule point and maps the firing back to that
// point, replicas agree on every occurrence whatever their clock offsets.
// Clock skew matters only against the store's clock: a round may lie ahead
// of the store's clock by at most min(gap to the previous occurrence, gap
// to the next)/2, capped at MaxOccurrenceSkew, so that a replica whose clock
// runs fast can neither claim an occurrence before its predecessor is due
// nor take its successor's place. A replica further ahead is refused
// (lease.ErrClockSkew, SkipClockSkew, logged as an error) and the others
// run the occurrence when it is due.
//
// No occurrence is lost in silence: the store tells the winner of an
// occurrence which occurrence was claimed before it (the ledger), and every
// occurrence of the schedule strictly between the two ran nowhere (all
// replicas were down, the store was unreachable for longer than the retries,
// the job's previous run overlapped them, every clock was refused). The
// winner reports them: EventMissed with the range, and Stats.Missed, per
// job; and a warning per firing group and second, naming how many jobs
// and occurrences (and the job, when it is one; a sample of names at
// debug), so that an outage seen by thousands of jobs logs one line. An
// occurrence refused as paused is recorded as handled, and the replica
// whose refusal recorded it reports those between it and the occurrence
// claimed before that came due before the pause was set
// (lease.PausedError); those after were paused, not missed. With WithCatchUp a job also catches up the latest
// occurrence that ran nowhere, once, late, if it is within the window: at
// Start and after a run that outlived later occurrences.
//
// Every occurrence is done once, within limits (completion). An attempt
// that did not end by itself (Shutdown cancelled it, its lease was lost,
// and it returned an error) is reported interrupted (EventInterrupted, a
// warning, not a failure), and its occurrence stays open; so does that of
// an attempt whose replica died. Any replica that has the job attempts it
// again (attempt k+1, same occurrence, greater fence), through the same
// claim as every other run (pause, overlap, concurrency limit and clock
// rules apply): within a second of a release that left it open (Shutdown
// releases it so, and announces it on the control channel), and within
// TTL + 2s of its holder's death (two replicas read the fleet's index of
// open occurrences once a second and announce what is due on the control
// channel, and the others read it for their own jobs about twice a second
// in all: one store command per read whatever the number of jobs, about
// four reads a second whatever the number of replicas). Interrupted attempts are resumed up to DefaultAttempts in all
// (WithAttempts); failed ones only with WithRetry, after its backoff. No
// attempt starts at or after the occurrence's deadline (the next
// occurrence, or WithAttemptWindow): an occurrence out of attempts or of
// time is given up (EventGivenUp, a warning, Stats.GivenUp), reported by
// one replica. An attempt that committed and died before returning is
// attempted again: fence the effect with fencing.AdvanceOnceFromContext,
// whose ErrDuplicate the scheduler counts as success; an effect outside
// the database needs an idempotency key of the job's own (Run.Job and
// Run.Occurrence). Completion needs the control plane (a fleet.Store,
// without WithoutControlPlane): without it, an interrupted run is reported
// interrupted and not resumed. A job whose attempt window is shorter than
// its TTL + lease.ExpiryTolerance + 2s (Every(time.Second), say) could not
// be resumed in time: its claims carry no attempts and cost nothing more.
// Triggered runs are attempted once.
//
// Daylight saving time is a property of the schedule alone: see Cron.
//
// Overlap policy: the lease is the job's, not the occurrence's. While one
// occurrence of a job runs anywhere, later occurrences of that job are
// skipped everywhere by default (OverlapSkip: SkipRunning on the replica
// running it, without asking the store; SkipLocked on the others; the next
// winner reports them missed). With WithOverlap(OverlapBufferOne) an
// occurrence that finds the job running waits for the run to end, woken by
// its release, up to the job's next occurrence, then claims its round and
// runs once: a job that outlasts its interval runs back to back. A replica
// never runs two of a job at once and never claims an occurrence it cannot
// run: if the running job's lease is gone (it timed out, the store lost
// it) the other replicas may run the later occurrence; and a run that
// returns after its lease could no longer be trusted is logged ("run
// outlived its lease").
//
// Concurrency limits: jobs registered with the same
// WithConcurrencyLimit(name, n) run at most n at once across the fleet, on
// a semaphore in the lease store (lease.Semaphore). A won occurrence takes
// a slot before its job is called, waiting for one (woken by releases) up
// to its next occurrence; one that finds none in time is skipped with
// SkipConcurrencyLimit and runs nowhere.
//
// Triggers (package fleet, inspect, the cronguard command): a trigger runs
// the job once, now, on one live replica that has it, under the job's
// lease. Its run's occurrence is a round the store claims for it: the
// store's time, or the millisecond after the last claimed round when that
// is later (a replica whose clock runs fast claimed it), so occurrences
// only increase whatever started the runs, and a scheduled occurrence
// claimed after a trigger that ran past it is refused (SkipClaimed), and
// not caught up. A trigger that finds the job's lease held waits: the
// replica holding it takes it when it releases the lease (a run's end, or
// a run that got no slot of its concurrency limit), after a catch-up the
// run made due, or, when that replica stops or no longer has the job,
// hands it on to the others. A replica looks for the triggers that wait
// for its jobs when it subscribes to the control channel (at Start, and
// after the subscription failed) and for a job's when the job is
// registered after Start, so that a trigger queued while no replica had
// the job runs once one registers it. A trigger whose claim the store
// failed (an outage longer than the claim's retries) is asked for again
// every few seconds until the store answers. A pause holds it until the
// job is resumed; a trigger not run within its time to live lapses.
//
// Shutdown: no new runs; running jobs are cancelled with ErrShutdown and
// waited for until Shutdown's context is done; a job that returned has
// released its lease (an interrupted one open, for another replica to
// resume at once), so another replica runs the next occurrence without
// waiting for the TTL. A job still running keeps its lease, no longer
// renewed, until the TTL runs out, so no second run can overlap it, and
// Shutdown returns an error wrapping ErrJobsStillRunning that names it and
// any job whose acquire was still in flight.
//
// Safety against a stale holder comes from fencing, not from the lease: a
// job whose replica pauses past its TTL may still be running when another
// replica takes over. Guard the job's writes with its fencing token, and
// its effect with its occurrence: fencing.AdvanceOnceFromContext commits
// one effect per occurrence even when the store lost the data that makes
// runs once-only (package fencing).
//
// # Telemetry
//
// Every step is an Event for the observers (WithObserver, any number) and
// counted in Stats (all jobs) and JobStats (one job). Middleware
// (WithMiddleware) wraps every job's function, for tracing. The package
// otelcronguard (its own module) turns both into OpenTelemetry metrics and
// spans. Logs carry the same fields everywhere: job, occurrence, lease (the
// short ID), fence (a number) and replica.
//
// # What it does not do
//
//   - Schedules whose occurrences depend on one process (random intervals,
//     interval-from-completion, cron's "@every") are not offered: replicas
//     could not agree on their occurrences. Every is aligned to the Unix
//     epoch instead.
//   - Occurrences older than the latest one are not caught up: rounds only
//     move forward. They are reported missed.
//   - A firing delayed by a whole interval or more (an overloaded or
//     paused process) finds its occurrence's round already claimed, or
//     claims it late if no other replica ran it: a late run is possible, a
//     second run is not. An acquire that waits in the queue keeps the
//     occurrence its firing mapped to, however late it reaches the store.
//   - Throughput is the store's: with the control plane, the occurrence's
//     preferred replica asks the store once per occurrence and once more to
//     release, and its backup reads the round record after BackupGrace,
//     with those of the other occurrences it backs (lease/redislease: one
//     MGET per 256 keys, a GET each on a Redis Cluster; see "Preferred
//     replica" below); without it, every replica asks once
//     per occurrence of every job. When
//     the acquires of one interval take longer than the interval, the
//     backlog grows, a job's next acquire follows its previous one closely,
//     and an occurrence can find the previous run's lease still held on
//     every replica (SkipLocked everywhere: a miss, reported). See
//     BENCHMARKS.md for what one Redis on a small machine sustains.
//   - Go cannot stop a goroutine: a job that ignores its context keeps
//     running after its lease is lost, after its timeout, or after Shutdown
//     returns.
//   - Jobs are identified by name only: replicas that register one name
//     with different schedules or functions are not detected.
//   - Mutual exclusion is as good as the store: Redis replication is
//     asynchronous, and a failover can lose a lease or a round record (see
//     lease/redislease); a lost round record lets an occurrence start twice.
//
// Register works before and after Start. Start and Register fail with
// ErrShutdown after Shutdown; Start twice fails with ErrAlreadyStarted.
// The default logger is slog.Default(): errors that need an operator (a
// fast clock, an unreachable store, a panicking job) are visible unless
// WithLogger says otherwise.
package scheduler
