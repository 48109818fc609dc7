package promapi

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/internal/testpeer"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
)

// vmTolerance is how far the Prometheus path through VictoriaMetrics may
// differ from direct scraping, relative. The generator's counters change
// only on whole seconds and each reader reads them once a second, at its
// own phase (VictoriaMetrics at .3 s, stamped at its schedule; the direct
// scraper at .6 s, stamped when its scrape starts), so both divide the
// same counter values by spans of the same whole seconds. What is left is
// the lateness of the direct scraper's ticks at the two ends of a span:
// up to 0.3 s, on busy machine, over the shortest span compared (the
// late target's 10 s): 3 %.
const vmTolerance = 0.03

// Phases within each second, in ms: when VictoriaMetrics scrapes (its
// scrape_offset), when the direct scraper does, and where windows and
// evaluations end, after both.
const (
	vmPhase     = 300
	directPhase = 600
	endPhase    = 900
)

// vmRates are the generator's rates per second: originals and successful
// attempts stay at 50/s; failed attempts are 5/s, 100/s during the storm.
const (
	vmOriginals   = 50
	vmFailed      = 5
	vmStormFailed = 100
	vmLateRate    = 40
)

// vmGenerator serves two targets on one loopback server whose counters
// are a function of the whole second the scrape falls in: /app (a
// storm between stormFrom and stormTo) and /late, which refuses (503)
// before lateFrom and then counts from 0, a process just started.
type vmGenerator struct {
	born                        int64 // the first second counted
	stormFrom, stormTo, lateSec atomic.Int64
}

// failed is /app's failed attempts counted up to second k.
func (g *vmGenerator) failed(k int64) int64 {
	n := (k - g.born) * vmFailed
	lo, hi := max(g.born, g.stormFrom.Load()), min(k, g.stormTo.Load())
	if hi > lo {
		n += (hi - lo) * (vmStormFailed - vmFailed)
	}
	return n
}

func (g *vmGenerator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k := time.Now().Unix()
	var orig, ok, failed int64
	switch r.URL.Path {
	case "/app":
		orig, ok, failed = (k-g.born)*vmOriginals, (k-g.born)*vmOriginals, g.failed(k)
	case "/late":
		if k < g.lateSec.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		orig, ok = (k-g.lateSec.Load())*vmLateRate, (k-g.lateSec.Load())*vmLateRate
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# TYPE %s counter\n%s{dependency=\"db\",priority=\"critical\"} %d\n", model.MetricOriginals, model.MetricOriginals, orig)
	fmt.Fprintf(w, "# TYPE %s counter\n%s{dependency=\"db\",outcome=\"success\"} %d\n", model.MetricAttempts, model.MetricAttempts, ok)
	if r.URL.Path == "/app" {
		fmt.Fprintf(w, "%s{dependency=\"db\",outcome=\"temporary_error\"} %d\n", model.MetricAttempts, failed)
	}
}

// TestAgainstVictoriaMetrics runs a real VictoriaMetrics single node
// scraping the generator every second (-promscrape.config), a direct
// scraper of the same targets, and retrytop's Prometheus path on
// VictoriaMetrics as analyze --prometheus runs it (one refresh reading
// the window, ending seconds before now) and as watch does (instant
// queries a refresh at a time). Originals/s, attempts/s and amplification
// agree with direct scraping, and direct scraping with the generator,
// within vmTolerance over: the incident (failed attempts stepping up 20x,
// then down), a window ending 3 s into the storm, and a target 10 s old.
// The server is named victoriametrics in its status.
func TestAgainstVictoriaMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("VictoriaMetrics integration test skipped in -short mode")
	}
	// A bound on a hang, not on a number.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	gen := &vmGenerator{born: time.Now().Unix()}
	for _, a := range []*atomic.Int64{&gen.stormFrom, &gen.stormTo, &gen.lateSec} {
		a.Store(math.MaxInt64)
	}
	srv := httptest.NewServer(gen)
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: app
    scrape_offset: %dms
    metrics_path: /app
    static_configs: [{targets: [%q]}]
  - job_name: late
    scrape_offset: %dms
    metrics_path: /late
    static_configs: [{targets: [%q]}]
`, vmPhase, host, vmPhase, host)
	base, _ := testpeer.StartVictoriaMetrics(t, ctx, cfg)
	cl, err := NewClient(ClientConfig{URL: base, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b, err := waitBackend(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != BackendVictoriaMetrics {
		t.Fatalf("backend %+v, want %s", b, BackendVictoriaMetrics)
	}
	// Both jobs scraped once: VictoriaMetrics runs.
	if err := vmWaitScraped(ctx, cl, time.Now()); err != nil {
		t.Fatal(err)
	}

	// Direct scraping at directPhase of every second, as analyze scrapes:
	// through the dialect translator.
	tr := dialect.Auto()
	var targets []scrape.Target
	for _, n := range []string{"app", "late"} {
		tgt, err := scrape.ParseTarget(n + "=" + srv.URL + "/" + n)
		if err != nil {
			t.Fatal(err)
		}
		tgt.Timeout = 5 * time.Second
		targets = append(targets, tgt)
	}
	direct := scrape.NewScraper(targets, model.NewStore(model.StoreConfig{}), scrape.Options{Translate: tr.Translate, Filter: tr.Filter})
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	wg.Go(func() {
		first := time.NewTimer(time.Until(nextPhase(time.Now(), directPhase)))
		defer first.Stop()
		select {
		case <-first.C:
		case <-runCtx.Done():
			return
		}
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			direct.ScrapeOnce(runCtx)
			select {
			case <-tick.C:
			case <-runCtx.Done():
				return
			}
		}
	})

	// The schedule, in whole seconds from r: windows start at r+2, the
	// storm runs from r+15 to r+25, the step window ends 3 s into it, the
	// late target starts 10 s before that end, the incident ends at r+31.
	r := time.Now().Unix() + 1
	gen.stormFrom.Store(r + 15)
	gen.stormTo.Store(r + 25)
	at := func(sec int64) time.Time { return time.UnixMilli(sec*1000 + endPhase) }
	t0, stepEnd, incidentEnd := at(r+2), at(r+18), at(r+31)
	gen.lateSec.Store(r + 18 - 10)

	// watch on the step window: instant queries a refresh at a time,
	// evaluated where watch would evaluate them, seconds before now.
	watchFrom := stepEnd.Add(-10 * time.Second)
	if err := vmWaitRead(ctx, cl, direct, stepEnd); err != nil {
		t.Fatal(err)
	}
	watchStore := vmWatch(t, ctx, base, watchFrom, stepEnd)
	stepStore, stepStatus := vmAnalyze(t, ctx, base, t0, stepEnd)
	if err := vmWaitRead(ctx, cl, direct, incidentEnd); err != nil {
		t.Fatal(err)
	}
	incidentStore, _ := vmAnalyze(t, ctx, base, t0, incidentEnd)
	stop()
	wg.Wait()

	if !strings.HasPrefix(stepStatus.Backend, BackendVictoriaMetrics) {
		t.Errorf("server status backend %q, want %s", stepStatus.Backend, BackendVictoriaMetrics)
	}
	truth := func(target string, from, to time.Time) (orig, att float64) {
		if target == "late" {
			return vmLateRate, vmLateRate
		}
		// The samples in the window: of seconds k1..k2 (the readers
		// read before endPhase).
		k1, k2 := from.Unix()+1, to.Unix()
		return vmOriginals, vmOriginals + float64(gen.failed(k2)-gen.failed(k1))/float64(k2-k1)
	}
	// The step window reads a step: its attempts/s lie well above the
	// healthy rate.
	if _, att := truth("app", t0, stepEnd); att < (vmOriginals+vmFailed)*(1+5*vmTolerance) {
		t.Fatalf("step window: attempts %.4g/s, not a step above the healthy %d/s", att, vmOriginals+vmFailed)
	}
	for _, c := range []struct {
		name     string
		store    *model.Store
		target   string
		from, to time.Time
	}{
		{"incident", incidentStore, "app", t0, incidentEnd},
		{"step", stepStore, "app", t0, stepEnd},
		{"10 s old target", stepStore, "late", t0, stepEnd},
		{"watch, step", watchStore, "app", watchFrom, stepEnd},
	} {
		d := analysis.SignalsFor(direct.Store(), c.target, "db", c.from.UnixMilli(), c.to.UnixMilli())
		v := analysis.SignalsFor(c.store, c.target, "db", c.from.UnixMilli(), c.to.UnixMilli())
		orig, att := truth(c.target, c.from, c.to)
		for _, m := range []struct {
			what  string
			d, v  model.Value
			truth float64
		}{
			{"originals/s", d.OriginalsPerS, v.OriginalsPerS, orig},
			{"attempts/s", d.AttemptsPerS, v.AttemptsPerS, att},
			{"amplification", d.Amplification, v.Amplification, att / orig},
		} {
			what := c.name + " window, " + c.target + " " + m.what
			dv, dok := m.d.Get()
			vv, vok := m.v.Get()
			t.Logf("%s: generator %.4g, direct %.4g (%v), victoriametrics %.4g (%v)", what, m.truth, dv, dok, vv, vok)
			if !dok || !vok {
				t.Errorf("%s: direct %v, victoriametrics %v: want both", what, m.d, m.v)
				continue
			}
			if math.Abs(vv-dv) > vmTolerance*math.Abs(dv) {
				t.Errorf("%s: victoriametrics %.4g, direct %.4g: differ by more than %.0f %%", what, vv, dv, 100*vmTolerance)
			}
			if math.Abs(dv-m.truth) > vmTolerance*m.truth {
				t.Errorf("%s: direct %.4g, generator %.4g: differ by more than %.0f %%", what, dv, m.truth, 100*vmTolerance)
			}
		}
	}
}

// nextPhase is the first time after now at ms into a second.
func nextPhase(now time.Time, ms int64) time.Time {
	t := time.UnixMilli(now.Unix()*1000 + ms)
	if !t.After(now) {
		t = t.Add(time.Second)
	}
	return t
}

// pollEvery is how often the test asks whether a peer got as far as it
// waits for.
const pollEvery = 50 * time.Millisecond

// poll calls done every pollEvery until it reports true, or ctx ends
// (its error then says what was waited for, with done's last error).
func poll(ctx context.Context, what string, done func() (bool, error)) error {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var last error
	for {
		ok, err := done()
		if ok {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %v (last error: %v)", what, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// waitBackend detects the backend once the server answers.
func waitBackend(ctx context.Context, cl *Client) (Backend, error) {
	var b Backend
	err := poll(ctx, "VictoriaMetrics to answer", func() (bool, error) {
		var err error
		b, err = cl.DetectBackend(ctx)
		return err == nil, err
	})
	return b, err
}

// vmWaitScraped waits until VictoriaMetrics holds a scrape of each job
// (up, 0 or 1) stamped at or after since. It asks with nocache=1 itself,
// whatever the client under test does.
func vmWaitScraped(ctx context.Context, cl *Client, since time.Time) error {
	return poll(ctx, fmt.Sprintf("VictoriaMetrics to scrape both jobs after %s", since.Format("15:04:05.000")), func() (bool, error) {
		body, status, err := cl.get(ctx, "/api/v1/query", url.Values{"query": {"timestamp(up)"}, "nocache": {"1"}})
		if err != nil {
			return false, err
		}
		res, err := Decode(status, body)
		if err != nil || len(res.Series) < 2 {
			return false, err
		}
		for _, s := range res.Series {
			if len(s.Points) != 1 || s.Points[0].V*1000 < float64(since.UnixMilli()) {
				return false, nil
			}
		}
		return true, nil
	})
}

// vmWaitRead waits until both readers hold the scrape of the second end
// falls in: VictoriaMetrics' (queryable) and the direct scraper's.
func vmWaitRead(ctx context.Context, cl *Client, direct *scrape.Scraper, end time.Time) error {
	sec := end.Unix() * 1000
	if err := vmWaitScraped(ctx, cl, time.UnixMilli(sec+vmPhase)); err != nil {
		return err
	}
	return poll(ctx, "the direct scraper to scrape past "+end.Format("15:04:05.000"), func() (bool, error) {
		for _, tgt := range []string{"app", "late"} {
			ts := direct.Store().Times(tgt)
			if len(ts) == 0 || ts[len(ts)-1] < sec+vmPhase {
				return false, nil
			}
		}
		return true, nil
	})
}

// vmAnalyze reads [from, to] as analyze --prometheus --end does: one
// refresh of a Source whose clock stands DefaultDelay past to, loading
// the window with query_range into a store of its size. It returns the
// store and the server's status.
func vmAnalyze(t *testing.T, ctx context.Context, base string, from, to time.Time) (*model.Store, model.TargetStatus) {
	t.Helper()
	window := to.Sub(from)
	store := model.NewStore(model.StoreConfig{History: int(window/time.Second) + 2})
	clock := to.Add(DefaultDelay)
	src, err := New(Options{Client: ClientConfig{URL: base}, Step: time.Second, Backfill: window, Store: store,
		Clock: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	st := src.Refresh(ctx)
	if !st[0].Up || st[0].LastError != "" {
		t.Fatalf("analyze %s..%s: server %+v", from.Format("15:04:05.000"), to.Format("15:04:05.000"), st[0])
	}
	return store, st[0]
}

// vmWatch reads [from, to] as watch --prometheus does, a refresh a step:
// a baseline at from, then one instant query per query and step, its
// clock DefaultDelay past each evaluation.
func vmWatch(t *testing.T, ctx context.Context, base string, from, to time.Time) *model.Store {
	t.Helper()
	var clock atomic.Int64
	src, err := New(Options{Client: ClientConfig{URL: base}, Step: time.Second, Backfill: -1,
		Clock: func() time.Time { return time.UnixMilli(clock.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	for e := from; !e.After(to); e = e.Add(time.Second) {
		clock.Store(e.Add(DefaultDelay).UnixMilli())
		if st := src.Refresh(ctx); !st[0].Up || st[0].LastError != "" {
			t.Fatalf("watch at %s: server %+v", e.Format("15:04:05.000"), st[0])
		}
	}
	return src.Store()
}
