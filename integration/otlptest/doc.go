// Package otlptest holds the OTLP receiver's tests against the real
// OpenTelemetry Go SDK: its otlpmetrichttp exporter pushing to the
// receiver on loopback, beside its Prometheus exporter scraped as usual.
package otlptest
