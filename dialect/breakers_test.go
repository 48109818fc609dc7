package dialect_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
)

// Fates, breakers, hedges, methods and settings across emitters: what each
// fixture's emitter tells, over a 10 s window in which every counter
// doubles (rates are the fixture's values / 10), and null where it cannot.
func TestFatesBreakersHedgesAcrossEmitters(t *testing.T) {
	nan := nan()
	for _, tc := range []struct {
		name, fixture, dependency string
		want                      map[string]float64
		settings                  []string
	}{
		// Envoy: retry_limit_exceeded are originals out of attempts,
		// retry_overflow retries the budget or retry breaker refused, the
		// route timeout the deadline; no final results, so the successes
		// split is unknown. The retry breaker is open.
		{"envoy retry breaker open", "envoy_retry_breaker.prom", "payments", map[string]float64{
			"failed_after_attempts": 0.8, "not_retried_budget": 1.2, "not_retried_deadline": 0.5,
			"succeeded_after_retry": 15, "succeeded_first_try": nan, "not_retried_breaker": nan,
			"breaker_state": model.BreakerOpen, "hedges": nan, "unsafe_attempts": nan}, nil},
		{"envoy breakers closed", "envoy_retry_breaker.prom", "inventory", map[string]float64{
			"failed_after_attempts": 0, "not_retried_budget": 0, "breaker_state": model.BreakerClosed}, nil},
		// usedonly: the retry counters are hidden while 0: unknown, and
		// the setting that hides them is named.
		{"envoy usedonly", "envoy_usedonly.prom", "payments", map[string]float64{
			"retries": nan, "failed_after_attempts": nan, "breaker_state": nan}, []string{model.SettingEnvoyUsedOnly}},
		{"istio default stats", "istio_stats_off.prom", "reviews.default.svc.cluster.local", map[string]float64{
			"retries": nan, "originals": 93}, []string{model.SettingIstioProxyStats}},
		// Traefik with only entry-point metrics: nothing but the settings.
		{"traefik entry points only", "traefik_entrypoints.prom", "web", map[string]float64{
			"originals": nan, "attempts": nan}, []string{model.SettingTraefikServices, model.SettingTraefikRouters}},
		// Traefik labels the method on routers (originals) and services
		// (attempts): POSTs were re-sent.
		{"traefik post retried", "traefik_post.prom", "orders@file", map[string]float64{
			"unsafe_originals": 10, "unsafe_attempts": 13, "originals": 50, "attempts": 54}, nil},
		// OpenTelemetry's http.request.method on every try; originals
		// are the tries with resend count 0.
		{"otel http post resent", "otel_http_post.prom", "orders.internal", map[string]float64{
			"unsafe_originals": 5, "unsafe_attempts": 6, "originals": 25}, nil},
		// resilience4j: kinds give results and limit exceeded; the breaker
		// refused calls (not_permitted) and is open, another half-open.
		{"resilience4j breaker open", "resilience4j_breaker.prom", "inventory", map[string]float64{
			"failed_after_attempts": 2.5, "not_retried_breaker": 4, "succeeded_after_retry": 9,
			"succeeded_first_try": 87, "not_retried_non_retryable": 1.5, "breaker_state": model.BreakerOpen}, nil},
		{"resilience4j half-open", "resilience4j_breaker.prom", "pricing", map[string]float64{
			"not_retried_breaker": 0, "breaker_state": model.BreakerHalfOpen}, nil},
		{"resilience4j closed", "resilience4j_breaker.prom", "catalog", map[string]float64{
			"breaker_state": model.BreakerClosed}, nil},
		// Polly's hedging: OnHedging per hedged action, each also an
		// attempt numbered 1 and up (a retry): amplification counts it
		// once.
		{"polly hedging", "polly_hedging.prom", "search-hedging", map[string]float64{
			"hedges": 3, "retries": 3, "attempts": 13, "originals": 10, "attempts_per_original": 1.3, "breaker_state": nan}, nil},
		// Polly's breaker tells its transitions, not its state: more
		// opens than half-opens is open; as many of all three is
		// closed; 2/2/1 may be closed or half-open: unknown.
		{"polly breaker open", "polly_breaker.prom", "payments", map[string]float64{
			"breaker_state": model.BreakerOpen, "originals": 20}, nil},
		{"polly breaker closed", "polly_breaker.prom", "inventory", map[string]float64{
			"breaker_state": model.BreakerClosed}, nil},
		{"polly breaker closed or half-open", "polly_breaker.prom", "catalog", map[string]float64{
			"breaker_state": nan}, nil},
		// gRPC A96: hedges per call apart from retries; the attempts
		// started hold them once.
		{"grpc hedges", "grpc_a96_hedges.prom", "dns:///search:50051", map[string]float64{
			"hedges": 1.2, "attempts": 6.2, "originals": 5, "attempts_per_original": 1.24}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sig := windowSignals(t, load(t, tc.fixture), tc.dependency)
			f := analysis.Fates(sig)
			checkSignals(t, map[string]model.Value{
				"failed_after_attempts": f.FailedAfterAttempts, "not_retried_budget": f.NotRetriedBudget,
				"not_retried_deadline": f.NotRetriedDeadline, "not_retried_breaker": f.NotRetriedBreaker,
				"not_retried_non_retryable": f.NotRetriedNonRetry,
				"succeeded_after_retry":     f.SucceededAfterRetry, "succeeded_first_try": f.SucceededFirstTry,
				"breaker_state": sig.BreakerState, "hedges": sig.HedgesPerS, "retries": sig.RetriesPerS,
				"attempts": sig.AttemptsPerS, "originals": sig.OriginalsPerS, "attempts_per_original": sig.AttemptsPerOriginal,
				"unsafe_originals": sig.UnsafeOriginalsPerS, "unsafe_attempts": sig.UnsafeAttemptsPerS,
			}, tc.want)
			got, want := sig.SettingsOff, slices.Sorted(slices.Values(tc.settings))
			if !slices.Equal(got, want) {
				t.Errorf("settings off = %q, want %q", got, want)
			}
		})
	}
}

// A mesh edge from both ends with Istio's default stats: the caller's
// sidecar counts 930 originals to reviews, the callee's sidecar 1250
// requests from the caller's workload (and 40 from another one): the
// edge amplification is 1250 / 930, derived without any retry stat.
func TestIstioEdgeAmplification(t *testing.T) {
	const caller, callee = "productpage", "reviews.default.svc.cluster.local"
	st := model.NewStore(model.StoreConfig{})
	tr := dialect.Auto()
	for i, k := range []float64{1, 2} {
		for target, fixture := range map[string]string{caller: "istio_stats_off.prom", callee: "istio_edge_reviews.prom"} {
			s, _, err := tr.Translate("", &model.Snapshot{Target: target, Time: t0.Add(time.Duration(i) * 10 * time.Second), Families: scaled(load(t, fixture), k)})
			if err != nil {
				t.Fatal(err)
			}
			st.Append(s)
		}
	}
	sig := analysis.SignalsFor(st, caller, callee, t0.UnixMilli(), t0.Add(10*time.Second).UnixMilli())
	checkSignals(t, map[string]model.Value{"originals": sig.OriginalsPerS, "edge_received": sig.EdgeReceivedPerS,
		"edge_amplification": sig.EdgeAmplification, "dependency_received": sig.DependencyReceivedPerS, "attempts": sig.AttemptsPerS},
		map[string]float64{"originals": 93, "edge_received": 125, "edge_amplification": 1250.0 / 930, "dependency_received": 129, "attempts": nan()})
	// Without the callee's end, the edge is unknown.
	if sig := analysis.SignalsFor(st, caller, "details", t0.UnixMilli(), t0.Add(10*time.Second).UnixMilli()); sig.EdgeAmplification.OK() {
		t.Errorf("edge amplification to a target not scraped = %v", sig.EdgeAmplification.V())
	}
}

// A recognised emitter whose data a setting hides gets the finding that
// names the setting, not "no retry signals": Traefik with only its entry
// points, Istio with its default stats matcher.
func TestSettingOffFindings(t *testing.T) {
	for _, tc := range []struct {
		fixture, dependency, setting string
	}{
		{"traefik_entrypoints.prom", "web", "addRoutersLabels=true"},
		{"istio_stats_off.prom", "reviews.default.svc.cluster.local", "proxyStatsMatcher"},
		{"envoy_usedonly.prom", "payments", "usedonly"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			st := model.NewStore(model.StoreConfig{})
			tr := dialect.Auto()
			var name string
			for i, k := range []float64{1, 2} {
				s, n, err := tr.Translate("", &model.Snapshot{Target: "t", Time: t0.Add(time.Duration(i) * 10 * time.Second), Families: scaled(load(t, tc.fixture), k)})
				if err != nil {
					t.Fatal(err)
				}
				name = n
				st.Append(s)
			}
			targets := []model.TargetStatus{{Name: "t", Up: true, Dialect: name, Series: 3, LastSuccess: t0.Add(10 * time.Second)}}
			frame := analysis.BuildFrame(st, targets, analysis.FrameOptions{})
			fs := append(analysis.Evaluate(frame, nil, analysis.DefaultThresholds()), analysis.EvaluateTargets(targets, frame.Rows, nil)...)
			var got []string
			found := false
			for _, f := range fs {
				got = append(got, f.Code)
				if f.Code == analysis.CodeEmitterDataOff && f.Dependency == tc.dependency && strings.Contains(f.Message, tc.setting) {
					found = true
				}
				if f.Code == analysis.CodeNoRetrySignals {
					t.Errorf("NO_RETRY_SIGNALS: %s", f.Message)
				}
			}
			if !found {
				t.Errorf("no EMITTER_DATA_OFF on %s naming %s; findings %v", tc.dependency, tc.setting, got)
			}
		})
	}
}
