package promapi

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/internal/testpeer"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
)

type dialectCase struct{ name, file string }

// dialectCases are the expositions served to both paths: every dialect's
// fixture (dialect/testdata) and the native contract, one
// Prometheus job (and one directly scraped target) each.
var dialectCases = []dialectCase{
	{"native", "testdata/native.prom"},
	{"envoy", "../dialect/testdata/envoy.prom"},
	{"envoy-summary", "../dialect/testdata/envoy_summary.prom"},
	{"envoy-inbound", "../dialect/testdata/service_envoy_inbound.1.prom"},
	{"istio", "../dialect/testdata/istio_sidecar.prom"},
	{"linkerd", "../dialect/testdata/linkerd_policy.prom"},
	{"linkerd-legacy", "../dialect/testdata/linkerd_legacy.prom"},
	{"haproxy", "../dialect/testdata/haproxy_2.6.12.prom"},
	{"grpc", "../dialect/testdata/grpc_go_otel.prom"},
	{"resilience4j", "../dialect/testdata/resilience4j_spring.prom"},
	{"resilience4j-old", "../dialect/testdata/resilience4j_old.prom"},
	{"hikari", "../dialect/testdata/pools_hikari_native.prom"},
	{"gosql", "../dialect/testdata/pools_gosql.prom"},
	{"acme", "../dialect/testdata/custom_acme.prom"},
	// Service shapes of the services view (some of the above have
	// server-side families too: envoy-inbound, haproxy, istio, native).
	{"sim-provider", "../dialect/testdata/service_sim_provider.1.prom"},
	{"haproxy-front", "../dialect/testdata/service_haproxy_2.6.12.1.prom"},
	{"promhttp", "../dialect/testdata/service_promhttp.1.prom"},
	{"otel-http", "../dialect/testdata/service_otel_http.1.prom"},
}

// ecosystemCases are the later emitters' fixtures, served to a Prometheus
// of their own: one refresh reads every job's queries on the test's 1 s
// tick, and with every case on one server a refresh took 2.6 s on a
// loaded 2-core machine, so the two paths no longer read on the same
// ticks (measured: 4.5 % apart, against 0.1-1.4 % per group).
var ecosystemCases = []dialectCase{
	{"client-go", "../dialect/testdata/clientgo.prom"},
	{"traefik", "../dialect/testdata/traefik.prom"},
	{"grpc-prometheus", "../dialect/testdata/grpc_middleware_v2.prom"},
	{"polly", "../dialect/testdata/polly_v8.prom"},
	{"polly-breaker", "../dialect/testdata/polly_breaker.prom"},
	{"aws-sdk", "../dialect/testdata/aws_sdk_go_v2.prom"},
	{"kong", "../dialect/testdata/kong_3.x.prom"},
	{"apisix", "../dialect/testdata/apisix_3.x.prom"},
	{"linkerd1", "../dialect/testdata/linkerd1_1.7.prom"},
	{"otel-http-client", "../dialect/testdata/otel_http_client.prom"},
	{"acme-derived", "../dialect/testdata/custom_acme.prom"},
}

// serviceOnly are the cases without a caller's side: no dependency.
var serviceOnly = map[string]bool{"envoy-inbound": true, "sim-provider": true, "promhttp": true, "otel-http": true}

// acmeMapping is the custom dialect of custom_acme.prom (docs/dialects.md).
var acmeMapping = dialect.Mapping{
	Name:            "acme",
	DependencyLabel: "upstream",
	Signals: []dialect.Signal{
		{Family: model.MetricOriginals, Metric: "acme_calls_total"},
		{Family: model.MetricAttempts, Metric: "acme_tries_total", Match: []string{`status=~"5.."`}, Labels: map[string]string{"outcome": "temporary_error"}},
		{Family: model.MetricAttempts, Metric: "acme_tries_total", Match: []string{`status!~"5.."`}, Labels: map[string]string{"outcome": "success"}},
		{Family: model.MetricRequestDuration, Metric: "acme_call_latency_ms", Scale: 0.001},
	},
}

// acmeDerived is acme with its retries derived (docs/dialects.md,
// "Derived signals"): tries less calls, per upstream.
var acmeDerived = dialect.Mapping{
	Name:            "acmed",
	DependencyLabel: acmeMapping.DependencyLabel,
	Signals:         acmeMapping.Signals,
	Derived:         []dialect.Derivation{{Family: model.MetricRetries, Expr: "attempts - originals"}},
}

// growing renders a fixture whose cumulative values (counters, histogram
// buckets, counts and sums, summary counts and sums, and the pre-1.3
// resilience4j gauge that holds counts) grow linearly with the second s
// of the scenario: v(s) = 1000 * v0 * (1 + s/growPeriod), counts rounded
// to integers. Gauges and summary quantiles stay as written. Every counter
// keeps its own rate (v0/growPeriod), so a family mapped onto the wrong
// signal shows; ratios between counters stay those of the fixture, so
// differences stay positive and buckets cumulative.
type growing struct {
	lines []fixtureLine
}

type fixtureLine struct {
	text   string // the whole line, or what precedes the value
	value  float64
	suffix string // what follows the value (a timestamp)
	grows  bool
	sum    bool // a histogram's or summary's _sum: not a count
}

// growScale multiplies every cumulative value, so that integer counts
// grow smoothly; growPeriod is the seconds in which they grow by it.
const growScale, growPeriod = 1000, 20

// cumulativeGauges are gauges that hold counts.
var cumulativeGauges = map[string]bool{"resilience4j_retry_calls": true}

func newGrowing(t *testing.T, path string) *growing {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return newGrowingText(t, path, string(b))
}

// newGrowingText is newGrowing on an exposition in memory (path names it
// in errors).
func newGrowingText(t *testing.T, path, text string) *growing {
	t.Helper()
	types := map[string]string{}
	raw := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for _, l := range raw {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
		}
	}
	g := &growing{}
	for i, l := range raw {
		if l == "" || l[0] == '#' {
			g.lines = append(g.lines, fixtureLine{text: l})
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
		if len(rest) == 0 {
			t.Fatalf("%s:%d: no value", path, i+1)
		}
		v, err := strconv.ParseFloat(rest[0], 64)
		if err != nil {
			t.Fatalf("%s:%d: value %q", path, i+1, rest[0])
		}
		g.lines = append(g.lines, fixtureLine{text: l[:end] + " ", value: v, suffix: strings.Join(rest[1:], " "),
			grows: cumulative(name, types), sum: strings.HasSuffix(name, "_sum")})
	}
	return g
}

// omLabels rewrites the inside of a text-format label set in
// OpenMetrics' stricter form: no spaces around pairs, no trailing comma.
// Values keep their escapes, which both formats share.
func omLabels(in string) string {
	var pairs []string
	for in = strings.TrimLeft(in, " ,"); in != ""; in = strings.TrimLeft(in, " ,") {
		eq := strings.IndexByte(in, '=')
		open := strings.IndexByte(in, '"')
		end := open + 1
		for ; end < len(in) && in[end] != '"'; end++ {
			if in[end] == '\\' {
				end++
			}
		}
		pairs = append(pairs, strings.TrimSpace(in[:eq])+"="+in[open:end+1])
		in = in[end+1:]
	}
	return strings.Join(pairs, ",")
}

// closingBrace returns the index of the } closing the label set that opens
// at open, skipping quoted values; -1 without one.
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

// cumulative reports whether a sample name holds a count, by its family's
// TYPE (Linkerd names the family without the samples' _total).
func cumulative(name string, types map[string]string) bool {
	if cumulativeGauges[name] {
		return true
	}
	switch types[name] {
	case "counter":
		return true
	case "":
	default:
		return false
	}
	if base, ok := strings.CutSuffix(name, "_total"); ok && types[base] == "counter" {
		return true
	}
	for _, suf := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suf); ok {
			typ := types[base]
			return typ == "histogram" || typ == "summary" && suf != "_bucket"
		}
	}
	return false
}

// render is the exposition at second s of the scenario (Unix time
// dialectStart+s): timestamps a fixture's lines carry (OpenTelemetry's
// .NET exporter stamps every sample, polly_v8.prom) are that time, as the
// exporter writes the time of collection.
func (g *growing) render(s int) []byte {
	f := growScale * (1 + float64(s)/growPeriod)
	var b bytes.Buffer
	for _, l := range g.lines {
		if l.text == "" || l.text[0] == '#' {
			b.WriteString(l.text)
			b.WriteByte('\n')
			continue
		}
		v := l.value
		if l.grows {
			v = l.value * f
			if !l.sum {
				// Counts are integers: the parser keeps a summary's
				// count as one.
				v = math.Round(v)
			}
		}
		b.WriteString(l.text)
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		if l.suffix != "" {
			b.WriteByte(' ')
			b.WriteString(strconv.FormatInt((dialectStart+int64(s))*1000, 10))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// openMetrics appends the exposition at second s as OpenMetrics samples
// of job and instance, stamped with the second, as promtool backfills
// them (and up, 1: what Prometheus writes for a scrape that worked).
func (g *growing) openMetrics(b *strings.Builder, s int, job, instance string) {
	ts := strconv.FormatInt(dialectStart+int64(s), 10)
	target := "job=" + strconv.Quote(job) + ",instance=" + strconv.Quote(instance)
	b.WriteString("up{" + target + "} 1 " + ts + "\n")
	for _, l := range strings.Split(strings.TrimSuffix(string(g.render(s)), "\n"), "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		end := strings.IndexAny(l, "{ ")
		name, labels, rest := l[:end], "", l[end:]
		if l[end] == '{' {
			c := closingBrace(l, end)
			labels, rest = l[end+1:c], l[c+1:]
		}
		if labels = omLabels(labels); labels != "" {
			labels = "," + labels
		}
		b.WriteString(name + "{" + target + labels + "} " + strings.Fields(rest)[0] + " " + ts + "\n")
	}
}

// The dialect scenario: samples every second for dialectSeconds seconds
// from dialectStart, compared over [dialectFrom, dialectTo].
const (
	dialectStart           = bfStart
	dialectSeconds         = 30
	dialectFrom, dialectTo = 10, 25
	dialectTolerance       = 1e-9
	dialectBackfill        = (dialectSeconds - 5) * time.Second
	dialectA, dialectB     = "a:1", "b:1"
)

// TestDialectQueriesAgainstPrometheus is the equivalence of the two paths
// on the same data: every dialect's fixture, its counters growing, is
// scraped directly (the scraper + dialect translator, on a virtual
// clock) and backfilled into a real Prometheus with the same values at the
// same seconds, read through the dialects' PromQL (a Source detecting the
// dialects itself); analysis' signals of every (target, dependency) and
// every flat series read through Prometheus (by dependency and contract
// labels) agree over the same window.
//
// Both paths hold the same samples at the same whole seconds, and PromQL
// returns values and times exactly: they agree to the rounding of a
// division (dialectTolerance, relative).
func TestDialectQueriesAgainstPrometheus(t *testing.T) {
	t.Run("core", func(t *testing.T) {
		dialectEquivalence(t, acmeMapping, dialectCases, simFleets(t),
			"prometheus-api:acme+istio+envoy+linkerd+haproxy+grpc+resilience4j+pools+native")
	})
	t.Run("ecosystem", func(t *testing.T) {
		dialectEquivalence(t, acmeDerived, ecosystemCases, nil,
			"prometheus-api:acmed+linkerd1+client-go+traefik+grpc-prometheus+polly+kong+apisix+otel-http+aws-sdk")
	})
}

// dialectEquivalence serves cases and fleets to the direct scraper and
// backfills them into one Prometheus, and compares what both read;
// wantDialects is the server's status.
func dialectEquivalence(t *testing.T, custom dialect.Mapping, dialectCases []dialectCase, fleets []simFleet, wantDialects string) {
	// A bound on a hang, not on a number: nothing below is timed.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tr, err := dialect.NewTranslator(dialect.Config{Custom: []dialect.Mapping{custom}})
	if err != nil {
		t.Fatal(err)
	}
	// The second the direct scraper's targets answer for and its clock
	// stands at.
	var second atomic.Int64
	serve := func(g *growing) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = w.Write(g.render(int(second.Load())))
		})
	}
	type backfilled struct {
		g             *growing
		job, instance string
	}
	var all []backfilled
	mux := http.NewServeMux()
	var targets []scrape.Target
	addTarget := func(name, url string) {
		tgt, err := scrape.ParseTarget(name + "=" + url)
		if err != nil {
			t.Fatal(err)
		}
		tgt.Timeout = time.Minute // only the values are compared
		targets = append(targets, tgt)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, c := range dialectCases {
		g := newGrowing(t, c.file)
		mux.Handle("/"+c.name, serve(g))
		addTarget(c.name, srv.URL+"/"+c.name)
		all = append(all, backfilled{g, c.name, dialectA})
	}
	// Fleets: two sim providers per job (two instances of one job),
	// scraped directly as two targets.
	for _, f := range fleets {
		ga, gb := newGrowingText(t, f.name+" a", f.a), newGrowingText(t, f.name+" b", f.b)
		mux.Handle("/"+f.name+"-a", serve(ga))
		mux.Handle("/"+f.name+"-b", serve(gb))
		addTarget(f.name+"-a", srv.URL+"/"+f.name+"-a")
		addTarget(f.name+"-b", srv.URL+"/"+f.name+"-b")
		all = append(all, backfilled{ga, f.name, dialectA}, backfilled{gb, f.name, dialectB})
	}
	var om strings.Builder
	for s := range dialectSeconds {
		for _, x := range all {
			x.g.openMetrics(&om, s, x.job, x.instance)
		}
	}
	om.WriteString("# EOF\n")
	base := testpeer.BackfilledPrometheus(t, ctx, om.String())

	direct := scrape.NewScraper(targets, model.NewStore(model.StoreConfig{}), scrape.Options{Translate: tr.Translate, Filter: tr.Filter,
		Clock: func() time.Time { return time.Unix(dialectStart+second.Load(), 0) }})
	for s := range dialectSeconds {
		second.Store(int64(s))
		for _, st := range direct.ScrapeOnce(ctx) {
			if !st.Up {
				t.Fatalf("direct target %s at second %d: %s", st.Name, s, st.LastError)
			}
		}
	}
	// One refresh at the last second loads the history.
	src, err := New(Options{Client: ClientConfig{URL: base, Timeout: time.Minute}, Step: time.Second, Delay: -1,
		Clock: func() time.Time { return time.Unix(dialectStart+dialectSeconds-1, 0) }, Backfill: dialectBackfill,
		Dialects: []string{DialectAuto}, Translator: tr})
	if err != nil {
		t.Fatal(err)
	}
	src.Refresh(ctx)
	st := src.Statuses()
	if st[0].Dialect != wantDialects || !st[0].Up || st[0].LastError != "" {
		t.Errorf("server status %+v", st[0])
	}
	for _, s := range st[1:] {
		if !s.Up {
			t.Errorf("target %s through Prometheus: %s", s.Name, s.LastError)
		}
	}
	a, b := direct.Store(), src.Store()
	from, to := (dialectStart+int64(dialectFrom))*1000, (dialectStart+int64(dialectTo))*1000
	worst, worstWhat := 0.0, ""
	compare := func(what string, va, vb float64) {
		d := math.Abs(va - vb)
		scale := math.Max(math.Abs(va), math.Abs(vb))
		if scale > 0 && d/scale > worst {
			worst, worstWhat = d/scale, what
		}
		if d > dialectTolerance*scale {
			t.Errorf("%s: direct %.9g, prometheus %.9g: not within %g", what, va, vb, dialectTolerance)
		}
	}
	rows, services := 0, 0
	for _, c := range dialectCases {
		deps := map[string]bool{}
		for _, d := range analysis.Dependencies(a, c.name) {
			deps[d] = true
		}
		for _, d := range analysis.Dependencies(b, c.name) {
			deps[d] = true
		}
		if len(deps) == 0 && !serviceOnly[c.name] {
			t.Errorf("%s: no dependency on either path", c.name)
		}
		for _, dep := range sortedKeys(deps) {
			rows++
			sa := signalValues(analysis.SignalsFor(a, c.name, dep, from, to))
			sb := signalValues(analysis.SignalsFor(b, c.name, dep, from, to))
			for _, k := range sortedKeys(union(sa, sb)) {
				va, vb := sa[k], sb[k]
				what := c.name + " -> " + dep + " " + k
				switch {
				case !va.OK() && !vb.OK():
				case va.OK() != vb.OK():
					// A breakdown entry seeded at 0 on one side only
					// (a result never seen) is the same number.
					if !strings.Contains(k, "[") || va.V() != 0 || vb.V() != 0 {
						t.Errorf("%s: direct %v, prometheus %v", what, va, vb)
					}
				default:
					compare(what, va.V(), vb.V())
				}
			}
		}
		// The services view: every service signal of a target that
		// serves requests on either path.
		if slices.Contains(analysis.Services(a), c.name) || slices.Contains(analysis.Services(b), c.name) {
			services++
			sa := serviceValues(analysis.ServiceSignalsFor(a, c.name, from, to))
			sb := serviceValues(analysis.ServiceSignalsFor(b, c.name, from, to))
			present := 0
			for _, k := range sortedKeys(sa) {
				va, vb := sa[k], sb[k]
				what := c.name + " service " + k
				switch {
				case !va.OK() && !vb.OK():
				case va.OK() != vb.OK():
					t.Errorf("%s: direct %v, prometheus %v", what, va, vb)
				default:
					present++
					compare(what, va.V(), vb.V())
				}
			}
			t.Logf("%s: %d service signals present", c.name, present)
		} else if serviceOnly[c.name] {
			t.Errorf("%s: not a service on either path", c.name)
		}
		// Every flat series read through Prometheus, by dependency and
		// contract labels: the families analysis does not read yet
		// (extensions) included.
		fa, fb := flatRates(a, src.Queries(), c.name, from, to), flatRates(b, src.Queries(), c.name, from, to)
		nonzero := 0
		for _, v := range fa {
			if v != 0 {
				nonzero++
			}
		}
		if nonzero == 0 {
			t.Errorf("%s: no flat series with data scraped directly", c.name)
		}
		t.Logf("%s: %d flat series (%d non-zero), %d on the Prometheus path", c.name, len(fa), nonzero, len(fb))
		for _, k := range sortedKeys(union(fa, fb)) {
			va, oka := fa[k]
			vb, okb := fb[k]
			switch {
			case oka && okb:
				compare(c.name+" "+k, va, vb)
			case oka && va != 0, okb && vb != 0:
				t.Errorf("%s %s: direct %v (%v), prometheus %v (%v)", c.name, k, va, oka, vb, okb)
			}
		}
	}
	// Fleets: the server sums the replicas' gauges (the oldest age is
	// the oldest of any; one unbounded queue makes the fleet's unbounded)
	// and their increases; quantiles come from the summed buckets.
	for _, f := range fleets {
		ra := analysis.ServiceSignalsFor(a, f.name+"-a", from, to)
		rb := analysis.ServiceSignalsFor(a, f.name+"-b", from, to)
		got := analysis.ServiceSignalsFor(b, f.name, from, to)
		gauges := []struct {
			what      string
			got, want model.Value
			literal   float64
		}{
			{"in flight", got.InFlight, model.Some(ra.InFlight.V() + rb.InFlight.V()), 7},
			{"slots", got.Slots, model.Some(ra.Slots.V() + rb.Slots.V()), 10},
			{"queue depth", got.QueueDepth, model.Some(ra.QueueDepth.V() + rb.QueueDepth.V()), 35},
			{"queue limit", got.QueueLimit, model.Some(f.limit), f.limit},
			{"queue oldest age", got.QueueOldestAge, model.Some(max(ra.QueueOldestAge.V(), rb.QueueOldestAge.V())), 2.5},
		}
		for _, g := range gauges {
			if !g.got.OK() || g.got.V() != g.want.V() || g.want.V() != g.literal {
				t.Errorf("%s %s: prometheus %v, replicas give %v, want %v", f.name, g.what, g.got, g.want, g.literal)
			}
		}
		sa, sb, sg := serviceValues(ra), serviceValues(rb), serviceValues(got)
		for _, k := range []string{"received/s", "2xx/s", "503/s", "5xx/s", "cancelled/s", "work after cancel/s"} {
			if !sa[k].OK() || !sb[k].OK() || !sg[k].OK() {
				t.Errorf("%s %s: replicas %v %v, prometheus %v", f.name, k, sa[k], sb[k], sg[k])
				continue
			}
			compare(f.name+" service "+k, sa[k].V()+sb[k].V(), sg[k].V())
		}
		for _, k := range []string{"service time p50", "service time p99", "queue wait p99", "queue wait mean"} {
			if !sa[k].OK() || !sg[k].OK() {
				t.Errorf("%s %s: replica %v, prometheus %v", f.name, k, sa[k], sg[k])
				continue
			}
			// The replicas' histograms grow alike: the fleet's
			// quantiles are each replica's.
			compare(f.name+" service "+k, sa[k].V(), sg[k].V())
		}
	}
	if rows < len(dialectCases)-len(serviceOnly) {
		t.Errorf("only %d rows", rows)
	}
	t.Logf("%d rows, %d services; largest relative difference %.3g (%s)", rows, services, worst, worstWhat)
}

// signalValues flattens the signals that are numbers: rates, ratios,
// gauges, quantiles per latency class, results and admission breakdowns
// (breakdown keys carry "[...]").
func signalValues(s model.Signals) map[string]model.Value {
	out := map[string]model.Value{
		"originals/s": s.OriginalsPerS, "attempts/s": s.AttemptsPerS, "amplification": s.Amplification,
		"retries/s": s.RetriesPerS, "rescued/s": s.RescuedPerS, "budget denied/s": s.BudgetDeniedPerS,
		"admission rejected/s": s.AdmissionRejectedPerS, "provider errors/s": s.ProviderErrorsPerS,
		"temporary errors/s": s.TemporaryErrorsPerS, "permanent errors/s": s.PermanentErrorsPerS,
		"timeouts/s": s.TimeoutsPerS, "successes/s": s.SuccessesPerS, "deadline exhausted/s": s.DeadlineExhaustedPerS,
		"effective success": s.EffectiveSuccess, "attempt success": s.AttemptSuccess,
		"active calls": s.ActiveCalls, "concurrency limit": s.ConcurrencyLimit,
		"pool wait p50": s.PoolWaitP50, "pool wait p99": s.PoolWaitP99, "backoff p50": s.BackoffP50, "backoff p99": s.BackoffP99,
		"budget balance": s.BudgetBalance, "max attempts": s.MaxAttempts, "deadline": s.DeadlineSeconds,
		"mixed latency p50": s.MixedLatency.P50, "mixed latency p99": s.MixedLatency.P99,
		"breaker state": s.BreakerState, "hedges/s": s.HedgesPerS, "limit exceeded/s": s.RetryLimitExceededPerS,
		"request timeouts/s": s.RequestTimeoutsPerS,
	}
	for _, e := range s.Latency {
		class, q := e.Class, e.V
		out["latency p50["+class+"]"], out["latency p99["+class+"]"] = q.P50, q.P99
	}
	for r, v := range s.ResultsPerS {
		out["results/s["+r+"]"] = v
	}
	for _, b := range s.AdmissionRejectedBy {
		out["admission rejected/s["+b.Key+"]"] = model.Some(b.PerS)
	}
	return out
}

// flatRates are, for every flat series name the queries read, the rate
// (counters, histogram parts) or newest value (gauges) in [from, to] of a
// target's series, added up by dependency, contract labels and le.
func flatRates(st *model.Store, qs []Query, target string, from, to int64) map[string]float64 {
	out := map[string]float64{}
	seen := map[string]bool{}
	for _, q := range qs {
		if seen[q.Name] {
			continue
		}
		seen[q.Name] = true
		for _, s := range st.Select(target, q.Name, nil) {
			var parts []string
			for _, l := range []string{model.LabelDependency, model.LabelPriority, model.LabelOutcome, model.LabelReason,
				model.LabelResult, model.LabelResultClass, model.LabelCode, "stage", model.LabelOTelStatusCode, "le"} {
				if v := s.Labels.Get(l); v != "" {
					parts = append(parts, l+"="+v)
				}
			}
			k := q.Name + "{" + strings.Join(parts, ",") + "}"
			if q.Kind == Level {
				for i := len(s.Points) - 1; i >= 0; i-- {
					if p := s.Points[i]; p.T <= to && !math.IsNaN(p.V) {
						out[k] += p.V
						break
					}
				}
				continue
			}
			if r, ok := analysis.Rate(s.Points, from, to); ok {
				out[k] += r
			}
		}
	}
	return out
}

func union[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// simFleet is one job of two sim providers: a and b are their expositions,
// limit the fleet's queue limit.
type simFleet struct {
	name, a, b string
	limit      float64
}

// simFleets are the sim provider's fixture as replica a, and as replica b
// with other gauges (in flight 3, slots 6, queue depth 5, queue limit 20,
// oldest request 2.5 s): once with a's queue bounded at 10 (fleet limit
// 30), once with a's unbounded (0: the fleet's is unbounded too).
func simFleets(t *testing.T) []simFleet {
	t.Helper()
	b, err := os.ReadFile("../dialect/testdata/service_sim_provider.1.prom")
	if err != nil {
		t.Fatal(err)
	}
	sim := string(b)
	edit := func(s string, pairs ...string) string {
		for i := 0; i < len(pairs); i += 2 {
			if strings.Count(s, "\n"+pairs[i]+"\n") != 1 {
				t.Fatalf("fixture has no line %q", pairs[i])
			}
			s = strings.Replace(s, "\n"+pairs[i]+"\n", "\n"+pairs[i+1]+"\n", 1)
		}
		return s
	}
	rb := edit(sim, "sim_provider_in_flight 4", "sim_provider_in_flight 3", "sim_provider_slots 4", "sim_provider_slots 6",
		"sim_provider_queue_depth 30", "sim_provider_queue_depth 5", "sim_provider_queue_limit 0", "sim_provider_queue_limit 20",
		"sim_provider_queue_oldest_age_seconds 0.8", "sim_provider_queue_oldest_age_seconds 2.5")
	return []simFleet{
		{"fleet-bounded", edit(sim, "sim_provider_queue_limit 0", "sim_provider_queue_limit 10"), rb, 30},
		{"fleet-unbounded", sim, rb, 0},
	}
}
