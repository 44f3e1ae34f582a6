package otelcronguard_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cronguard/cronguard/lease/memory"
	"github.com/cronguard/cronguard/otelcronguard"
	"github.com/cronguard/cronguard/scheduler"
)

// One Telemetry wires a scheduler: its runs are counted by outcome, and
// each has a span. A program would pass its own providers (or set the otel
// globals) with an exporter, Prometheus or OTLP.
func Example() {
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	tel, err := otelcronguard.New(
		otelcronguard.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		otelcronguard.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))),
	)
	if err != nil {
		panic(err)
	}

	store, _ := memory.New() // a lease/redislease Store in production
	done := make(chan struct{})
	opts := append(tel.Options(),
		scheduler.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		scheduler.WithObserver(func(e scheduler.Event) {
			if e.Kind == scheduler.EventReleased {
				close(done)
			}
		}))
	s, err := scheduler.New(store, opts...)
	if err != nil {
		panic(err)
	}
	at := time.Now().Add(100 * time.Millisecond)
	_ = s.Register("report", scheduler.At(at), func(ctx context.Context) error { return nil })
	_ = s.Start()
	<-done
	_ = s.Shutdown(context.Background())

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == otelcronguard.MetricRuns {
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				job, _ := p.Attributes.Value(otelcronguard.AttrJob)
				outcome, _ := p.Attributes.Value(otelcronguard.AttrOutcome)
				fmt.Printf("%s{job=%s, outcome=%s} %d\n", m.Name, job.AsString(), outcome.AsString(), p.Value)
			}
		}
	}
	fmt.Println("span:", spans.Ended()[0].Name())
	// Output:
	// cronguard.runs{job=report, outcome=succeeded} 1
	// span: cronguard.run report
}

// Replicas that share a process and a meter provider are told apart by an
// attribute of their own on every measurement and span.
func ExampleWithAttributes() {
	provider := sdkmetric.NewMeterProvider() // with a reader or exporter
	store, _ := memory.New()
	for _, name := range []string{"replica-1", "replica-2"} {
		tel, err := otelcronguard.New(otelcronguard.WithMeterProvider(provider),
			otelcronguard.WithAttributes(otelcronguard.AttrReplica.String(name)))
		if err != nil {
			panic(err)
		}
		s, err := scheduler.New(store, append(tel.Options(), scheduler.WithInstanceID(name))...)
		if err != nil {
			panic(err)
		}
		_ = s // Register the jobs, Start, and Shutdown at exit
	}
}
