// Package otelcronguard reports what cronguard's schedulers do as
// OpenTelemetry metrics and traces.
//
// One Telemetry wires any number of schedulers:
//
//	tel, err := otelcronguard.New() // the otel global meter and tracer providers
//	...
//	s, err := scheduler.New(store, tel.Options()...)
//
// Options returns an observer, which turns every scheduler.Event into
// measurements, and a middleware, which starts a span for every run.
//
// # Metrics
//
// Instruments are named under "cronguard.", with UCUM units ("s" for
// durations, "{run}", "{occurrence}", ... for counts), and carry only
// attributes of low cardinality: the job's name (AttrJob) and, per
// instrument, the outcome, catch-up, skip reason, cause or error class,
// plus those of WithAttributes. Lease IDs, fences and occurrences never
// appear on metrics.
//
//	name                              kind            unit          attributes
//	cronguard.runs                    counter         {run}         job, cronguard.run.outcome
//	cronguard.run.duration            histogram       s             job, cronguard.run.outcome
//	cronguard.run.lateness            histogram       s             job, cronguard.run.catch_up
//	cronguard.active_runs             up-down counter {run}         job
//	cronguard.run.catch_ups           counter         {run}         job
//	cronguard.run.cancellations       counter         {run}         job, cronguard.cancel.cause
//	cronguard.occurrences.skipped     counter         {occurrence}  job, cronguard.skip.reason
//	cronguard.occurrences.missed      counter         {occurrence}  job
//	cronguard.lease.losses            counter         {lease}       job, cronguard.lease.loss.cause
//	cronguard.lease.loss.remaining    histogram       s             job, cronguard.lease.loss.cause
//	cronguard.lease.acquire.failures  counter         {occurrence}  job, error.type
//	cronguard.lease.acquire.retries   counter         {attempt}     job, error.type
//	cronguard.lease.renewals          counter         {renewal}     job
//	cronguard.lease.renewal.duration  histogram       s             job
//	cronguard.conflicts               counter         {conflict}    job
//
// Outcomes are succeeded, failed (an error or runtime.Goexit), panicked and
// timed_out. Skip reasons are the scheduler.SkipReason names in snake case:
// claimed (another replica won the occurrence: routine, one per losing
// replica), locked (the job's lease was held for an earlier occurrence: the
// job overlaps itself), running_here, clock_skew, shutdown, overrun, and
// any reason the scheduler adds later. Loss causes are lost and
// unconfirmed; cancel causes timeout and shutdown; error.type is
// lease.Class of the store's error (unavailable, timeout, auth, ...).
// cronguard.conflicts counts scheduler.EventConflict: another live replica
// registered the job with a different schedule or options. The scheduler
// reports a conflict once, when it finds it, not while it lasts: the
// counter says a conflict began, cronguard jobs says which remain.
//
// # Traces
//
// Every run gets one span, "cronguard.run <job>", of kind internal, started
// by the middleware from the run's context: the job's context carries it,
// so spans the job starts from its context are its children. It carries
// the job, the occurrence, the fence, catch-up and the replica
// (scheduler.WithInstanceID), and at its end the outcome
// (cronguard.run.outcome). A failed, panicked or timed-out run's span has
// an error status with the error recorded; a success leaves the status
// unset. A panic is recorded as an exception event with its stack
// and then goes on to the scheduler. While the run executes, a lease loss
// (SpanEventLeaseLost) and a cancellation by timeout or shutdown
// (SpanEventCancelled) are added as span events.
//
// A run's end (cronguard.runs, cronguard.run.duration) is measured in its
// span's context, so an SDK that keeps exemplars links those measurements
// to the run's trace.
//
// Lease acquires are not traced: they happen for every occurrence on every
// replica, mostly to lose the race, before any run (and so any trace)
// exists; their failures and retries are metrics.
//
// # What it does not do
//
// It does not create providers, exporters or resources: configure those
// in the program (the replica's identity belongs in the resource). Spans
// and measurements are recorded from the scheduler's goroutines, in its
// observer and middleware: a provider that blocks slows the scheduler.
// The core packages of cronguard do not import OpenTelemetry; this
// package is its own module.
package otelcronguard
