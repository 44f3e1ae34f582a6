package otelcronguard

import (
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/cronguard/cronguard/otelcronguard"

// Option configures a Telemetry; see New.
type Option func(*config) error

type config struct {
	meterProvider  metric.MeterProvider // nil: the global one, read in New
	tracerProvider trace.TracerProvider // nil: the global one, read in New
	attrs          []attribute.KeyValue
}

// WithMeterProvider sets the meter provider the instruments are created
// from. Default: the global provider (otel.GetMeterProvider) as it is when
// New is called; the global one delegates to a provider set later. It must
// not be nil.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if mp == nil {
			return invalidOption("WithMeterProvider: provider must not be nil")
		}
		c.meterProvider = mp
		return nil
	}
}

// WithTracerProvider sets the tracer provider the run spans are started
// from. Default: the global provider (otel.GetTracerProvider) as it is when
// New is called. It must not be nil.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) error {
		if tp == nil {
			return invalidOption("WithTracerProvider: provider must not be nil")
		}
		c.tracerProvider = tp
		return nil
	}
}

// WithAttributes adds attributes to every measurement and every run span,
// such as cronguard.replica when several replicas share one process and one
// meter provider (a service's own identity belongs in the provider's
// resource instead). Keep them few and of low cardinality: each distinct
// set is a time series of every instrument. Default: none. Each must be
// valid (a non-empty key and a value) and none may use a key this package
// sets itself (see the Attr constants); AttrReplica is allowed.
func WithAttributes(attrs ...attribute.KeyValue) Option {
	return func(c *config) error {
		for _, kv := range attrs {
			if !kv.Valid() {
				return invalidOption("WithAttributes: attribute %q must have a non-empty key and a value", kv.Key)
			}
			if slices.Contains(ownKeys, kv.Key) {
				return invalidOption("WithAttributes: key %q is set by otelcronguard itself", kv.Key)
			}
		}
		c.attrs = append(c.attrs, attrs...)
		return nil
	}
}
