package dialect

import "github.com/retrytop/retrytop/model"

// Exprs: Envoy's cluster stats and downstream stats as translateEnvoy and
// translateEnvoyDownstream read them. Where Istio is queried too, targets
// that export istio_requests_total are left to it (it supersedes Envoy on
// a sidecar, as detection does per scrape).
func (*envoy) Exprs(opts QueryOptions) []Expr {
	q := newQctx(opts)
	out := append(q.envoyExprs(envoyAll), q.envoyDownstreamExprs()...)
	out = append(out, q.envoyUsedOnlyExpr())
	if q.queried(NameIstio) {
		for i := range out {
			out[i].PromQL = q.unlessHas(out[i].PromQL, q.sel(istioRequests))
		}
	}
	return out
}

// envoyDep selects the series of mk's raw families that name a cluster and
// sets dependency to it, as envoyCluster: envoy_cluster_name, else Istio's
// cluster_name, an outbound cluster "outbound|port|subset|host" named by
// its host. mk builds the expression from the extra matchers.
func (q qctx) envoyDep(mk func(extra string) string) string {
	named := setDep(mk(enClusterLabel+`!=""`), enClusterLabel)
	istioNamed := setDep(mk(enClusterLabel+`="", `+istioClusterLabel+`!=""`), istioClusterLabel)
	return `label_replace(` + or(named, istioNamed) + `, "dependency", "$1", "dependency", "outbound[|].*[|]([^|]+)")`
}

// envoyExprs are the cluster stats' families (the parts translateEnvoy
// emits).
func (q qctx) envoyExprs(parts envoyParts) []Expr {
	counter := func(family, raw string) Expr {
		return Expr{Name: family, PromQL: q.envoyDep(func(m string) string { return q.envoyHTTP(q.inc(raw, m), m) })}
	}
	var out []Expr
	if parts.originals {
		out = append(out, counter(model.MetricOriginals, enCompleted))
	}
	out = append(out,
		// Per-try timeouts are the only attempt outcome; the rest of the
		// attempts have none (where no per-try counter exists, all of
		// them). The difference is held at 0, as the guard holds it. A
		// cluster without a per-try series on a target whose other
		// clusters have one has had no per-try timeout yet: 0, as
		// Translate says (docs/dialects.md, rule 1); a target without the
		// family says nothing of timeouts.
		Expr{Name: model.MetricAttempts, Labels: []string{model.LabelOutcome}, PromQL: q.envoyDep(func(m string) string {
			by := groupList(q.By)
			zero := "(0 * " + q.inc(enTotal, m) + " and on (" + by + ") count by (" + by + ") (" + q.sel(enPerTryTimeout) + "))"
			return setLabel(q.envoyHTTP("("+q.inc(enPerTryTimeout, m)+" or "+zero+")", m), model.LabelOutcome, model.OutcomeTimeout)
		})},
		Expr{Name: model.MetricAttempts, PromQL: q.envoyDep(func(m string) string {
			return q.envoyHTTP("clamp_min("+q.inc(enTotal, m)+" - "+q.inc(enPerTryTimeout, m)+", 0) or "+q.inc(enTotal, m), m)
		})},
		counter(model.MetricRetries, enRetry),
		counter(model.MetricRescued, enRetrySuccess),
		counter(model.MetricBudgetDenied, enRetryOverflow),
		counter(model.MetricRetryLimitExceeded, enRetryLimit),
		counter(model.MetricRequestTimeouts, enTimeout),
	)
	if parts.admission {
		out = append(out, Expr{Name: model.MetricAdmissionRejected, Labels: []string{model.LabelReason}, PromQL: q.envoyDep(func(m string) string {
			return setLabel(q.envoyHTTP(q.inc(enPendingOverflow, m), m), model.LabelReason, "queue")
		})})
	}
	out = append(out,
		Expr{Name: model.MetricActiveCalls, PromQL: q.envoyDep(func(m string) string { return q.envoyHTTP(q.sel(enActive, m), m) })},
		Expr{Name: model.MetricPendingCalls, PromQL: q.envoyDep(func(m string) string { return q.envoyHTTP(q.sel(enPendingActive, m), m) })},
		Expr{Name: model.MetricBudgetBalance, PromQL: q.envoyDep(func(m string) string { return q.envoyHTTP(q.sel(enRemainingRetries, m), m) })},
		// The retry breaker at its limit is open (2), else closed.
		Expr{Name: model.MetricBreakerState, PromQL: q.envoyDep(func(m string) string {
			return q.envoyHTTP("2 * ("+q.sel(enRetryOpen, m)+" > bool 0)", m)
		})},
	)
	// Milliseconds; a summary (histogram_emit_mode=summary) keeps its mean.
	return append(out, q.histExprs(model.MetricRequestDuration, enTime, true, 0.001, nil, q.envoyDep)...)
}

// envoyUsedOnlyExpr marks, as envoyUsedOnly, the HTTP clusters of
// targets that export neither upstream_rq_retry nor the request
// breaker's gauge.
func (q qctx) envoyUsedOnlyExpr() Expr {
	by := groupList(q.By)
	return Expr{Name: model.MetricSettingOff, Labels: []string{model.LabelSetting}, PromQL: q.envoyDep(func(m string) string {
		return setLabel("("+q.sel(enCompleted, m)+" > 0) * 0 + 1 unless on ("+by+") ("+q.sel(enRetry)+" or "+q.sel(enRqOpen)+")",
			model.LabelSetting, model.SettingEnvoyUsedOnly)
	})}
}

// envoyHCM keeps the series of e (selected with matchers m) whose cluster
// is not a TCP proxy's, as envoyTCPClusters decides: upstream_rq_total
// above 0 and no upstream_rq_completed above 0. The stats of one cluster
// carry the same labels, so the default matching (the name ignored) pairs
// them.
func (q qctx) envoyHTTP(e, m string) string {
	return "(" + e + ") unless (" + q.sel(enTotal, m) + " > 0 unless " + q.sel(enCompleted, m) + " > 0)"
}

// envoyHCM selects the downstream series of the HTTP connection managers
// other than admin, as envoyHCM: server-side series, no dependency.
func (q qctx) envoyHCM(mk func(extra string) string) string {
	named := mk(enHCMLabel + `!~"|` + enAdminHCM + `"`)
	istioNamed := mk(enHCMLabel + `="", ` + istioHCMLabel + `!~"|` + enAdminHCM + `"`)
	return setLabel(or(named, istioNamed), model.LabelDependency, "")
}

// envoyDownstreamExprs are the server-side families of
// translateEnvoyDownstream: requests received and active, responses by
// class, the request time.
func (q qctx) envoyDownstreamExprs() []Expr {
	out := []Expr{
		{Name: model.MetricServerReceived, PromQL: q.envoyHCM(func(m string) string { return q.inc(enDownTotal, m) })},
		{Name: model.MetricServiceInFlight, PromQL: q.envoyHCM(func(m string) string { return q.sel(enDownActive, m) })},
		// One class digit per series, written as the class ("5xx"); ${1}
		// since "$1xx" would name a group "1xx".
		{Name: model.MetricServiceResponses, Labels: []string{model.LabelCode}, PromQL: q.envoyHCM(func(m string) string {
			return `label_replace(` + q.inc(enDownXX, join(m, enCodeClassLabel+`=~"[1-5]"`)) + `, "code", "${1}xx", ` + quote(enCodeClassLabel) + `, "([1-5])")`
		})},
	}
	return append(out, q.histExprs(model.MetricServerServiceTime, enDownTime, true, 0.001, nil, q.envoyHCM)...)
}
