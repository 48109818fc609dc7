package dialect

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
)

// acme is the custom mapping of custom_acme.prom (docs/dialects.md).
var acme = Mapping{
	Name:            "acme",
	DependencyLabel: "upstream",
	Signals: []Signal{
		{Family: model.MetricOriginals, Metric: "acme_calls_total"},
		{Family: model.MetricAttempts, Metric: "acme_tries_total", Match: []string{`status=~"5.."`}, Labels: map[string]string{"outcome": "temporary_error"}},
		{Family: model.MetricAttempts, Metric: "acme_tries_total", Match: []string{`status!~"5.."`}, Labels: map[string]string{"outcome": "success"}},
		{Family: model.MetricRequestDuration, Metric: "acme_call_latency_ms", Scale: 0.001},
	},
}

// queryFixtures are the fixtures of every dialect with PromQL.
var queryFixtures = []string{
	"envoy.prom", "envoy_summary.prom", "envoy_track_remaining.prom", "service_envoy_inbound.1.prom", "istio_sidecar.prom",
	"linkerd_policy.prom", "linkerd_legacy.prom", "haproxy_2.6.12.prom", "service_haproxy_2.6.12.1.prom",
	"grpc_go_otel.prom", "resilience4j_spring.prom", "resilience4j_old.prom",
	"pools_hikari_native.prom", "pools_gosql.prom", "custom_acme.prom", "service_sim_provider.1.prom",
	"clientgo.prom", "traefik.prom", "grpc_middleware_v2.prom", "polly_v8.prom", "kong_3.x.prom", "apisix_3.x.prom", "linkerd1_1.7.prom",
	"otel_http_client.prom",
	"envoy_retry_breaker.prom", "envoy_usedonly.prom", "istio_stats_off.prom", "traefik_entrypoints.prom",
	"traefik_post.prom", "resilience4j_breaker.prom", "polly_hedging.prom", "grpc_a96_hedges.prom",
	"polly_breaker.prom", "aws_sdk_go_v2.prom",
}

func loadFixture(t *testing.T, name string) []model.Family {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	fams, err := expo.ExpfmtParser{}.Parse(name, b, "text/plain; version=0.0.4", nil)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// flatNames are a snapshot's series names as a server lists them.
func flatNames(fams []model.Family) []string {
	var out []string
	for _, f := range fams {
		switch f.Type {
		case model.Histogram:
			out = append(out, f.Name+"_bucket", f.Name+"_count", f.Name+"_sum")
		case model.Summary:
			out = append(out, f.Name, f.Name+"_count", f.Name+"_sum")
		default:
			out = append(out, f.Name)
		}
	}
	return out
}

// TestExprsCoverTranslate: on every fixture, each detected dialect has an
// expression for every flat series its Translate emits among the families
// read through Prometheus, and only for such families.
func TestExprsCoverTranslate(t *testing.T) {
	tr, err := NewTranslator(Config{Custom: []Mapping{acme}})
	if err != nil {
		t.Fatal(err)
	}
	opts := QueryOptions{By: []string{"job"}, Range: time.Minute}
	checked := map[string]bool{}
	for _, fixture := range queryFixtures {
		fams := loadFixture(t, fixture)
		snap := &model.Snapshot{Target: fixture, Time: time.Unix(1700000000, 0), Families: fams}
		_, names, err := tr.Translate("", snap)
		if err != nil || names == "" {
			t.Fatalf("%s: detected %q, %v", fixture, names, err)
		}
		for _, name := range strings.Split(names, "+") {
			d, err := tr.newDialect(name)
			if err != nil {
				t.Fatal(err)
			}
			q, ok := d.(Querier)
			if !ok {
				t.Errorf("%s has no PromQL", name)
				continue
			}
			have := map[string]bool{}
			for _, e := range q.Exprs(opts) {
				if f, _ := flatFamily(e.Name); f == nil {
					t.Errorf("%s: expression for %s, which is not read through Prometheus", name, e.Name)
				}
				if strings.TrimSpace(e.PromQL) == "" {
					t.Errorf("%s: empty expression for %s", name, e.Name)
				}
				have[e.Name] = true
			}
			out := d.Translate(snap)
			for _, n := range flatNames(out.Families) {
				if f, _ := flatFamily(n); f != nil && !have[n] {
					t.Errorf("%s on %s: Translate emits %s, no expression computes it", name, fixture, n)
				}
			}
			checked[name] = true
		}
	}
	for _, n := range tr.Names() {
		if !checked[n] {
			t.Errorf("no fixture exercises %s", n)
		}
	}
}

// TestDetectNames: detection from a server's metric names finds the
// dialects the translator detects on the exposition itself.
func TestDetectNames(t *testing.T) {
	tr, err := NewTranslator(Config{Custom: []Mapping{acme}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"envoy.prom":               "envoy",
		"istio_sidecar.prom":       "istio",
		"linkerd_policy.prom":      "linkerd",
		"haproxy_2.6.12.prom":      "haproxy",
		"grpc_go_otel.prom":        "grpc",
		"resilience4j_spring.prom": "resilience4j+pools",
		"pools_gosql.prom":         "pools+native",
		"custom_acme.prom":         "acme",
	}
	for fixture, w := range want {
		fams := loadFixture(t, fixture)
		_, direct, err := tr.Translate("", &model.Snapshot{Target: fixture, Families: fams})
		if err != nil || direct != w {
			t.Errorf("%s: Translate detects %q (%v), want %q", fixture, direct, err, w)
		}
		if got := strings.Join(tr.DetectNames(flatNames(fams)), "+"); got != w {
			t.Errorf("%s: DetectNames gives %q, want %q", fixture, got, w)
		}
	}
	// The detection query lists every family of every dialect, histogram
	// and summary suffixes allowed, prefixes as prefixes.
	q := tr.DetectQuery(QueryOptions{By: []string{"namespace", "job"}, Matchers: `env="prod"`})
	for _, s := range []string{`count by (__name__, namespace, job) ({__name__=~"(?:`, `|istio_request_duration_milliseconds|`,
		`|acme_call_latency_ms|`, `)(?:_bucket|_count|_sum)?|grpc_client_.*|`, `", env="prod"})`} {
		if !strings.Contains(q, s) {
			t.Errorf("detection query lacks %s:\n%s", s, q)
		}
	}
}

// noPromQL is a dialect without queries.
type noPromQL struct{}

func (noPromQL) Name() string                                   { return "noql" }
func (noPromQL) Families() []string                             { return nil }
func (noPromQL) Detect([]model.Family) bool                     { return false }
func (noPromQL) Translate(snap *model.Snapshot) *model.Snapshot { return snap }

func TestQueriesErrors(t *testing.T) {
	tr := Auto()
	opts := QueryOptions{By: []string{"job"}, Range: time.Minute}
	for _, c := range []struct {
		names []string
		opts  QueryOptions
		want  string
	}{
		{[]string{"envoy", "nginx"}, opts, `unknown dialect "nginx" (known: istio, envoy, linkerd, linkerd1, haproxy, grpc, resilience4j, client-go, traefik, grpc-prometheus, polly, kong, apisix, otel-http, aws-sdk, pools, native)`},
		{nil, opts, "no dialect to query"},
		{[]string{"native"}, QueryOptions{Range: time.Minute}, "no grouping label (--by)"},
		{[]string{"native"}, QueryOptions{By: []string{"job-name"}, Range: time.Minute}, `"job-name" is not a label name`},
		{[]string{"native"}, QueryOptions{By: []string{"job"}}, "range must be positive"},
	} {
		if _, err := tr.Queries(c.names, c.opts); err == nil || err.Error() != c.want {
			t.Errorf("Queries(%q): %v, want %s", c.names, err, c.want)
		}
	}
	// A dialect without PromQL is named, never skipped.
	_, err := buildQueries([]Dialect{&envoy{}, noPromQL{}}, opts)
	if err == nil || err.Error() != "dialect noql has no PromQL queries: it can only be read by scraping its targets" {
		t.Errorf("no PromQL: %v", err)
	}
}

// TestQueriesCombine: the expressions of several dialects for one flat
// series are one query, made disjoint and given the union's contract
// labels; _bucket expressions of different le scales are separate queries.
func TestQueriesCombine(t *testing.T) {
	tr, err := NewTranslator(Config{PoolDependency: map[string]string{"db": "orders"}})
	if err != nil {
		t.Fatal(err)
	}
	qs, err := tr.Queries([]string{"native", "envoy", "pools"}, QueryOptions{By: []string{"job"}, Range: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]Query{}
	for _, q := range qs {
		byName[q.Name] = append(byName[q.Name], q)
	}
	orig := byName[model.MetricOriginals]
	if len(orig) != 1 || !slices.Equal(orig[0].Dialects, []string{"envoy", "native"}) ||
		!strings.HasPrefix(orig[0].PromQL, "sum by (job, dependency, priority) (label_replace(label_replace(label_replace(label_replace(("+inc30(`envoy_cluster_upstream_rq_completed{envoy_cluster_name!=""}`)+") unless (") ||
		!strings.Contains(orig[0].PromQL, `"priority", "", "", ""), "retrytop_part", "1", "", "") or label_replace(`+inc30("retry_originals_total")+`, "retrytop_part", "2", "", ""))`) {
		t.Errorf("originals: %+v", orig)
	}
	// Pool wait buckets: native and HikariCP's Micrometer timer in
	// seconds, HikariCP's own tracker in nanoseconds.
	pw := byName[model.MetricPoolWait+"_bucket"]
	if len(pw) != 2 || pw[0].LeScale != 1 || pw[1].LeScale != 1e-9 || !slices.Equal(pw[0].Dialects, []string{"pools", "native"}) ||
		!slices.Equal(pw[1].Dialects, []string{"pools"}) || !strings.Contains(pw[1].PromQL, "hikaricp_connection_acquired_nanos_bucket") ||
		strings.Contains(pw[0].PromQL, "nanos") {
		t.Errorf("pool wait buckets: %+v", pw)
	}
	if !strings.Contains(pw[1].PromQL, `label_replace(label_replace(`) || !strings.Contains(pw[1].PromQL, `"dependency", "orders", "pool", "db")`) {
		t.Errorf("pool attachment not applied: %s", pw[1].PromQL)
	}
	if g := byName[model.MetricPoolWaitAverage]; len(g) != 1 || !g[0].Gauge || !strings.HasPrefix(g[0].PromQL, "max by (job, dependency) (") {
		t.Errorf("pool wait average: %+v", g)
	}
}

// TestCustomExprs: a custom mapping's PromQL follows its declaration:
// matchers as written, the fixed dependency for series without the label,
// contract labels set, units scaled, odd metric names quoted.
func TestCustomExprs(t *testing.T) {
	d, err := NewCustom(Mapping{Name: "odd", DependencyLabel: "svc", Dependency: "backend", Signals: []Signal{
		{Family: model.MetricAdmissionRejected, Metric: "odd.rejected", Match: []string{`kind="shed"`, `zone!="test"`, `code=~'5..'`, `path!~"/health.*"`},
			Labels: map[string]string{"reason": "queue", "outcome": "timeout"}},
		{Family: model.MetricActiveCalls, Metric: "odd_busy_ms", Scale: 0.001},
	}})
	if err != nil {
		t.Fatal(err)
	}
	opts := QueryOptions{By: []string{"job"}, Matchers: `env="prod"`, Range: 90 * time.Second}
	es := d.(Querier).Exprs(opts)
	inc := newQctx(opts).incSel
	want := []Expr{
		{Name: model.MetricAdmissionRejected, Labels: []string{"reason"}, PromQL: `label_replace(label_replace(` +
			inc(`{__name__="odd.rejected", quantile="", svc!="", kind="shed", zone!="test", code=~"5..", path!~"/health.*", env="prod"}`) + ` or ` +
			inc(`{__name__="odd.rejected_count", svc!="", kind="shed", zone!="test", code=~"5..", path!~"/health.*", env="prod"}`) + `, "dependency", "$1", "svc", "(.*)") or ` +
			`label_replace(` + inc(`{__name__="odd.rejected", quantile="", svc="", kind="shed", zone!="test", code=~"5..", path!~"/health.*", env="prod"}`) + ` or ` +
			inc(`{__name__="odd.rejected_count", svc="", kind="shed", zone!="test", code=~"5..", path!~"/health.*", env="prod"}`) + `, "dependency", "backend", "", ""), "reason", "queue", "", "")`},
		{Name: model.MetricActiveCalls, PromQL: `label_replace((odd_busy_ms{quantile="", svc!="", env="prod"}) * 0.001, "dependency", "$1", "svc", "(.*)") or ` +
			`label_replace((odd_busy_ms{quantile="", svc="", env="prod"}) * 0.001, "dependency", "backend", "", "")`},
	}
	if len(es) != len(want) {
		t.Fatalf("%d expressions: %+v", len(es), es)
	}
	for i := range want {
		if es[i].Name != want[i].Name || es[i].PromQL != want[i].PromQL || !slices.Equal(es[i].Labels, want[i].Labels) {
			t.Errorf("expression %d:\n got  %+v\n want %+v", i, es[i], want[i])
		}
	}
}

// inc30 is a selector's increase at the 30 s range of TestQueriesCombine.
func inc30(sel string) string {
	return newQctx(QueryOptions{Range: 30 * time.Second}).incSel(sel)
}

// TestIncCountsLikeAScraper pins the counter expression every dialect's
// PromQL is built from (docs/prometheus.md, "Counting like a scraper"):
// the increase since the previous evaluation, or the value itself after a
// reset or for a new series, on a target that was up a step ago; "a step
// ago" reaches back over failed scrapes (CounterBridge).
func TestIncCountsLikeAScraper(t *testing.T) {
	for _, c := range []struct {
		step time.Duration
		sel  string
		want string
	}{
		{time.Second, `retry_originals_total{job="a"}`,
			`(retry_originals_total{job="a"} - (last_over_time(retry_originals_total{job="a"}[1m] offset 1s) <= retry_originals_total{job="a"}) or ` +
				`retry_originals_total{job="a"} and on (instance) (max_over_time(up[1m] offset 1s) == 1))`},
		{1500 * time.Millisecond, `x`, `(x - (last_over_time(x[1m] offset 1500ms) <= x) or x and on (instance) (max_over_time(up[1m] offset 1500ms) == 1))`},
		// A step longer than half the bridge: the bridge is two steps.
		{time.Minute, `x`, `(x - (last_over_time(x[2m] offset 1m) <= x) or x and on (instance) (max_over_time(up[2m] offset 1m) == 1))`},
	} {
		if got := newQctx(QueryOptions{Range: c.step}).incSel(c.sel); got != c.want {
			t.Errorf("step %v:\n got  %s\n want %s", c.step, got, c.want)
		}
	}
}
