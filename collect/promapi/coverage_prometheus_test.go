package promapi

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/collect"
	"github.com/retrytop/retrytop/model"
)

// clockEmitter serves the metric contract with counters that are exact
// functions of the time a scrape is served: job step counts originals at
// r0/s until stepAt and r1/s after (attempts 1.5 times that) and creates
// its timeout results series only at stepAt (20/s, from 0); job late
// counts 40/s originals and 60/s attempts from a lifetime total of a
// million, and answers Prometheus (/late/metrics) only from lateOn, while
// the direct scraper reads it (/late/direct) throughout.
type clockEmitter struct {
	epoch   time.Time
	r0, r1  float64
	stepAt  atomic.Int64 // unix nanoseconds; 0: not yet
	lateOn  atomic.Int64 // unix nanoseconds; 0: not yet
	timeout float64      // the timeout results' rate after the step
}

// since is the time from the epoch and the time after the step (0 before).
func (e *clockEmitter) at(now time.Time) (t, afterStep float64) {
	t = now.Sub(e.epoch).Seconds()
	if s := e.stepAt.Load(); s != 0 && now.UnixNano() > s {
		afterStep = float64(now.UnixNano()-s) / 1e9
	}
	return t, afterStep
}

func (e *clockEmitter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	t, after := e.at(now)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	switch r.URL.Path {
	case "/step/metrics":
		orig := e.r0*(t-after) + e.r1*after
		fmt.Fprintf(w, "# TYPE retry_originals_total counter\nretry_originals_total{dependency=\"provider\",priority=\"critical\"} %.6f\n", orig)
		fmt.Fprintf(w, "# TYPE retry_attempts_total counter\nretry_attempts_total{dependency=\"provider\",outcome=\"success\"} %.6f\n", 1.5*orig)
		if after > 0 {
			fmt.Fprintf(w, "# TYPE retry_results_total counter\nretry_results_total{dependency=\"provider\",priority=\"critical\",result=\"timeout\"} %.6f\n", e.timeout*after)
		}
	case "/late/metrics", "/late/direct":
		if on := e.lateOn.Load(); r.URL.Path == "/late/metrics" && (on == 0 || now.UnixNano() < on) {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "# TYPE retry_originals_total counter\nretry_originals_total{dependency=\"provider\",priority=\"critical\"} %.6f\n", 1e6+40*t)
		fmt.Fprintf(w, "# TYPE retry_attempts_total counter\nretry_attempts_total{dependency=\"provider\",outcome=\"success\"} %.6f\n", 1e6+60*t)
	default:
		http.NotFound(w, r)
	}
}

// TestPrometheusCoverageAndStepAgainstScraping: a real Prometheus scrapes
// two jobs every second and the Source reads it at its default range
// (learned from the server: 2 s) while a direct scraper reads the same
// emitter, on the same ticks, over the identical 25 s window. The window
// ends 5 s after job step's rate rises by half, and job late has been scraped by
// Prometheus for only the last 10 s of it. Both paths must agree within
// bounds derived below (all under 3 %); a Source that backfills the window
// at the end (query_range) must too.
func TestPrometheusCoverageAndStepAgainstScraping(t *testing.T) {
	if testing.Short() {
		t.Skip("Prometheus integration test skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	em := &clockEmitter{epoch: time.Now(), r0: 100, r1: 150, timeout: 20}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: em}
	go srv.Serve(l)
	defer srv.Close()
	host := l.Addr().String()

	const (
		interval = time.Second // the test Prometheus' scrape interval
		window   = 25 * time.Second
		lateFor  = 10 * time.Second // how long Prometheus has scraped job late when the window ends
		stepFor  = 5 * time.Second  // how long before the end job step's rate rises
	)
	base := startPrometheusFor(t, ctx, []scrapeJob{{name: "step", host: host, path: "/step/metrics"}, {name: "late", host: host, path: "/late/metrics"}}, "step", 3)
	var targets []collect.Target
	for _, s := range []string{"step=http://" + host + "/step/metrics", "late=http://" + host + "/late/direct"} {
		tgt, err := collect.ParseTarget(s)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tgt)
	}
	direct := collect.NewScraper(targets, model.NewStore(model.StoreConfig{}), collect.Options{})
	src, err := New(Options{Client: ClientConfig{URL: base}, Step: time.Second, Backfill: -1})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	em.lateOn.Store(t0.Add(window - lateFor).UnixNano())
	em.stepAt.Store(t0.Add(window - stepFor).UnixNano())
	var wg sync.WaitGroup
	runCtx, stopRun := context.WithCancel(ctx)
	readTogether(runCtx, &wg, direct, src)
	select {
	case <-time.After(time.Until(t0.Add(window))):
	case <-ctx.Done():
	}
	stopRun()
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("timed out")
	}
	if got := src.Range(); got != 2*interval {
		t.Errorf("default range %v, want 2 × the %v scrape interval", got, interval)
	}
	for _, st := range src.Statuses() {
		if !st.Up {
			t.Errorf("status %+v", st)
		}
	}

	// The identical window: both stores' samples from the first tick to
	// the last one the Source recorded (a refresh cut short by the end of
	// the run records nothing, while its tick's direct scrape may have
	// landed). On one tick the direct scrape runs just before the
	// refresh; 100 ms of slack takes both and never a neighbouring tick.
	const slack = 100 * time.Millisecond
	dt, pt := direct.Store().Times("step"), src.Store().Times("step")
	if len(dt) < 20 || len(pt) < 20 {
		t.Fatalf("%d direct and %d Prometheus samples of job step", len(dt), len(pt))
	}
	from, to := time.UnixMilli(dt[0]).Add(-slack), time.UnixMilli(pt[len(pt)-1]).Add(slack)
	lastDirect := dt[len(dt)-1]
	for i := len(dt) - 1; i >= 0 && time.UnixMilli(dt[i]).After(to); i-- {
		lastDirect = dt[i-1]
	}

	// A Source started at the end backfills the window with query_range,
	// tiled by the range back from the last direct scrape: the tiles' ends
	// fall on direct scrapes (ticks 1 s apart).
	backFor := (window - 2*time.Second) / (2 * interval) * (2 * interval)
	back, err := New(Options{Client: ClientConfig{URL: base}, Step: time.Second, Backfill: backFor,
		Clock: func() time.Time { return time.UnixMilli(lastDirect) }})
	if err != nil {
		t.Fatal(err)
	}
	back.Refresh(ctx)

	// Why these bounds. Every counter is linear between its changes, and
	// increase() over a linear stretch is exact whatever the scrape
	// times, so what differs is:
	// - the one span that holds job step's step: its extrapolation to the
	//   span's ends uses a slope between r0 and r1 over at most one scrape
	//   interval on each side, in opposite directions: at most
	//   |r1-r0| x interval events;
	// - timing: a value is computed when a scrape is served but stamped
	//   when it started, and on one tick the direct scrape runs just
	//   before the refresh: a few milliseconds at each end of a window;
	//   allowed 50 ms of the highest rate at each end.
	// - the timeout series, created at the step: increase() extrapolates a
	//   new series back towards zero by at most half an interval, so its
	//   first scrape loses up to (its rate) x interval/2 events.
	const skew = 0.05 // seconds
	check := func(what string, st *model.Store, from, to time.Time) {
		for _, c := range []struct {
			target, name string
			val          func(model.Signals) model.Value
			stepEvents   float64 // events of the step's span that extrapolation may misplace
			rate         float64 // the highest rate, for the timing allowance
		}{
			{"step", "originals/s", func(s model.Signals) model.Value { return s.OriginalsPerS }, (em.r1 - em.r0) * interval.Seconds(), em.r1},
			{"step", "attempts/s", func(s model.Signals) model.Value { return s.AttemptsPerS }, 1.5 * (em.r1 - em.r0) * interval.Seconds(), 1.5 * em.r1},
			{"late", "originals/s", func(s model.Signals) model.Value { return s.OriginalsPerS }, 0, 40},
			{"late", "attempts/s", func(s model.Signals) model.Value { return s.AttemptsPerS }, 0, 60},
		} {
			da := analysis.SignalsFor(direct.Store(), c.target, "provider", from.UnixMilli(), to.UnixMilli())
			db := analysis.SignalsFor(st, c.target, "provider", from.UnixMilli(), to.UnixMilli())
			va, oka := c.val(da).Get()
			vb, okb := c.val(db).Get()
			// The Prometheus side's span: its samples of the target inside
			// the window (job late's start when Prometheus had it).
			ts := st.Times(c.target)
			var first, last int64
			for _, x := range ts {
				if x >= from.UnixMilli() && x <= to.UnixMilli() {
					if first == 0 {
						first = x
					}
					last = x
				}
			}
			span := float64(last-first) / 1000
			if !oka || !okb || span <= 0 {
				t.Errorf("%s %s %s: direct %v, prometheus %v over %.1f s", what, c.target, c.name, c.val(da), c.val(db), span)
				continue
			}
			tol := (c.stepEvents + 2*skew*c.rate) / (va * span)
			diff := math.Abs(vb-va) / va
			t.Logf("%s %s %s: direct %.3f, prometheus %.3f over %.1f s: %.2f%% (bound %.2f%%)", what, c.target, c.name, va, vb, span, 100*diff, 100*tol)
			if tol > 0.03 {
				t.Errorf("%s %s %s: the bound %.2f%% exceeds 3%%: the test's numbers say nothing", what, c.target, c.name, 100*tol)
			}
			if diff > tol {
				t.Errorf("%s %s %s: direct %.3f, prometheus %.3f: %.2f%% apart, over the bound %.2f%%", what, c.target, c.name, va, vb, 100*diff, 100*tol)
			}
		}
		// The timeout results created at the step, over the window.
		ra := resultRate(direct.Store(), "step", "timeout", from, to)
		rb := resultRate(st, "step", "timeout", from, to)
		bound := em.timeout*interval.Seconds()/2 + 2*skew*em.timeout
		t.Logf("%s step timeouts: direct %.1f, prometheus %.1f events (bound %.1f)", what, ra, rb, bound)
		if math.IsNaN(ra) || math.IsNaN(rb) || math.Abs(ra-rb) > bound {
			t.Errorf("%s step timeouts: direct %.1f, prometheus %.1f events: more than %.1f apart", what, ra, rb, bound)
			logSeries(t, ctx, base, st, `retry_results_total{job="step"}`, t0)
		}
	}
	check("live", src.Store(), from, to)
	end := time.UnixMilli(lastDirect)
	check("backfill", back.Store(), end.Add(-backFor-slack), end.Add(slack))
}

// logSeries logs, to explain a failure, the raw samples Prometheus holds
// of sel and the store's step series of the same family, in seconds since
// t0.
func logSeries(t *testing.T, ctx context.Context, base string, st *model.Store, sel string, t0 time.Time) {
	c, err := NewClient(ClientConfig{URL: base})
	if err != nil {
		return
	}
	res, err := c.Query(ctx, sel+"[40s]", time.Now())
	if err != nil {
		t.Logf("%s: %v", sel, err)
	}
	for _, s := range res.Series {
		var b []string
		for _, p := range s.Points {
			b = append(b, fmt.Sprintf("%.3f:%.1f", float64(p.T-t0.UnixMilli())/1000, p.V))
		}
		t.Logf("prometheus %s %v", s.Labels, b)
	}
	for _, s := range st.Select("step", model.MetricResults, nil) {
		var b []string
		for _, p := range s.Points {
			b = append(b, fmt.Sprintf("%.3f:%.1f", float64(p.T-t0.UnixMilli())/1000, p.V))
		}
		t.Logf("store %s %v", s.Labels, b)
	}
}

// resultRate is the increase of one result series of a target over
// [from, to] in events (NaN when absent).
func resultRate(st *model.Store, target, result string, from, to time.Time) float64 {
	sig := analysis.SignalsFor(st, target, "provider", from.UnixMilli(), to.UnixMilli())
	v, ok := sig.ResultsPerS[result].Get()
	if !ok {
		return math.NaN()
	}
	return v * float64(to.Sub(from).Milliseconds()) / 1000
}
