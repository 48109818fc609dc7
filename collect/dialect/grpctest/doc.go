// Package grpctest holds the gRPC integration test of collect/dialect: a
// real google.golang.org/grpc client with a retry policy in its service
// config and the OpenTelemetry metrics plugin, exported through the OTel
// Prometheus exporter, calling a gRPC server that fails a fixed fraction of
// calls. It lives apart so that only this test links gRPC and OpenTelemetry;
// the package itself has no code.
package grpctest
