// Package otlp receives OpenTelemetry metric exports over OTLP/HTTP
// (POST /v1/metrics, protobuf or JSON, gzip) and keeps, per resource, the
// metrics they carry accumulated as a Prometheus exposition: each
// resource is a target named as target_info names a scraped one, its
// instruments get the names the OpenTelemetry Prometheus exporter gives
// them, so the dialects read a pushing service as they read a scraped
// one. Deltas accumulate into counters; a start time that moves is a
// counter reset. Exponential histograms become explicit buckets
// (docs/otlp.md). Bodies, decompression and series are bounded, and a
// malformed export is refused with its reason and counted per sender.
package otlp
