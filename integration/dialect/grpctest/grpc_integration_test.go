package grpctest

import (
	"context"
	"math"
	"net"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/stats/opentelemetry"
	"google.golang.org/grpc/status"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
)

// flaky is a health service whose Check fails every n-th call with
// UNAVAILABLE (retryable), counting every call that reached it.
type flaky struct {
	healthpb.UnimplementedHealthServer
	every    int64
	received atomic.Int64
	failed   atomic.Int64
}

func (f *flaky) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if n := f.received.Add(1); n%f.every == 0 {
		f.failed.Add(1)
		return nil, status.Error(codes.Unavailable, "injected failure")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// serviceConfig retries UNAVAILABLE up to 3 attempts with a short backoff.
const serviceConfig = `{"methodConfig": [{
  "name": [{"service": "grpc.health.v1.Health"}],
  "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.005s",
                  "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`

type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func TestGRPCIntegration(t *testing.T) {
	// The server: fails every 4th call it receives.
	srv := &flaky{every: 4}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, srv)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)

	// The client: retry policy in the service config, OTel metrics
	// plugin, OTel Prometheus exporter on its own registry and /metrics.
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	conn, err := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(serviceConfig),
		opentelemetry.DialOption(opentelemetry.Options{MetricsOptions: opentelemetry.MetricsOptions{MeterProvider: mp}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	metrics := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(metrics.Close)

	tr := dialect.Auto()
	target, err := scrape.ParseTarget("client=" + metrics.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	target.Timeout = 5 * time.Second
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	scraper := scrape.NewScraper([]scrape.Target{target}, model.NewStore(model.StoreConfig{}),
		scrape.Options{Clock: clock.Now, Translate: tr.Translate, Filter: tr.Filter})
	// One call first: OpenTelemetry exports an instrument only once it
	// has data, and a rate needs the series in the first scrape too.
	hc := healthpb.NewHealthClient(conn)
	if _, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("warm-up call: %v", err)
	}
	start := clock.now
	if st := scraper.ScrapeOnce(context.Background()); !st[0].Up {
		t.Fatalf("first scrape: %s", st[0].LastError)
	}
	base := srv.received.Load()
	baseFailed := srv.failed.Load()

	// Calls: 4 workers x 100, each call with its own deadline.
	var calls, ok, failed atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
				cancel()
				calls.Add(1)
				if err == nil {
					ok.Add(1)
				} else {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()

	clock.now = start.Add(10 * time.Second)
	st := scraper.ScrapeOnce(context.Background())
	if !st[0].Up {
		t.Fatalf("last scrape: %s", st[0].LastError)
	}
	if st[0].Dialect != dialect.NameGRPC {
		t.Errorf("status dialect = %q, want %q", st[0].Dialect, dialect.NameGRPC)
	}
	deps := analysis.Dependencies(scraper.Store(), "client")
	if len(deps) != 1 {
		t.Fatalf("dependencies = %q, want one (the grpc_target)", deps)
	}
	sig := analysis.SignalsFor(scraper.Store(), "client", deps[0], start.UnixMilli(), clock.now.UnixMilli())
	received := float64(srv.received.Load() - base)
	injected := float64(srv.failed.Load() - baseFailed)
	t.Logf("dependency %q; ground truth: calls %d (ok %d, failed %d), server received %.0f (failed %d)",
		deps[0], calls.Load(), ok.Load(), failed.Load(), received, int64(injected))
	if received <= float64(calls.Load()) {
		t.Fatalf("no retries happened: %.0f attempts for %d calls", received, calls.Load())
	}
	exact := func(what string, got model.Value, want float64) {
		t.Helper()
		if !got.OK() {
			t.Errorf("%s: absent, want %.0f", what, want)
			return
		}
		if g := got.V() * 10; math.Abs(g-want) > 1e-6*want {
			t.Errorf("%s = %.2f, want %.0f (server-side count)", what, g, want)
		} else {
			t.Logf("%s = %.0f (ground truth %.0f)", what, g, want)
		}
	}
	exact("originals", sig.OriginalsPerS, float64(calls.Load()))
	exact("attempts", sig.AttemptsPerS, received)
	exact("retries", sig.RetriesPerS, received-float64(calls.Load()))
	exact("successes", sig.SuccessesPerS, float64(ok.Load()))
	// The server's injected failures are the attempts' temporary errors.
	exact("temporary errors", sig.TemporaryErrorsPerS, injected)
	if a, okA := sig.Amplification.Get(); !okA || math.Abs(a-received/float64(calls.Load())) > 1e-9 {
		t.Errorf("amplification = %v, want %.4f", sig.Amplification, received/float64(calls.Load()))
	}
	// gRPC does not export retry budget (throttling) denials, rescues or
	// admission rejections: absent.
	for name, v := range map[string]model.Value{"budget denied": sig.BudgetDeniedPerS, "rescued": sig.RescuedPerS,
		"admission rejected": sig.AdmissionRejectedPerS, "active": sig.ActiveCalls} {
		if v.OK() {
			t.Errorf("%s = %v, want absent", name, v.V())
		}
	}
	if q := sig.Latency.At(model.ClassSuccess).P50; !q.OK() {
		t.Errorf("success latency p50 absent; want it from grpc_client_call_duration_seconds")
	}
}
