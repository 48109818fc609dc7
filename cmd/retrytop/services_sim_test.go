package main

import (
	"bytes"
	"context"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/collect"
	"github.com/retrytop/retrytop/collect/dialect"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/sim"
	"github.com/retrytop/retrytop/ui"
)

// serviceRun is one scenario scraped on loopback: the store, the report
// over the whole run and the sim's ground truth once the provider's counts
// have settled and been scraped.
type serviceRun struct {
	store *model.Store
	rep   analysis.Report
	truth sim.Truth
}

func runServiceScenario(ctx context.Context, t *testing.T, name string, opts sim.Options) serviceRun {
	t.Helper()
	run, err := startSimRun(ctx, name, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer run.stack.Close()
	stack, scraper := run.stack, run.scraper
	scraper.ScrapeOnce(ctx)
	if err := run.scrapeUntilDone(ctx, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Work the provider still holds after the run may finish late: scrape
	// until the ground truth no longer moves across a scrape.
	var statuses []model.TargetStatus
	var truth sim.Truth
	for i := 0; i < 20; i++ {
		before := stack.Truth().Provider.WorkAfterCancel
		statuses = scraper.ScrapeOnce(ctx)
		truth = stack.Truth()
		if truth.Provider.WorkAfterCancel == before {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	rep := analysis.BuildReport(scraper.Store(), statuses, analysis.ReportOptions{Window: 5 * time.Second, Bin: 2 * time.Second})
	return serviceRun{store: scraper.Store(), rep: rep, truth: truth}
}

// workAfterCancel is the provider's work after cancel over the whole
// scraped span, from ServiceSignalsFor's rate times the span.
func workAfterCancel(t *testing.T, st *model.Store) (model.ServiceSignals, float64) {
	t.Helper()
	times := st.Times(sim.NameProvider)
	if len(times) < 2 {
		t.Fatalf("provider scraped %d times", len(times))
	}
	first, last := times[0], times[len(times)-1]
	s := analysis.ServiceSignalsFor(st, sim.NameProvider, first, last)
	if !s.WorkAfterCancelPerS.OK {
		t.Fatalf("provider work after cancel absent: %+v", s)
	}
	return s, s.WorkAfterCancelPerS.V * float64(last-first) / 1000
}

// TestServiceSignalsOnTheSim checks the provider's service signals against
// the sim's ground truth, on real services on loopback.
func TestServiceSignalsOnTheSim(t *testing.T) {
	if testing.Short() {
		t.Skip("loopback integration test skipped in -short mode")
	}
	phases := sim.Options{Healthy: 2 * time.Second, Slow: 5 * time.Second, Recovered: 3 * time.Second, Seed: 3}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if got := analysis.Services(model.NewStore(model.StoreConfig{})); len(got) != 0 {
		t.Errorf("an empty store lists services %v", got)
	}

	run := runServiceScenario(ctx, t, "ignore-cancel", phases)
	s, got := workAfterCancel(t, run.store)
	want := float64(run.truth.Provider.WorkAfterCancel)
	t.Logf("ignore-cancel: work after cancel scraped %.0f, truth %.0f; services %s", got, want, strings.Join(analysis.Services(run.store), ","))
	if want <= 0 || got <= 0 {
		t.Fatalf("ignore-cancel: no work after cancel (scraped %v, truth %v)", got, want)
	}
	if math.Abs(got-want) > 0.03*want {
		t.Errorf("ignore-cancel: scraped work after cancel %.1f, truth %.0f: off by more than 3%%", got, want)
	}
	if s.Source != model.ServiceSourceSim || !s.ReceivedPerS.OK || !s.QueueDepth.OK || !s.QueueOldestAge.OK || !s.ServiceTimeP99.OK {
		t.Errorf("ignore-cancel: provider signals incomplete: %+v", s)
	}
	if s.Responses429PerS.OK || s.ResponsesOther5xxPerS.OK {
		t.Errorf("ignore-cancel: the sim exports no 429 or other 5xx counter, yet they are present: %+v", s)
	}
	var found bool
	for _, svc := range run.rep.Services {
		found = found || svc.Target == sim.NameProvider
	}
	if !found {
		t.Errorf("ignore-cancel: report has no service row for the provider: %+v", run.rep.Services)
	}
	var text bytes.Buffer
	if err := ui.WriteReport(&text, run.rep, "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Services") || !strings.Contains(text.String(), "AFTER-CANCEL/s") ||
		!strings.Contains(text.String(), "provider still finished") {
		t.Errorf("ignore-cancel: no services table in the text report:\n%s", text.String())
	}
	t.Logf("ignore-cancel report:\n%s", text.String())

	run = runServiceScenario(ctx, t, "baseline", phases)
	_, got = workAfterCancel(t, run.store)
	t.Logf("baseline: work after cancel scraped %.0f, truth %d", got, run.truth.Provider.WorkAfterCancel)
	// The default provider stops on cancel; a request finishing at the
	// very moment its caller gives up may still count once.
	if got > 1.5 || run.truth.Provider.WorkAfterCancel > 1 {
		t.Errorf("baseline: work after cancel %.1f scraped, %d true; want ~0", got, run.truth.Provider.WorkAfterCancel)
	}
}

// TestServiceShapesReachTheStore scrapes a promhttp- and OTel-shaped
// service through the auto dialects: the families must pass the scrape
// filter and be stored as they are.
func TestServiceShapesReachTheStore(t *testing.T) {
	reg := prometheus.NewRegistry()
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "http_requests_total", Help: "h"}, []string{"code", "method"})
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "http_request_duration_seconds", Help: "h", Buckets: []float64{0.1, 1}}, []string{"code"})
	inflight := prometheus.NewGauge(prometheus.GaugeOpts{Name: "http_requests_in_flight", Help: "h"})
	otel := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "http_server_request_duration_seconds", Help: "h", Buckets: []float64{0.1, 1}},
		[]string{"http_request_method", "http_response_status_code"})
	active := prometheus.NewGauge(prometheus.GaugeOpts{Name: "http_server_active_requests", Help: "h"})
	reg.MustRegister(reqs, dur, inflight, otel, active)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	tgt, err := collect.ParseTarget("api=" + srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	src := &sources{targets: []collect.Target{tgt}, translate: dialect.Auto()}
	scraper := src.scraper(model.NewStore(model.StoreConfig{}), collect.Options{})
	ctx := context.Background()
	reqs.WithLabelValues("200", "get").Add(0)
	dur.WithLabelValues("200")
	otel.WithLabelValues("GET", "200")
	scraper.ScrapeOnce(ctx)
	for range 10 {
		reqs.WithLabelValues("200", "get").Inc()
		dur.WithLabelValues("200").Observe(0.05)
		otel.WithLabelValues("GET", "200").Observe(0.05)
	}
	reqs.WithLabelValues("503", "get").Add(0)
	inflight.Set(3)
	active.Set(4)
	time.Sleep(50 * time.Millisecond)
	scraper.ScrapeOnce(ctx)

	st := scraper.Store()
	if got := analysis.Services(st); len(got) != 1 || got[0] != "api" {
		t.Fatalf("services %v; stored families %v", got, st.Names("api"))
	}
	times := st.Times("api")
	s := analysis.ServiceSignalsFor(st, "api", times[0], times[len(times)-1])
	if s.Source != "promhttp+otel" || !s.ReceivedPerS.OK || s.ReceivedPerS.V <= 0 || s.InFlight != model.Some(3) ||
		!s.ServiceTimeP99.OK || !s.Responses503PerS.OK || s.Responses503PerS.V != 0 || s.WorkAfterCancelPerS.OK || s.QueueDepth.OK {
		t.Errorf("api service signals: %+v", s)
	}
}
