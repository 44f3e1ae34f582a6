package otelcronguard

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
	"github.com/cronguard/cronguard/scheduler"
)

// skewedClock is a clock whose Now runs offset ahead of the clock it
// wraps; timers keep the wrapped clock's pace. A scheduler on a clock
// ahead fires first and wins every occurrence.
type skewedClock struct {
	clockwork.Clock
	offset time.Duration
}

func (c skewedClock) Now() time.Time                  { return c.Clock.Now().Add(c.offset) }
func (c skewedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c skewedClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// ahead returns a clock 100ms ahead of the real one (inside a synctest
// bubble, the bubble's).
func ahead() scheduler.Option {
	return scheduler.WithClock(skewedClock{clockwork.NewRealClock(), 100 * time.Millisecond})
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newMemoryStore returns an in-process store on the real clock (inside a
// synctest bubble, the bubble's).
func newMemoryStore(t *testing.T) *memory.Store {
	t.Helper()
	s, err := memory.New()
	require.NoError(t, err)
	return s
}

// harness is a Telemetry on SDK providers whose data the test reads: a
// manual metric reader and a span recorder.
type harness struct {
	tel    *Telemetry
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
}

func newHarness(t *testing.T, opts ...Option) *harness {
	t.Helper()
	h := &harness{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = h.tp.Shutdown(context.Background())
	})
	tel, err := New(append([]Option{WithMeterProvider(mp), WithTracerProvider(h.tp)}, opts...)...)
	require.NoError(t, err)
	h.tel = tel
	return h
}

// newScheduler builds a scheduler with a quiet logger and tel's options,
// and shuts it down when the test ends.
func newScheduler(t *testing.T, store lease.Store, tel *Telemetry, opts ...scheduler.Option) *scheduler.Scheduler {
	t.Helper()
	all := append([]scheduler.Option{scheduler.WithLogger(discardLogger())}, tel.Options()...)
	s, err := scheduler.New(store, append(all, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { shutdown(t, s) })
	return s
}

func shutdown(t *testing.T, s *scheduler.Scheduler) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
}

// metrics collects what the reader holds now, by instrument name.
func (h *harness) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, h.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// series is one data point: its attributes and its value (a sum's value,
// or a histogram's count).
type series struct {
	attrs attribute.Set
	value int64
}

// seriesOf returns the data points of the named instrument.
func seriesOf(t *testing.T, ms map[string]metricdata.Metrics, name string) []series {
	t.Helper()
	m, ok := ms[name]
	if !ok {
		return nil
	}
	var out []series
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			out = append(out, series{p.Attributes, p.Value})
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			out = append(out, series{p.Attributes, int64(p.Count)})
		}
	default:
		t.Fatalf("%s: unexpected data %T", name, m.Data)
	}
	return out
}

// value returns the value of the named instrument's data point whose
// attributes are exactly attrs (0 when there is none).
func value(t *testing.T, ms map[string]metricdata.Metrics, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	want := attribute.NewSet(attrs...)
	for _, s := range seriesOf(t, ms, name) {
		if s.attrs.Equals(&want) {
			return s.value
		}
	}
	return 0
}

// total sums the named instrument's data points whose attributes include
// every one of attrs.
func total(t *testing.T, ms map[string]metricdata.Metrics, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	var n int64
	for _, s := range seriesOf(t, ms, name) {
		if slices.IndexFunc(attrs, func(kv attribute.KeyValue) bool {
			v, ok := s.attrs.Value(kv.Key)
			return !ok || v != kv.Value
		}) < 0 {
			n += s.value
		}
	}
	return n
}

// span returns the ended span named name; it fails unless there is
// exactly one.
func (h *harness) span(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range h.spans.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "spans named %q", name)
	return found[0]
}

// attr returns the value of the span attribute k.
func attr(s sdktrace.ReadOnlySpan, k attribute.Key) attribute.Value {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// eventNamed returns the span's event named name, and whether it has one.
func eventNamed(s sdktrace.ReadOnlySpan, name string) (sdktrace.Event, bool) {
	for _, e := range s.Events() {
		if e.Name == name {
			return e, true
		}
	}
	return sdktrace.Event{}, false
}

// eventAttr returns the value of the event attribute k.
func eventAttr(e sdktrace.Event, k attribute.Key) attribute.Value {
	for _, kv := range e.Attributes {
		if kv.Key == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}
