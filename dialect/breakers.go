package dialect

import (
	"strings"

	"github.com/retrytop/retrytop/model"
)

// Breakers, hedges and settings switched off (docs/dialects.md, "Breakers,
// hedges and settings"): what the dialects translate into
// retry_breaker_state, retry_hedges_total and retry_setting_off.
const (
	// Envoy's retry circuit breaker (max_retries, or the retry budget
	// replacing it) at default priority: 1 while it refuses retries.
	enRetryOpen = "envoy_cluster_circuit_breakers_default_rq_retry_open"
	// The request breaker's gauge, always exported (0) unless the stats
	// are filtered: its absence beside upstream_rq_total tells that zero
	// stats are hidden.
	enRqOpen = "envoy_cluster_circuit_breakers_default_rq_open"

	// resilience4j's breaker state through Micrometer: one series per
	// state, 1 for the current one.
	r4jCBState = "resilience4j_circuitbreaker_state"

	// gRPC A96's per-call hedges histogram (0 is not recorded).
	grCallHedges = "grpc_client_call_hedges"

	// Traefik's entry-point counter, on by default: the only request
	// metric when router and service labels are off.
	trEntryReqs = "traefik_entrypoint_requests_total"
)

// r4jStates maps resilience4j's states (Micrometer's lower-case tag) to
// retry_breaker_state. Disabled and metrics-only breakers let every call
// through: closed.
var r4jStates = map[string]float64{
	"closed":       model.BreakerClosed,
	"disabled":     model.BreakerClosed,
	"metrics_only": model.BreakerClosed,
	"half_open":    model.BreakerHalfOpen,
	"open":         model.BreakerOpen,
	"forced_open":  model.BreakerOpen,
}

// r4jBreakerState emits each breaker's state: the state whose series
// reads 1. A series without a state label (another exporter's coding) is
// not read.
func r4jBreakerState(r raw, o *out, dep func(model.Labels, ...string) (model.Labels, bool)) {
	f := r[r4jCBState]
	if f == nil {
		return
	}
	for i := range f.Samples {
		s := &f.Samples[i]
		st, known := r4jStates[strings.ToLower(s.Labels.Get("state"))]
		if !known || s.Value != 1 {
			continue
		}
		if ls, ok := dep(s.Labels, "state"); ok {
			o.gauge(model.MetricBreakerState, ls, st)
		}
	}
}

// envoyBreakerState is the retry circuit breaker's gauge as a breaker
// state: open while it refuses retries. Envoy's breakers are limits, not
// state machines: open means at its limit now, and it has no half-open.
func envoyBreakerState(open float64) float64 {
	if open > 0 {
		return model.BreakerOpen
	}
	return model.BreakerClosed
}

// envoyUsedOnly marks every HTTP cluster (a response completed) of an
// Envoy whose zero stats are hidden (/stats/prometheus?usedonly, or a
// stats matcher keeping only what moved): neither the retry counter nor
// the request breaker's gauge is there, and Envoy exports both (at 0)
// for every cluster from the start. Its retries are then unknown until
// the first one, never 0.
func envoyUsedOnly(r raw, o *out, g *guard, setting string) {
	if r[enRetry] != nil || r[enRqOpen] != nil {
		return
	}
	f := r[enCompleted]
	if f == nil {
		return
	}
	for i := range f.Samples {
		s := &f.Samples[i]
		if ls, ok := g.clusters.get(s.Labels, envoyCluster); ok && scalar(f, s) > 0 {
			o.setGauge(model.MetricSettingOff, model.LabelsFromPairs(model.LabelDependency, ls.Get(model.LabelDependency), model.LabelSetting, setting), 1)
		}
	}
}

// istioStatsOff marks every destination a sidecar reports requests to
// when its Envoy cluster stats are missing: Istio's default
// proxyStatsMatcher keeps upstream_rq_retry* out of the exposition, and
// the retries are unknown (the mesh config snippet is in
// docs/dialects.md, "Istio").
func istioStatsOff(r raw, o *out) {
	if r[enRetry] != nil || r[enTotal] != nil {
		return
	}
	for _, s := range r.samples(istioRequests) {
		if s.Labels.Get("reporter") != "source" {
			continue
		}
		if dep := istioDependency(s.Labels); dep != "" {
			o.setGauge(model.MetricSettingOff, model.LabelsFromPairs(model.LabelDependency, dep, model.LabelSetting, model.SettingIstioProxyStats), 1)
		}
	}
}

// traefikLabelsOff marks a Traefik whose request metrics stop at the
// entry points: router metrics (addRoutersLabels) count the originals,
// service metrics (addServicesLabels) the attempts. Without both the
// retries cannot be told; each entry point stands for the dependency.
func traefikLabelsOff(r raw, o *out) {
	hasRouters, hasServices := r[trRouterReqs] != nil, r[trServiceReqs] != nil
	if hasRouters && hasServices {
		return
	}
	var deps []string
	switch {
	case hasServices || hasRouters:
		name := trServiceReqs
		if hasRouters {
			name = trRouterReqs
		}
		for _, s := range r.samples(name) {
			deps = append(deps, s.Labels.Get(trServiceLabel))
		}
	default:
		for _, s := range r.samples(trEntryReqs) {
			deps = append(deps, s.Labels.Get("entrypoint"))
		}
	}
	for _, d := range deps {
		if d == "" {
			continue
		}
		if !hasRouters {
			o.setGauge(model.MetricSettingOff, model.LabelsFromPairs(model.LabelDependency, d, model.LabelSetting, model.SettingTraefikRouters), 1)
		}
		if !hasServices {
			o.setGauge(model.MetricSettingOff, model.LabelsFromPairs(model.LabelDependency, d, model.LabelSetting, model.SettingTraefikServices), 1)
		}
	}
}

// setGauge sets the gauge series name{ls} to v (a flag: written once per
// series however many samples name it).
func (o *out) setGauge(name string, ls model.Labels, v float64) {
	if s, _ := o.slot(name, model.Gauge, ls); s != nil {
		s.Value = v
	}
}

// flagUnless is 1 for every series of raw (matchers m) on a target that
// has none of others: a setting's mark, as the Translate side sets it.
func (q qctx) flagUnless(raw, m string, others ...string) string {
	sels := make([]string, len(others))
	for i, o := range others {
		sels[i] = q.sel(o)
	}
	return q.sel(raw, m) + " * 0 + 1 unless on (" + groupList(q.By) + ") (" + strings.Join(sels, " or ") + ")"
}

// istioStatsOffExpr marks, as istioStatsOff, the destinations of sidecars
// without Envoy cluster stats.
func (q qctx) istioStatsOffExpr(source func(mk func(string) string, extra string) string) Expr {
	return Expr{Name: model.MetricSettingOff, Labels: []string{model.LabelSetting}, PromQL: setLabel(source(func(m string) string {
		return q.flagUnless(istioRequests, m, enRetry, enTotal)
	}, ""), model.LabelSetting, model.SettingIstioProxyStats)}
}

// traefikLabelsOffExprs mark, as traefikLabelsOff, the services of a
// Traefik without router or service metrics, and its entry points when
// it has neither.
func (q qctx) traefikLabelsOffExprs() []Expr {
	mark := func(raw, depLabel, setting string, others ...string) string {
		return setLabel(setDep(q.flagUnless(raw, depLabel+`!=""`, others...), depLabel), model.LabelSetting, setting)
	}
	return []Expr{{Name: model.MetricSettingOff, Labels: []string{model.LabelSetting}, PromQL: or(
		mark(trServiceReqs, trServiceLabel, model.SettingTraefikRouters, trRouterReqs),
		mark(trRouterReqs, trServiceLabel, model.SettingTraefikServices, trServiceReqs),
		mark(trEntryReqs, "entrypoint", model.SettingTraefikRouters, trRouterReqs, trServiceReqs),
		mark(trEntryReqs, "entrypoint", model.SettingTraefikServices, trRouterReqs, trServiceReqs),
	)}}
}
