package dialect_test

import (
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
)

// TestCustomSetsAsideBuiltin: a user's mapping that reads the families a
// built-in dialect reads on the same target wins over it, so each request
// is read once, and the translator says which dialect it set aside and
// why. The mapping copies one raw family into attempts: the translated
// attempts are that family's sum in the fixture (counted by hand), and the
// originals the built-in would have added are absent.
func TestCustomSetsAsideBuiltin(t *testing.T) {
	for _, c := range []struct {
		builtin, fixture, metric string
		attempts                 float64 // the raw family's sum in the fixture
	}{
		{dialect.NameTraefik, "traefik.prom", "traefik_service_requests_total", 987},
		{dialect.NameEnvoy, "envoy.prom", "envoy_cluster_upstream_rq_total", 1180},
		{dialect.NameIstio, "istio_sidecar.prom", "istio_requests_total", 1860},
		{dialect.NameLinkerd, "linkerd_policy.prom", "outbound_http_route_backend_requests_total", 1200},
		{dialect.NameLinkerd1, "linkerd1_1.7.prom", "rt:service:requests", 1200},
		{dialect.NameHAProxy, "haproxy_2.6.12.prom", "haproxy_backend_http_requests_total", 1200},
		{dialect.NameKong, "kong_3.x.prom", "kong_http_requests_total", 1000},
		{dialect.NameAPISIX, "apisix_3.x.prom", "apisix_http_status", 880},
		{dialect.NameGRPC, "grpc_go_otel.prom", "grpc_client_attempt_started_total", 26},
		{dialect.NameGRPCPrometheus, "grpc_middleware_v2.prom", "grpc_client_started_total", 130},
		{dialect.NameResilience4j, "resilience4j_spring.prom", "resilience4j_retry_calls_total", 1000},
		{dialect.NamePolly, "polly_v8.prom", "resilience_polly_strategy_events_total", 33},
		{dialect.NameClientGo, "clientgo.prom", "rest_client_requests_total", 1040},
		{dialect.NameOTelHTTP, "otel_http_client.prom", "http_client_request_duration_seconds", 530},
	} {
		t.Run(c.builtin, func(t *testing.T) {
			sig := dialect.Signal{Family: model.MetricAttempts, Metric: c.metric}
			if c.builtin == dialect.NameOTelHTTP { // a histogram: its count
				sig.Family = model.MetricAttemptDuration
			}
			m := dialect.Mapping{Name: "mine", Dependency: "d", Signals: []dialect.Signal{sig}}
			tr := translatorWith(t, m)
			// Without the mapping the built-in reads the fixture.
			if got := dialect.Auto().DetectNames(names(load(t, c.fixture))); !contains(got, c.builtin) {
				t.Fatalf("built-in detection = %v, want %s among them", got, c.builtin)
			}
			s, name, err := tr.Translate("", snapOf(load(t, c.fixture)))
			if err != nil {
				t.Fatal(err)
			}
			if contains(strings.Split(name, "+"), c.builtin) || !contains(strings.Split(name, "+"), "mine") {
				t.Errorf("dialects %q: want mine without %s", name, c.builtin)
			}
			want(t, s, c.attempts, sig.Family, dep, "d")
			absent(t, s, model.MetricOriginals)
			if sig.Family == model.MetricAttempts {
				if n := len(family(s, model.MetricAttempts).Samples); n == 0 {
					t.Error("no attempts")
				}
			}
			why := c.builtin + `: mine reads the same families ("` + c.metric
			if len(s.SetAside) != 1 || !strings.HasPrefix(s.SetAside[0], why) {
				t.Errorf("snapshot set aside %q, want one starting %q", s.SetAside, why)
			}
			if got := tr.SetAside("t"); len(got) != 1 || !strings.HasPrefix(got[0], why) {
				t.Errorf("SetAside = %q, want one starting %q", got, why)
			}
			// The Prometheus path detects the same.
			if got := tr.DetectNames(names(load(t, c.fixture))); contains(got, c.builtin) || !contains(got, "mine") {
				t.Errorf("DetectNames = %v, want mine without %s", got, c.builtin)
			}
			// Sticky: the next scrape keeps the built-in aside.
			s, name, _ = tr.Translate("", snapOf(load(t, c.fixture)))
			if contains(strings.Split(name, "+"), c.builtin) || len(s.SetAside) != 1 {
				t.Errorf("second scrape: %q, set aside %q", name, s.SetAside)
			}
		})
	}
}

// TestCustomOverTraefikReadsOnce: a user's mapping of Traefik written
// before the built-in existed reads the fixture's 975 requests and 987
// tries once, as the built-in alone does (summed, both were doubled).
func TestCustomOverTraefikReadsOnce(t *testing.T) {
	m := dialect.Mapping{Name: "mine", DependencyLabel: "service", Signals: []dialect.Signal{
		{Family: model.MetricOriginals, Metric: "traefik_router_requests_total"},
		{Family: model.MetricAttempts, Metric: "traefik_service_requests_total"},
	}}
	tr := translatorWith(t, m)
	alone := translate(t, dialect.NameTraefik, "traefik.prom")
	s, name, err := tr.Translate("", snapOf(load(t, "traefik.prom")))
	if err != nil || name != "mine" {
		t.Fatalf("Translate: %q, %v", name, err)
	}
	for _, f := range []string{model.MetricOriginals, model.MetricAttempts} {
		a, _ := sum(alone, f, dep, "whoami@docker")
		want(t, s, a, f, dep, "whoami@docker")
	}
	want(t, s, 975, model.MetricOriginals, dep, "whoami@docker")
	want(t, s, 987, model.MetricAttempts, dep, "whoami@docker")
	if len(s.SetAside) != 1 || s.SetAside[0] != `traefik: mine reads the same families ("traefik_router_requests_total", "traefik_service_requests_total")` {
		t.Errorf("set aside %q", s.SetAside)
	}
	// Forced, nothing is set aside.
	s, _, _ = tr.Translate(dialect.NameTraefik, snapOf(load(t, "traefik.prom")))
	if s.SetAside != nil || tr.SetAside("t") != nil {
		t.Errorf("forced: set aside %q", s.SetAside)
	}
}

// TestCustomKeepsDisjointBuiltin: a mapping of other families leaves a
// built-in on the same target alone.
func TestCustomKeepsDisjointBuiltin(t *testing.T) {
	m := dialect.Mapping{Name: "mine", Dependency: "d", Signals: []dialect.Signal{
		{Family: model.MetricActiveCalls, Metric: "traefik_service_server_up"},
	}}
	tr := translatorWith(t, m)
	s, name, err := tr.Translate("", snapOf(load(t, "traefik.prom")))
	if err != nil || name != "mine+traefik" || s.SetAside != nil {
		t.Fatalf("Translate: %q, %v, set aside %q", name, err, s.SetAside)
	}
}

func translatorWith(t *testing.T, m dialect.Mapping) *dialect.Translator {
	t.Helper()
	tr, err := dialect.NewTranslator(dialect.Config{Custom: []dialect.Mapping{m}})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func names(fams []model.Family) []string {
	out := make([]string, len(fams))
	for i := range fams {
		out[i] = fams[i].Name
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestCustomSetsAsideBuiltinQueries: read through Prometheus, a built-in
// queried beside a mapping of its families keeps only the targets without
// them.
func TestCustomSetsAsideBuiltinQueries(t *testing.T) {
	m := dialect.Mapping{Name: "mine", DependencyLabel: "service", Signals: []dialect.Signal{
		{Family: model.MetricAttempts, Metric: "traefik_service_requests_total"},
	}}
	tr := translatorWith(t, m)
	qs, err := tr.Queries([]string{"mine", dialect.NameTraefik}, dialect.QueryOptions{By: []string{"job"}, Range: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	aside := `unless on (job, instance) {__name__=~"traefik_service_requests_total|traefik_service_requests_total_bucket|traefik_service_requests_total_count|traefik_service_requests_total_sum"}`
	seen := 0
	for _, q := range qs {
		if q.Name != model.MetricOriginals && q.Name != model.MetricAttempts {
			continue
		}
		seen++
		if got := strings.Count(q.PromQL, aside); got != 1 {
			t.Errorf("%s: %d set-aside clauses, want 1 (the built-in's): %s", q.Name, got, q.PromQL)
		}
	}
	if seen != 2 {
		t.Errorf("%d of originals and attempts queried, want 2", seen)
	}
}
