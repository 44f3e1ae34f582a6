package otelcronguard

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/cronguard/cronguard/scheduler"
)

// Telemetry turns one or more schedulers' events into metrics and their
// runs into spans. Build it with New and pass Options to scheduler.New. It
// is safe for concurrent use, and one Telemetry may serve several
// schedulers (replicas in one process, say).
type Telemetry struct {
	in     *instruments
	tracer trace.Tracer
	attrs  *attrSets
	runs   *runRegistry
}

// New creates the instruments on the meter provider and a tracer on the
// tracer provider (both the otel globals unless WithMeterProvider and
// WithTracerProvider say otherwise). It fails on an invalid option
// (ErrInvalidArgument) or when the meter provider refuses an instrument.
func New(opts ...Option) (*Telemetry, error) {
	var c config
	for _, o := range opts {
		if o == nil {
			return nil, invalidOption("option must not be nil")
		}
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	if c.tracerProvider == nil {
		c.tracerProvider = otel.GetTracerProvider()
	}
	in, err := newInstruments(c.meterProvider.Meter(ScopeName))
	if err != nil {
		return nil, err
	}
	return &Telemetry{
		in:     in,
		tracer: c.tracerProvider.Tracer(ScopeName),
		attrs:  newAttrSets(c.attrs),
		runs:   newRunRegistry(),
	}, nil
}

// Options returns the scheduler options that wire t into a scheduler: an
// observer (scheduler.WithObserver) for the metrics and the span events,
// and a middleware (scheduler.WithMiddleware) that starts each run's span.
// Pass them to scheduler.New before any middleware of your own, so that the
// run span is the parent of everything the job does, your middleware
// included:
//
//	s, err := scheduler.New(store, append(tel.Options(), scheduler.WithMiddleware(mine))...)
//
// Both are needed: the observer ends the span the middleware started, when
// the run's outcome is known.
func (t *Telemetry) Options() []scheduler.Option {
	return []scheduler.Option{
		scheduler.WithObserver(t.observe),
		scheduler.WithMiddleware(t.middleware),
	}
}
