package otelcronguard

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/cronguard/cronguard/scheduler"
)

// A scripted stretch of two replicas' life produces exactly its counts:
// "fast" (its clock 100ms ahead) wins every occurrence it tries, "slow"
// loses.
//
//   - long (both replicas, every minute): the 00:01 run takes 65s and
//     succeeds; slow loses 00:01 (claimed); at 00:02 both find its lease
//     held for the earlier occurrence (locked, twice); renewed 6 times.
//   - lost (fast, every 2 minutes, 3s lease): releases its own lease
//     behind its back; the heartbeat finds it lost; it returns nil
//     (succeeded).
//   - fails and panics (both, every 2 minutes): fail and panic on fast;
//     slow loses them (claimed, twice).
//   - sleepy (fast, every 2 minutes, 1s timeout): sleeps 2s through its
//     cancellation (timed out).
//
// So: 2 succeeded, 1 failed, 1 panicked, 1 timed out; 3 claimed, 1 locked,
// 1 running here;
// 1 lease lost; 1 cancellation by timeout.
func TestTelemetry_Scheduler_ScriptedCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		store := newMemoryStore(t)
		// The replicas race (no control plane, so no preferred replica):
		// fast, ahead, wins every occurrence both have, and slow reports
		// each one claimed.
		fast := newScheduler(t, store, h.tel, scheduler.WithInstanceID("fast"), ahead(), scheduler.WithoutControlPlane())
		slow := newScheduler(t, store, h.tel, scheduler.WithInstanceID("slow"), scheduler.WithoutControlPlane())
		time.Sleep(500 * time.Millisecond)

		long := func(context.Context) error { time.Sleep(65 * time.Second); return nil }
		fails := func(context.Context) error { return errors.New("disk full") }
		panics := func(context.Context) error { panic("boom") }
		lost := func(ctx context.Context) error {
			run, _ := scheduler.RunFromContext(ctx)
			if err := store.Release(ctx, run.LeaseID); err != nil {
				return err
			}
			<-ctx.Done()
			return nil
		}
		sleepy := func(context.Context) error { time.Sleep(2 * time.Second); return nil }
		for _, s := range []*scheduler.Scheduler{fast, slow} {
			require.NoError(t, s.Register("long", scheduler.Every(time.Minute), long))
			require.NoError(t, s.Register("fails", scheduler.Every(2*time.Minute), fails))
			require.NoError(t, s.Register("panics", scheduler.Every(2*time.Minute), panics))
		}
		require.NoError(t, fast.Register("lost", scheduler.Every(2*time.Minute), lost, scheduler.WithTTL(3*time.Second),
			scheduler.WithAttempts(1))) // its lease is gone: attempts would resume it
		require.NoError(t, fast.Register("sleepy", scheduler.Every(2*time.Minute), sleepy, scheduler.WithTimeout(time.Second)))
		require.NoError(t, fast.Start())
		require.NoError(t, slow.Start())
		time.Sleep(2*time.Minute + 30*time.Second)
		synctest.Wait()
		shutdown(t, fast)
		shutdown(t, slow)

		ms := h.metrics(t)
		job := AttrJob.String
		outcomes := map[string]int64{}
		for _, s := range seriesOf(t, ms, MetricRuns) {
			v, _ := s.attrs.Value(AttrOutcome)
			outcomes[v.AsString()] += s.value
		}
		assert.Equal(t, map[string]int64{"succeeded": 2, "failed": 1, "panicked": 1, "timed_out": 1}, outcomes)
		for _, tc := range []struct{ job, outcome string }{
			{"long", "succeeded"}, {"lost", "succeeded"}, {"fails", "failed"}, {"panics", "panicked"}, {"sleepy", "timed_out"},
		} {
			assert.Equal(t, int64(1), value(t, ms, MetricRuns, job(tc.job), AttrOutcome.String(tc.outcome)), "%s %s", tc.job, tc.outcome)
			assert.Equal(t, int64(1), value(t, ms, MetricRunDuration, job(tc.job), AttrOutcome.String(tc.outcome)), "%s duration", tc.job)
			assert.Equal(t, int64(1), value(t, ms, MetricRunLateness, job(tc.job), AttrCatchUp.Bool(false)), "%s lateness", tc.job)
			assert.Zero(t, value(t, ms, MetricActiveRuns, job(tc.job)), "%s runs nowhere now", tc.job)
		}
		assert.Equal(t, int64(5), total(t, ms, MetricRunDuration))
		assert.Equal(t, int64(5), total(t, ms, MetricRunLateness))
		assert.Len(t, seriesOf(t, ms, MetricActiveRuns), 5, "one series per job")

		claimed, locked, running := AttrSkipReason.String("claimed"), AttrSkipReason.String("locked"), AttrSkipReason.String("running_here")
		assert.Equal(t, int64(3), total(t, ms, MetricSkipped, claimed))
		assert.Equal(t, int64(1), total(t, ms, MetricSkipped, locked))
		assert.Equal(t, int64(1), total(t, ms, MetricSkipped, running))
		assert.Equal(t, int64(5), total(t, ms, MetricSkipped), "no other skips")
		for _, j := range []string{"long", "fails", "panics"} {
			assert.Equal(t, int64(1), value(t, ms, MetricSkipped, job(j), claimed), "%s claimed", j)
		}
		assert.Equal(t, int64(1), value(t, ms, MetricSkipped, job("long"), locked), "slow: fast's run held the lease")
		assert.Equal(t, int64(1), value(t, ms, MetricSkipped, job("long"), running), "fast: its own run was still going")

		assert.Equal(t, int64(1), value(t, ms, MetricLeaseLosses, job("lost"), AttrLossCause.String("lost")))
		assert.Equal(t, int64(1), total(t, ms, MetricLeaseLosses))
		assert.Equal(t, int64(1), value(t, ms, MetricLeaseLossRemaining, job("lost"), AttrLossCause.String("lost")))
		assert.Equal(t, int64(1), value(t, ms, MetricCancellations, job("sleepy"), AttrCancelCause.String("timeout")))
		assert.Equal(t, int64(1), total(t, ms, MetricCancellations))
		assert.Equal(t, int64(6), value(t, ms, MetricRenewals, job("long")), "renewed every 10s for 65s")
		assert.Equal(t, int64(6), value(t, ms, MetricRenewalDuration, job("long")))
		assert.Zero(t, total(t, ms, MetricMissed))
		assert.Zero(t, total(t, ms, MetricAcquireFailures))
		assert.Zero(t, total(t, ms, MetricAcquireRetries))
		assert.Zero(t, total(t, ms, MetricCatchUps))

		// The metrics agree with the schedulers' own counters.
		f, s := fast.Stats(), slow.Stats()
		assert.Equal(t, int64(f.Succeeded+s.Succeeded), outcomes["succeeded"])
		assert.Equal(t, int64(f.Failed+s.Failed), total(t, ms, MetricRuns)-outcomes["succeeded"])
		assert.Equal(t, int64(f.SkipClaimed+s.SkipClaimed), total(t, ms, MetricSkipped, claimed))
		assert.Equal(t, int64(f.SkipLocked+s.SkipLocked), total(t, ms, MetricSkipped, locked))
		assert.Equal(t, int64(f.LeaseLost+s.LeaseLost), total(t, ms, MetricLeaseLosses))
		assert.Equal(t, int64(f.Renewals+s.Renewals), total(t, ms, MetricRenewals))
		assert.Zero(t, h.tel.runs.len(), "every run's entry is gone")

		// One span per run, with the run's identity, outcome and events.
		require.Len(t, h.spans.Ended(), 5)
		for _, name := range []string{"long", "lost"} {
			sp := h.span(t, "cronguard.run "+name)
			assert.Equal(t, codes.Unset, sp.Status().Code, name)
			assert.Equal(t, "succeeded", attr(sp, AttrOutcome).AsString(), name)
		}
		for _, tc := range []struct{ job, outcome, desc string }{
			{"fails", "failed", "disk full"}, {"panics", "panicked", "boom"}, {"sleepy", "timed_out", "timed out"},
		} {
			sp := h.span(t, "cronguard.run "+tc.job)
			assert.Equal(t, trace.SpanKindInternal, sp.SpanKind())
			assert.Equal(t, codes.Error, sp.Status().Code, tc.job)
			assert.Contains(t, sp.Status().Description, tc.desc, tc.job)
			assert.Equal(t, tc.outcome, attr(sp, AttrOutcome).AsString())
			assert.Equal(t, tc.job, attr(sp, AttrJob).AsString())
			assert.Equal(t, "fast", attr(sp, AttrReplica).AsString())
			assert.Equal(t, "2000-01-01T00:02:00Z", attr(sp, AttrOccurrence).AsString())
			assert.Positive(t, attr(sp, AttrFence).AsInt64())
			_, hasException := eventNamed(sp, "exception")
			assert.True(t, hasException, "%s: the error or panic is recorded", tc.job)
		}
		panicked, _ := eventNamed(h.span(t, "cronguard.run panics"), "exception")
		assert.Contains(t, eventAttr(panicked, "exception.stacktrace").AsString(), "otelcronguard.TestTelemetry_Scheduler_ScriptedCounts",
			"the panic's stack is the job's")
		assert.Len(t, h.span(t, "cronguard.run panics").Events(), 1, "the panic is recorded once")

		lostEvent, ok := eventNamed(h.span(t, "cronguard.run lost"), SpanEventLeaseLost)
		require.True(t, ok, "the lease loss is on the lost run's span")
		assert.Equal(t, "lost", eventAttr(lostEvent, AttrLossCause).AsString())
		timeout, ok := eventNamed(h.span(t, "cronguard.run sleepy"), SpanEventCancelled)
		require.True(t, ok, "the timeout is on the sleepy run's span")
		assert.Equal(t, "timeout", eventAttr(timeout, AttrCancelCause).AsString())
		assert.Equal(t, "2000-01-01T00:01:00Z", attr(h.span(t, "cronguard.run long"), AttrOccurrence).AsString())
	})
}

// A job that starts a span from its context gets the run's span as parent.
func TestTelemetry_Middleware_JobSpanIsChildOfRunSpan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		s := newScheduler(t, newMemoryStore(t), h.tel, scheduler.WithInstanceID("replica-1"))
		time.Sleep(500 * time.Millisecond)
		var fromCtx trace.SpanContext
		require.NoError(t, s.Register("report", scheduler.Every(time.Minute), func(ctx context.Context) error {
			fromCtx = trace.SpanContextFromContext(ctx)
			_, child := h.tp.Tracer("job").Start(ctx, "write report")
			child.End()
			return nil
		}))
		require.NoError(t, s.Start())
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()

		run := h.span(t, "cronguard.run report")
		child := h.span(t, "write report")
		assert.Equal(t, run.SpanContext().SpanID(), child.Parent().SpanID(), "the run span is the job span's parent")
		assert.Equal(t, run.SpanContext().TraceID(), child.SpanContext().TraceID())
		assert.Equal(t, run.SpanContext(), fromCtx, "the job's context carries the run span")
		assert.Equal(t, "replica-1", attr(run, AttrReplica).AsString())
		assert.True(t, child.EndTime().Before(run.EndTime()) || child.EndTime().Equal(run.EndTime()))
	})
}

// The middleware on its own (without the observer that ends run spans)
// still ends every span it starts, with the job's outcome.
func TestTelemetry_Middleware_WithoutObserver_EndsItsSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		s, err := scheduler.New(newMemoryStore(t), scheduler.WithLogger(discardLogger()),
			scheduler.WithMiddleware(h.tel.middleware))
		require.NoError(t, err)
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, s.Register("ok", scheduler.Every(time.Minute), func(context.Context) error { return nil }))
		require.NoError(t, s.Register("fails", scheduler.Every(time.Minute), func(context.Context) error { return errors.New("no") }))
		require.NoError(t, s.Register("panics", scheduler.Every(time.Minute), func(context.Context) error { panic("boom") }))
		require.NoError(t, s.Register("exits", scheduler.Every(time.Minute), func(context.Context) error {
			runtime.Goexit()
			return nil
		}))
		require.NoError(t, s.Start())
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		shutdown(t, s)

		require.Len(t, h.spans.Ended(), 4, "every span ended")
		assert.Equal(t, codes.Unset, h.span(t, "cronguard.run ok").Status().Code)
		for _, name := range []string{"fails", "panics", "exits"} {
			assert.Equal(t, codes.Error, h.span(t, "cronguard.run "+name).Status().Code, name)
		}
		assert.Empty(t, attr(h.span(t, "cronguard.run ok"), AttrReplica).AsString(), "the replica is known from the observer only")
		assert.Zero(t, h.tel.runs.len())
	})
}

// Spans of a replica carry the WithAttributes ones too.
func TestTelemetry_WithAttributes_OnSpansAndMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, WithAttributes(AttrReplica.String("r1"), attribute.String("deployment.environment.name", "test")))
		s := newScheduler(t, newMemoryStore(t), h.tel, scheduler.WithInstanceID("instance-7"))
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, s.Register("ok", scheduler.Every(time.Minute), func(context.Context) error { return nil }))
		require.NoError(t, s.Start())
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()

		sp := h.span(t, "cronguard.run ok")
		assert.Equal(t, "r1", attr(sp, AttrReplica).AsString(), "WithAttributes' replica wins over the instance ID")
		assert.Equal(t, "test", attr(sp, "deployment.environment.name").AsString())
		ms := h.metrics(t)
		assert.Equal(t, int64(1), value(t, ms, MetricRuns, AttrJob.String("ok"), AttrOutcome.String("succeeded"),
			AttrReplica.String("r1"), attribute.String("deployment.environment.name", "test")))
	})
}

// A job that ends with runtime.Goexit fails; its span says so.
func TestTelemetry_Scheduler_GoexitEndsSpanAsFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		s := newScheduler(t, newMemoryStore(t), h.tel)
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, s.Register("exits", scheduler.Every(time.Minute), func(context.Context) error {
			runtime.Goexit()
			return nil
		}))
		require.NoError(t, s.Start())
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()

		sp := h.span(t, "cronguard.run exits")
		assert.Equal(t, codes.Error, sp.Status().Code)
		assert.Contains(t, sp.Status().Description, "runtime.Goexit")
		assert.Equal(t, "failed", attr(sp, AttrOutcome).AsString())
		ms := h.metrics(t)
		assert.Equal(t, int64(1), value(t, ms, MetricRuns, AttrJob.String("exits"), AttrOutcome.String("failed")))
		assert.Zero(t, value(t, ms, MetricActiveRuns, AttrJob.String("exits")))
		assert.Zero(t, h.tel.runs.len())
	})
}

// Two replicas that register one job with different schedules each find
// the conflict once: the counter has one per replica, by job only.
func TestTelemetry_Scheduler_CountsConflicts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		store := newMemoryStore(t)
		a := newScheduler(t, store, h.tel, scheduler.WithInstanceID("replica-a"))
		b := newScheduler(t, store, h.tel, scheduler.WithInstanceID("replica-b"))
		nop := func(context.Context) error { return nil }
		require.NoError(t, a.Register("report", scheduler.Every(time.Hour), nop))
		require.NoError(t, b.Register("report", scheduler.Every(2*time.Hour), nop))
		require.NoError(t, a.Start())
		require.NoError(t, b.Start())
		time.Sleep(time.Minute)
		synctest.Wait()
		shutdown(t, a)
		shutdown(t, b)

		ms := h.metrics(t)
		assert.Equal(t, int64(2), value(t, ms, MetricConflicts, AttrJob.String("report")), "each replica counts the conflict once, with the job only")
		assert.Equal(t, uint64(1), a.Stats().Conflicts)
		assert.Equal(t, uint64(1), b.Stats().Conflicts)
	})
}
