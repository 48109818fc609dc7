package analyze_test

import (
	"bytes"
	"context"
	"math"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/report"
	"github.com/retrytop/retrytop/scrape"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/sim"
	"github.com/retrytop/retrytop/sources"
)

// serviceRun is one scenario scraped on loopback: the store, the report
// over the whole run, the sim's ground truth read right after each scrape
// that reached the provider, and the final truth once the provider's counts
// have settled and been scraped.
type serviceRun struct {
	store   *model.Store
	rep     analysis.Report
	scrapes []scrapeTruth
	truth   sim.Truth
}

// scrapeTruth pairs a provider scrape (its store time) with the ground
// truth read just after it. clean says that no request was granted a slot
// between the truth read just before the scrape and this one: the scrape
// then saw exactly this truth's grants and total wait.
type scrapeTruth struct {
	atMs   int64
	truth  sim.Truth
	clean  bool
	before sim.Truth // read just before the scrape: it saw something in between
}

// runServiceScenario runs the scenario in virtual time (a synctest bubble
// over the sim's in-process transport, so a loaded machine changes
// nothing) and scrapes it every 500 ms of virtual time.
func runServiceScenario(t *testing.T, name string, opts sim.Options) (out serviceRun) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		out = runServiceScenarioInBubble(t, name, opts)
	})
	return out
}

func runServiceScenarioInBubble(t *testing.T, name string, opts sim.Options) serviceRun {
	// Virtual time: the schedule is 10 s, a minute is ample.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := startInProcess(t, ctx, name, opts)
	defer run.stack.Close()
	stack, scraper := run.stack, run.scraper
	var out serviceRun
	var statuses []model.TargetStatus
	scrape := func() {
		synctest.Wait() // every goroutine of the stack idle: the truth holds still
		before := stack.Truth()
		statuses = scraper.ScrapeOnce(ctx)
		truth := stack.Truth()
		if times := scraper.Store().Times(sim.NameProvider); len(times) > 0 {
			at := times[len(times)-1]
			if n := len(out.scrapes); n == 0 || out.scrapes[n-1].atMs != at {
				out.scrapes = append(out.scrapes, scrapeTruth{at, truth, truth.Provider.Granted == before.Provider.Granted, before})
			}
		}
		out.truth = truth
	}
	scrape()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-stack.Done():
			running = false
		case <-tick.C:
			scrape()
		case <-ctx.Done():
			t.Fatalf("%s did not finish in time", name)
		}
	}
	// Work the provider still holds after the run may finish late: scrape
	// until the ground truth no longer moves across a scrape (polling the
	// running provider, bounded by ctx and 20 rounds).
	for i := 0; i < 20; i++ {
		before := stack.Truth().Provider.WorkAfterCancel
		scrape()
		if out.truth.Provider.WorkAfterCancel == before {
			break
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("%s: provider did not settle", name)
		}
	}
	out.store = scraper.Store()
	out.rep = analysis.BuildReport(out.store, statuses, analysis.ReportOptions{Window: 5 * time.Second, Bin: 2 * time.Second})
	return out
}

// whole is the provider's service signals over the whole scraped span and
// that span in seconds.
func whole(t *testing.T, st *model.Store) (model.ServiceSignals, float64) {
	t.Helper()
	times := st.Times(sim.NameProvider)
	if len(times) < 2 {
		t.Fatalf("provider scraped %d times", len(times))
	}
	first, last := times[0], times[len(times)-1]
	return analysis.ServiceSignalsFor(st, sim.NameProvider, first, last), float64(last-first) / 1000
}

// queueWait is the provider's mean queue wait between two scrapes, twice:
// as retrytop computes it from the scraped histogram's _sum/_count, and as
// the ground truth's exact grants and total wait read right after the same
// two scrapes say.
type queueWait struct {
	scraped, truth float64 // seconds
	granted        int64
	// lo and hi bound what the scrapes can have seen: each scrape saw the
	// provider somewhere between the truth read before it and the one
	// after, so the grants and the total wait between two scrapes lie
	// between those readings' differences.
	lo, hi float64
}

func queueWaitBetween(t *testing.T, run serviceRun, a, b scrapeTruth) queueWait {
	t.Helper()
	s := analysis.ServiceSignalsFor(run.store, sim.NameProvider, a.atMs, b.atMs)
	if !s.QueueWaitMean.OK() {
		t.Fatalf("queue wait mean absent over [%d, %d]: %+v", a.atMs, b.atMs, s)
	}
	pa, pb := a.truth.Provider, b.truth.Provider
	granted := pb.Granted - pa.Granted
	if granted <= 0 {
		t.Fatalf("nobody granted a slot over [%d, %d]", a.atMs, b.atMs)
	}
	qa, qb := a.before.Provider, b.before.Provider
	// The fewest grants with the most wait, and the most grants with the
	// least: the scraped mean lies between.
	hiWait, loWait := (pb.QueueWaited - qa.QueueWaited).Seconds(), (qb.QueueWaited - pa.QueueWaited).Seconds()
	hiGranted, loGranted := pb.Granted-qa.Granted, qb.Granted-pa.Granted
	w := queueWait{scraped: s.QueueWaitMean.V(), truth: (pb.QueueWaited - pa.QueueWaited).Seconds() / float64(granted), granted: granted}
	w.lo = max(loWait, 0) / float64(hiGranted)
	w.hi = hiWait / float64(max(loGranted, 1))
	return w
}

// withinBounds fails unless the scraped mean lies within what the truth
// readings around the scrapes allow (queueWait.lo..hi), with float
// rounding's room.
func withinBounds(t *testing.T, what string, w queueWait) {
	t.Helper()
	const rounding = 1e-9
	if w.scraped < w.lo*(1-rounding)-rounding || w.scraped > w.hi*(1+rounding)+rounding {
		t.Errorf("%s: scraped %.6fs outside %.6f..%.6fs, the means the truth read around the scrapes allows (truth %.6fs)",
			what, w.scraped, w.lo, w.hi, w.truth)
	}
}

// phaseScrapes are the provider scrapes taken during a phase: the clean
// ones (see scrapeTruth) when there are at least three, else all of them
// (the truth read after a scrape may then count a grant or two more).
func phaseScrapes(t *testing.T, run serviceRun, phase string) []scrapeTruth {
	t.Helper()
	var in, clean []scrapeTruth
	for _, sc := range run.scrapes {
		if sc.truth.Phase == phase {
			in = append(in, sc)
			if sc.clean {
				clean = append(clean, sc)
			}
		}
	}
	t.Logf("phase %s: %d provider scrapes, %d clean", phase, len(in), len(clean))
	if len(clean) >= 3 {
		return clean
	}
	if len(in) < 3 {
		t.Fatalf("%d provider scrapes in phase %s", len(in), phase)
	}
	return in
}

// TestServiceSignalsOnTheSim checks the provider's service signals against
// the sim's ground truth, on the real services in virtual time.
func TestServiceSignalsOnTheSim(t *testing.T) {
	phases := sim.Options{Healthy: 2 * time.Second, Slow: 5 * time.Second, Recovered: 3 * time.Second, Seed: 3}

	if got := analysis.Services(model.NewStore(model.StoreConfig{})); len(got) != 0 {
		t.Errorf("an empty store lists services %v", got)
	}
	within3 := func(what string, got, want float64) {
		t.Helper()
		if want <= 0 || got <= 0 || math.Abs(got-want) > 0.03*want {
			t.Errorf("%s: scraped %.4g, truth %.4g: not within 3%%", what, got, want)
		}
	}

	run := runServiceScenario(t, "ignore-cancel", phases)
	s, span := whole(t, run.store)
	if !s.WorkAfterCancelPerS.OK() {
		t.Fatalf("provider work after cancel absent: %+v", s)
	}
	got, want := s.WorkAfterCancelPerS.V()*span, float64(run.truth.Provider.WorkAfterCancel)
	t.Logf("ignore-cancel: work after cancel scraped %.0f, truth %.0f; services %s", got, want, strings.Join(analysis.Services(run.store), ","))
	within3("ignore-cancel work after cancel", got, want)

	// The queue: waits rise with the slowdown and keep rising through it,
	// and the mean retrytop reads from the histogram's _sum/_count is the
	// sim's exact mean over the same scrapes. The per-phase truth (phase
	// boundaries, not scrapes) is logged for reference.
	hs, ss := phaseScrapes(t, run, sim.PhaseHealthy), phaseScrapes(t, run, sim.PhaseSlow)
	healthy := queueWaitBetween(t, run, hs[0], hs[len(hs)-1])
	slow := queueWaitBetween(t, run, ss[0], ss[len(ss)-1])
	early := queueWaitBetween(t, run, ss[0], ss[len(ss)/2])
	late := queueWaitBetween(t, run, ss[len(ss)/2], ss[len(ss)-1])
	for _, ph := range run.truth.Phases {
		t.Logf("ignore-cancel phase %s: %d granted, mean queue wait %v (truth over the phase)", ph.Name, ph.QueueGranted, ph.QueueWaitMean)
	}
	for _, w := range []struct {
		name string
		w    queueWait
	}{{"healthy", healthy}, {"slow", slow}, {"slow, first half", early}, {"slow, second half", late}} {
		t.Logf("ignore-cancel queue wait mean, %s: scraped %.6fs, truth %.6fs (%d granted)", w.name, w.w.scraped, w.w.truth, w.w.granted)
	}
	// Over the slow phase and the healthy one, the scraped mean is within
	// what the truth readings around its scrapes allow: grants that landed
	// between a truth read and its scrape may be on either side (under
	// -race, 1-2 per scrape, each moving a 150-grant mean by about 1 %).
	withinBounds(t, "ignore-cancel slow-phase queue wait mean", slow)
	withinBounds(t, "ignore-cancel healthy-phase queue wait mean", healthy)
	if !(slow.scraped > 2*healthy.scraped) || !(late.scraped > early.scraped) {
		t.Errorf("queue wait did not rise with the slowdown: healthy %.4fs, slow %.4fs (first half %.4fs, second half %.4fs)",
			healthy.scraped, slow.scraped, early.scraped, late.scraped)
	}

	if s.Source != model.ServiceSourceSim || !s.ReceivedPerS.OK() || !s.QueueDepth.OK() || !s.QueueOldestAge.OK() || !s.ServiceTimeP99.OK() {
		t.Errorf("ignore-cancel: provider signals incomplete: %+v", s)
	}
	// Configuration, and what an unbounded ignore-cancel provider never
	// does: refuse (no 503 with Retry-After), cancel, answer 429 or other
	// 5xx. Those are 0 (the sim counts responses by code), not absent.
	if s.Slots != model.Some(sim.ProviderSlots) || s.QueueLimit != model.Some(0) {
		t.Errorf("ignore-cancel: slots %v, queue limit %v; want %d and 0 (unbounded)", s.Slots, s.QueueLimit, sim.ProviderSlots)
	}
	for name, v := range map[string]model.Value{"cancelled": s.CancelledPerS, "503 with Retry-After": s.Responses503RetryAfterPerS,
		"429": s.Responses429PerS, "other 5xx": s.ResponsesOther5xxPerS, "5xx": s.Responses5xxPerS} {
		if v != model.Some(0) {
			t.Errorf("ignore-cancel: %s = %v, want 0", name, v)
		}
	}
	// The sim does not split its service time by outcome.
	if s.SuccessServiceTimeP50.OK() || s.ErrorServiceTimeP99.OK() {
		t.Errorf("ignore-cancel: outcome-split service time present: %+v", s)
	}
	var found bool
	for _, svc := range run.rep.Services {
		found = found || svc.Target == sim.NameProvider
	}
	if !found {
		t.Errorf("ignore-cancel: report has no service row for the provider: %+v", run.rep.Services)
	}
	var text bytes.Buffer
	if err := report.WriteAnalysis(&text, run.rep, "text", 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Services") || !strings.Contains(text.String(), "AFTER-CANCEL/s") ||
		!strings.Contains(text.String(), "provider still finished") {
		t.Errorf("ignore-cancel: no services table in the text report:\n%s", text.String())
	}
	t.Logf("ignore-cancel report:\n%s", text.String())

	ignoring := run.truth.Provider.WorkAfterCancel
	run = runServiceScenario(t, "baseline", phases)
	s, span = whole(t, run.store)
	got = s.WorkAfterCancelPerS.V() * span
	t.Logf("baseline: work after cancel scraped %.0f, truth %d", got, run.truth.Provider.WorkAfterCancel)
	// The default provider stops on cancel; a request finishing at the
	// very moment its caller gives up still counts, so a few show (2 to 5
	// in -race runs), where ignore-cancel on the same schedule finishes
	// over a thousand. Scraped must equal the truth, and the truth be a
	// small part (a twentieth at most) of what ignoring the cancel does.
	wac, done := run.truth.Provider.WorkAfterCancel, run.truth.Provider.Completed
	if !s.WorkAfterCancelPerS.OK() || math.Abs(got-float64(wac)) > 1 || wac*20 > ignoring {
		t.Errorf("baseline: work after cancel %v scraped (%.0f), %d true of %d completed, against %d ignoring the cancel; want a few and equal",
			s.WorkAfterCancelPerS, got, wac, done, ignoring)
	}
	// It abandons the work of callers that gave up instead: cancelled.
	p := run.truth.Provider
	if !s.CancelledPerS.OK() {
		t.Fatalf("baseline: cancelled absent: %+v", s)
	}
	t.Logf("baseline: cancelled scraped %.0f, truth %d", s.CancelledPerS.V()*span, p.CancelledQueued+p.CancelledExecuting)
	within3("baseline cancelled", s.CancelledPerS.V()*span, float64(p.CancelledQueued+p.CancelledExecuting))
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

	tgt, err := scrape.ParseTarget("api=" + srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	src := &sources.Sources{Targets: []scrape.Target{tgt}, Translate: dialect.Auto()}
	// Each scrape one second after the previous one, on an injected clock.
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	scraper := src.Scraper(model.NewStore(model.StoreConfig{}), scrape.Options{Clock: clock})
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
	scraper.ScrapeOnce(ctx)

	st := scraper.Store()
	if got := analysis.Services(st); len(got) != 1 || got[0] != "api" {
		t.Fatalf("services %v; stored families %v", got, st.Names("api"))
	}
	times := st.Times("api")
	s := analysis.ServiceSignalsFor(st, "api", times[0], times[len(times)-1])
	if s.Source != "promhttp+otel" || !s.ReceivedPerS.OK() || s.ReceivedPerS.V() <= 0 || s.InFlight != model.Some(3) ||
		!s.ServiceTimeP99.OK() || !s.Responses503PerS.OK() || s.Responses503PerS.V() != 0 || s.WorkAfterCancelPerS.OK() || s.QueueDepth.OK() {
		t.Errorf("api service signals: %+v", s)
	}
	// Durations labelled with their code split: 200s only, so successes
	// have quantiles and errors none; Retry-After is not in these shapes.
	if !s.SuccessServiceTimeP99.OK() || s.ErrorServiceTimeP99.OK() || s.Responses5xxPerS != model.Some(0) || s.Responses503RetryAfterPerS.OK() {
		t.Errorf("api split service time and 5xx: %+v", s)
	}
}
