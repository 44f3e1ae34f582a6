package otelcronguard

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/scheduler"
)

// The outcomes of a run (AttrOutcome).
const (
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"
	OutcomePanicked  = "panicked"
	OutcomeTimedOut  = "timed_out"
	// OutcomeInterrupted: the run did not end by itself (shutdown, a lost
	// lease); its occurrence stays open for another attempt. No failure.
	OutcomeInterrupted = "interrupted"
	// OutcomeGivenUp: an occurrence ran out of attempts or of time
	// (scheduler.EventGivenUp). Counted on MetricRuns once fleet-wide, by
	// the replica that recorded it, with no duration: it is not a run.
	OutcomeGivenUp = "given_up"
)

// The span events of a run.
const (
	// SpanEventLeaseLost: the heartbeat cancelled the run because its lease
	// was lost or unconfirmed (AttrLossCause, AttrLeaseRemaining).
	SpanEventLeaseLost = "cronguard.lease.lost"
	// SpanEventCancelled: the run's context was cancelled by its timeout or
	// by shutdown (AttrCancelCause).
	SpanEventCancelled = "cronguard.run.cancelled"
)

// observe is the scheduler observer: it records e's measurements and, for
// a run's events, updates its span.
func (t *Telemetry) observe(e scheduler.Event) {
	ctx := context.Background()
	in := t.in
	switch e.Kind {
	case scheduler.EventStarted:
		t.runs.start(eventKey(e), e.Instance)
		in.activeRuns.Add(ctx, 1, t.attrs.job(e.Job).add...)
		catchUp := "false"
		if e.CatchUp {
			catchUp = "true"
			in.catchUps.Add(ctx, 1, t.attrs.job(e.Job).add...)
		}
		in.runLateness.Record(ctx, e.Lateness.Seconds(), t.attrs.with(e.Job, AttrCatchUp, catchUp).record...)
	case scheduler.EventSucceeded, scheduler.EventFailed, scheduler.EventPanicked, scheduler.EventTimedOut, scheduler.EventInterrupted:
		t.observeEnd(ctx, e)
	case scheduler.EventGivenUp:
		in.runs.Add(ctx, 1, t.attrs.with(e.Job, AttrOutcome, OutcomeGivenUp).add...)
	case scheduler.EventSkipped:
		in.skipped.Add(ctx, 1, t.attrs.with(e.Job, AttrSkipReason, e.Reason.String()).add...)
	case scheduler.EventMissed:
		in.missed.Add(ctx, int64(e.Missed.Count), t.attrs.job(e.Job).add...)
	case scheduler.EventLeaseLost:
		cause := lossCause(e.Err)
		o := t.attrs.with(e.Job, AttrLossCause, cause)
		in.leaseLosses.Add(ctx, 1, o.add...)
		in.leaseLossLeft.Record(ctx, e.Remaining.Seconds(), o.record...)
		t.runs.event(eventKey(e), spanEvent{SpanEventLeaseLost, []attribute.KeyValue{
			AttrLossCause.String(cause), AttrLeaseRemaining.Float64(e.Remaining.Seconds())}})
	case scheduler.EventCancelled:
		cause := cancelCause(e.Err)
		in.cancellations.Add(ctx, 1, t.attrs.with(e.Job, AttrCancelCause, cause).add...)
		t.runs.event(eventKey(e), spanEvent{SpanEventCancelled, []attribute.KeyValue{AttrCancelCause.String(cause)}})
	case scheduler.EventRenewed:
		o := t.attrs.job(e.Job)
		in.renewals.Add(ctx, 1, o.add...)
		in.renewalDuration.Record(ctx, e.Latency.Seconds(), o.record...)
	case scheduler.EventAcquireRetrying:
		in.acquireRetries.Add(ctx, 1, t.attrs.with(e.Job, AttrErrorType, lease.Class(e.Err)).add...)
	case scheduler.EventAcquireFailed:
		in.acquireFailures.Add(ctx, 1, t.attrs.with(e.Job, AttrErrorType, lease.Class(e.Err)).add...)
	case scheduler.EventConflict:
		in.conflicts.Add(ctx, 1, t.attrs.job(e.Job).add...)
	}
}

// observeEnd records a run's end: its outcome and duration, one run fewer
// executing, and its span's status and end.
func (t *Telemetry) observeEnd(ctx context.Context, e scheduler.Event) {
	outcome := outcomeOf(e.Kind)
	run := t.runs.end(eventKey(e))
	if run != nil && run.span != nil {
		ctx = trace.ContextWithSpan(ctx, run.span) // exemplars link to the run's trace
	}
	o := t.attrs.with(e.Job, AttrOutcome, outcome)
	t.in.runs.Add(ctx, 1, o.add...)
	t.in.runDuration.Record(ctx, e.Duration.Seconds(), o.record...)
	if run == nil {
		return // never started (the heartbeat could not start), or no EventStarted seen
	}
	t.in.activeRuns.Add(ctx, -1, t.attrs.job(e.Job).add...)
	if run.span != nil {
		endSpan(run.span, outcome, e.Err, run.panicked)
	}
}

// endSpan sets a run span's outcome and status and ends it. A success
// leaves the status unset, as instrumentation libraries should.
func endSpan(span trace.Span, outcome string, err error, panicRecorded bool) {
	span.SetAttributes(AttrOutcome.String(outcome))
	if outcome != OutcomeSucceeded {
		desc := outcome
		if err != nil {
			desc = err.Error()
			if !panicRecorded {
				span.RecordError(err)
			}
		}
		span.SetStatus(codes.Error, desc)
	}
	span.End()
}

func outcomeOf(k scheduler.EventKind) string {
	switch k {
	case scheduler.EventSucceeded:
		return OutcomeSucceeded
	case scheduler.EventPanicked:
		return OutcomePanicked
	case scheduler.EventTimedOut:
		return OutcomeTimedOut
	case scheduler.EventInterrupted:
		return OutcomeInterrupted
	default:
		return OutcomeFailed
	}
}

// lossCause names the cause of a lease loss (AttrLossCause).
func lossCause(err error) string {
	switch {
	case errors.Is(err, heartbeat.ErrLeaseLost):
		return "lost"
	case errors.Is(err, heartbeat.ErrLeaseUnconfirmed):
		return "unconfirmed"
	default:
		return "other"
	}
}

// cancelCause names the cause of a run's cancellation (AttrCancelCause).
func cancelCause(err error) string {
	switch {
	case errors.Is(err, scheduler.ErrTimeout):
		return "timeout"
	case errors.Is(err, scheduler.ErrShutdown):
		return "shutdown"
	default:
		return "other"
	}
}
