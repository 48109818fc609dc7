package retryablehttptest

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
)

// contract are the retrytop families an application counts (docs/metrics.md).
type contract struct {
	originals, retries *prometheus.CounterVec
	attempts, results  *prometheus.CounterVec
}

func newContract(reg prometheus.Registerer) *contract {
	c := &contract{
		originals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "retry_originals_total", Help: "Requests the application made."}, []string{"dependency"}),
		retries:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "retry_retries_total", Help: "Tries after the first."}, []string{"dependency"}),
		attempts:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "retry_attempts_total", Help: "Tries sent, by outcome."}, []string{"dependency", "outcome"}),
		results:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "retry_results_total", Help: "Requests ended, by result."}, []string{"dependency", "result"}),
	}
	reg.MustRegister(c.originals, c.retries, c.attempts, c.results)
	return c
}

// instrument is the recommended instrumentation of a retryablehttp
// Client calling dependency dep (docs/dialects.md, "go-retryablehttp"):
// RequestLogHook sees every try with its number (0 first), CheckRetry
// every try's answer or error, ErrorHandler the request that ran out of
// retries. Originals and results are counted around Do (see get).
func instrument(c *retryablehttp.Client, m *contract, dep string) {
	c.RequestLogHook = func(_ retryablehttp.Logger, _ *http.Request, try int) {
		if try > 0 {
			m.retries.WithLabelValues(dep).Inc()
		}
	}
	check := c.CheckRetry
	c.CheckRetry = func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		outcome := "success"
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			outcome = "timeout"
		case errors.Is(err, context.Canceled):
			outcome = "cancelled"
		case err != nil, resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
			outcome = "temporary_error"
		}
		m.attempts.WithLabelValues(dep, outcome).Inc()
		return check(ctx, resp, err)
	}
	// Out of retries: hand back the last answer instead of an error, so
	// that the caller can tell (and count) it.
	c.ErrorHandler = retryablehttp.PassthroughErrorHandler
}

// get makes one original request and counts it and its result.
func get(c *retryablehttp.Client, m *contract, dep, url string) bool {
	m.originals.WithLabelValues(dep).Inc()
	resp, err := c.Get(url)
	ok := err == nil && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	result := "success"
	if !ok {
		result = "provider_error"
	}
	m.results.WithLabelValues(dep, result).Inc()
	return ok
}

// flaky answers 503 to every n-th request.
type flaky struct {
	every, received, failed atomic.Int64
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if n := f.received.Add(1); n%f.every.Load() == 0 {
		f.failed.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(w, "ok")
}

type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

// TestRetryableHTTPHooks: go-retryablehttp v0.7.8 instrumented through its
// hooks as documented, against a server failing every 3rd request: the
// native dialect reads originals, attempts, retries, temporary errors and
// effective success as the client and server counted them.
func TestRetryableHTTPHooks(t *testing.T) {
	srv := &flaky{}
	srv.every.Store(3)
	provider := httptest.NewServer(srv)
	t.Cleanup(provider.Close)
	reg := prometheus.NewRegistry()
	m := newContract(reg)
	c := retryablehttp.NewClient()
	c.Logger = nil
	c.RetryMax = 2
	c.RetryWaitMin, c.RetryWaitMax = time.Microsecond, time.Millisecond
	const dep = "provider"
	instrument(c, m, dep)
	metrics := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(metrics.Close)

	tr := dialect.Auto()
	target, err := scrape.ParseTarget("app=" + metrics.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	scraper := scrape.NewScraper([]scrape.Target{target}, model.NewStore(model.StoreConfig{}),
		scrape.Options{Clock: clock.Now, Translate: tr.Translate, Filter: tr.Filter})
	for srv.failed.Load() == 0 { // every series exists before the first scrape
		get(c, m, dep, provider.URL)
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
			for range 50 {
				calls.Add(1)
				if get(c, m, dep, provider.URL) {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	clock.now = start.Add(10 * time.Second)
	st := scraper.ScrapeOnce(context.Background())
	if !st[0].Up || st[0].Dialect != dialect.NameNative {
		t.Fatalf("last scrape: up %v, dialect %q, %s", st[0].Up, st[0].Dialect, st[0].LastError)
	}
	received, injected := float64(srv.received.Load()-base), float64(srv.failed.Load()-baseFailed)
	if received <= float64(calls.Load()) {
		t.Fatalf("no retries happened: %.0f tries for %d calls", received, calls.Load())
	}
	sig := analysis.SignalsFor(scraper.Store(), "app", dep, start.UnixMilli(), clock.now.UnixMilli())
	// Rates over the fake clock's 10 s: exact counts.
	exact := func(what string, got model.Value, want float64) {
		t.Helper()
		if !got.OK() {
			t.Errorf("%s: absent, want %.0f", what, want)
		} else if g := got.V() * 10; math.Abs(g-want) > 1e-6*want {
			t.Errorf("%s = %.2f, want %.0f", what, g, want)
		}
	}
	exact("originals", sig.OriginalsPerS, float64(calls.Load()))
	exact("attempts", sig.AttemptsPerS, received)
	exact("retries", sig.RetriesPerS, received-float64(calls.Load()))
	exact("temporary errors", sig.TemporaryErrorsPerS, injected)
	exact("successes", sig.SuccessesPerS, float64(ok.Load()))
	if e, okE := sig.EffectiveSuccess.Get(); !okE || math.Abs(e-float64(ok.Load())/float64(calls.Load())) > 1e-9 {
		t.Errorf("effective success = %v, want %d/%d", sig.EffectiveSuccess, ok.Load(), calls.Load())
	}
}
