package promapi

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/internal/reportcmp"
	"github.com/retrytop/retrytop/internal/testpeer"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
	"github.com/retrytop/retrytop/sim"
)

// TestAgainstPrometheus runs the sim stack, a real Prometheus scraping it
// every second, a direct scraper and a Source (default options) on that
// Prometheus side by side, and checks that both stores give the same
// originals/s, attempts/s and amplification per hop within 3 % over the
// same windows: the whole incident, one that ends 3 s into the slowdown
// (a step change), and a target that began to answer 10 s before that
// end; then the same service signals of the provider and the same
// findings.
func TestAgainstPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("Prometheus integration test skipped in -short mode")
	}
	// A bound on a hang, not on a number: Prometheus may take tens of
	// seconds to start beside a CPU hog.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Prometheus first, told where the stack will listen, and the stack
	// once Prometheus has tried every target: the scenario's schedule
	// starts with the stack, so a slow Prometheus start cannot eat the
	// healthy phase.
	sc, _ := sim.ScenarioByName("baseline")
	names := []string{sim.NameBrowser}
	for _, l := range sc.Layers {
		names = append(names, l.Name)
	}
	names = append(names, sim.NameProvider)
	ports := testpeer.FreePortRun(t, len(names))
	var jobs []scrapeJob
	for i, name := range names {
		jobs = append(jobs, scrapeJob{name: name, host: "127.0.0.1:" + strconv.Itoa(ports+i), path: "/metrics"})
	}
	// A target that refuses (503) until 10 s before the step window ends,
	// then counts from 0 like a process that just started; that moment is
	// set once the stack has started.
	var lateFrom atomic.Int64
	lateFrom.Store(math.MaxInt64)
	late := newLateTarget(t, &lateFrom)
	lateURL, _ := url.Parse(late.URL)
	jobs = append(jobs, scrapeJob{name: "late", host: lateURL.Host, path: "/", late: true})
	base := startPrometheus(t, ctx, jobs, 0)

	const healthy = 16 * time.Second
	recovered := make(chan struct{})
	var once sync.Once
	stack, err := sim.Start(ctx, sc, sim.Options{ListenBase: ports, Healthy: healthy, Slow: 8 * time.Second, Recovered: 16 * time.Second, Seed: 7,
		OnPhase: func(_ int, name string) {
			if name == sim.PhaseRecovered {
				once.Do(func() { close(recovered) })
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer stack.Close()

	// On a failure, what Prometheus saw of its own scrapes (deferred: it
	// runs before cancel stops Prometheus).
	defer func() {
		if t.Failed() {
			c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			t.Logf("prometheus' scrapes since the stack started (s from its start = value):\n%s", scrapeHistory(c, base, stack.Started()))
		}
	}()
	slowAt := stack.Started().Add(healthy)
	stepEnd := slowAt.Add(3 * time.Second)
	lateFrom.Store(stepEnd.Add(-10 * time.Second).UnixNano())

	// Direct scraping from the start. A scrape may take seconds on a
	// busy machine: the timeout is not what is compared (the skew below
	// allows for slow scrapes), so it is long.
	var targets []scrape.Target
	for i, st := range stack.Targets() {
		if want := "http://" + jobs[i].host + "/metrics"; st.Name != names[i] || st.URL != want {
			t.Fatalf("target %d: %s at %s, want %s at %s", i, st.Name, st.URL, names[i], want)
		}
		tgt, err := scrape.ParseTarget(st.Name + "=" + st.URL)
		if err != nil {
			t.Fatal(err)
		}
		tgt.Timeout = 30 * time.Second
		targets = append(targets, tgt)
	}
	lateTgt, _ := scrape.ParseTarget("late=" + late.URL)
	lateTgt.Timeout = 30 * time.Second
	targets = append(targets, lateTgt)
	// As analyze scrapes: through the dialect translator.
	tr := dialect.Auto()
	direct := scrape.NewScraper(targets, model.NewStore(model.StoreConfig{}), scrape.Options{Translate: tr.Translate, Filter: tr.Filter})
	waitEachScraped(t, ctx, base, jobs, stack.Started())

	src, err := New(Options{Client: ClientConfig{URL: base}, Step: time.Second, Backfill: -1})
	if err != nil {
		t.Fatal(err)
	}
	// Scrape directly and query Prometheus on the same ticks, so both
	// stores have samples at (nearly) the same times and a window selects
	// the same span of both.
	var wg sync.WaitGroup
	defer wg.Wait()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	directLags := readTogether(runCtx, &wg, direct, src)
	// The ruler: what the targets counted between the two readers'
	// samples (peer_bound_test.go).
	ruler, rulerLags := startRuler(runCtx, &wg, targets, scrape.Options{Translate: tr.Translate, Filter: tr.Filter})

	// The windows start in the healthy phase, after both readers' first
	// reading (their baselines); the whole-incident window ends in the
	// recovered phase, the step window 3 s into the slow phase.
	t0 := time.Now().Add(2 * time.Second)
	if t0.After(stepEnd.Add(-10 * time.Second)) {
		t.Fatalf("prometheus took %v to scrape every target once: no window left before the slow phase", time.Since(stack.Started()))
	}
	select {
	case <-recovered:
	case <-ctx.Done():
		t.Fatal("the sim never recovered")
	}
	time.Sleep(4 * time.Second)
	t1 := time.Now()
	// The Source evaluates DefaultDelay behind the clock, later when its
	// refreshes take longer than a step: read on until it has evaluated
	// 2 s past t1, where the findings' 1 s report reads the shifts of the
	// window's last bins (reportcmp.AtCrossing).
	if err := waitEvaluated(ctx, src, t1.Add(fineMargin)); err != nil {
		t.Fatal(err)
	}
	stopRun()
	wg.Wait()

	// Every target read through Prometheus up to the end. Not "up at the
	// last refresh": on a busy machine Prometheus' own 1 s scrapes time
	// out, and an evaluation after a failed scrape finds the target's
	// series stale, which the Source rightly reports as no series (seen
	// beside a CPU hog: 5-9 s of them at the end). The window's numbers
	// bridge such gaps (TestFailedScrapesAreBridged); here each target
	// must have been read after t0 and failed fewer refreshes than it
	// succeeded.
	//
	// When Prometheus' own scrapes of a target failed most of the window
	// (its 1 s scrape timeout: beside CPU hogs at load 12-15 the test
	// process, sim included, answered in 1-12 s), the Prometheus path has
	// no data to compare: that is said once, with the share, instead of
	// as every number absent.
	if share := scrapedShare(ctx, base, jobs, t0, t1); len(share) > 0 {
		t.Fatalf("prometheus' 1 s scrapes of %v failed most of %v..%v (share of scrapes that worked): its path has no data to compare",
			share, t0.Format("15:04:05"), t1.Format("15:04:05"))
	}
	for _, st := range src.Statuses() {
		if st.LastSuccess.Before(t0) || 2*st.Failures >= st.Scrapes {
			t.Errorf("status %+v: not read through Prometheus since the window began, or failed most refreshes", st)
		} else if !st.Up {
			t.Logf("status at the end: %s %s (last read %v before the end)", st.Name, st.LastError, st.LastScrape.Sub(st.LastSuccess))
		}
	}
	a, b := direct.Store(), src.Store()
	// Each reader stamps a sample when its scrape starts, while the sim
	// computes the values when it answers, up to a scrape's duration later
	// (under -race the sim answers slowly): the readers' samples may stand
	// that much further apart than the interval. The skew is the longest
	// scrape of any reader over the run (Prometheus' scrape_duration_seconds,
	// the direct scraper's and the ruler's).
	skew := time.Duration(0)
	if cl, err := NewClient(ClientConfig{URL: base, Timeout: 5 * time.Second}); err == nil {
		q := "max(max_over_time(scrape_duration_seconds[" + dialect.PromDuration(t1.Sub(t0)+5*time.Second) + "]))"
		if r, err := cl.Query(ctx, q, t1); err == nil && len(r.Series) == 1 {
			skew = time.Duration(r.Series[0].Points[0].V * float64(time.Second))
		}
	}
	promLags := prometheusLags(ctx, base, t1, t1.Sub(t0)+5*time.Second)
	skew = max(skew, directLags.longest(), rulerLags.longest(), promLags.longest())
	t.Logf("skew (longest scrape of any reader): %v", skew)
	rd := readers{a: a, b: b, ruler: ruler, aLags: directLags, bLags: promLags, rulerLags: rulerLags}
	for _, w := range []struct {
		name     string
		from, to time.Time
	}{{"incident", t0, t1}, {"step", t0, stepEnd}} {
		rows := 0
		for _, tgt := range a.Targets() {
			for _, dep := range analysis.Dependencies(a, tgt) {
				from, to := commonSpan(a, b, tgt, w.from, w.to)
				what := w.name + " window: " + tgt + " -> " + dep + " "
				rows++
				cc := func(family string, get func(model.Signals) model.Value) counter {
					return contractCounter(tgt, dep, family, get)
				}
				compareRate(t, what+"originals/s", cc(model.MetricOriginals, func(s model.Signals) model.Value { return s.OriginalsPerS }), rd, tgt, from, to)
				compareRate(t, what+"attempts/s", cc(model.MetricAttempts, func(s model.Signals) model.Value { return s.AttemptsPerS }), rd, tgt, from, to)
				sig := analysis.SignalsFor(a, tgt, dep, from.UnixMilli(), to.UnixMilli())
				num, den, numFamily, denFamily, ok := amplificationParts(sig)
				if !ok {
					t.Errorf("%samplification: basis %q has a denominator of two counters, which the sampling bound does not cover", what, sig.AmplificationBasis)
					continue
				}
				amp := cc("", func(s model.Signals) model.Value { return s.Amplification })
				compareRatio(t, what+"amplification", amp.rate, cc(numFamily, num), cc(denFamily, den), rd, tgt, from, to)
			}
		}
		if rows < 4 {
			t.Fatalf("%s window: %d rows scraped directly, want the 3 hops and the late target", w.name, rows)
		}
	}

	// The provider's services view: the same signals are present; its
	// rates and the service time and queue wait from its histograms agree
	// within the same 3 % (and 0.1/s: a few events over the window), its
	// configuration (slots, queue limit) exactly. In flight, queue depth
	// and the oldest age are read at one instant, which the two scrapers
	// sample at different moments: presence only.
	//
	if got := analysis.Services(b); !slices.Contains(got, "provider") {
		t.Errorf("services through Prometheus: %v", got)
	}
	sva := serviceValues(analysis.ServiceSignalsFor(a, "provider", t0.UnixMilli(), t1.UnixMilli()))
	svb := serviceValues(analysis.ServiceSignalsFor(b, "provider", t0.UnixMilli(), t1.UnixMilli()))
	serviceSignal := func(st *model.Store, k string) func(from, to int64) model.Value {
		return func(from, to int64) model.Value {
			return serviceValues(analysis.ServiceSignalsFor(st, "provider", from, to))[k]
		}
	}
	instant := map[string]bool{"in flight": true, "queue depth": true, "queue oldest age": true}
	exact := map[string]bool{"slots": true, "queue limit": true}
	compared := 0
	for _, k := range sortedKeys(sva) {
		va, vb := sva[k], svb[k]
		t.Logf("provider service %s: direct %.4g (%v), prometheus %.4g (%v)", k, va.V, va.OK, vb.V, vb.OK)
		switch {
		case va.OK != vb.OK:
			t.Errorf("provider service %s: direct %v, prometheus %v", k, va, vb)
		case !va.OK || instant[k]:
		case exact[k]:
			if va.V != vb.V {
				t.Errorf("provider service %s: direct %v, prometheus %v", k, va.V, vb.V)
			}
		case strings.HasSuffix(k, "/s"):
			// A counter's rate: bounded by what the provider counted
			// between the readers' samples, as the hops' rates.
			compared++
			from, to := commonSpan(a, b, "provider", t0, t1)
			c := counter{rate: func(st *model.Store, from, to int64) model.Value { return serviceSignal(st, k)(from, to) }}
			compareRate(t, "provider service "+k, c, rd, "provider", from, to)
		default:
			// Quantiles and means of histograms: the rates at the
			// window's edges bound them (compareWindow).
			compared++
			from, to := commonSpan(a, b, "provider", t0, t1)
			compareWindow(t, "provider service "+k, serviceSignal(a, k), serviceSignal(b, k), a.Times("provider"), from, to, skew)
		}
	}
	if !sva["received/s"].OK || !sva["slots"].OK || compared < 10 {
		t.Errorf("provider service signals: %d compared, received/s %v, slots %v", compared, sva["received/s"], sva["slots"])
	}

	// The same findings fire: analyze's report (the rules over the window
	// and over the timeline of everything retained) on both stores, over
	// the same window; a finding of one reader only is explained when the
	// other has no data for its row in a bin where it held (a scrape of
	// that target failed or came late on its path alone: the two were
	// given different data), or when it held at a threshold crossing
	// within one scrape interval of its bins' edges (reportcmp), and
	// logged.
	opts := analysis.ReportOptions{Window: t1.Sub(t0).Truncate(time.Second), EndMs: t1.UnixMilli()}
	ra, rb := analysis.BuildReport(a, direct.Statuses(), opts), analysis.BuildReport(b, src.Statuses(), opts)
	fa, fb := findingKeys(ra.Findings), findingKeys(rb.Findings)
	t.Logf("findings scraping directly: %v", fa)
	t.Logf("findings through Prometheus: %v", fb)
	var fine *analysis.Report // the Prometheus store in 1 s bins, built when needed
	for _, c := range []struct {
		name       string
		has, other analysis.Report
	}{{"scraping directly only", ra, rb}, {"through Prometheus only", rb, ra}} {
		others := findingKeys(c.other.Findings)
		for _, f := range c.has.Findings {
			if slices.Contains(others, findingKeys([]analysis.Finding{f})[0]) {
				continue
			}
			if why := reportcmp.HoleUnder(f, c.other); why != "" {
				t.Logf("%s: %s %s -> %s: the other reader's %s", c.name, f.Code, f.Target, f.Dependency, why)
				continue
			}
			// Both readers sample every second (readTogether, the scrape
			// interval of startPrometheus): the Prometheus store's report
			// in 1 s bins gives each bin shifted by a scrape interval
			// (reportcmp.AtCrossing's bound).
			if fine == nil {
				r := analysis.BuildReport(b, src.Statuses(), analysis.ReportOptions{Window: opts.Window + 2*fineMargin, Bin: time.Second,
					EndMs: t1.Add(fineMargin).UnixMilli()})
				fine = &r
			}
			if why := reportcmp.AtCrossing(f, c.has, c.other, *fine, analysis.DefaultThresholds(), time.Second); why != "" {
				t.Logf("%s: %s %s -> %s: %s", c.name, f.Code, f.Target, f.Dependency, why)
				continue
			}
			t.Errorf("%s: %s %s -> %s (%s)\n direct     %v\n prometheus %v", c.name, f.Code, f.Target, f.Dependency, f.Message, fa, fb)
		}
	}
	if len(fa) == 0 || len(fb) == 0 {
		t.Errorf("no finding fired on a path (direct %v, prometheus %v): the comparison says nothing", fa, fb)
	}
}

// fineMargin is how far past each edge of the findings' window their 1 s
// report reaches: a shift of one interval of a bin (or of Evaluate's
// window, whose rows start one interval in) needs one more interval of
// bins (reportcmp.AtCrossing).
const fineMargin = 2 * time.Second

// findingKeys are the findings' codes with what they are about, sorted.
func findingKeys(fs []analysis.Finding) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		k := f.Code + " " + f.Target + " -> " + f.Dependency
		if f.Chain != "" {
			k += " (" + f.Chain + ")"
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// newLateTarget serves the native contract for dependency "late": 503
// until from, then originals and successful attempts at about 40/s
// counted from 0 (a process that just started), incremented on 5 ms
// ticks by a goroutine that stops with the test.
func newLateTarget(t *testing.T, fromNanos *atomic.Int64) *httptest.Server {
	t.Helper()
	reg := prometheus.NewRegistry()
	orig := prometheus.NewCounterVec(prometheus.CounterOpts{Name: model.MetricOriginals}, []string{"dependency", "priority"})
	att := prometheus.NewCounterVec(prometheus.CounterOpts{Name: model.MetricAttempts}, []string{"dependency", "outcome"})
	reg.MustRegister(orig, att)
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		n := 0
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				if now.UnixNano() < fromNanos.Load() {
					continue
				}
				// 1 of 5 ticks: 40/s at 200 ticks/s.
				if n++; n%5 == 0 {
					orig.WithLabelValues("late", "critical").Inc()
					att.WithLabelValues("late", "success").Inc()
				}
			}
		}
	}()
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if time.Now().UnixNano() < fromNanos.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	return srv
}

// compareWindow checks that a signal read from the direct scraper's store
// and from the Source's over the same span [from, to] (commonSpan) agree
// within 3 %, plus what the readers' different sampling moments allow:
// each reader's window begins and ends at its own samples, which lie up
// to one scrape interval apart between the readers at each end. Moving an
// end by one interval (and the skew: each reader stamps a sample when its
// scrape starts while the value is read when the target answers, up to a
// scrape's duration later) changes a window's value by at most
// |v_i - v| * (the interval + the skew) / W, where v_i is the value over
// one scrape interval at that
// end (the first and last three intervals of the direct store, the worst
// of them) and W the window: the bound, per end. It is ~0 in steady
// traffic and grows only where the signal moves at an edge (the slowdown
// beginning as the step window ends, the retry backlog draining as the
// incident window ends). Rates also get 0.1/s (a few events over the
// window).
func compareWindow(t *testing.T, what string, direct, prom func(from, to int64) model.Value, times []int64, from, to time.Time, skew time.Duration) {
	t.Helper()
	f, e := from.UnixMilli(), to.UnixMilli()
	va, vb := direct(f, e), prom(f, e)
	if !va.OK || !vb.OK {
		t.Errorf("%s: direct %v, prometheus %v", what, va, vb)
		return
	}
	// The direct scraper's samples in the window: the value over each of
	// the first and last three scrape intervals.
	var in []int64
	for _, ts := range times {
		if ts >= f && ts <= e {
			in = append(in, ts)
		}
	}
	w := float64(e - f)
	edge := 0.0
	for _, pairs := range [][]int{{0, 1, 2}, {len(in) - 2, len(in) - 3, len(in) - 4}} {
		worst, span := 0.0, 0.0
		for _, k := range pairs {
			if k < 0 || k+1 >= len(in) {
				continue
			}
			if v := direct(in[k], in[k+1]); v.OK {
				worst = math.Max(worst, math.Abs(v.V-va.V))
				span = math.Max(span, float64(in[k+1]-in[k]))
			}
		}
		edge += worst * (span + float64(skew.Milliseconds())) / w
	}
	allowed := 0.03*math.Max(math.Abs(va.V), math.Abs(vb.V)) + edge + 1e-9
	if strings.HasSuffix(what, "/s") {
		allowed += 0.1
	}
	t.Logf("%s: direct %.4g, prometheus %.4g (allowed difference %.3g, of it %.3g from the edges)", what, va.V, vb.V, allowed, edge)
	if math.Abs(va.V-vb.V) > allowed {
		t.Errorf("%s: direct %.4g, prometheus %.4g: differ by more than %.3g (3 %% and the sampling bound)", what, va.V, vb.V, allowed)
	}
}

// commonSpan is the part of [from, to] both stores hold target's data
// for: from the later of their first samples in it to the earlier of
// their last. Each reader's rate runs between its own first and last
// samples in a window; when one reader's newest scrape before the end
// failed or came late (Prometheus under -race times scrapes out), its
// window ends a scrape or two earlier, and at a step change the two would
// describe different seconds. Over the common span they describe the
// same seconds, up to one scrape interval at each end (compareRate's and
// compareWindow's bounds). The window still ends where the test put it, in the step.
func commonSpan(a, b *model.Store, target string, from, to time.Time) (time.Time, time.Time) {
	f, e := from.UnixMilli(), to.UnixMilli()
	lo, hi := f, e
	for _, st := range []*model.Store{a, b} {
		var first, last int64
		for _, ts := range st.Times(target) {
			if ts < f || ts > e {
				continue
			}
			if first == 0 {
				first = ts
			}
			last = ts
		}
		if first != 0 {
			lo, hi = max(lo, first), min(hi, last)
		}
	}
	if hi <= lo {
		return from, to
	}
	return time.UnixMilli(lo), time.UnixMilli(hi)
}

// scrapeHistory is what Prometheus at base recorded of its own scrapes
// since since, per target: up and scrape_duration_seconds, for a failure
// message (why every target was not up in time).
func scrapeHistory(ctx context.Context, base string, since time.Time) string {
	cl, err := NewClient(ClientConfig{URL: base, Timeout: 5 * time.Second})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	span := "[" + dialect.PromDuration(time.Since(since).Truncate(time.Second)+time.Second) + "]"
	for _, q := range []string{"up" + span, "scrape_duration_seconds" + span} {
		r, err := cl.Query(ctx, q, time.Now())
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", q, err)
			continue
		}
		for _, ser := range r.Series {
			fmt.Fprintf(&b, "%s %s:", q, ser.Labels.Get("job"))
			for _, p := range ser.Points {
				fmt.Fprintf(&b, " %+.1fs=%.3g", float64(p.T-since.UnixMilli())/1000, p.V)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// scrapedShare is, for each job (late ones aside) whose scrapes by
// Prometheus at base worked less than half the time over [from, to], the
// share that worked (avg_over_time of up); empty when none, or when the
// query fails (then the checks after it say what is missing).
func scrapedShare(ctx context.Context, base string, jobs []scrapeJob, from, to time.Time) map[string]float64 {
	cl, err := NewClient(ClientConfig{URL: base, Timeout: 5 * time.Second})
	if err != nil {
		return nil
	}
	late := map[string]bool{}
	for _, j := range jobs {
		late[j.name] = j.late
	}
	r, err := cl.Query(ctx, "avg by (job) (avg_over_time(up["+dialect.PromDuration(to.Sub(from).Truncate(time.Second))+"]))", to)
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for _, ser := range r.Series {
		if job := ser.Labels.Get("job"); !late[job] && len(ser.Points) == 1 && ser.Points[0].V < 0.5 {
			out[job] = math.Round(ser.Points[0].V*100) / 100
		}
	}
	return out
}
