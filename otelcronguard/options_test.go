package otelcronguard

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

func TestNew_Options_Invalid(t *testing.T) {
	tests := []struct {
		name string
		opt  Option
		want string
	}{
		{"nil option", nil, "otelcronguard: invalid argument: option must not be nil"},
		{"nil meter provider", WithMeterProvider(nil), "WithMeterProvider: provider must not be nil"},
		{"nil tracer provider", WithTracerProvider(nil), "WithTracerProvider: provider must not be nil"},
		{"empty key", WithAttributes(attribute.String("", "x")), `WithAttributes: attribute "" must have a non-empty key and a value`},
		{"own key", WithAttributes(AttrJob.String("x")), `WithAttributes: key "cronguard.job" is set by otelcronguard itself`},
		{"own outcome key", WithAttributes(AttrOutcome.String("x")), `key "cronguard.run.outcome" is set by otelcronguard itself`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tel, err := New(tt.opt)
			require.ErrorIs(t, err, ErrInvalidArgument)
			assert.ErrorContains(t, err, tt.want)
			assert.Nil(t, tel)
		})
	}
}

func TestNew_Defaults_GlobalProviders(t *testing.T) {
	tel, err := New()
	require.NoError(t, err)
	assert.Len(t, tel.Options(), 2, "an observer and a middleware")
}

func TestNew_NoopProviders(t *testing.T) {
	tel, err := New(WithMeterProvider(metricnoop.NewMeterProvider()), WithTracerProvider(tracenoop.NewTracerProvider()),
		WithAttributes(AttrReplica.String("r1")))
	require.NoError(t, err)
	assert.NotNil(t, tel)
}
