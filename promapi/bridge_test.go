package promapi

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
)

// flakyTarget counts exactly 40 originals and attempts a second since it
// started (its counters are brought up to that count whenever it is
// scraped) and answers 503 while failing is set: a service whose scrapes
// fail for a while in an incident, its counters still rising.
func flakyTarget(t *testing.T, failing *atomic.Bool) *httptest.Server {
	t.Helper()
	reg := prometheus.NewRegistry()
	orig := prometheus.NewCounterVec(prometheus.CounterOpts{Name: model.MetricOriginals}, []string{"dependency", "priority"})
	att := prometheus.NewCounterVec(prometheus.CounterOpts{Name: model.MetricAttempts}, []string{"dependency", "outcome"})
	reg.MustRegister(orig, att)
	start := time.Now()
	var mu sync.Mutex
	counted := 0
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		mu.Lock()
		if n := int(time.Since(start).Seconds() * 40); n > counted {
			orig.WithLabelValues("db", "critical").Add(float64(n - counted))
			att.WithLabelValues("db", "success").Add(float64(n - counted))
			counted = n
		}
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
}

// TestFailedScrapesAreBridged: a target whose scrapes fail for 3 s while
// its counters rise. The direct scraper compares the first sample after
// the gap with the last before it and keeps what was counted in between;
// through Prometheus, which marks the target's series stale on a failed
// scrape, "S offset step" right after the gap is absent, and the
// increase over the gap was lost: measured 24/s against the direct
// scraper's 40/s over a 10 s span holding the 3 s gap. CounterExpr now takes the last sample before the
// previous evaluation over dialect.CounterBridge, so both read the same
// rate (compareRate's bound: 3 % and what the target counted between the
// two readers' samples at each end).
func TestFailedScrapesAreBridged(t *testing.T) {
	if testing.Short() {
		t.Skip("Prometheus integration test skipped in -short mode")
	}
	// A bound on a hang, not on a number.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var failing atomic.Bool
	srv := flakyTarget(t, &failing)
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	base := startPrometheus(t, ctx, []scrapeJob{{name: "flaky", host: u.Host, path: "/"}}, 2)

	tgt, err := scrape.ParseTarget("flaky=" + srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	tgt.Timeout = 30 * time.Second // only the values are compared
	tr := dialect.Auto()
	direct := scrape.NewScraper([]scrape.Target{tgt}, model.NewStore(model.StoreConfig{}), scrape.Options{Translate: tr.Translate, Filter: tr.Filter})
	src, err := New(Options{Client: ClientConfig{URL: base}, Step: time.Second, Backfill: -1})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	directLags := readTogether(runCtx, &wg, direct, src)
	ruler, rulerLags := startRuler(runCtx, &wg, []scrape.Target{tgt}, scrape.Options{Translate: tr.Translate, Filter: tr.Filter})

	time.Sleep(4 * time.Second)
	t0 := time.Now()
	time.Sleep(4 * time.Second)
	failing.Store(true)
	failFrom := time.Now()
	time.Sleep(3 * time.Second)
	failing.Store(false)
	failTo := time.Now()
	time.Sleep(4 * time.Second)
	t1 := time.Now()
	if err := waitEvaluated(ctx, src, t1); err != nil { // the Source evaluates past t1
		t.Fatal(err)
	}
	stopRun()
	wg.Wait()

	a, b := direct.Store(), src.Store()
	promLags := prometheusLags(ctx, base, t1, t1.Sub(t0)+5*time.Second)
	skew := max(directLags.longest(), promLags.longest())
	// The span both readers hold must have the failed scrapes inside,
	// with samples on both sides of them.
	from, to := commonSpan(a, b, "flaky", t0, t1)
	if !from.Before(failFrom) || !to.After(failTo) {
		t.Fatalf("common span %v..%v does not hold the failed scrapes %v..%v", from, to, failFrom, failTo)
	}
	rate := func(st *model.Store) func(from, to int64) model.Value {
		return func(from, to int64) model.Value {
			return analysis.SignalsFor(st, "flaky", "db", from, to).OriginalsPerS
		}
	}
	// Both sides against the truth first: 40/s. A sample is stamped when
	// its scrape starts and counted when the target answers, up to the
	// longest scrape later, and a count is whole: at each end of the span
	// 40/s x skew + 1 off.
	span := to.Sub(from).Seconds()
	for name, st := range map[string]*model.Store{"direct": a, "prometheus": b} {
		v := rate(st)(from.UnixMilli(), to.UnixMilli())
		if bound := 2 * (40*skew.Seconds() + 1) / span; !v.OK || math.Abs(v.V-40) > bound {
			t.Errorf("%s: originals %v/s over %v..%v with 3 s of failed scrapes, want 40/s", name, v, from.Format("15:04:05.000"), to.Format("15:04:05.000"))
		}
	}
	rd := readers{a: a, b: b, ruler: ruler, aLags: directLags, bLags: promLags, rulerLags: rulerLags}
	compareRate(t, "originals/s across failed scrapes", contractCounter("flaky", "db", model.MetricOriginals, func(s model.Signals) model.Value { return s.OriginalsPerS }), rd, "flaky", from, to)
}
