package otelcronguard

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/scheduler"
)

// SpanNamePrefix starts every run span's name: "cronguard.run <job>".
const SpanNamePrefix = "cronguard.run "

// spanKindInternal is the run spans' kind, as an option built once.
var spanKindInternal = trace.WithSpanKind(trace.SpanKindInternal)

// spanAttrPool holds slices for a run span's start attributes, which Start
// copies into the span.
var spanAttrPool = sync.Pool{New: func() any { s := make([]attribute.KeyValue, 0, 8); return &s }}

// middleware starts the run's span from the run's context, so that it is
// the parent of the spans the job starts from its context, and hands the
// job that context. The observer ends the span at the run's end event; if
// the run is unknown to the observer (t's observer is not on the
// scheduler), the middleware ends it itself when the job returns. A panic
// is recorded on the span (an "exception" event with the stack) and goes
// on.
func (t *Telemetry) middleware(next func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		run, ok := scheduler.RunFromContext(ctx)
		if !ok {
			return next(ctx)
		}
		k := runKeyOf(run)
		buf := spanAttrPool.Get().(*[]attribute.KeyValue)
		attrs := append((*buf)[:0], t.attrs.base...)
		attrs = append(attrs,
			AttrJob.String(run.Job),
			AttrOccurrence.String(run.Occurrence.UTC().Format(time.RFC3339Nano)),
			AttrFence.Int64(fenceValue(run.Fence)),
			AttrCatchUp.Bool(run.CatchUp))
		instance, known := t.runs.instance(k)
		if known && !hasKey(t.attrs.base, AttrReplica) {
			attrs = append(attrs, AttrReplica.String(instance))
		}
		ctx, span := t.tracer.Start(ctx, SpanNamePrefix+run.Job, spanKindInternal, trace.WithAttributes(attrs...))
		*buf = attrs // Start copied them
		spanAttrPool.Put(buf)
		pending, known := t.runs.attach(k, span)
		for _, ev := range pending {
			span.AddEvent(ev.name, trace.WithAttributes(ev.attrs...))
		}
		returned := false
		defer func() {
			if returned {
				return
			}
			if v := recover(); v != nil {
				recordPanic(span, v)
				if known {
					t.runs.panicked(k)
				} else {
					span.SetStatus(codes.Error, fmt.Sprintf("panic: %v", v))
					span.End()
				}
				panic(v)
			}
			if !known { // runtime.Goexit
				span.SetStatus(codes.Error, scheduler.ErrGoexit.Error())
				span.End()
			}
		}()
		err := next(ctx)
		returned = true
		if !known {
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}
		return err
	}
}

// recordPanic adds the semantic conventions' exception event for a panic
// with value v, with the panicking goroutine's stack.
func recordPanic(span trace.Span, v any) {
	span.AddEvent("exception", trace.WithAttributes(
		attribute.String("exception.type", fmt.Sprintf("%T", v)),
		attribute.String("exception.message", fmt.Sprint(v)),
		attribute.String("exception.stacktrace", string(debug.Stack())),
	))
}

// fenceValue returns a fence as an int64 attribute value. Fences stay far
// below 2^63 (the store's floor is server milliseconds times 100); a larger
// one is clamped rather than wrapped.
func fenceValue(f fencing.Token) int64 {
	if uint64(f) > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(f)
}

func hasKey(kvs []attribute.KeyValue, k attribute.Key) bool {
	for _, kv := range kvs {
		if kv.Key == k {
			return true
		}
	}
	return false
}
