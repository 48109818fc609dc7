// Package grpctest holds the gRPC integration tests of dialect: a
// real google.golang.org/grpc client with a retry policy in its service
// config and the OpenTelemetry metrics plugin, exported through the OTel
// Prometheus exporter, calling a gRPC server that fails a fixed fraction of
// calls; and go-grpc-middleware v2's retry interceptor between two
// instances of its prometheus provider's client metrics. It lives in the
// integration module so that only that module requires gRPC, OpenTelemetry
// and the middleware; the package itself has no code.
package grpctest
