package otlptest

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/otlp"
	"github.com/retrytop/retrytop/scrape"
)

// flaky answers 503 to every fourth request.
type flaky struct {
	received, failed atomic.Int64
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if n := f.received.Add(1); n%4 == 0 {
		f.failed.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(w, "ok")
}

type resendKey struct{}

// get is one original: up to three tries, each resend counted as the
// otel-http dialect documents (http.request.resend_count).
func get(c *http.Client, url string) {
	for try := range 3 {
		ctx := context.WithValue(context.Background(), resendKey{}, try)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			return
		}
	}
}

type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

// One process, the real otelhttp client on the OTel SDK, exports its
// metrics two ways at once: pushed over OTLP/HTTP (protobuf, gzip) by
// otlpmetrichttp to the receiver, and through the Prometheus exporter.
// Read by the same dialect, the pushed target's originals, attempts,
// retries and errors equal the scraped one's, and the server's count,
// exactly, in either temporality (counters are exact; so are histogram
// counts).
func TestPushedEqualsScraped(t *testing.T) {
	for _, temp := range []metricdata.Temporality{metricdata.CumulativeTemporality, metricdata.DeltaTemporality} {
		t.Run(temp.String(), func(t *testing.T) {
			ctx := context.Background()
			srv := &flaky{}
			provider := httptest.NewServer(srv)
			t.Cleanup(provider.Close)
			recv := otlp.NewReceiver(otlp.Options{})
			recvSrv := httptest.NewServer(recv)
			t.Cleanup(recvSrv.Close)
			expoSrv := httptest.NewServer(recv.Expositions()) // what the scraper reads
			t.Cleanup(expoSrv.Close)

			mp, reg := pushAndPull(t, recvSrv.URL, resource.NewSchemaless(attribute.String("service.name", "client"), attribute.String("service.instance.id", "i1")),
				otlpmetrichttp.WithCompression(otlpmetrichttp.GzipCompression),
				otlpmetrichttp.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality { return temp }))
			client := &http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport,
				otelhttp.WithMeterProvider(mp),
				otelhttp.WithMetricAttributesFn(func(r *http.Request) []attribute.KeyValue {
					n, _ := r.Context().Value(resendKey{}).(int)
					return []attribute.KeyValue{attribute.Int("http.request.resend_count", n)}
				}))}
			metrics := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
			t.Cleanup(metrics.Close)

			r := newRig(t, mp, metrics.URL+"/metrics", expoSrv.URL+otlp.MetricsPath("client@i1"))
			// Warm-up until a retry happened: a series is exported once it
			// has data, and a rate needs every series in the first scrape.
			for srv.failed.Load() < 2 {
				get(client, provider.URL)
			}
			start := r.clock.now
			r.scrapeBoth()
			base, baseFailed := srv.received.Load(), srv.failed.Load()
			calls := 0
			for round := range 3 { // deltas over several pushes add up
				for range 100 {
					get(client, provider.URL)
					calls++
				}
				if round < 2 {
					if err := mp.ForceFlush(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			r.clock.now = start.Add(10 * time.Second)
			r.scrapeBoth()
			if rf := recv.Refused(); len(rf) != 0 {
				t.Fatalf("the receiver refused %+v", rf)
			}
			received, injected := float64(srv.received.Load()-base), float64(srv.failed.Load()-baseFailed)
			sig := r.signals(start)
			for _, c := range []struct {
				what string
				get  func(model.Signals) model.Value
				want float64
			}{
				{"originals", func(s model.Signals) model.Value { return s.OriginalsPerS }, float64(calls)},
				{"attempts", func(s model.Signals) model.Value { return s.AttemptsPerS }, received},
				{"retries", func(s model.Signals) model.Value { return s.RetriesPerS }, received - float64(calls)},
				{"temporary errors", func(s model.Signals) model.Value { return s.TemporaryErrorsPerS }, injected},
			} {
				for _, name := range []string{"scraped", "pushed"} {
					v := c.get(sig[name])
					if !v.OK() || math.Abs(v.V()*10-c.want) > 1e-6*c.want {
						t.Errorf("%s %s = %v over 10 s, want %.0f (counted at the server)", name, c.what, v, c.want)
					}
				}
			}
			if received <= float64(calls) {
				t.Fatalf("no retries happened: %.0f tries for %d calls", received, calls)
			}
		})
	}
}

// pushAndPull is a meter provider of res with two readers: the
// Prometheus exporter on reg, and otlpmetrichttp (with opts) pushing to
// the receiver at recvURL on ForceFlush.
func pushAndPull(t *testing.T, recvURL string, res *resource.Resource, opts ...otlpmetrichttp.Option) (*sdkmetric.MeterProvider, *prometheus.Registry) {
	t.Helper()
	ctx := context.Background()
	push, err := otlpmetrichttp.New(ctx, append([]otlpmetrichttp.Option{otlpmetrichttp.WithEndpointURL(recvURL + "/v1/metrics")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	pull, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(pull),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(push, sdkmetric.WithInterval(time.Hour))))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	return mp, reg
}

// rig reads one process two ways: through its Prometheus exporter
// (scraped) and through the receiver its pushes went to (pushed), with
// the same dialects, on a fake clock.
type rig struct {
	t       *testing.T
	mp      *sdkmetric.MeterProvider
	scraper *scrape.Scraper
	clock   *fakeClock
}

func newRig(t *testing.T, mp *sdkmetric.MeterProvider, scrapedURL, pushedURL string) *rig {
	t.Helper()
	var targets []scrape.Target
	for _, spec := range []string{"scraped=" + scrapedURL, "pushed=" + pushedURL} {
		tg, err := scrape.ParseTarget(spec)
		if err != nil {
			t.Fatal(err)
		}
		tg.Timeout = 5 * time.Second
		targets = append(targets, tg)
	}
	tr := dialect.Auto()
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	return &rig{t: t, mp: mp, clock: clock, scraper: scrape.NewScraper(targets, model.NewStore(model.StoreConfig{}),
		scrape.Options{Clock: clock.Now, Translate: tr.Translate, Filter: tr.Filter})}
}

// scrapeBoth pushes what the process holds, then scrapes both ways.
func (r *rig) scrapeBoth() {
	r.t.Helper()
	if err := r.mp.ForceFlush(context.Background()); err != nil {
		r.t.Fatalf("push: %v", err)
	}
	for _, st := range r.scraper.ScrapeOnce(context.Background()) {
		if !st.Up {
			r.t.Fatalf("%s: %s", st.Name, st.LastError)
		}
	}
}

// signals are each way's row over [start, now].
func (r *rig) signals(start time.Time) map[string]model.Signals {
	r.t.Helper()
	sig := map[string]model.Signals{}
	for _, name := range []string{"scraped", "pushed"} {
		deps := analysis.Dependencies(r.scraper.Store(), name)
		if len(deps) != 1 {
			r.t.Fatalf("%s: dependencies %q", name, deps)
		}
		sig[name] = analysis.SignalsFor(r.scraper.Store(), name, deps[0], start.UnixMilli(), r.clock.now.UnixMilli())
	}
	return sig
}
