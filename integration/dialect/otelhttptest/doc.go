// Package otelhttptest holds the OpenTelemetry HTTP client integration
// test of dialect: a real otelhttp Transport (go.opentelemetry.io/
// contrib/instrumentation/net/http/otelhttp) under a retrying client,
// exported through the OTel Prometheus exporter in-process, calling an
// HTTP server that fails a fixed fraction of requests. It lives in the
// integration module so that only that module requires otelhttp; the
// package itself has no code.
package otelhttptest
