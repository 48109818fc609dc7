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

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
)

// TestGRPCMiddlewareIntegration: go-grpc-middleware v2's retry
// interceptor between two instances of its prometheus provider's client
// metrics, against a real grpc-go server failing every 4th call. The
// grpc-prometheus dialect reads the outer one (chained before the retry
// interceptor, as documented) as the calls the application made, and
// the inner one as what it is: the tries the server received. Nothing in
// the families tells the two apart (docs/dialects.md).
func TestGRPCMiddlewareIntegration(t *testing.T) {
	srv := &flaky{every: 4}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, srv)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)

	outer, inner := grpcprom.NewClientMetrics(grpcprom.WithClientHandlingTimeHistogram()), grpcprom.NewClientMetrics()
	regOuter, regInner := prometheus.NewRegistry(), prometheus.NewRegistry()
	regOuter.MustRegister(outer)
	regInner.MustRegister(inner)
	conn, err := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(
			outer.UnaryClientInterceptor(),
			retry.UnaryClientInterceptor(retry.WithMax(3), retry.WithCodes(codes.Unavailable),
				retry.WithBackoff(retry.BackoffLinear(time.Millisecond))),
			inner.UnaryClientInterceptor()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	mOuter := httptest.NewServer(promhttp.HandlerFor(regOuter, promhttp.HandlerOpts{}))
	t.Cleanup(mOuter.Close)
	mInner := httptest.NewServer(promhttp.HandlerFor(regInner, promhttp.HandlerOpts{}))
	t.Cleanup(mInner.Close)

	tr := dialect.Auto()
	var targets []scrape.Target
	for _, spec := range []string{"outer=" + mOuter.URL + "/metrics", "inner=" + mInner.URL + "/metrics"} {
		tg, err := scrape.ParseTarget(spec)
		if err != nil {
			t.Fatal(err)
		}
		tg.Timeout = 5 * time.Second
		targets = append(targets, tg)
	}
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	scraper := scrape.NewScraper(targets, model.NewStore(model.StoreConfig{}),
		scrape.Options{Clock: clock.Now, Translate: tr.Translate, Filter: tr.Filter})
	hc := healthpb.NewHealthClient(conn)
	// Warm-up until a try failed, so that every series (OK and
	// Unavailable) is in the first scrape.
	for srv.failed.Load() == 0 {
		_, _ = hc.Check(context.Background(), &healthpb.HealthCheckRequest{})
	}
	start := clock.now
	for _, st := range scraper.ScrapeOnce(context.Background()) {
		if !st.Up {
			t.Fatalf("first scrape of %s: %s", st.Name, st.LastError)
		}
	}
	base, baseFailed := srv.received.Load(), srv.failed.Load()
	var calls, ok atomic.Int64
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
				}
			}
		})
	}
	wg.Wait()
	clock.now = start.Add(10 * time.Second)
	for _, st := range scraper.ScrapeOnce(context.Background()) {
		if !st.Up || st.Dialect != dialect.NameGRPCPrometheus {
			t.Fatalf("last scrape of %s: up %v, dialect %q, %s", st.Name, st.Up, st.Dialect, st.LastError)
		}
	}
	received := float64(srv.received.Load() - base)
	injected := float64(srv.failed.Load() - baseFailed)
	if received <= float64(calls.Load()) {
		t.Fatalf("no retries happened: %.0f tries for %d calls", received, calls.Load())
	}
	const svc = "grpc.health.v1.Health"
	// Rates over the fake clock's 10 s: exact counts.
	exact := func(what string, got model.Value, want float64) {
		t.Helper()
		if !got.OK() {
			t.Errorf("%s: absent, want %.0f", what, want)
		} else if g := got.V() * 10; math.Abs(g-want) > 1e-6*math.Max(want, 1) {
			t.Errorf("%s = %.2f, want %.0f (counted at client and server)", what, g, want)
		}
	}
	so := analysis.SignalsFor(scraper.Store(), "outer", svc, start.UnixMilli(), clock.now.UnixMilli())
	exact("outer originals", so.OriginalsPerS, float64(calls.Load()))
	exact("outer successes", so.SuccessesPerS, float64(ok.Load()))
	exact("outer provider_error results", so.ResultsPerS[model.ResultProviderError], float64(calls.Load()-ok.Load()))
	for name, v := range map[string]model.Value{"attempts": so.AttemptsPerS, "retries": so.RetriesPerS, "budget denied": so.BudgetDeniedPerS} {
		if v.OK() {
			t.Errorf("outer %s = %v, want absent: the retry interceptor exports nothing", name, v.V())
		}
	}
	if q := so.MixedLatency.P50; !q.OK() {
		t.Errorf("outer latency p50 absent; want it from grpc_client_handling_seconds")
	}
	si := analysis.SignalsFor(scraper.Store(), "inner", svc, start.UnixMilli(), clock.now.UnixMilli())
	exact("inner originals (the tries)", si.OriginalsPerS, received)
	exact("inner provider_error results (the failed tries)", si.ResultsPerS[model.ResultProviderError], injected)
}
