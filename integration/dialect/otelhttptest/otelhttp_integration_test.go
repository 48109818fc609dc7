package otelhttptest

import (
	"context"
	"flag"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
)

// flaky answers 503 to every n-th request it receives.
type flaky struct {
	every    int64
	received atomic.Int64
	failed   atomic.Int64
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if n := f.received.Add(1); n%f.every == 0 {
		f.failed.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(w, "ok")
}

// resendKey carries a try's http.request.resend_count in its request's
// context, for otelhttp's WithMetricAttributesFn.
type resendKey struct{}

// get is a retrying client as its users write one around an otelhttp
// Transport: up to 3 tries on a 503, each try's resend count (0 first)
// in its context. It reports whether the last try succeeded.
func get(c *http.Client, url string) bool {
	for try := range 3 {
		ctx := context.WithValue(context.Background(), resendKey{}, try)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			return resp.StatusCode == http.StatusOK
		}
	}
	return false
}

type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

// TestOTelHTTPIntegration: the otel-http dialect reads the real otelhttp
// client's http.client.request.duration (with http.request.resend_count
// added the documented way) as the server counted: attempts, originals,
// retries, successes and temporary errors exactly.
func TestOTelHTTPIntegration(t *testing.T) {
	srv := &flaky{every: 4}
	provider := httptest.NewServer(srv)
	t.Cleanup(provider.Close)

	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	client := &http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport,
		otelhttp.WithMeterProvider(mp),
		otelhttp.WithMetricAttributesFn(func(r *http.Request) []attribute.KeyValue {
			n, _ := r.Context().Value(resendKey{}).(int)
			return []attribute.KeyValue{attribute.Int("http.request.resend_count", n)}
		}))}
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
	// Warm-up until a retry happened: OpenTelemetry exports a series only
	// once it has data, and a rate needs every series in the first
	// scrape (the 503 try and the resent one).
	for srv.failed.Load() == 0 {
		get(client, provider.URL)
	}
	start := clock.now
	if st := scraper.ScrapeOnce(context.Background()); !st[0].Up {
		t.Fatalf("first scrape: %s", st[0].LastError)
	}
	base, baseFailed := srv.received.Load(), srv.failed.Load()

	var calls, ok atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				calls.Add(1)
				if get(client, provider.URL) {
					ok.Add(1)
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
	if st[0].Dialect != dialect.NameOTelHTTP {
		t.Errorf("status dialect = %q, want %q", st[0].Dialect, dialect.NameOTelHTTP)
	}
	deps := analysis.Dependencies(scraper.Store(), "client")
	if len(deps) != 1 || deps[0] != "127.0.0.1" {
		t.Fatalf("dependencies = %q, want the server address", deps)
	}
	sig := analysis.SignalsFor(scraper.Store(), "client", deps[0], start.UnixMilli(), clock.now.UnixMilli())
	received := float64(srv.received.Load() - base)
	injected := float64(srv.failed.Load() - baseFailed)
	if received <= float64(calls.Load()) {
		t.Fatalf("no retries happened: %.0f tries for %d calls", received, calls.Load())
	}
	// Rates over the fake clock's 10 s: exact counts.
	exact := func(what string, got model.Value, want float64) {
		t.Helper()
		if !got.OK() {
			t.Errorf("%s: absent, want %.0f", what, want)
		} else if g := got.V() * 10; math.Abs(g-want) > 1e-6*want {
			t.Errorf("%s = %.2f, want %.0f (counted at the server)", what, g, want)
		}
	}
	exact("originals", sig.OriginalsPerS, float64(calls.Load()))
	exact("attempts", sig.AttemptsPerS, received)
	exact("retries", sig.RetriesPerS, received-float64(calls.Load()))
	exact("temporary errors", sig.TemporaryErrorsPerS, injected)
	if a, okA := sig.AttemptSuccess.Get(); !okA || math.Abs(a-(received-injected)/received) > 1e-9 {
		t.Errorf("attempt success = %v, want %.4f", sig.AttemptSuccess, (received-injected)/received)
	}
	// Per try only: no final results, budget or admission.
	for name, v := range map[string]model.Value{"effective success": sig.EffectiveSuccess, "successes": sig.SuccessesPerS,
		"budget denied":      sig.BudgetDeniedPerS,
		"admission rejected": sig.AdmissionRejectedPerS} {
		if v.OK() {
			t.Errorf("%s = %v, want absent", name, v.V())
		}
	}
	if *update {
		writeFixture(t, metrics.URL)
	}
}

// writeFixture saves the exporter's exposition as the dialect's fixture
// (in integration/: go test -run OTelHTTP ./dialect/otelhttptest -update).
func writeFixture(t *testing.T, url string) {
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		// Only the client duration (and target_info), the family the
		// dialect reads; the body size histograms are not.
		if strings.Contains(l, "http_client_request_duration_seconds") || strings.Contains(l, "target_info") {
			keep = append(keep, l)
		}
	}
	head := `# The real otelhttp client (go.opentelemetry.io/contrib/instrumentation/
# net/http/otelhttp v0.72.0, otel v1.47) under a retrying loop (3 tries on
# 503, http.request.resend_count added through WithMetricAttributesFn),
# exported by the OTel Prometheus exporter v0.69 through client_golang:
# written by TestOTelHTTPIntegration -update (integration/dialect/otelhttptest)
# against a server failing every 4th request. Ports vary per run.
`
	if err := os.WriteFile(fixture, []byte(head+strings.Join(keep, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fixture is the dialect's fixture this test writes under -update, in the
// main module's dialect/testdata.
const fixture = "../../../dialect/testdata/otel_http_client.prom"

var update = flag.Bool("update", false, "rewrite "+fixture+" from the real client")
