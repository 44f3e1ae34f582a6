package otelcronguard

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/otel/attribute"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/scheduler"
)

// Each kind of event the scheduler emits lands on its instrument with its
// attributes; the events are made by hand, to reach those a scripted run
// rarely produces.
func TestTelemetry_Observe_EventToInstrument(t *testing.T) {
	occ := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	job := AttrJob.String("nightly")
	tests := []struct {
		name   string
		events []scheduler.Event
		metric string
		attrs  []attribute.KeyValue
		want   int64
	}{
		{"missed adds the count", []scheduler.Event{
			{Kind: scheduler.EventMissed, Missed: scheduler.Missed{Count: 3}},
			{Kind: scheduler.EventMissed, Missed: scheduler.Missed{Count: 2, Capped: true}},
		}, MetricMissed, nil, 5},
		{"acquire failed by class", []scheduler.Event{
			{Kind: scheduler.EventAcquireFailed, Err: fmt.Errorf("acquire: %w", lease.ErrUnavailable)},
			{Kind: scheduler.EventAcquireFailed, Err: fmt.Errorf("acquire: %w", lease.ErrUnavailable)},
			{Kind: scheduler.EventAcquireFailed, Err: lease.ErrAuth},
		}, MetricAcquireFailures, []attribute.KeyValue{AttrErrorType.String("unavailable")}, 2},
		{"acquire failed, auth", []scheduler.Event{
			{Kind: scheduler.EventAcquireFailed, Err: lease.ErrAuth},
		}, MetricAcquireFailures, []attribute.KeyValue{AttrErrorType.String("auth")}, 1},
		{"acquire retrying by class", []scheduler.Event{
			{Kind: scheduler.EventAcquireRetrying, Try: 1, Err: lease.ErrTimeout},
			{Kind: scheduler.EventAcquireRetrying, Try: 2, Err: lease.ErrTimeout},
		}, MetricAcquireRetries, []attribute.KeyValue{AttrErrorType.String("timeout")}, 2},
		{"lease unconfirmed", []scheduler.Event{
			{Kind: scheduler.EventLeaseLost, Err: heartbeat.ErrLeaseUnconfirmed, Remaining: time.Second},
		}, MetricLeaseLosses, []attribute.KeyValue{AttrLossCause.String("unconfirmed")}, 1},
		{"remaining recorded", []scheduler.Event{
			{Kind: scheduler.EventLeaseLost, Err: heartbeat.ErrLeaseUnconfirmed, Remaining: time.Second},
		}, MetricLeaseLossRemaining, []attribute.KeyValue{AttrLossCause.String("unconfirmed")}, 1},
		{"cancelled by shutdown", []scheduler.Event{
			{Kind: scheduler.EventCancelled, Err: scheduler.ErrShutdown},
		}, MetricCancellations, []attribute.KeyValue{AttrCancelCause.String("shutdown")}, 1},
		{"catch-up started", []scheduler.Event{
			{Kind: scheduler.EventStarted, CatchUp: true, Lateness: 3 * time.Minute},
		}, MetricCatchUps, nil, 1},
		{"catch-up lateness", []scheduler.Event{
			{Kind: scheduler.EventStarted, CatchUp: true, Lateness: 3 * time.Minute},
		}, MetricRunLateness, []attribute.KeyValue{AttrCatchUp.Bool(true)}, 1},
		{"running here, in snake case", []scheduler.Event{
			{Kind: scheduler.EventSkipped, Reason: scheduler.SkipRunning},
		}, MetricSkipped, []attribute.KeyValue{AttrSkipReason.String("running_here")}, 1},
		{"clock skew, in snake case", []scheduler.Event{
			{Kind: scheduler.EventSkipped, Reason: scheduler.SkipClockSkew},
		}, MetricSkipped, []attribute.KeyValue{AttrSkipReason.String("clock_skew")}, 1},
		{"overrun", []scheduler.Event{
			{Kind: scheduler.EventSkipped, Reason: scheduler.SkipOverrun},
		}, MetricSkipped, []attribute.KeyValue{AttrSkipReason.String("overrun")}, 1},
		{"a run that never started is counted, not subtracted from the active ones", []scheduler.Event{
			{Kind: scheduler.EventFailed, Err: fmt.Errorf("heartbeat: %w", lease.ErrInvalidArgument)},
		}, MetricRuns, []attribute.KeyValue{AttrOutcome.String("failed")}, 1},
		{"interrupted is an outcome of its own", []scheduler.Event{
			{Kind: scheduler.EventInterrupted, Attempt: 1, Err: scheduler.ErrShutdown},
		}, MetricRuns, []attribute.KeyValue{AttrOutcome.String("interrupted")}, 1},
		{"an interrupted run is no failure", []scheduler.Event{
			{Kind: scheduler.EventInterrupted, Attempt: 1, Err: scheduler.ErrShutdown},
		}, MetricRuns, []attribute.KeyValue{AttrOutcome.String("failed")}, 0},
		{"given up counts on the runs, as the alert reads it", []scheduler.Event{
			{Kind: scheduler.EventGivenUp, Attempt: 3},
		}, MetricRuns, []attribute.KeyValue{AttrOutcome.String("given_up")}, 1},
		{"conflict by job only, no replica IDs", []scheduler.Event{
			{Kind: scheduler.EventConflict, Conflict: fleet.Conflict{Job: "nightly", Key: "job:nightly", Replicas: [2]string{"replica-1", "replica-2"}}},
		}, MetricConflicts, nil, 1},
		{"renewals", []scheduler.Event{
			{Kind: scheduler.EventRenewed, Latency: 2 * time.Millisecond},
			{Kind: scheduler.EventRenewed, Latency: 3 * time.Millisecond},
		}, MetricRenewalDuration, nil, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			for _, e := range tt.events {
				e.Job, e.Occurrence, e.Instance = "nightly", occ, "replica-1"
				h.tel.observe(e)
			}
			ms := h.metrics(t)
			assert.Equal(t, tt.want, value(t, ms, tt.metric, append([]attribute.KeyValue{job}, tt.attrs...)...))
			assert.Zero(t, total(t, ms, MetricActiveRuns, job)-countStarted(tt.events), "active runs: +1 per start, -1 per end of a started run")
			assert.Equal(t, countStarted(tt.events), int64(h.tel.runs.len()), "started runs without an end stay registered until their end")
		})
	}
}

func countStarted(events []scheduler.Event) int64 {
	var n int64
	for _, e := range events {
		if e.Kind == scheduler.EventStarted {
			n++
		}
	}
	return n
}

// A skip reason the scheduler adds later flows through under its own name.
func TestTelemetry_Observe_UnknownSkipReason(t *testing.T) {
	h := newHarness(t)
	future := scheduler.SkipReason(1000)
	h.tel.observe(scheduler.Event{Kind: scheduler.EventSkipped, Job: "j", Reason: future})
	assert.Equal(t, int64(1), value(t, h.metrics(t), MetricSkipped, AttrJob.String("j"), AttrSkipReason.String(snake(future.String()))))
}
