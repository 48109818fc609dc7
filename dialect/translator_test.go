package dialect_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
)

// TestDetect documents the detection rules on every fixture.
func TestDetect(t *testing.T) {
	for fixture, wantName := range map[string]string{
		"envoy.prom":                         "envoy",
		"envoy_summary.prom":                 "envoy",
		"istio_sidecar.prom":                 "istio", // not envoy: istio reads the cluster stats itself
		"linkerd_policy.prom":                "linkerd",
		"linkerd_legacy.prom":                "linkerd",
		"haproxy_2.6.12.prom":                "haproxy",
		"grpc_go_otel.prom":                  "grpc",
		"grpc_utf8.prom":                     "grpc",
		"resilience4j_spring.prom":           "resilience4j+pools",
		"resilience4j_old.prom":              "resilience4j",
		"pools_hikari_native.prom":           "pools",
		"pools_gosql.prom":                   "pools+native",
		"custom_acme.prom":                   "",
		"../../expo/testdata/histogram.prom": "native", // the contract itself
	} {
		_, got, err := dialect.Auto().Translate("", snapOf(load(t, fixture)))
		if err != nil || got != wantName {
			t.Errorf("%s: detected %q (%v), want %q", fixture, got, err, wantName)
		}
	}
}

// TestDetectExclusive checks that no fixture is claimed by a dialect it
// does not belong to.
func TestDetectExclusive(t *testing.T) {
	owner := map[string][]string{
		dialect.NameEnvoy:        {"envoy.prom", "envoy_summary.prom"},
		dialect.NameIstio:        {"istio_sidecar.prom"},
		dialect.NameLinkerd:      {"linkerd_policy.prom", "linkerd_legacy.prom"},
		dialect.NameHAProxy:      {"haproxy_2.6.12.prom"},
		dialect.NameGRPC:         {"grpc_go_otel.prom", "grpc_utf8.prom"},
		dialect.NameResilience4j: {"resilience4j_spring.prom", "resilience4j_old.prom"},
		dialect.NamePools:        {"resilience4j_spring.prom", "pools_hikari_native.prom", "pools_gosql.prom"},
		dialect.NameNative:       {"pools_gosql.prom"},
	}
	all := []string{"envoy.prom", "envoy_summary.prom", "istio_sidecar.prom", "linkerd_policy.prom", "linkerd_legacy.prom",
		"haproxy_2.6.12.prom", "grpc_go_otel.prom", "grpc_utf8.prom", "resilience4j_spring.prom", "resilience4j_old.prom",
		"pools_hikari_native.prom", "pools_gosql.prom", "custom_acme.prom"}
	for name, mine := range owner {
		d, _ := dialect.New(name)
		for _, f := range all {
			isMine := false
			for _, m := range mine {
				isMine = isMine || m == f
			}
			if got := d.Detect(load(t, f)); got != isMine {
				t.Errorf("%s.Detect(%s) = %v, want %v", name, f, got, isMine)
			}
		}
	}
}

// TestDetectSticky: families that appear late never make a target flap,
// and istio, once seen, replaces envoy on that target.
func TestDetectSticky(t *testing.T) {
	tr := dialect.Auto()
	istioFams := load(t, "istio_sidecar.prom")
	var envoyOnly []model.Family
	for _, f := range istioFams {
		if !strings.HasPrefix(f.Name, "istio_") {
			envoyOnly = append(envoyOnly, f)
		}
	}
	steps := []struct {
		fams []model.Family
		want string
	}{
		{nil, ""},
		{envoyOnly, "envoy"}, // a sidecar before any request: only cluster stats
		{istioFams, "istio"}, // istio_requests_total appears: istio supersedes envoy
		{envoyOnly, "istio"}, // sticky
	}
	for i, st := range steps {
		s := &model.Snapshot{Target: "sidecar", Time: t0.Add(time.Duration(i) * time.Second), Families: st.fams}
		out, name, err := tr.Translate("", s)
		if err != nil || name != st.want {
			t.Fatalf("step %d: %q, %v; want %q", i, name, err, st.want)
		}
		if got := strings.Join(tr.Detected("sidecar"), "+"); got != st.want {
			t.Errorf("step %d: Detected = %q, want %q", i, got, st.want)
		}
		if name == "istio" {
			// Never both: originals only from istio_requests_total.
			if v, _ := sum(out, model.MetricOriginals, dep, "xds-grpc"); v != 0 {
				t.Errorf("step %d: envoy originals leaked under istio", i)
			}
		}
	}
	if got := tr.Detected("never-seen"); got != nil {
		t.Errorf("Detected of an unknown target = %q, want nil", got)
	}
	// Another target keeps its own detection.
	if _, name, _ := tr.Translate("", &model.Snapshot{Target: "other", Time: t0, Families: load(t, "envoy.prom")}); name != "envoy" {
		t.Errorf("other target: %q", name)
	}
}

func TestForcedDialect(t *testing.T) {
	tr := dialect.Auto()
	in := snapOf(load(t, "envoy.prom"))
	out, name, err := tr.Translate(dialect.NameHAProxy, in)
	if err != nil || name != dialect.NameHAProxy || len(out.Families) != 0 {
		t.Errorf("forced haproxy on Envoy: %q, %v, %d families; want nothing translated", name, err, len(out.Families))
	}
	out, name, err = tr.Translate(dialect.NameEnvoy, in)
	if err != nil || name != dialect.NameEnvoy {
		t.Fatalf("forced envoy: %q, %v", name, err)
	}
	want(t, out, 1000, model.MetricOriginals, dep, "payments")
	if _, _, err := tr.Translate("nginx", in); err == nil || !strings.Contains(err.Error(), `unknown dialect "nginx"`) {
		t.Errorf("unknown forced dialect: %v", err)
	}
	if err := tr.Check("nginx"); err == nil {
		t.Error("Check accepts an unknown dialect")
	}
	if err := tr.Check(dialect.NameLinkerd); err != nil {
		t.Error(err)
	}
}

// TestFilter: parsing with the translator's filter and translating gives
// the same contract families as parsing everything.
func TestFilter(t *testing.T) {
	tr := dialect.Auto()
	files, _ := filepath.Glob("testdata/*.prom")
	for _, f := range files {
		base := filepath.Base(f)
		if strings.Contains(base, "malformed") || base == "custom_acme.prom" {
			continue
		}
		body, _ := os.ReadFile(f)
		all, err := expo.ExpfmtParser{}.Parse("t", body, "text/plain; version=0.0.4", nil)
		if err != nil {
			t.Fatal(err)
		}
		sel, err := expo.ExpfmtParser{}.Parse("t", body, "text/plain; version=0.0.4", tr.Filter)
		if err != nil {
			t.Fatalf("%s filtered: %v", base, err)
		}
		if dropsSome := map[string]bool{"envoy.prom": true, "haproxy_2.6.12.prom": true,
			"resilience4j_spring.prom": true, "linkerd_legacy.prom": true}; dropsSome[base] && len(sel) >= len(all) {
			t.Errorf("%s: filter kept %d of %d families", base, len(sel), len(all))
		}
		// target_info says who the target is (analysis.Identities): kept
		// wherever it is.
		for _, f := range all {
			if f.Name == model.MetricTargetInfo && !tr.Filter(f.Name) {
				t.Errorf("%s: filter drops target_info", base)
			}
		}
		a, an, _ := dialect.Auto().Translate("", &model.Snapshot{Target: "a", Time: t0, Families: all})
		b, bn, _ := dialect.Auto().Translate("", &model.Snapshot{Target: "a", Time: t0, Families: sel})
		if an != bn {
			t.Errorf("%s: detected %q unfiltered, %q filtered", base, an, bn)
		}
		// Native passes everything through; compare contract families only.
		if !reflect.DeepEqual(contractPart(a), contractPart(b)) {
			t.Errorf("%s: filtered translation differs", base)
		}
	}
}

func contractPart(s *model.Snapshot) []model.Family {
	var out []model.Family
	for _, f := range s.Families {
		if strings.HasPrefix(f.Name, "retry_") || strings.HasPrefix(f.Name, "sim_provider_") {
			out = append(out, f)
		}
	}
	return out
}

// scaled returns the families with every counter multiplied by k (a later
// scrape of the same emitter).
func scaled(fams []model.Family, k float64) []model.Family {
	out := make([]model.Family, len(fams))
	for i, f := range fams {
		f.Samples = append([]model.Sample(nil), f.Samples...)
		for j := range f.Samples {
			s := &f.Samples[j]
			if f.Type == model.Counter || f.Type == model.Untyped || (f.Type == model.Gauge && strings.HasPrefix(f.Name, "resilience4j_retry_calls")) {
				s.Value *= k
			}
			if f.Type == model.Histogram || f.Type == model.Summary {
				s.Count *= k
				s.Sum *= k
				s.Buckets = append([]model.Bucket(nil), s.Buckets...)
				for b := range s.Buckets {
					s.Buckets[b].Count *= k
				}
			}
		}
		out[i] = f
	}
	return out
}

// TestAbsentThroughAnalysis runs two translated scrapes of each fixture
// through the store and analysis: what an emitter provides is present,
// what it cannot provide is absent (never 0).
func TestAbsentThroughAnalysis(t *testing.T) {
	type expect struct {
		fixture, target, dependency string
		present, absent             []string
	}
	cases := []expect{
		// Envoy counts per-try timeouts and nothing else per attempt: no
		// provider errors, no attempt success (absent, not 0).
		{"envoy.prom", "envoy", "payments",
			[]string{"originals", "attempts", "retries", "rescued", "budget_denied", "admission", "active", "latency", "timeouts"},
			[]string{"results", "effective_success", "limit", "pool_wait", "backoff", "budget_balance", "max_attempts",
				"provider_errors", "temporary_errors", "attempt_success"}},
		{"istio_sidecar.prom", "istio", "reviews.default.svc.cluster.local",
			[]string{"originals", "attempts", "retries", "rescued", "budget_denied", "admission", "results", "effective_success", "latency"},
			[]string{"limit", "pool_wait", "backoff", "budget_balance"}},
		{"linkerd_policy.prom", "linkerd", "books",
			[]string{"originals", "attempts", "retries", "rescued", "budget_denied", "admission", "results", "pool_wait", "latency", "timeouts"},
			[]string{"active", "limit", "backoff", "budget_balance"}},
		{"haproxy_2.6.12.prom", "haproxy", "provider",
			[]string{"originals", "attempts", "retries", "admission", "results", "effective_success", "active", "limit"},
			[]string{"rescued", "budget_denied", "pool_wait", "backoff", "latency", "budget_balance"}},
		{"grpc_go_otel.prom", "grpc", "dns:///127.0.0.1:50051",
			[]string{"originals", "attempts", "retries", "results", "effective_success", "latency", "timeouts"},
			[]string{"rescued", "budget_denied", "admission", "active", "limit", "pool_wait", "backoff"}},
		{"resilience4j_spring.prom", "r4j", "inventory",
			[]string{"originals", "rescued", "admission", "results", "effective_success", "active", "limit"},
			[]string{"attempts", "retries", "amplification", "budget_denied", "pool_wait", "latency", "backoff"}},
	}
	for _, c := range cases {
		st := model.NewStore(model.StoreConfig{})
		tr := dialect.Auto()
		fams := load(t, c.fixture)
		for i, k := range []float64{1, 2} {
			s, _, err := tr.Translate("", &model.Snapshot{Target: c.target, Time: t0.Add(time.Duration(i) * 10 * time.Second), Families: scaled(fams, k)})
			if err != nil {
				t.Fatal(err)
			}
			st.Append(s)
		}
		sig := analysis.SignalsFor(st, c.target, c.dependency, t0.UnixMilli(), t0.Add(10*time.Second).UnixMilli())
		latency := sig.MixedLatency.P50
		for _, e := range sig.Latency {
			q := e.V
			if q.P50.OK() {
				latency = q.P50
			}
		}
		signals := map[string]model.Value{
			"originals": sig.OriginalsPerS, "attempts": sig.AttemptsPerS, "amplification": sig.Amplification,
			"retries": sig.RetriesPerS, "rescued": sig.RescuedPerS, "budget_denied": sig.BudgetDeniedPerS,
			"admission": sig.AdmissionRejectedPerS, "results": sig.SuccessesPerS, "effective_success": sig.EffectiveSuccess,
			"active": sig.ActiveCalls, "limit": sig.ConcurrencyLimit, "pool_wait": sig.PoolWaitP50,
			"backoff": sig.BackoffP50, "latency": latency, "timeouts": sig.TimeoutsPerS,
			"budget_balance": sig.BudgetBalance, "max_attempts": sig.MaxAttempts,
			"provider_errors": sig.ProviderErrorsPerS, "temporary_errors": sig.TemporaryErrorsPerS,
			"attempt_success": sig.AttemptSuccess,
		}
		for _, n := range c.present {
			if !signals[n].OK() {
				t.Errorf("%s: %s absent, want present", c.fixture, n)
			}
		}
		for _, n := range c.absent {
			if v := signals[n]; v.OK() {
				t.Errorf("%s: %s = %v, want absent", c.fixture, n, v.V())
			}
		}
	}
}

// TestDerivedCountersMonotonic: a difference of counters that dips for a
// scrape is held, so analysis never sees a false reset; a real restart
// (the minuend goes down) passes through as a reset.
func TestDerivedCountersMonotonic(t *testing.T) {
	tr := dialect.Auto()
	retries := func(i int, requests, attempts, refused float64) float64 {
		t.Helper()
		fams := []model.Family{
			{Name: "haproxy_backend_http_requests_total", Type: model.Counter, Samples: []model.Sample{{Labels: model.LabelsFromPairs("proxy", "b"), Value: requests}}},
			{Name: "haproxy_backend_connection_attempts_total", Type: model.Counter, Samples: []model.Sample{{Labels: model.LabelsFromPairs("proxy", "b"), Value: attempts}}},
			{Name: "haproxy_backend_connection_errors_total", Type: model.Counter, Samples: []model.Sample{{Labels: model.LabelsFromPairs("proxy", "b"), Value: refused}}},
		}
		s, _, err := tr.Translate("", &model.Snapshot{Target: "h", Time: t0.Add(time.Duration(i) * time.Second), Families: fams})
		if err != nil {
			t.Fatal(err)
		}
		v, _ := sum(s, model.MetricRetries, dep, "b")
		return v
	}
	steps := []struct{ req, att, ref, want float64 }{
		{100, 110, 0, 10},
		{130, 125, 0, 10}, // 30 requests queued, not yet attempted: -5 held at 10
		{130, 145, 0, 15},
		{5, 6, 0, 1}, // HAProxy restarted: attempts went down, a reset
	}
	for i, st := range steps {
		if got := retries(i, st.req, st.att, st.ref); got != st.want {
			t.Errorf("step %d: retries = %v, want %v", i, got, st.want)
		}
	}
}

// TestMalformed: broken expositions fail in the parser with a clear error
// (the scrape is reported down, nothing is translated), and damaged
// series inside valid ones are skipped rather than read as zero.
func TestMalformed(t *testing.T) {
	b, _ := os.ReadFile("testdata/resilience4j_malformed.prom")
	if _, err := (expo.ExpfmtParser{}).Parse("r4j", b, "text/plain", nil); err == nil || !strings.Contains(err.Error(), "second HELP line") {
		t.Errorf("duplicate HELP: %v", err)
	}
	// A HAProxy dump without its last newline, as the netdata copy of a
	// HAProxy 2.3.10 dump is: the text format requires it.
	b, _ = os.ReadFile("testdata/haproxy_2.6.12.prom")
	cut := strings.TrimRight(string(b), "\n")
	if _, err := (expo.ExpfmtParser{}).Parse("ha", []byte(cut), "text/plain", nil); err == nil ||
		!strings.Contains(err.Error(), `target "ha"`) || !strings.Contains(err.Error(), "unexpected end of input stream") {
		t.Errorf("missing final newline: %v", err)
	}
	// Series without the dependency label, NaN counters, unknown kinds.
	fams := []model.Family{
		{Name: "envoy_cluster_upstream_rq_total", Type: model.Counter, Samples: []model.Sample{
			{Labels: model.LabelsFromPairs("envoy_cluster_name", "a"), Value: 10},
			{Labels: nil, Value: 5},
			{Labels: model.LabelsFromPairs("envoy_cluster_name", "nan"), Value: nan()},
		}},
		{Name: "envoy_cluster_upstream_rq_retry", Type: model.Counter, Samples: []model.Sample{
			{Labels: model.LabelsFromPairs("envoy_cluster_name", ""), Value: 3},
		}},
		// One completed response: "a" is an HTTP cluster, not a TCP proxy's.
		{Name: "envoy_cluster_upstream_rq_completed", Type: model.Counter, Samples: []model.Sample{
			{Labels: model.LabelsFromPairs("envoy_cluster_name", "a"), Value: 9},
		}},
		{Name: "resilience4j_retry_calls_total", Type: model.Counter, Samples: []model.Sample{
			{Labels: model.LabelsFromPairs("name", "x", "kind", "invented_kind"), Value: 7},
		}},
		{Name: "istio_requests_total", Type: model.Counter, Samples: []model.Sample{
			{Labels: model.LabelsFromPairs("reporter", "source", "response_code", "200"), Value: 4}, // no destination
		}},
	}
	for _, name := range []string{dialect.NameEnvoy, dialect.NameResilience4j, dialect.NameIstio} {
		d, _ := dialect.New(name)
		s := d.Translate(snapOf(fams))
		contractOnly(t, s)
		switch name {
		case dialect.NameEnvoy:
			want(t, s, 10, model.MetricAttempts, dep, "a")
			absent(t, s, model.MetricAttempts, dep, "nan")
			absent(t, s, model.MetricRetries)
		case dialect.NameResilience4j:
			absent(t, s, model.MetricOriginals)
		case dialect.NameIstio:
			absent(t, s, model.MetricOriginals)
		}
	}
	// A raw label named like a contract label is renamed, never read as one.
	fams = []model.Family{{Name: "haproxy_backend_http_requests_total", Type: model.Counter, Samples: []model.Sample{
		{Labels: model.LabelsFromPairs("proxy", "b", "outcome", "weird", "dependency", "spoof"), Value: 1},
	}}}
	d, _ := dialect.New(dialect.NameHAProxy)
	s := d.Translate(snapOf(fams))
	want(t, s, 1, model.MetricOriginals, dep, "b", "src_outcome", "weird", "src_dependency", "spoof", out, "!")
}

// target_info reaches the store whatever dialect translates the target,
// so analysis can name it.
func TestTargetInfoCarriedThrough(t *testing.T) {
	fams := load(t, "grpc_go_otel.prom")
	out, name, err := dialect.Auto().Translate("", &model.Snapshot{Target: "g", Time: t0, Families: fams})
	if err != nil || name == "" {
		t.Fatalf("translate: %v, dialect %q", err, name)
	}
	n := 0
	for _, f := range out.Families {
		if f.Name == model.MetricTargetInfo {
			n++
			if len(f.Samples) == 0 || f.Samples[0].Labels.Get("service_name") == "" {
				t.Errorf("target_info without service_name: %+v", f.Samples)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d target_info families after %s's translation, want 1", n, name)
	}
}
