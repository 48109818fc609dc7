package promapi

import (
	"context"
	"math"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/collect"
	"github.com/retrytop/retrytop/collect/dialect"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/sim"
)

// TestAgainstPrometheus runs the sim stack, a real Prometheus scraping it
// every second, a direct scraper and a Source on that Prometheus side by
// side, and checks that both stores give the same originals/s, attempts/s
// and amplification per hop (within 5 %) over the same window, the same
// service signals of the provider and the same findings.
func TestAgainstPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("Prometheus integration test skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	sc, _ := sim.ScenarioByName("baseline")
	const healthy = 16 * time.Second
	recovered := make(chan struct{})
	var once sync.Once
	stack, err := sim.Start(ctx, sc, sim.Options{Healthy: healthy, Slow: 8 * time.Second, Recovered: 16 * time.Second, Seed: 7,
		OnPhase: func(_ int, name string) {
			if name == sim.PhaseRecovered {
				once.Do(func() { close(recovered) })
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer stack.Close()

	// Direct scraping from the start.
	var targets []collect.Target
	var jobs []scrapeJob
	for _, st := range stack.Targets() {
		tgt, err := collect.ParseTarget(st.Name + "=" + st.URL)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tgt)
		u, _ := url.Parse(st.URL)
		jobs = append(jobs, scrapeJob{name: st.Name, host: u.Host, path: u.Path})
	}
	// As analyze scrapes: through the dialect translator.
	tr := dialect.Auto()
	direct := collect.NewScraper(targets, model.NewStore(model.StoreConfig{}), collect.Options{Translate: tr.Translate, Filter: tr.Filter})
	base := startPrometheus(t, ctx, jobs, 1)

	const rng = 5 * time.Second
	src, err := New(Options{Client: ClientConfig{URL: base}, Step: time.Second, Range: rng, Backfill: -1})
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
	readTogether(runCtx, &wg, direct, src)

	// The window starts in the healthy phase once Prometheus has a full
	// range of data, and ends in the recovered phase once the retry backlog
	// has drained and a range has passed (8 s + range; with 3 s of drain
	// left the provider's attempts read 5.7% low through Prometheus): both
	// ends see the same steady traffic, so the Range/2 lag of the
	// integrated rates cancels out (docs/prometheus.md) and the slow phase
	// is inside the window for both.
	t0 := time.Now().Add(rng + 2*time.Second)
	if slowAt := stack.Started().Add(healthy); t0.After(slowAt.Add(-time.Second)) {
		t.Fatalf("prometheus took %v to scrape every target: no steady window left before the slow phase", time.Since(stack.Started()))
	}
	select {
	case <-recovered:
	case <-ctx.Done():
		t.Fatal("the sim never recovered")
	}
	time.Sleep(rng + 8*time.Second)
	t1 := time.Now()
	stopRun()
	wg.Wait()

	for _, st := range src.Statuses() {
		if !st.Up {
			t.Errorf("status %+v", st)
		}
	}
	a, b := direct.Store(), src.Store()
	rows := 0
	for _, tgt := range a.Targets() {
		for _, dep := range analysis.Dependencies(a, tgt) {
			sa := analysis.SignalsFor(a, tgt, dep, t0.UnixMilli(), t1.UnixMilli())
			sb := analysis.SignalsFor(b, tgt, dep, t0.UnixMilli(), t1.UnixMilli())
			rows++
			for _, c := range []struct {
				what   string
				da, db model.Value
			}{
				{"originals/s", sa.OriginalsPerS, sb.OriginalsPerS},
				{"attempts/s", sa.AttemptsPerS, sb.AttemptsPerS},
				{"amplification", sa.Amplification, sb.Amplification},
			} {
				va, oka := c.da.Get()
				vb, okb := c.db.Get()
				t.Logf("%s -> %s %s: direct %.3f, prometheus %.3f", tgt, dep, c.what, va, vb)
				if !oka || !okb || math.Abs(va-vb) > 0.05*math.Abs(va) {
					t.Errorf("%s -> %s %s: direct %v, prometheus %v: not within 5%%", tgt, dep, c.what, c.da, c.db)
				}
			}
		}
	}
	if rows == 0 {
		t.Fatal("no rows scraped directly")
	}

	// The provider's services view: the same signals are present; its
	// rates and the service time and queue wait from its histograms agree
	// within the same 5 % (and 0.1/s: a few events over the window), its
	// configuration (slots, queue limit) exactly. In flight, queue depth
	// and the oldest age are read at one instant, which the two scrapers
	// sample at different moments: presence only.
	//
	// Cancelled/s and the queue wait mean get 10 %: their counters (the
	// cancelled series, created at the first cancellation, and the wait
	// histogram's _sum) sit at about 0 until the slow phase, and
	// Prometheus' increase() does not extrapolate a range towards a
	// counter value of zero, so the first ranges of the slow phase lose
	// part of their increase (docs/prometheus.md, "Extrapolation").
	// Measured 2.4-6.7 % low on the Prometheus side over 6 runs, where
	// received/s and 2xx/s, counting from the start, agree within 0.1 %.
	if got := analysis.Services(b); !slices.Contains(got, "provider") {
		t.Errorf("services through Prometheus: %v", got)
	}
	sva := serviceValues(analysis.ServiceSignalsFor(a, "provider", t0.UnixMilli(), t1.UnixMilli()))
	svb := serviceValues(analysis.ServiceSignalsFor(b, "provider", t0.UnixMilli(), t1.UnixMilli()))
	instant := map[string]bool{"in flight": true, "queue depth": true, "queue oldest age": true}
	exact := map[string]bool{"slots": true, "queue limit": true}
	loose := map[string]bool{"cancelled/s": true, "queue wait mean": true}
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
		default:
			compared++
			tol, floor := 0.05, 0.0
			if loose[k] {
				tol = 0.10
			}
			if strings.HasSuffix(k, "/s") {
				floor = 0.1
			}
			if math.Abs(va.V-vb.V) > tol*math.Max(math.Abs(va.V), math.Abs(vb.V))+floor+1e-9 {
				t.Errorf("provider service %s: direct %.4g, prometheus %.4g: not within %.0f%%", k, va.V, vb.V, 100*tol)
			}
		}
	}
	if !sva["received/s"].OK || !sva["slots"].OK || compared < 10 {
		t.Errorf("provider service signals: %d compared, received/s %v, slots %v", compared, sva["received/s"], sva["slots"])
	}

	// The same findings fire: analyze's report (the rules over the window
	// and over the timeline of everything retained) on both stores, over
	// the same window.
	opts := analysis.ReportOptions{Window: t1.Sub(t0).Truncate(time.Second), EndMs: t1.UnixMilli()}
	fa := findingKeys(analysis.BuildReport(a, direct.Statuses(), opts).Findings)
	fb := findingKeys(analysis.BuildReport(b, src.Statuses(), opts).Findings)
	t.Logf("findings scraping directly: %v", fa)
	t.Logf("findings through Prometheus: %v", fb)
	if strings.Join(fa, "\n") != strings.Join(fb, "\n") {
		t.Errorf("findings differ:\n direct     %v\n prometheus %v", fa, fb)
	}
	if len(fa) == 0 {
		t.Error("no finding fired: the comparison says nothing")
	}
}

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
