package otelcronguard

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The instruments' names. Units follow UCUM: "s" for durations, an
// annotation in braces for counts of things ("{run}"); the Prometheus
// exporter turns them into cronguard_runs_total,
// cronguard_run_duration_seconds and so on.
const (
	// MetricRuns counts finished runs ({run}), by AttrJob and AttrOutcome,
	// and occurrences given up (outcome given_up, once fleet-wide).
	MetricRuns = "cronguard.runs"
	// MetricRunDuration is how long runs took (s), by AttrJob and
	// AttrOutcome.
	MetricRunDuration = "cronguard.run.duration"
	// MetricRunLateness is how long after its occurrence a run started
	// (s), by AttrJob and AttrCatchUp.
	MetricRunLateness = "cronguard.run.lateness"
	// MetricActiveRuns is the number of runs executing now ({run}), by
	// AttrJob: one from a run's start to its end event.
	MetricActiveRuns = "cronguard.active_runs"
	// MetricCatchUps counts catch-up runs started ({run}), by AttrJob.
	MetricCatchUps = "cronguard.run.catch_ups"
	// MetricCancellations counts run contexts cancelled by the job's
	// timeout or by shutdown while the job ran ({run}), by AttrJob and
	// AttrCancelCause.
	MetricCancellations = "cronguard.run.cancellations"
	// MetricSkipped counts occurrences this replica did not run
	// ({occurrence}), by AttrJob and AttrSkipReason.
	MetricSkipped = "cronguard.occurrences.skipped"
	// MetricMissed counts occurrences that ran on no replica
	// ({occurrence}), by AttrJob, as the winner of a later occurrence
	// learns from the ledger.
	MetricMissed = "cronguard.occurrences.missed"
	// MetricLeaseLosses counts runs whose lease was lost or could not be
	// confirmed while they ran ({lease}), by AttrJob and AttrLossCause.
	MetricLeaseLosses = "cronguard.lease.losses"
	// MetricLeaseLossRemaining is the time the lease still had to its local
	// deadline when its run was cancelled for its loss (s), by AttrJob and
	// AttrLossCause: the margin the job had to stop writing.
	MetricLeaseLossRemaining = "cronguard.lease.loss.remaining"
	// MetricAcquireFailures counts occurrences not run here because the
	// store could not be asked while they were current ({occurrence}), by
	// AttrJob and AttrErrorType.
	MetricAcquireFailures = "cronguard.lease.acquire.failures"
	// MetricAcquireRetries counts acquires retried after a transient error
	// ({attempt}), by AttrJob and AttrErrorType.
	MetricAcquireRetries = "cronguard.lease.acquire.retries"
	// MetricRenewals counts confirmed lease renewals ({renewal}), by
	// AttrJob.
	MetricRenewals = "cronguard.lease.renewals"
	// MetricRenewalDuration is how long a confirmed renewal took, from
	// just before it was sent to its answer (s), by AttrJob.
	MetricRenewalDuration = "cronguard.lease.renewal.duration"
	// MetricConflicts counts conflicts this replica found ({conflict}), by
	// AttrJob: another live replica registered the job with a different
	// schedule or options (scheduler.EventConflict, reported once per
	// conflict, not while it lasts).
	MetricConflicts = "cronguard.conflicts"
)

// The attribute keys. Metrics carry only the low-cardinality ones (job,
// outcome, catch-up, reason, cause, error type, and those of
// WithAttributes); run spans carry the run's identity too.
const (
	// AttrJob is the job's name.
	AttrJob = attribute.Key("cronguard.job")
	// AttrOutcome is how a run ended: succeeded, failed, panicked,
	// timed_out or interrupted; given_up for an occurrence that ran out of
	// attempts or of time.
	AttrOutcome = attribute.Key("cronguard.run.outcome")
	// AttrCatchUp says whether a run is a catch-up (scheduler.WithCatchUp).
	AttrCatchUp = attribute.Key("cronguard.run.catch_up")
	// AttrSkipReason is why an occurrence was skipped: the
	// scheduler.SkipReason's name in snake case (claimed: another replica
	// won; locked: the job's lease was held for an earlier occurrence;
	// running_here: an earlier run still executes on this replica;
	// clock_skew, shutdown, overrun, and any reason added later).
	AttrSkipReason = attribute.Key("cronguard.skip.reason")
	// AttrLossCause is why a lease was given up: lost (the store said it is
	// no longer held) or unconfirmed (no renewal could be confirmed before
	// the cut-off).
	AttrLossCause = attribute.Key("cronguard.lease.loss.cause")
	// AttrCancelCause is why a run context was cancelled while the job
	// ran: timeout or shutdown.
	AttrCancelCause = attribute.Key("cronguard.cancel.cause")
	// AttrErrorType is the class of a store error, lease.Class: unavailable,
	// timeout, auth, internal, ...
	AttrErrorType = attribute.Key("error.type")

	// AttrOccurrence (spans only) is the run's scheduled time, RFC 3339 in
	// UTC.
	AttrOccurrence = attribute.Key("cronguard.run.occurrence")
	// AttrFence (spans only) is the run's fencing token.
	AttrFence = attribute.Key("cronguard.run.fence")
	// AttrReplica (spans; metrics only through WithAttributes) is the
	// replica's instance ID (scheduler.WithInstanceID).
	AttrReplica = attribute.Key("cronguard.replica")
	// AttrLeaseRemaining (span events only) is, in seconds, the time the
	// lease had left when its run was cancelled for its loss.
	AttrLeaseRemaining = attribute.Key("cronguard.lease.remaining")
)

// ownKeys are the keys WithAttributes may not set.
var ownKeys = []attribute.Key{AttrJob, AttrOutcome, AttrCatchUp, AttrSkipReason, AttrLossCause,
	AttrCancelCause, AttrErrorType, AttrOccurrence, AttrFence, AttrLeaseRemaining}

// Bucket boundaries (s), as advice to the SDK; a view can override them.
var (
	// runBuckets: jobs take from milliseconds to an hour.
	runBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
	// latenessBuckets: a healthy start is milliseconds late; a catch-up
	// can be hours late.
	latenessBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600}
	// renewalBuckets: a store round trip.
	renewalBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}
	// remainingBuckets: the heartbeat's stop margin is ttl/6 by default.
	remainingBuckets = []float64{0, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
)

// instruments are the Telemetry's metric instruments.
type instruments struct {
	runs            metric.Int64Counter
	runDuration     metric.Float64Histogram
	runLateness     metric.Float64Histogram
	activeRuns      metric.Int64UpDownCounter
	catchUps        metric.Int64Counter
	cancellations   metric.Int64Counter
	skipped         metric.Int64Counter
	missed          metric.Int64Counter
	leaseLosses     metric.Int64Counter
	leaseLossLeft   metric.Float64Histogram
	acquireFailures metric.Int64Counter
	acquireRetries  metric.Int64Counter
	renewals        metric.Int64Counter
	renewalDuration metric.Float64Histogram
	conflicts       metric.Int64Counter
}

// newInstruments creates the instruments on m.
func newInstruments(m metric.Meter) (*instruments, error) {
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	histogram := func(name, desc string, buckets []float64) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(buckets...))
		errs = append(errs, err)
		return h
	}
	active, err := m.Int64UpDownCounter(MetricActiveRuns, metric.WithUnit("{run}"),
		metric.WithDescription("Runs executing now."))
	errs = append(errs, err)
	in := &instruments{
		runs:            counter(MetricRuns, "{run}", "Finished runs, by outcome."),
		runDuration:     histogram(MetricRunDuration, "How long runs took, by outcome.", runBuckets),
		runLateness:     histogram(MetricRunLateness, "How long after its occurrence a run started.", latenessBuckets),
		activeRuns:      active,
		catchUps:        counter(MetricCatchUps, "{run}", "Catch-up runs started."),
		cancellations:   counter(MetricCancellations, "{run}", "Run contexts cancelled by the job's timeout or by shutdown while the job ran."),
		skipped:         counter(MetricSkipped, "{occurrence}", "Occurrences this replica did not run, by reason."),
		missed:          counter(MetricMissed, "{occurrence}", "Occurrences that ran on no replica."),
		leaseLosses:     counter(MetricLeaseLosses, "{lease}", "Runs whose lease was lost or could not be confirmed while they ran."),
		leaseLossLeft:   histogram(MetricLeaseLossRemaining, "Time the lease had left when its run was cancelled for its loss.", remainingBuckets),
		acquireFailures: counter(MetricAcquireFailures, "{occurrence}", "Occurrences not run here: the lease store could not be asked while they were current."),
		acquireRetries:  counter(MetricAcquireRetries, "{attempt}", "Lease acquires retried after a transient store error."),
		renewals:        counter(MetricRenewals, "{renewal}", "Confirmed lease renewals."),
		renewalDuration: histogram(MetricRenewalDuration, "How long a confirmed lease renewal took.", renewalBuckets),
		conflicts:       counter(MetricConflicts, "{conflict}", "Conflicts found: another live replica registered the job with a different schedule or options."),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("otelcronguard: create instruments: %w", err)
	}
	return in, nil
}
