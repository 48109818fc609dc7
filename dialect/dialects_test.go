package dialect_test

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
)

const (
	dep = model.LabelDependency
	out = model.LabelOutcome
	res = model.LabelResult
	rsn = model.LabelReason
	rcl = model.LabelResultClass
)

func TestEnvoy(t *testing.T) {
	s := translate(t, dialect.NameEnvoy, "envoy.prom")
	contractOnly(t, s)
	p := []string{dep, "payments"}
	want(t, s, 1000, model.MetricOriginals, p...)
	want(t, s, 1180, model.MetricAttempts, p...)
	want(t, s, 20, model.MetricAttempts, append(p, out, model.OutcomeTimeout)...)
	want(t, s, 1160, model.MetricAttempts, append(p, out, "!")...)
	want(t, s, 190, model.MetricRetries, p...)
	want(t, s, 150, model.MetricRescued, p...)
	want(t, s, 12, model.MetricBudgetDenied, p...)
	want(t, s, 8, model.MetricRetryLimitExceeded, p...)
	want(t, s, 5, model.MetricRequestTimeouts, p...)
	want(t, s, 30, model.MetricAdmissionRejected, append(p, rsn, "queue")...)
	want(t, s, 7, model.MetricActiveCalls, p...)
	want(t, s, 3, model.MetricPendingCalls, p...)
	h := histogramOf(t, s, model.MetricRequestDuration, p...)
	if h.Count != 965 || math.Abs(h.Sum-25) > 1e-9 {
		t.Errorf("request duration count/sum = %v/%v, want 965/25 s (25000 ms)", h.Count, h.Sum)
	}
	if got := bucketAt(t, h, 0.005); got != 200 { // le="5" ms
		t.Errorf("bucket le=0.005 s = %v, want 200", got)
	}
	if got := bucketAt(t, h, 3600); got != 965 { // le="3600000" ms
		t.Errorf("bucket le=3600 s = %v, want 965", got)
	}
	// A cluster whose dynamic stats do not exist yet: attempts 0, but no
	// originals (upstream_rq_completed is created on first use).
	i := []string{dep, "inventory"}
	want(t, s, 0, model.MetricAttempts, i...)
	absent(t, s, model.MetricOriginals, i...)
	absent(t, s, model.MetricRequestDuration, i...)
	// What Envoy cannot tell is absent, for every cluster.
	for _, f := range []string{model.MetricResults, model.MetricPoolWait, model.MetricConcurrencyLimit,
		model.MetricBackoff, model.MetricBudgetBalance, model.MetricPolicyMaxAttempts, model.MetricAttemptDuration} {
		absent(t, s, f)
	}
	// The downstream listener stats name no cluster: not a dependency.
	absent(t, s, model.MetricOriginals, dep, "ingress_http")
}

// TestEnvoyTrackRemaining: with track_remaining, the retries the
// default-priority breaker still allows are the budget balance (the high
// priority's are not read); without it the balance stays absent
// (TestEnvoy).
func TestEnvoyTrackRemaining(t *testing.T) {
	s := translate(t, dialect.NameEnvoy, "envoy_track_remaining.prom")
	contractOnly(t, s)
	want(t, s, 2, model.MetricBudgetBalance, dep, "payments")
	want(t, s, 3, model.MetricBudgetBalance, dep, "inventory")
	want(t, s, 12, model.MetricBudgetDenied, dep, "payments") // the same breaker's overflow
	// Through analysis: an exported balance, not a reconstructed one.
	sig := windowSignals(t, load(t, "envoy_track_remaining.prom"), "payments")
	if b := sig.BudgetBalance; !b.OK() || b.V() != 2 {
		t.Errorf("budget balance = %+v, want 2", b)
	}
}

func TestEnvoySummaryHistograms(t *testing.T) {
	s := translate(t, dialect.NameEnvoy, "envoy_summary.prom")
	h := histogramOf(t, s, model.MetricRequestDuration, dep, "payments")
	if h.Count != 10 || math.Abs(h.Sum-0.12) > 1e-12 || len(h.Buckets) != 1 || !math.IsInf(h.Buckets[0].UpperBound, 1) {
		t.Errorf("summary -> %+v, want count 10, sum 0.12 s, only the +Inf bucket", h)
	}
}

func TestIstio(t *testing.T) {
	s := translate(t, dialect.NameIstio, "istio_sidecar.prom")
	contractOnly(t, s)
	r := []string{dep, "reviews.default.svc.cluster.local"}
	// Originals and results from istio_requests_total{reporter="source"}.
	want(t, s, 930, model.MetricOriginals, r...)
	want(t, s, 910, model.MetricResults, append(r, res, model.ResultSuccess)...) // 200 + 404
	want(t, s, 11, model.MetricResults, append(r, res, model.ResultProviderError)...)
	want(t, s, 4, model.MetricResults, append(r, res, model.ResultCapacityRejected)...)
	want(t, s, 3, model.MetricResults, append(r, res, model.ResultDeadlineExhausted)...)
	want(t, s, 2, model.MetricResults, append(r, res, model.ResultCancelled)...)
	want(t, s, 0, model.MetricResults, append(r, res, model.ResultBudgetExhausted)...)
	want(t, s, 4, model.MetricAdmissionRejected, append(r, rsn, "concurrency")...)
	// Who the sidecar is: the source of what it sent (productpage), in its
	// namespace, for the linker to tie callers' reviews.default.svc... to
	// the reviews sidecar in the same way.
	want(t, s, 1, model.MetricTargetInfo, "service_name", "productpage", "service_namespace", "default")
	// Attempts and retry counters from the Istio-form cluster stats of
	// outbound|9080||reviews..., named by the same FQDN.
	want(t, s, 1010, model.MetricAttempts, r...)
	want(t, s, 80, model.MetricRetries, r...)
	want(t, s, 70, model.MetricRescued, r...)
	want(t, s, 4, model.MetricBudgetDenied, r...)
	want(t, s, 6, model.MetricRetryLimitExceeded, r...)
	want(t, s, 2, model.MetricActiveCalls, r...)
	// Envoy's pending overflow is not added again: the UO flag counted it.
	want(t, s, 4, model.MetricAdmissionRejected, r...)
	// Latency per result class, milliseconds to seconds.
	ok := histogramOf(t, s, model.MetricRequestDuration, append(r, rcl, model.ClassSuccess)...)
	if ok.Count != 900 || math.Abs(ok.Sum-13.5) > 1e-9 || bucketAt(t, ok, 0.01) != 450 {
		t.Errorf("success latency = %+v", ok)
	}
	ff := histogramOf(t, s, model.MetricRequestDuration, append(r, rcl, model.ClassFastFailure)...)
	if ff.Count != 4 {
		t.Errorf("fast-failure latency count = %v, want 4 (UO)", ff.Count)
	}
	// reporter="destination": requests this workload received, as the
	// server-side family without a dependency.
	want(t, s, 930, model.MetricServerReceived)
	absent(t, s, model.MetricOriginals, dep, "productpage.default.svc.cluster.local")
	// Istio's own clusters keep their names.
	want(t, s, 2, model.MetricAttempts, dep, "xds-grpc")
	absent(t, s, model.MetricOriginals, dep, "xds-grpc") // originals only from istio_requests_total
	absent(t, s, model.MetricPoolWait)
}

func TestLinkerdPolicy(t *testing.T) {
	s := translate(t, dialect.NameLinkerd, "linkerd_policy.prom")
	contractOnly(t, s)
	b := []string{dep, "books"}
	want(t, s, 980, model.MetricOriginals, b...)
	want(t, s, 900, model.MetricResults, append(b, res, model.ResultSuccess)...)
	want(t, s, 40, model.MetricResults, append(b, res, model.ResultProviderError)...)
	want(t, s, 30, model.MetricResults, append(b, res, model.ResultCapacityRejected)...)
	want(t, s, 8, model.MetricResults, append(b, res, model.ResultDeadlineExhausted)...)
	want(t, s, 2, model.MetricResults, append(b, res, model.ResultCancelled)...)
	want(t, s, 30, model.MetricAdmissionRejected, append(b, rsn, "queue")...)
	want(t, s, 1200, model.MetricAttempts, b...)
	want(t, s, 900, model.MetricAttempts, append(b, out, model.OutcomeSuccess)...)
	want(t, s, 270, model.MetricAttempts, append(b, out, model.OutcomeTemporaryError)...)
	want(t, s, 20, model.MetricAttempts, append(b, out, model.OutcomeTimeout)...)
	want(t, s, 262, model.MetricRetries, b...)
	want(t, s, 200, model.MetricRescued, b...)
	want(t, s, 40, model.MetricRetryLimitExceeded, b...)
	want(t, s, 3, model.MetricBudgetDenied, b...)
	want(t, s, 4, model.MetricPendingCalls, b...)
	// Route labels are kept as the series' identity.
	want(t, s, 980, model.MetricOriginals, append(b, "route_name", "books-put")...)
	pw := histogramOf(t, s, model.MetricPoolWait, b...)
	if pw.Count != 1200 || bucketAt(t, pw, 0.005) != 1150 {
		t.Errorf("pool wait = %+v", pw)
	}
	rd := histogramOf(t, s, model.MetricRequestDuration, b...)
	if rd.Count != 978 || bucketAt(t, rd, 0.05) != 700 || rd.Labels.Has(rcl) {
		t.Errorf("request duration = %+v (not split by result)", rd)
	}
	absent(t, s, model.MetricActiveCalls)
	absent(t, s, model.MetricConcurrencyLimit)
}

func TestLinkerdLegacy(t *testing.T) {
	s := translate(t, dialect.NameLinkerd, "linkerd_legacy.prom")
	contractOnly(t, s)
	b := []string{dep, "books.booksapp.svc.cluster.local:7002"}
	want(t, s, 400, model.MetricOriginals, b...)
	// Who the proxy is, from the deployment and namespace labels.
	want(t, s, 1, model.MetricTargetInfo, "service_name", "webapp", "service_namespace", "booksapp")
	want(t, s, 380, model.MetricResults, append(b, res, model.ResultSuccess)...)
	want(t, s, 20, model.MetricResults, append(b, res, model.ResultProviderError)...)
	want(t, s, 520, model.MetricAttempts, b...)
	want(t, s, 140, model.MetricAttempts, append(b, out, model.OutcomeTemporaryError)...)
	want(t, s, 120, model.MetricRetries, b...) // actual 520 - effective 400
	want(t, s, 15, model.MetricBudgetDenied, b...)
	h := histogramOf(t, s, model.MetricRequestDuration, b...)
	if h.Count != 380 || math.Abs(h.Sum-19) > 1e-9 || bucketAt(t, h, 0.1) != 370 {
		t.Errorf("latency = %+v, want ms scaled to s", h)
	}
	// The inbound route is this pod serving, not a dependency.
	absent(t, s, model.MetricOriginals, dep, "webapp.booksapp.svc.cluster.local:7000")
	absent(t, s, model.MetricRescued)
	absent(t, s, model.MetricRetryLimitExceeded)
}

func TestHAProxyFixture(t *testing.T) {
	// A real HAProxy 2.6.12 dump (see haproxy_integration_test.go for the
	// setup) after 1200 requests: 710 OK, 7 final provider 503s, 483
	// refused in the queue; 876 reached the provider, 166 of them 503.
	s := translate(t, dialect.NameHAProxy, "haproxy_2.6.12.prom")
	contractOnly(t, s)
	p := []string{dep, "provider"}
	want(t, s, 1200, model.MetricOriginals, p...)
	want(t, s, 876, model.MetricAttempts, p...)
	want(t, s, 483, model.MetricAdmissionRejected, append(p, rsn, "queue")...)
	want(t, s, 159, model.MetricRetries, p...) // 166 provider 503s - 7 final
	want(t, s, 710, model.MetricResults, append(p, res, model.ResultSuccess)...)
	want(t, s, 483, model.MetricResults, append(p, res, model.ResultCapacityRejected)...)
	want(t, s, 7, model.MetricResults, append(p, res, model.ResultProviderError)...)
	want(t, s, 4, model.MetricConcurrencyLimit, p...)
	want(t, s, 0.077, model.MetricPoolWaitAverage, p...)
	want(t, s, 0, model.MetricPendingCalls, p...)
	// Frontends are not dependencies; the stats proxies have no servers.
	absent(t, s, model.MetricOriginals, dep, "fe")
	for _, f := range []string{model.MetricRescued, model.MetricBudgetDenied, model.MetricRetryLimitExceeded,
		model.MetricPoolWait, model.MetricRequestDuration, model.MetricAttemptDuration} {
		absent(t, s, f)
	}
}

func TestGRPCFixture(t *testing.T) {
	// Real grpc-go 1.85.0 + OTel Prometheus exporter 0.69.0 output after 20
	// calls with 6 injected UNAVAILABLE attempts, all rescued.
	s := translate(t, dialect.NameGRPC, "grpc_go_otel.prom")
	contractOnly(t, s)
	g := []string{dep, "dns:///127.0.0.1:50051"}
	want(t, s, 20, model.MetricOriginals, g...)
	want(t, s, 26, model.MetricAttempts, g...)
	want(t, s, 6, model.MetricAttempts, append(g, out, model.OutcomeTemporaryError)...)
	want(t, s, 0, model.MetricAttempts, append(g, out, model.OutcomeTimeout)...)
	want(t, s, 6, model.MetricRetries, g...)
	want(t, s, 20, model.MetricResults, append(g, res, model.ResultSuccess)...)
	want(t, s, 0, model.MetricResults, append(g, res, model.ResultProviderError)...)
	want(t, s, 20, model.MetricOriginals, append(g, "grpc_method", "grpc.health.v1.Health/Check")...)
	h := histogramOf(t, s, model.MetricRequestDuration, append(g, rcl, model.ClassSuccess)...)
	if h.Count != 20 {
		t.Errorf("call duration count = %v", h.Count)
	}
	for _, f := range []string{model.MetricRescued, model.MetricBudgetDenied, model.MetricAdmissionRejected,
		model.MetricActiveCalls, model.MetricPoolWait} {
		absent(t, s, f)
	}
}

func TestGRPCUTF8Names(t *testing.T) {
	s := translate(t, dialect.NameGRPC, "grpc_utf8.prom")
	contractOnly(t, s)
	g := []string{dep, "dns:///echo:50051"}
	want(t, s, 32, model.MetricOriginals, g...)
	want(t, s, 34, model.MetricAttempts, append(g, out, "!")...) // attempts started, no outcome
	want(t, s, 2, model.MetricResults, append(g, res, model.ResultDeadlineExhausted)...)
	want(t, s, 32, model.MetricOriginals, append(g, "grpc_method", "echo.Echo/UnaryEcho")...)
	// Without completed attempts the retries cannot be derived.
	absent(t, s, model.MetricRetries)
	fail := histogramOf(t, s, model.MetricRequestDuration, append(g, rcl, model.ClassFailure)...)
	if fail.Count != 2 {
		t.Errorf("failure latency count = %v", fail.Count)
	}
}

func TestResilience4j(t *testing.T) {
	s := translate(t, dialect.NameResilience4j, "resilience4j_spring.prom")
	contractOnly(t, s)
	i := []string{dep, "inventory"}
	want(t, s, 1000, model.MetricOriginals, i...)
	want(t, s, 960, model.MetricResults, append(i, res, model.ResultSuccess)...)
	want(t, s, 25, model.MetricResults, append(i, res, model.ResultProviderError)...)
	want(t, s, 15, model.MetricResults, append(i, res, model.ResultPermanentError)...)
	want(t, s, 90, model.MetricRescued, i...)
	want(t, s, 25, model.MetricRetryLimitExceeded, i...)
	want(t, s, 14, model.MetricAdmissionRejected, append(i, rsn, "circuit_open")...)
	want(t, s, 10, model.MetricConcurrencyLimit, i...)
	want(t, s, 3, model.MetricActiveCalls, i...)
	want(t, s, 1000, model.MetricOriginals, append(i, "application", "order")...)
	// Attempts and retries are not exported by the Micrometer binder.
	for _, f := range []string{model.MetricAttempts, model.MetricRetries, model.MetricBudgetDenied,
		model.MetricRequestDuration, model.MetricPoolWait} {
		absent(t, s, f)
	}
}

func TestResilience4jOldGauges(t *testing.T) {
	s := translate(t, dialect.NameResilience4j, "resilience4j_old.prom")
	contractOnly(t, s)
	a := []string{dep, "backendA"}
	want(t, s, 114, model.MetricOriginals, a...)
	if f := family(s, model.MetricOriginals); f == nil || f.Type != model.Counter {
		t.Errorf("originals from the pre-1.3 gauge must be a counter: %+v", f)
	}
	want(t, s, 10, model.MetricRescued, a...)
	want(t, s, 6, model.MetricAdmissionRejected, append(a, rsn, "circuit_open")...)
}

func TestPools(t *testing.T) {
	s := translate(t, dialect.NamePools, "resilience4j_spring.prom")
	contractOnly(t, s)
	h := histogramOf(t, s, model.MetricPoolWait, dep, "HikariPool-1")
	if h.Count != 3000 || h.Sum != 1.5 || len(h.Buckets) != 1 {
		t.Errorf("Micrometer acquire timer -> %+v, want count 3000, sum 1.5, +Inf only", h)
	}
	want(t, s, 2, model.MetricPendingCalls, dep, "HikariPool-1")
	want(t, s, 3, model.MetricAdmissionRejected, dep, "HikariPool-1", rsn, "queue")
	absent(t, s, model.MetricOriginals)

	n := translate(t, dialect.NamePools, "pools_hikari_native.prom")
	h = histogramOf(t, n, model.MetricPoolWait, dep, "db")
	if h.Count != 100 || math.Abs(h.Sum-0.005) > 1e-15 {
		t.Errorf("native tracker (ns) -> count %v sum %v, want 100 and 0.005 s", h.Count, h.Sum)
	}
	want(t, n, 1, model.MetricPendingCalls, dep, "db")
	want(t, n, 2, model.MetricAdmissionRejected, dep, "db")

	g := translate(t, dialect.NamePools, "pools_gosql.prom")
	h = histogramOf(t, g, model.MetricPoolWait, dep, "orders")
	if h.Count != 40 || h.Sum != 2 {
		t.Errorf("database/sql -> %+v, want 40 waits, 2 s", h)
	}
	absent(t, g, model.MetricPendingCalls) // database/sql has no "waiting now" gauge
	absent(t, g, model.MetricOriginals)    // the contract family is native's
}

func TestPoolsAttach(t *testing.T) {
	tr, err := dialect.NewTranslator(dialect.Config{PoolDependency: map[string]string{"orders": "shipping-quote"}})
	if err != nil {
		t.Fatal(err)
	}
	s, name, err := tr.Translate("", snapOf(load(t, "pools_gosql.prom")))
	if err != nil || name != "pools+native" {
		t.Fatalf("Translate: %q, %v", name, err)
	}
	h := histogramOf(t, s, model.MetricPoolWait, dep, "shipping-quote")
	if h.Count != 40 || h.Labels.Has("db_name") {
		t.Errorf("attached pool = %+v", h)
	}
	// The native contract families pass through next to it.
	want(t, s, 40, model.MetricOriginals, dep, "shipping-quote")
}

func TestNativeIsIdentity(t *testing.T) {
	fams := load(t, "pools_gosql.prom")
	d, _ := dialect.New(dialect.NameNative)
	in := snapOf(fams)
	if got := d.Translate(in); got != in {
		t.Error("native Translate is not the identity")
	}
}

func TestCustom(t *testing.T) {
	m := dialect.Mapping{
		Name:            "acme",
		DependencyLabel: "upstream",
		Signals: []dialect.Signal{
			{Family: model.MetricOriginals, Metric: "acme_calls_total"},
			{Family: model.MetricAttempts, Metric: "acme_tries_total", Match: []string{`status=~"5.."`},
				Labels: map[string]string{model.LabelOutcome: model.OutcomeTemporaryError}},
			{Family: model.MetricAttempts, Metric: "acme_tries_total", Match: []string{`status!~"5.."`},
				Labels: map[string]string{model.LabelOutcome: model.OutcomeSuccess}},
			{Family: model.MetricRequestDuration, Metric: "acme_call_latency_ms", Scale: 0.001},
		},
	}
	tr, err := dialect.NewTranslator(dialect.Config{Custom: []dialect.Mapping{m}})
	if err != nil {
		t.Fatal(err)
	}
	s, name, err := tr.Translate("", snapOf(load(t, "custom_acme.prom")))
	if err != nil || name != "acme" {
		t.Fatalf("Translate: %q, %v", name, err)
	}
	contractOnly(t, s)
	want(t, s, 100, model.MetricOriginals, dep, "billing")
	want(t, s, 50, model.MetricOriginals, dep, "search")
	want(t, s, 30, model.MetricAttempts, dep, "billing", out, model.OutcomeTemporaryError)
	want(t, s, 95, model.MetricAttempts, dep, "billing", out, model.OutcomeSuccess)
	want(t, s, 125, model.MetricAttempts, dep, "billing")
	h := histogramOf(t, s, model.MetricRequestDuration, dep, "billing")
	if h.Sum != 4 || bucketAt(t, h, 0.01) != 50 {
		t.Errorf("latency = %+v, want ms scaled to s", h)
	}
	absent(t, s, model.MetricRetries)

	// Without the mapping, nothing knows this emitter: stored as it is.
	in := snapOf(load(t, "custom_acme.prom"))
	got, name, err := dialect.Auto().Translate("", in)
	if err != nil || name != "" || got != in {
		t.Errorf("Auto on an unknown emitter: %q, %v, changed=%v", name, err, got != in)
	}
}

func TestCustomInvalid(t *testing.T) {
	base := func() dialect.Mapping {
		return dialect.Mapping{Name: "x", DependencyLabel: "d",
			Signals: []dialect.Signal{{Family: model.MetricOriginals, Metric: "m"}}}
	}
	cases := map[string]func(*dialect.Mapping){
		"built-in name":  func(m *dialect.Mapping) { m.Name = dialect.NameEnvoy },
		"bad name":       func(m *dialect.Mapping) { m.Name = "1x" },
		"no dependency":  func(m *dialect.Mapping) { m.DependencyLabel = "" },
		"no signals":     func(m *dialect.Mapping) { m.Signals = nil },
		"not contract":   func(m *dialect.Mapping) { m.Signals[0].Family = "http_requests_total" },
		"no metric":      func(m *dialect.Mapping) { m.Signals[0].Metric = "" },
		"bad matcher":    func(m *dialect.Mapping) { m.Signals[0].Match = []string{"status"} },
		"bad regexp":     func(m *dialect.Mapping) { m.Signals[0].Match = []string{`status=~"(("`} },
		"set dependency": func(m *dialect.Mapping) { m.Signals[0].Labels = map[string]string{dep: "x"} },
		"negative scale": func(m *dialect.Mapping) { m.Signals[0].Scale = -1 },
	}
	for name, mutate := range cases {
		m := base()
		mutate(&m)
		if _, err := dialect.NewTranslator(dialect.Config{Custom: []dialect.Mapping{m}}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	twice := []dialect.Mapping{base(), base()}
	if _, err := dialect.NewTranslator(dialect.Config{Custom: twice}); err == nil {
		t.Error("duplicate custom dialect accepted")
	}
	if _, err := dialect.NewTranslator(dialect.Config{Custom: []dialect.Mapping{base()}}); err != nil {
		t.Errorf("valid mapping refused: %v", err)
	}
}

func TestParseMappings(t *testing.T) {
	cfg := []byte(`
targets:
  - url: http://127.0.0.1:9100/metrics
dialects:
  - name: acme
    dependency_label: upstream
    signals:
      - family: retry_originals_total
        metric: acme_calls_total
      - family: retry_attempts_total
        metric: acme_tries_total
        match: ['status=~"5.."']
        labels: {outcome: temporary_error}
      - family: retry_request_duration_seconds
        metric: acme_call_latency_ms
        scale: 0.001
`)
	ms, err := dialect.ParseMappings("retrytop.yaml", cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := dialect.NewTranslator(dialect.Config{Custom: ms})
	if err != nil {
		t.Fatal(err)
	}
	s, name, err := tr.Translate("", snapOf(load(t, "custom_acme.prom")))
	if err != nil || name != "acme" {
		t.Fatalf("%q, %v", name, err)
	}
	want(t, s, 30, model.MetricAttempts, dep, "billing", out, model.OutcomeTemporaryError)
	if h := histogramOf(t, s, model.MetricRequestDuration, dep, "billing"); h.Sum != 4 {
		t.Errorf("scale not applied: sum %v", h.Sum)
	}
	if ms, err := dialect.ParseMappings("x", []byte("targets: []\n")); err != nil || ms != nil {
		t.Errorf("no dialects section: %v, %v", ms, err)
	}
	for _, bad := range []string{
		"dialects:\n  - name: a\n    dependency_lable: x\n    signals: [{family: retry_originals_total, metric: m}]\n",
		"dialects:\n  - name: a\n    dependency_label: x\n    signals: [{family: retry_originals, metric: m}]\n",
		"dialects: [\n",
	} {
		if _, err := dialect.ParseMappings("bad.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
			t.Errorf("accepted or unnamed error for %q: %v", bad, err)
		}
	}
}

// The server side of HAProxy, on a real 2.6.12 dump taken under load
// (testdata/service_haproxy_2.6.12.1.prom, header says the setup): what the
// frontends received and answered, the servers' sessions and maxconn as
// the execution slots, and the queue, backend plus servers.
func TestHAProxyServerSide(t *testing.T) {
	s := translate(t, dialect.NameHAProxy, "service_haproxy_2.6.12.1.prom")
	contractOnly(t, s)
	want(t, s, 26, model.MetricServerReceived, "proxy", "fe")
	want(t, s, 1, model.MetricServerReceived, "proxy", "prometheus") // this very scrape
	want(t, s, 9, model.MetricServiceResponses, "proxy", "fe", model.LabelCode, "2xx")
	want(t, s, 1, model.MetricServiceResponses, "proxy", "fe", model.LabelCode, "5xx")
	want(t, s, 0, model.MetricServiceResponses, "proxy", "fe", model.LabelCode, "other")
	want(t, s, 10, model.MetricServiceResponses, "proxy", "fe")
	want(t, s, 2, model.MetricServiceInFlight, "proxy", "provider", "server", "p1")
	want(t, s, 5, model.MetricServiceInFlight)
	want(t, s, 9, model.MetricServiceQueueDepth, "proxy", "provider", "server", "!")
	want(t, s, 2, model.MetricServiceQueueDepth, "proxy", "pinned", "server", "q1")
	want(t, s, 11, model.MetricServiceQueueDepth)
	want(t, s, 4, model.MetricServiceSlots, "proxy", "provider")
	want(t, s, 1, model.MetricServiceSlots, "proxy", "pinned")
	// Averages and a per-server maxqueue are no window quantile, mean or
	// queue limit; HAProxy counts no cancellation or Retry-After apart.
	for _, f := range []string{model.MetricServiceQueueLimit, model.MetricServiceQueueOldestAge, model.MetricServiceQueueWait,
		model.MetricServerServiceTime, model.MetricServiceCancelled, model.MetricServerWorkAfterCancel,
		model.MetricServiceRejected, model.MetricServiceErrorsInjected, model.MetricServiceCompleted} {
		absent(t, s, f)
	}
	// The client side is unchanged by it: the queue HAProxy keeps for its
	// backend is still that dependency's pending calls.
	want(t, s, 9, model.MetricPendingCalls, dep, "provider")
}

// Slots are the sum of every server's maxconn, and absent as soon as one
// server has none: a sum that leaves an unlimited server out would read as
// a smaller limit.
func TestHAProxySlotsNeedEveryMaxconn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits string
		want   float64 // NaN: absent
	}{
		{"all limited", "haproxy_server_limit_sessions{proxy=\"a\",server=\"s1\"} 2\nhaproxy_server_limit_sessions{proxy=\"b\",server=\"s2\"} 3\n", 5},
		{"one unlimited (NaN)", "haproxy_server_limit_sessions{proxy=\"a\",server=\"s1\"} 2\nhaproxy_server_limit_sessions{proxy=\"b\",server=\"s2\"} NaN\n", nan()},
		{"one unlimited (0)", "haproxy_server_limit_sessions{proxy=\"a\",server=\"s1\"} 2\nhaproxy_server_limit_sessions{proxy=\"b\",server=\"s2\"} 0\n", nan()},
		{"no server", "", nan()},
	} {
		text := "# TYPE haproxy_backend_http_requests_total counter\nhaproxy_backend_http_requests_total{proxy=\"a\"} 1\n" +
			"# TYPE haproxy_server_limit_sessions gauge\n" + tc.limits
		fams, err := expo.ExpfmtParser{}.Parse(tc.name, []byte(text), "text/plain; version=0.0.4", nil)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := dialect.New(dialect.NameHAProxy)
		s := d.Translate(snapOf(fams))
		if math.IsNaN(tc.want) {
			absent(t, s, model.MetricServiceSlots)
		} else {
			want(t, s, tc.want, model.MetricServiceSlots)
		}
	}
}

// The server side of Envoy: the HTTP connection managers' downstream
// stats, the admin listener left out.
func TestEnvoyInbound(t *testing.T) {
	s := translate(t, dialect.NameEnvoy, "service_envoy_inbound.1.prom")
	contractOnly(t, s)
	hcm := []string{"envoy_http_conn_manager_prefix", "ingress_http"}
	want(t, s, 1000, model.MetricServerReceived, hcm...)
	want(t, s, 1000, model.MetricServerReceived) // not the admin listener's 50
	want(t, s, 9, model.MetricServiceInFlight)
	want(t, s, 900, model.MetricServiceResponses, append(hcm, model.LabelCode, "2xx")...)
	want(t, s, 40, model.MetricServiceResponses, append(hcm, model.LabelCode, "4xx")...)
	want(t, s, 50, model.MetricServiceResponses, append(hcm, model.LabelCode, "5xx")...)
	want(t, s, 990, model.MetricServiceResponses)
	absent(t, s, model.MetricServiceResponses, "envoy_response_code_class", "2") // consumed
	h := histogramOf(t, s, model.MetricServerServiceTime, hcm...)
	if h.Count != 1000 || math.Abs(h.Sum-30) > 1e-9 || bucketAt(t, h, 0.025) != 500 || bucketAt(t, h, 0.1) != 990 {
		t.Errorf("downstream rq time = %+v, want 1000 in seconds, 500 by 25 ms, 990 by 100 ms, sum 30 s", h)
	}
	// Downstream resets count resets Envoy sent as well as received: no
	// cancellation; the cluster's pending queue is a dependency's.
	for _, f := range []string{model.MetricServiceCancelled, model.MetricServiceSlots, model.MetricServiceQueueDepth,
		model.MetricServiceQueueLimit, model.MetricServiceQueueWait, model.MetricServiceRejected, model.MetricServerWorkAfterCancel} {
		absent(t, s, f)
	}
	want(t, s, 3, model.MetricPendingCalls, dep, "local_service")
	// The older fixture: only downstream_rq_total, one listener and admin.
	old := translate(t, dialect.NameEnvoy, "envoy.prom")
	want(t, old, 1000, model.MetricServerReceived)
	absent(t, old, model.MetricServiceInFlight)
}

// TestServiceSignalsFromExpositions runs two scrapes of each service shape
// the way the scraper does (parse with the translator's filter, translate,
// store) and checks every service signal by value, absent ones included:
// the families must survive the filter and the translation, and mean the
// same thing to analysis whoever emitted them.
func TestServiceSignalsFromExpositions(t *testing.T) {
	type want = map[string]float64 // signal -> value; missing: absent
	for _, tc := range []struct {
		fixture, dialect, source string
		want                     want
	}{
		{"service_sim_provider", "native", model.ServiceSourceSim, want{
			"received": 50, "in_flight": 4, "slots": 4, "queue_depth": 40, "queue_limit": 0, "oldest": 1.3,
			"wait_p99": 0.995, "wait_mean": 0.8, "svc_p50": 0.11, "svc_p99": 0.1198,
			"2xx": 20, "429": 0, "503": 0, "503ra": 0, "other5xx": 0, "5xx": 0, "wac": 10, "cancelled": 3,
		}},
		{"service_promhttp", "", model.ServiceSourcePromHTTP, want{
			"received": 64, "in_flight": 7,
			"svc_p50": 0.025 + 0.025*58/100, "svc_p99": 0.5 + 0.5*20.72/22,
			"ok_p50": 0.025 + 0.025*49/100, "ok_p99": 0.025 + 0.025*98.98/100,
			"err_p50": 0.5 + 0.5*9/22, "err_p99": 0.5 + 0.5*21.74/22,
			"2xx": 50, "429": 2, "503": 10, "other5xx": 1, "5xx": 11,
		}},
		{"service_otel_http", "", model.ServiceSourceOTel, want{
			"received": 26, "in_flight": 5,
			"svc_p50": 0.05 + 0.025*24/40, "svc_p99": 0.25 + 0.25*9.48/10,
			"ok_p50": 0.0625, "ok_p99": 0.05 + 0.025*0.99,
			"err_p50": 0.25 + 0.25*4/10, "err_p99": 0.25 + 0.25*9.88/10,
			"2xx": 20, "429": 1, "503": 5, "other5xx": 0, "5xx": 5,
		}},
		// Real dumps 2 s apart: frontends fe (+17) and prometheus (+1, the
		// scrapes); 2xx +17 and +1, 5xx +3; at the second scrape 5
		// sessions on 5 maxconn, 7 queued in backend provider and 1 on
		// server q1. Classes only: 429, 503 and other 5xx are absent.
		{"service_haproxy_2.6.12", "haproxy", model.ServiceSourceSim, want{
			"received": 9, "in_flight": 5, "slots": 5, "queue_depth": 8, "2xx": 9, "5xx": 1.5,
		}},
		{"service_envoy_inbound", "envoy", model.ServiceSourceSim, want{
			"received": 100, "in_flight": 12, "svc_p50": 0.025, "svc_p99": 0.095, "2xx": 80, "5xx": 15,
		}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			tr := dialect.Auto()
			st := model.NewStore(model.StoreConfig{})
			for i := 1; i <= 2; i++ {
				name := tc.fixture + "." + strconv.Itoa(i) + ".prom"
				b, err := os.ReadFile(filepath.Join("testdata", name))
				if err != nil {
					t.Fatal(err)
				}
				fams, err := expo.ExpfmtParser{}.Parse(name, b, "text/plain; version=0.0.4", tr.Filter)
				if err != nil {
					t.Fatal(err)
				}
				snap := &model.Snapshot{Target: "svc", Time: t0.Add(time.Duration(i-1) * 2 * time.Second), Families: fams}
				out, got, err := tr.Translate("", snap)
				if err != nil || got != tc.dialect {
					t.Fatalf("scrape %d: dialect %q (%v), want %q", i, got, err, tc.dialect)
				}
				st.Append(out)
			}
			if got := analysis.Services(st); len(got) != 1 || got[0] != "svc" {
				t.Fatalf("services %v; stored %v", got, st.Names("svc"))
			}
			s := analysis.ServiceSignalsFor(st, "svc", t0.UnixMilli(), t0.UnixMilli()+2000)
			if s.Source != tc.source {
				t.Errorf("source %q, want %q", s.Source, tc.source)
			}
			for name, v := range map[string]model.Value{
				"received": s.ReceivedPerS, "in_flight": s.InFlight, "slots": s.Slots,
				"queue_depth": s.QueueDepth, "queue_limit": s.QueueLimit, "oldest": s.QueueOldestAge,
				"wait_p99": s.QueueWaitP99, "wait_mean": s.QueueWaitMean,
				"svc_p50": s.ServiceTimeP50, "svc_p99": s.ServiceTimeP99,
				"ok_p50": s.SuccessServiceTimeP50, "ok_p99": s.SuccessServiceTimeP99,
				"err_p50": s.ErrorServiceTimeP50, "err_p99": s.ErrorServiceTimeP99,
				"2xx": s.Responses2xxPerS, "429": s.Responses429PerS, "503": s.Responses503PerS,
				"503ra": s.Responses503RetryAfterPerS, "other5xx": s.ResponsesOther5xxPerS, "5xx": s.Responses5xxPerS,
				"wac": s.WorkAfterCancelPerS, "cancelled": s.CancelledPerS,
			} {
				w, ok := tc.want[name]
				switch {
				case !ok && v.OK():
					t.Errorf("%s = %v, want absent", name, v.V())
				case ok && !v.OK():
					t.Errorf("%s absent, want %v", name, w)
				case ok && math.Abs(v.V()-w) > 1e-9*math.Max(1, math.Abs(w)):
					t.Errorf("%s = %v, want %v", name, v.V(), w)
				}
			}
		})
	}
}
