package dump_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
)

// agreeT0 is off the second by 250 ms, as a real scrape phase is, so that
// a millisecond of jitter never moves a scrape across a timeline bin edge.
var agreeT0 = time.UnixMilli(1_741_057_965_250)

// vclock is the virtual time the scraper stamps scrapes with and the
// emitter serves its counts for: set by the test, never read from the
// machine, so the test does not depend on how busy the machine is.
type vclock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *vclock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *vclock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// emitter serves body(now): OpenMetrics when it ends with "# EOF", else
// the Prometheus text format.
func emitter(t *testing.T, clock *vclock, body func(now time.Time) []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		b := body(clock.Now())
		ct := "text/plain; version=0.0.4"
		if bytes.HasSuffix(b, []byte("# EOF\n")) {
			ct = "application/openmetrics-text; version=1.0.0; charset=utf-8"
		}
		w.Header().Set("Content-Type", ct)
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// scrapeLive scrapes one target at each of times into a store through the
// translator, as `watch` does, recording every scrape into a dump at
// dumpPath as `watch --record` does.
func scrapeLive(t *testing.T, tr *dialect.Translator, target string, times []time.Time, body func(now time.Time) []byte, dumpPath string) *model.Store {
	st, _ := scrapeLiveDialect(t, tr, target, times, body, dumpPath)
	return st
}

// scrapeLiveDialect is scrapeLive that also returns the dialect(s) the
// target was read with.
func scrapeLiveDialect(t *testing.T, tr *dialect.Translator, target string, times []time.Time, body func(now time.Time) []byte, dumpPath string) (*model.Store, string) {
	t.Helper()
	clock := &vclock{t: times[0]}
	srv := emitter(t, clock, body)
	w, err := dump.Create(dumpPath, false, dump.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := model.NewStore(model.StoreConfig{})
	var werr error
	sc := scrape.NewScraper([]scrape.Target{{Name: target, URL: srv.URL + "/metrics", Timeout: 10 * time.Second}}, st, scrape.Options{
		Clock: clock.Now, Translate: tr.Translate, Filter: tr.Filter,
		OnScrape: func(target string, at time.Time, body []byte, ct string, err error) {
			if err == nil && werr == nil {
				werr = w.Append(target, at, ct, body)
			}
		},
	})
	var name string
	for _, at := range times {
		clock.Set(at)
		s := sc.ScrapeOnce(context.Background())[0]
		if !s.Up {
			t.Fatalf("scrape at %v: %s", at, s.LastError)
		}
		name = s.Dialect
	}
	if err := w.Close(); err != nil || werr != nil {
		t.Fatal(err, werr)
	}
	return st, name
}

// loadFile reads a recording or an imported file into a fresh store with a
// fresh translator, as `analyze FILE` does.
func loadFile(t *testing.T, cfg dialect.Config, path string) *model.Store {
	t.Helper()
	tr, err := dialect.NewTranslator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := dump.OpenRecording(path, dump.OpenOptions{Filter: tr.Filter})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	st := model.NewStore(model.StoreConfig{})
	for _, s := range dump.LoadStore(rec, st, func(s *model.Snapshot) (*model.Snapshot, error) {
		out, _, err := tr.Translate("", s)
		return out, err
	}) {
		if !s.Up {
			t.Fatalf("%s: %s: %s", path, s.Name, s.LastError)
		}
	}
	return st
}

// exportOM exports the dump at src as OpenMetrics, as `retrytop export`.
func exportOM(t *testing.T, src, dst string) []byte {
	t.Helper()
	rec, err := dump.OpenRecording(src, dump.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	var b bytes.Buffer
	if _, err := dump.ExportOpenMetrics(&b, rec, dump.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// promtoolStyle rewrites an OpenMetrics export the way real exporters'
// files come: one block per family but the families in another order
// (reversed), and every family stamped jitter(i) ms off (i: the block's
// index), as an exporter that stamps each family when it collects it.
func promtoolStyle(t *testing.T, om []byte, jitter func(i int) int64) []byte {
	t.Helper()
	var blocks [][]string
	for _, l := range strings.Split(strings.TrimSuffix(string(om), "\n"), "\n") {
		switch {
		case l == "# EOF":
		case strings.HasPrefix(l, "# TYPE "):
			blocks = append(blocks, []string{l})
		default:
			blocks[len(blocks)-1] = append(blocks[len(blocks)-1], l)
		}
	}
	var b strings.Builder
	for i := len(blocks) - 1; i >= 0; i-- {
		for _, l := range blocks[i] {
			if strings.HasPrefix(l, "#") {
				b.WriteString(l + "\n")
				continue
			}
			j := strings.LastIndexByte(l, ' ')
			sec, err := strconv.ParseFloat(l[j+1:], 64)
			if err != nil {
				t.Fatalf("export line %q: %v", l, err)
			}
			ms := int64(math.Round(sec*1000)) + jitter(i)
			fmt.Fprintf(&b, "%s %d.%03d\n", l[:j], ms/1000, ms%1000)
		}
	}
	b.WriteString("# EOF\n")
	return []byte(b.String())
}

// queryRangeJSON is what Prometheus' /api/v1/query_range returns for
// {__name__=~".+"} over the recording at src, had it scraped the same
// bodies at the same times: every flat series with its instance.
func queryRangeJSON(t *testing.T, src string) []byte {
	t.Helper()
	rec, err := dump.OpenRecording(src, dump.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	type series struct {
		Metric map[string]string `json:"metric"`
		Values [][2]any          `json:"values"`
	}
	byKey := map[string]*series{}
	var keys []string
	for i := 0; i < rec.Len(); i++ {
		snap, err := rec.Snapshot(i)
		if err != nil {
			t.Fatal(err)
		}
		ts := json.Number(strconv.FormatFloat(float64(snap.Time.UnixMilli())/1000, 'f', 3, 64))
		snap.Flatten(func(fs model.FlatSeries) {
			k := fs.Name + fs.Labels.String()
			s := byKey[k]
			if s == nil {
				s = &series{Metric: map[string]string{"__name__": fs.Name, "instance": snap.Target}}
				for _, l := range fs.Labels {
					s.Metric[l.Name] = l.Value
				}
				byKey[k] = s
				keys = append(keys, k)
			}
			s.Values = append(s.Values, [2]any{ts, model.FormatFloat(fs.Value)})
		})
	}
	sort.Strings(keys)
	result := make([]*series, 0, len(keys))
	for _, k := range keys {
		result = append(result, byKey[k])
	}
	b, err := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": result}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// analyse is what analyze prints of a store, without the parts that name
// the source (target health, the span's times): every row's signals and
// timeline, the services and the chains, as JSON values.
func analyse(t *testing.T, st *model.Store, window time.Duration) map[string]any {
	t.Helper()
	rep := analysis.BuildReport(st, nil, analysis.ReportOptions{Window: window, Bin: 5 * time.Second})
	b, err := json.Marshal(map[string]any{"dependencies": rep.Dependencies, "services": rep.Services, "chains": rep.Chains, "findings": rep.Findings})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// tolerance is how far two analyses of the same data may differ: rel for
// numbers (relative), timeMs for times.
type tolerance struct {
	rel    float64
	timeMs int64
}

// exact allows only sums taken in another order.
var exact = tolerance{rel: 1e-9}

// diffJSON lists where got differs from want beyond tol; null against a
// number is always a difference.
func diffJSON(path string, want, got any, tol tolerance, out *[]string) {
	if len(*out) > 20 {
		return
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: %v, want %v", path, got, want))
			return
		}
		keys := map[string]bool{}
		for k := range w {
			keys[k] = true
		}
		for k := range g {
			keys[k] = true
		}
		for k := range keys {
			diffJSON(path+"."+k, w[k], g[k], tol, out)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			*out = append(*out, fmt.Sprintf("%s: %d elements, want %d", path, len(g), len(w)))
			return
		}
		for i := range w {
			diffJSON(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], tol, out)
		}
	case float64:
		g, ok := got.(float64)
		if !ok || math.Abs(g-w) > tol.rel*math.Max(1, math.Abs(w)) {
			*out = append(*out, fmt.Sprintf("%s: %v, want %v", path, got, want))
		}
	case string:
		wt, err1 := time.Parse(time.RFC3339Nano, w)
		gs, _ := got.(string)
		gt, err2 := time.Parse(time.RFC3339Nano, gs)
		if err1 == nil && err2 == nil {
			if d := gt.Sub(wt); d > time.Duration(tol.timeMs)*time.Millisecond || -d > time.Duration(tol.timeMs)*time.Millisecond {
				*out = append(*out, fmt.Sprintf("%s: %v, want %v", path, got, want))
			}
			return
		}
		if w != gs {
			*out = append(*out, fmt.Sprintf("%s: %v, want %v", path, got, want))
		}
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			*out = append(*out, fmt.Sprintf("%s: %v, want %v", path, got, want))
		}
	}
}

// grower serves a fixture with its cumulative values (counters, histogram
// buckets, counts and sums, summary counts and sums) growing linearly with
// the scrape index k: v0 * 1000 * (1 + k/10), counts rounded. Every third
// counter series is created late, as emitters create a series on its first
// event: absent before scrape lazyFrom, then v0 * 1000 * (k-lazyFrom+1)/10.
type grower struct {
	lines []growLine
}

type growLine struct {
	text   string // the whole line, or what precedes the value
	value  float64
	suffix string // what follows the value (a timestamp)
	grows  bool
	sum    bool
	lazy   bool
}

const lazyFrom = 12

func newGrower(t *testing.T, path string) *grower { return newGrowerLazy(t, path, 2) }

// newGrowerLazy is newGrower with the counter series i late when i%3 ==
// lazy.
func newGrowerLazy(t *testing.T, path string, lazy int) *grower {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	raw := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for _, l := range raw {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
		}
	}
	g := &grower{}
	counters := 0
	for i, l := range raw {
		if l == "" || l[0] == '#' {
			g.lines = append(g.lines, growLine{text: l})
			continue
		}
		end := strings.IndexAny(l, "{ ")
		if end < 0 {
			t.Fatalf("%s:%d: no value", path, i+1)
		}
		name := l[:end]
		if l[end] == '{' {
			end = closingBrace(l, end)
			if end < 0 {
				t.Fatalf("%s:%d: unterminated labels", path, i+1)
			}
			end++
		}
		rest := strings.Fields(l[end:])
		v, err := strconv.ParseFloat(rest[0], 64)
		if err != nil {
			t.Fatalf("%s:%d: value %q", path, i+1, rest[0])
		}
		gl := growLine{text: l[:end] + " ", value: v, suffix: strings.Join(rest[1:], " "), sum: strings.HasSuffix(name, "_sum")}
		kind := seriesKind(name, types)
		gl.grows = kind != ""
		if kind == "counter" {
			counters++
			gl.lazy = counters%3 == lazy
		}
		g.lines = append(g.lines, gl)
	}
	return g
}

// seriesKind is "counter" for a counter's sample, "cumulative" for another
// count (histogram and summary parts), "" for the rest, by the family's
// TYPE (Linkerd names the family without the samples' _total).
func seriesKind(name string, types map[string]string) string {
	if types[name] == "counter" || name == "resilience4j_retry_calls" {
		return "counter"
	}
	if base, ok := strings.CutSuffix(name, "_total"); ok && types[base] == "counter" {
		return "counter"
	}
	for _, suf := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suf); ok {
			if typ := types[base]; typ == "histogram" || typ == "summary" && suf != "_bucket" {
				return "cumulative"
			}
		}
	}
	return ""
}

func closingBrace(l string, open int) int {
	inQuote := false
	for i := open + 1; i < len(l); i++ {
		switch c := l[i]; {
		case inQuote && c == '\\':
			i++
		case c == '"':
			inQuote = !inQuote
		case !inQuote && c == '}':
			return i
		}
	}
	return -1
}

func (g *grower) body(k int) []byte { return g.render(k, false) }

// eagerBody is body with the late series exposed at 0 before their first
// event, as emitters that create every series up front do.
func (g *grower) eagerBody(k int) []byte { return g.render(k, true) }

func (g *grower) render(k int, eager bool) []byte {
	var b bytes.Buffer
	for _, l := range g.lines {
		if l.text == "" || l.text[0] == '#' {
			b.WriteString(l.text + "\n")
			continue
		}
		v := l.value
		switch {
		case l.lazy && k < lazyFrom && eager:
			v = 0
		case l.lazy && k < lazyFrom:
			continue
		case l.lazy:
			v = l.value * 1000 * float64(k-lazyFrom+1) / 10
		case l.grows:
			v = l.value * 1000 * (1 + float64(k)/10)
		}
		if l.grows && !l.sum {
			v = math.Round(v)
		}
		b.WriteString(l.text + strconv.FormatFloat(v, 'g', -1, 64))
		if l.suffix != "" {
			b.WriteString(" " + l.suffix)
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// acmeMapping is the custom mapping of docs/dialects.md, for
// custom_acme.prom.
var acmeMapping = dialect.Mapping{
	Name:            "acme-client",
	DependencyLabel: "upstream",
	Signals: []dialect.Signal{
		{Family: model.MetricOriginals, Metric: "acme_calls_total"},
		{Family: model.MetricAttempts, Metric: "acme_tries_total", Match: []string{`status=~"5.."`}, Labels: map[string]string{"outcome": "temporary_error"}},
		{Family: model.MetricAttempts, Metric: "acme_tries_total", Match: []string{`status!~"5.."`}, Labels: map[string]string{"outcome": "success"}},
		{Family: model.MetricRequestDuration, Metric: "acme_call_latency_ms", Scale: 0.001},
	},
}

// TestEveryImportPathAgreesWithLiveScraping: for every dialect fixture
// (served growing, with late-created series), analyse(live scrape) ==
// analyse(the dump recorded while scraping) == analyse(that dump exported
// to OpenMetrics and imported) == analyse(the export rewritten as real
// exporters write it: families reordered, each ±1 ms off) ==
// analyse(Prometheus query_range JSON of the same scrapes): every signal of
// every row, timeline bin, service, chain and finding.
func TestEveryImportPathAgreesWithLiveScraping(t *testing.T) {
	dir := filepath.Join("..", "dialect", "testdata")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	type fixture struct {
		path string
		cfg  dialect.Config
	}
	var fixtures []fixture
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".prom") || strings.Contains(e.Name(), "malformed") || strings.HasSuffix(e.Name(), ".2.prom") {
			continue // malformed: refused by the parser; .2: the same service as .1
		}
		f := fixture{path: filepath.Join(dir, e.Name())}
		if strings.HasPrefix(e.Name(), "custom_") {
			f.cfg.Custom = []dialect.Mapping{acmeMapping}
		}
		fixtures = append(fixtures, f)
	}
	fixtures = append(fixtures, fixture{path: filepath.Join("..", "expo", "testdata", "histogram.prom")}) // native
	times := make([]time.Time, 30)
	for k := range times {
		times[k] = agreeT0.Add(time.Duration(k) * time.Second)
	}
	covered := map[string]bool{}
	t.Cleanup(func() {
		// Every dialect is exercised by some fixture.
		for _, d := range append(dialect.Names(), acmeMapping.Name) {
			if !covered[d] && !t.Failed() {
				t.Errorf("no fixture is read with dialect %s", d)
			}
		}
	})
	for _, fx := range fixtures {
		t.Run(filepath.Base(fx.path), func(t *testing.T) {
			g := newGrower(t, fx.path)
			tr, err := dialect.NewTranslator(fx.cfg)
			if err != nil {
				t.Fatal(err)
			}
			tmp := t.TempDir()
			rtd := filepath.Join(tmp, "app.rtd")
			live, names := scrapeLiveDialect(t, tr, "app", times, func(now time.Time) []byte {
				return g.body(int(now.Sub(agreeT0) / time.Second))
			}, rtd)
			for _, n := range strings.Split(names, "+") {
				covered[n] = true
			}
			const window = 20 * time.Second
			want := analyse(t, live, window)
			if deps, svcs := want["dependencies"].([]any), want["services"].([]any); len(deps)+len(svcs) == 0 {
				t.Fatal("live scraping found nothing: the comparison would be empty")
			}

			// New series start at zero: over the window, a series created
			// on its first event reads as one exposed at 0 from the start
			// (before it exists it is absent, not 0: the timelines differ
			// there), whichever counters are the late ones.
			for lazy := range 3 {
				gl := newGrowerLazy(t, fx.path, lazy)
				if a, b := detected(t, fx.cfg, gl.body(0)), detected(t, fx.cfg, gl.eagerBody(0)); a != b {
					// A dialect detected only once its late family shows
					// reads families the target had before: its first
					// values are baselines (docs/dialects.md), by design.
					t.Logf("counters %d mod 3 late: detected %q, not %q, at first; not compared", lazy, a, b)
					continue
				}
				var sts [2]*model.Store
				for i, body := range []func(int) []byte{gl.body, gl.eagerBody} {
					sts[i] = scrapeLive(t, tr2(t, fx.cfg), "app", times, func(now time.Time) []byte {
						return body(int(now.Sub(agreeT0) / time.Second))
					}, filepath.Join(tmp, fmt.Sprintf("lazy%d-%d.rtd", lazy, i)))
				}
				var over, under []string
				compareRates("", windowOnly(analyse(t, sts[1], window)), windowOnly(analyse(t, sts[0], window)), &over, &under)
				if len(over) > 0 {
					t.Errorf("counters %d mod 3 created late read higher than exposed at 0 from the start:\n  %s", lazy, strings.Join(over, "\n  "))
				}
				if len(under) > 0 {
					t.Logf("counters %d mod 3 created late: a difference of counters first derived late is a baseline:\n  %s", lazy, strings.Join(under, "\n  "))
				}
			}

			om := exportOM(t, rtd, filepath.Join(tmp, "export.om"))
			prom := filepath.Join(tmp, "query_range.json")
			if err := os.WriteFile(prom, queryRangeJSON(t, rtd), 0o644); err != nil {
				t.Fatal(err)
			}
			// The jittered file has no one time per scrape: the importer
			// stamps a scrape with its earliest family's time, up to 1 ms
			// off the live one (jitter -1, 0, +1 ms by family; which
			// families a scrape holds decides, and a late family only
			// lowers it). The window ending at the newest scrape holds the
			// same scrapes, its ends each up to 1 ms off: its counts are
			// live scraping's, its span of 20 s up to 2 ms off, so its rates
			// are within 2 ms / 20 s (windowTol). The timeline's edges stay
			// on multiples of the bin in Unix time, and a counter's value
			// at an edge is read on the line between the samples around
			// it, so a sample 1 ms off moves a bin's count by 1 ms times
			// the counter's rate across the edge, not by a share of the
			// bin's own count: haproxy's originals grow across the first
			// edge of the bin [9.75 s, 14.75 s] at 4x the bin's mean rate
			// (8e-4 off), and service_haproxy's amplification sits on its
			// threshold, 2, in that bin (a phase tips). No tolerance on a
			// bin's value follows from the truth, so the whole analysis is
			// compared, exactly, with live scraping at the times the
			// importer stamps.
			windowTol := tolerance{rel: 2.0 / 20000, timeMs: 1}
			jittered := filepath.Join(tmp, "promtool.om")
			if err := os.WriteFile(jittered, promtoolStyle(t, om, func(i int) int64 { return int64(i%3) - 1 }), 0o644); err != nil {
				t.Fatal(err)
			}
			jst := loadFile(t, fx.cfg, jittered)
			stamped := make([]time.Time, len(times))
			if js := jst.Times("app"); len(js) == len(times) {
				for k := range times {
					stamped[k] = time.UnixMilli(js[k])
				}
			}
			for k := range times {
				if d := stamped[k].Sub(times[k]); d < -time.Millisecond || d > time.Millisecond {
					t.Fatalf("promtool.om's scrape %d is stamped %v off live scraping, want a family's time, -1 ms to +1 ms off", k, d)
				}
			}
			atStamps := scrapeLive(t, tr2(t, fx.cfg), "app", stamped, func(now time.Time) []byte {
				return g.body(int(now.Sub(agreeT0).Round(time.Second) / time.Second))
			}, filepath.Join(tmp, "stamped.rtd"))
			for _, c := range []struct {
				name      string
				got, want map[string]any
			}{
				{"app.rtd", analyse(t, loadFile(t, fx.cfg, rtd), window), want},
				{"export.om", analyse(t, loadFile(t, fx.cfg, filepath.Join(tmp, "export.om")), window), want},
				{"promtool.om", analyse(t, jst, window), analyse(t, atStamps, window)},
				{"query_range.json", analyse(t, loadFile(t, fx.cfg, prom), window), want},
			} {
				var diffs []string
				if c.name == "promtool.om" {
					diffJSON("", windowOnly(want), windowOnly(c.got), windowTol, &diffs)
				}
				diffJSON("", c.want, c.got, exact, &diffs)
				if len(diffs) > 0 {
					t.Errorf("%s differs from live scraping:\n  %s", c.name, strings.Join(diffs, "\n  "))
				}
			}
		})
	}
}

// tr2 is a fresh translator for a second scrape of the same emitter.
func tr2(t *testing.T, cfg dialect.Config) *dialect.Translator {
	t.Helper()
	tr, err := dialect.NewTranslator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// compareRates walks an analysis of an emitter whose series exist from
// the start at 0 (eager) and one of the same emitter creating some late
// (lazy): a rate (_per_s) read higher late is over, lower under. Series
// created late count from 0 (the store's rule), so for independent
// counters the two are equal; a dialect's difference of counters first
// derived when one side appeared late is a baseline (its value then holds
// the other side's history), so it may read lower, never higher.
func compareRates(path string, eager, lazy any, over, under *[]string) {
	switch e := eager.(type) {
	case map[string]any:
		l, _ := lazy.(map[string]any)
		for k, v := range e {
			compareRates(path+"."+k, v, l[k], over, under)
		}
	case []any:
		l, _ := lazy.([]any)
		for i := range e {
			if i < len(l) {
				compareRates(fmt.Sprintf("%s[%d]", path, i), e[i], l[i], over, under)
			}
		}
	case float64:
		l, ok := lazy.(float64)
		if !ok || !strings.HasSuffix(path, "per_s") {
			return
		}
		switch {
		case l > e+1e-9*math.Max(1, math.Abs(e)):
			*over = append(*over, fmt.Sprintf("%s: %v, exposed at 0 %v", path, l, e))
		case l < e-1e-9*math.Max(1, math.Abs(e)):
			*under = append(*under, fmt.Sprintf("%s: %v, exposed at 0 %v", path, l, e))
		}
	}
}

// windowOnly keeps the window's signals of an analysis: rows without their
// timelines and phases, services, chains.
func windowOnly(a map[string]any) map[string]any {
	var deps []any
	for _, d := range a["dependencies"].([]any) {
		row := map[string]any{}
		for k, v := range d.(map[string]any) {
			if k != "timeline" && k != "phases" {
				row[k] = v
			}
		}
		deps = append(deps, row)
	}
	return map[string]any{"dependencies": deps, "services": a["services"], "chains": a["chains"]}
}

// detected names the dialects a fresh translator detects in body.
func detected(t *testing.T, cfg dialect.Config, body []byte) string {
	t.Helper()
	tr := tr2(t, cfg)
	fams, err := expo.ExpfmtParser{}.Parse("app", body, "text/plain; version=0.0.4", tr.Filter)
	if err != nil {
		t.Fatal(err)
	}
	_, name, err := tr.Translate("", &model.Snapshot{Target: "app", Time: agreeT0, Families: fams})
	if err != nil {
		t.Fatal(err)
	}
	return name
}
