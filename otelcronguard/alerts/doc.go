// Package alerts ships Prometheus alert rules (cronguard.rules.yml) and a
// Grafana dashboard (cronguard-dashboard.json) for the metrics of package
// otelcronguard, as the OpenTelemetry Prometheus exporter names them by
// default. It has no Go API: its tests check the rules with Prometheus's
// own rule and PromQL parsers, and that the rules and the dashboard name
// only metrics and labels otelcronguard exports. It is a module of its
// own so that neither cronguard nor otelcronguard depends on Prometheus.
package alerts
