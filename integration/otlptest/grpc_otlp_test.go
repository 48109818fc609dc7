package otlptest

import (
	"context"
	"math"
	"net"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/stats/opentelemetry"
	"google.golang.org/grpc/status"

	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/otlp"
)

// flakyHealth fails every fourth Check with UNAVAILABLE (retryable).
type flakyHealth struct {
	healthpb.UnimplementedHealthServer
	received, failed atomic.Int64
}

func (f *flakyHealth) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if n := f.received.Add(1); n%4 == 0 {
		f.failed.Add(1)
		return nil, status.Error(codes.Unavailable, "injected failure")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

const retryConfig = `{"methodConfig": [{
  "name": [{"service": "grpc.health.v1.Health"}],
  "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.005s",
                  "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`

// A real gRPC client retrying against a real server, with grpc-go's
// OpenTelemetry plugin: its metrics pushed over OTLP (delta, protobuf,
// gzip) and read by the gRPC dialect give the originals and attempts the
// same process's Prometheus exporter gives, and the server counted.
func TestGRPCPushedEqualsScraped(t *testing.T) {
	ctx := context.Background()
	srv := &flakyHealth{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, srv)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)

	recv := otlp.NewReceiver(otlp.Options{})
	recvSrv := httptest.NewServer(recv)
	t.Cleanup(recvSrv.Close)
	expoSrv := httptest.NewServer(recv.Expositions()) // what the scraper reads
	t.Cleanup(expoSrv.Close)
	mp, reg := pushAndPull(t, recvSrv.URL, resource.NewSchemaless(attribute.String("service.name", "client")),
		otlpmetrichttp.WithCompression(otlpmetrichttp.GzipCompression),
		otlpmetrichttp.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality { return metricdata.DeltaTemporality }))
	conn, err := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(retryConfig),
		opentelemetry.DialOption(opentelemetry.Options{MetricsOptions: opentelemetry.MetricsOptions{MeterProvider: mp}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	metrics := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(metrics.Close)

	r := newRig(t, mp, metrics.URL+"/metrics", expoSrv.URL+otlp.MetricsPath("client"))
	hc := healthpb.NewHealthClient(conn)
	for srv.failed.Load() < 2 { // warm-up: every series exported before the first scrape
		_, _ = hc.Check(ctx, &healthpb.HealthCheckRequest{})
	}
	start := r.clock.now
	r.scrapeBoth()
	base := srv.received.Load()
	const calls = 300
	for i := range calls {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, _ = hc.Check(cctx, &healthpb.HealthCheckRequest{})
		cancel()
		if i == calls/2 {
			if err := mp.ForceFlush(ctx); err != nil { // a delta in between
				t.Fatal(err)
			}
		}
	}
	r.clock.now = start.Add(10 * time.Second)
	r.scrapeBoth()
	received := float64(srv.received.Load() - base)
	sig := r.signals(start)
	for _, name := range []string{"scraped", "pushed"} {
		for what, c := range map[string]struct {
			v    model.Value
			want float64
		}{
			"originals": {sig[name].OriginalsPerS, calls},
			"attempts":  {sig[name].AttemptsPerS, received},
		} {
			if !c.v.OK() || math.Abs(c.v.V()*10-c.want) > 1e-6*c.want {
				t.Errorf("%s %s = %v over 10 s, want %.0f", name, what, c.v, c.want)
			}
		}
	}
	if received <= calls {
		t.Fatalf("no retries: %.0f attempts for %d calls", received, calls)
	}
}
