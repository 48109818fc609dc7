package dialect

import "github.com/retrytop/retrytop/model"

// Exprs: PROMEX's backend and server families as Translate reads them,
// the backend (proxy) being the dependency; the sums and differences
// Translate makes per backend are PromQL arithmetic on series with the
// same labels (a difference is held at 0, as the guard holds it).
func (*haproxy) Exprs(opts QueryOptions) []Expr {
	q := newQctx(opts)
	dep := func(e string) string { return setDep(e, "proxy") }
	const named = `proxy!=""`
	inc := func(raw string, extra ...string) string { return q.inc(raw, append([]string{named}, extra...)...) }
	// Attempts: connections handed a request, new or reused (either
	// counter alone when the other is missing).
	attempts := "(" + inc(haBackendConnects) + " + " + inc(haBackendReuses) + ") or " + inc(haBackendConnects) + " or " + inc(haBackendReuses)
	fiveXX := "sum without (code) (" + inc(haBackendResponses, `code=~"5.*"`) + ")"
	// PROMEX exports every class for an HTTP backend: a 5xx series says
	// the backend has response counters, which the capacity_rejected
	// and provider_error results need.
	has5xx := "sum without (code) (" + q.sel(haBackendResponses, named, `code=~"5.*"`) + ")"
	results := or(
		setLabel(inc(haBackendResponses, `code=~"[1-4].*"`), model.LabelResult, model.ResultSuccess),
		setLabel("("+inc(haBackendConnErrors)+" and "+has5xx+")", model.LabelResult, model.ResultCapacityRejected),
		setLabel("clamp_min("+fiveXX+" - "+inc(haBackendConnErrors)+", 0)", model.LabelResult, model.ResultProviderError),
	)
	// The limit: the servers' maxconn summed per backend, only when every
	// server of the backend has one (not 0, NaN or +Inf) in every replica
	// of the target: a sum without an unlimited server would read as a
	// smaller limit.
	by := groupList(append(append([]string{}, q.By...), "proxy"))
	lim := q.sel(haServerLimit, named)
	limit := "sum by (" + by + ") (" + lim + ") unless on (" + by + ") (" + lim + " unless (" + lim + " > 0 < Inf))"
	return []Expr{
		{Name: model.MetricOriginals, PromQL: dep(inc(haBackendRequests))},
		{Name: model.MetricAttempts, PromQL: dep(attempts)},
		{Name: model.MetricRetries, PromQL: dep("clamp_min((" + attempts + ") + " + inc(haBackendConnErrors) + " - " + inc(haBackendRequests) + ", 0)")},
		{Name: model.MetricAdmissionRejected, Labels: []string{model.LabelReason}, PromQL: dep(setLabel(inc(haBackendConnErrors), model.LabelReason, "queue"))},
		{Name: model.MetricResults, Labels: []string{model.LabelResult}, PromQL: dep(results)},
		{Name: model.MetricPendingCalls, PromQL: dep(q.sel(haBackendQueue, named))},
		{Name: model.MetricPoolWaitAverage, PromQL: dep(q.sel(haBackendQueueAvg, named))},
		{Name: model.MetricActiveCalls, PromQL: dep(q.sel(haServerSessions, named))},
		{Name: model.MetricConcurrencyLimit, PromQL: dep(limit)},
		// Server side: requests the frontends received.
		{Name: model.MetricServerReceived, PromQL: setLabel(inc(haFrontendRequests), model.LabelDependency, "")},
	}
}
