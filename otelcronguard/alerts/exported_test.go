package alerts

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/cronguard/cronguard/otelcronguard"
)

// exported is what a Prometheus server scraping otelcronguard's metrics
// can query: the series names and the label names.
type exported struct {
	names  map[string]bool // series names: counters' and gauges', histograms' _bucket, _sum and _count
	labels map[string]bool // label names of those series
}

// scrapeLabels are the labels Prometheus adds to every scraped series.
var scrapeLabels = []string{"job", "instance"}

// exportedSet derives what otelcronguard exports from its code: it builds a
// Telemetry on a meter provider that records every instrument otelcronguard
// creates, records one measurement on each with every attribute key
// otelcronguard puts on metrics, and reads the metric families the
// OpenTelemetry Prometheus exporter (default configuration) makes of them.
func exportedSet(t *testing.T) exported {
	t.Helper()
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	rec := &recordingProvider{MeterProvider: mp}
	_, err = otelcronguard.New(otelcronguard.WithMeterProvider(rec))
	require.NoError(t, err)
	require.NotEmpty(t, rec.instruments, "otelcronguard creates its instruments in New")

	attrs := metric.WithAttributes(
		otelcronguard.AttrJob.String("j"), otelcronguard.AttrOutcome.String("succeeded"),
		otelcronguard.AttrCatchUp.Bool(false), otelcronguard.AttrSkipReason.String("claimed"),
		otelcronguard.AttrLossCause.String("lost"), otelcronguard.AttrCancelCause.String("timeout"),
		otelcronguard.AttrErrorType.String("timeout"),
	)
	for _, in := range rec.instruments {
		in.record(attrs)
	}
	families, err := reg.Gather()
	require.NoError(t, err)
	out := exported{names: map[string]bool{}, labels: map[string]bool{}}
	for _, l := range scrapeLabels {
		out.labels[l] = true
	}
	var got []string
	for _, f := range families {
		name := f.GetName()
		if !strings.HasPrefix(name, "cronguard_") {
			continue // the exporter's target_info and the like
		}
		got = append(got, name)
		if f.GetType() == dto.MetricType_HISTOGRAM {
			out.names[name+"_bucket"], out.names[name+"_sum"], out.names[name+"_count"] = true, true, true
			out.labels["le"] = true
		} else {
			out.names[name] = true
		}
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				out.labels[lp.GetName()] = true
			}
		}
	}
	sort.Strings(got)
	require.Len(t, got, len(rec.instruments), "every instrument becomes one metric family: %v", got)
	return out
}

// instrument is one instrument otelcronguard created, and how to record a
// measurement on it.
type instrument struct {
	name   string
	record func(opts ...metric.AddOption)
}

// recordingProvider is a meter provider whose meters keep the synchronous
// instruments they create.
type recordingProvider struct {
	metric.MeterProvider
	instruments []instrument
}

func (p *recordingProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return &recordingMeter{Meter: p.MeterProvider.Meter(name, opts...), p: p}
}

type recordingMeter struct {
	metric.Meter
	p *recordingProvider
}

func (m *recordingMeter) keep(name string, record func(opts ...metric.AddOption)) {
	m.p.instruments = append(m.p.instruments, instrument{name: name, record: record})
}

// recordOpts turns AddOptions (attributes) into RecordOptions.
func recordOpts(opts []metric.AddOption) []metric.RecordOption {
	c := metric.NewAddConfig(opts)
	set := c.Attributes()
	return []metric.RecordOption{metric.WithAttributeSet(set)}
}

func (m *recordingMeter) Int64Counter(name string, opts ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	c, err := m.Meter.Int64Counter(name, opts...)
	if err == nil {
		m.keep(name, func(o ...metric.AddOption) { c.Add(context.Background(), 1, o...) })
	}
	return c, err
}

func (m *recordingMeter) Float64Counter(name string, opts ...metric.Float64CounterOption) (metric.Float64Counter, error) {
	c, err := m.Meter.Float64Counter(name, opts...)
	if err == nil {
		m.keep(name, func(o ...metric.AddOption) { c.Add(context.Background(), 1, o...) })
	}
	return c, err
}

func (m *recordingMeter) Int64UpDownCounter(name string, opts ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	c, err := m.Meter.Int64UpDownCounter(name, opts...)
	if err == nil {
		m.keep(name, func(o ...metric.AddOption) { c.Add(context.Background(), 1, o...) })
	}
	return c, err
}

func (m *recordingMeter) Float64UpDownCounter(name string, opts ...metric.Float64UpDownCounterOption) (metric.Float64UpDownCounter, error) {
	c, err := m.Meter.Float64UpDownCounter(name, opts...)
	if err == nil {
		m.keep(name, func(o ...metric.AddOption) { c.Add(context.Background(), 1, o...) })
	}
	return c, err
}

func (m *recordingMeter) Int64Histogram(name string, opts ...metric.Int64HistogramOption) (metric.Int64Histogram, error) {
	h, err := m.Meter.Int64Histogram(name, opts...)
	if err == nil {
		m.keep(name, func(o ...metric.AddOption) { h.Record(context.Background(), 1, recordOpts(o)...) })
	}
	return h, err
}

func (m *recordingMeter) Float64Histogram(name string, opts ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	h, err := m.Meter.Float64Histogram(name, opts...)
	if err == nil {
		m.keep(name, func(o ...metric.AddOption) { h.Record(context.Background(), 1, recordOpts(o)...) })
	}
	return h, err
}

func (m *recordingMeter) Int64Gauge(name string, opts ...metric.Int64GaugeOption) (metric.Int64Gauge, error) {
	g, err := m.Meter.Int64Gauge(name, opts...)
	if err == nil {
		m.keep(name, func(o ...metric.AddOption) { g.Record(context.Background(), 1, recordOpts(o)...) })
	}
	return g, err
}

func (m *recordingMeter) Float64Gauge(name string, opts ...metric.Float64GaugeOption) (metric.Float64Gauge, error) {
	g, err := m.Meter.Float64Gauge(name, opts...)
	if err == nil {
		m.keep(name, func(o ...metric.AddOption) { g.Record(context.Background(), 1, recordOpts(o)...) })
	}
	return g, err
}
