package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/cronguard/cronguard/otelcronguard"
	"github.com/cronguard/cronguard/scheduler"
)

// metricsServer is the -metrics endpoint: one OpenTelemetry meter provider
// for every replica, read by the Prometheus exporter and served at
// /metrics in the Prometheus text format.
type metricsServer struct {
	provider *sdkmetric.MeterProvider
	server   *http.Server
	served   chan struct{} // closed when Serve has returned
	url      string        // where to scrape, for people
}

// startMetrics listens on addr (host:port; port 0 picks a free one) and
// serves /metrics.
func startMetrics(addr string, log *slog.Logger) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-metrics: %w", err)
	}
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo())
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("-metrics: prometheus exporter: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	m := &metricsServer{
		provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter),
			sdkmetric.WithResource(resource.NewSchemaless(attribute.String("service.name", "cronworker")))),
		server: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second},
		served: make(chan struct{}),
		url:    "http://" + displayAddr(ln.Addr()) + "/metrics",
	}
	go func() {
		defer close(m.served)
		if err := m.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("-metrics: serving stopped", slog.Any("error", err))
		}
	}()
	return m, nil
}

// displayAddr is a listener's address as a person would type it: a
// wildcard host becomes localhost.
func displayAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// schedulerOptions returns the options that wire otelcronguard into one
// replica's scheduler. Every replica has its own Telemetry, whose
// measurements carry cronguard.replica, on the shared provider.
func (m *metricsServer) schedulerOptions(replica string) ([]scheduler.Option, error) {
	tel, err := otelcronguard.New(otelcronguard.WithMeterProvider(m.provider),
		otelcronguard.WithAttributes(otelcronguard.AttrReplica.String(replica)))
	if err != nil {
		return nil, err
	}
	return tel.Options(), nil
}

// close stops serving and shuts the provider down.
func (m *metricsServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = m.server.Shutdown(ctx)
	<-m.served
	_ = m.provider.Shutdown(ctx)
}
