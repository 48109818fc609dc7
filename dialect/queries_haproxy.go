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
		// 1xx (a tunnel, its outcome unknown) is no result.
		setLabel(inc(haBackendResponses, `code=~"[2-4].*"`), model.LabelResult, model.ResultSuccess),
		setLabel(inc(haBackendResponses, `code="other"`), model.LabelResult, model.ResultCancelled),
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
	// Server side (haproxyServerSide): series without dependency, proxy
	// and server kept as identity labels.
	noDep := func(e string) string { return setLabel(e, model.LabelDependency, "") }
	// Slots: every server's maxconn, only when every server of every
	// backend of the target has one (Translate: of the scrape).
	target := groupList(q.By)
	slots := lim + " unless on (" + target + ") (" + lim + " unless (" + lim + " > 0 < Inf))"
	// Tunnels (1xx) leave the originals and attempts, one each.
	tunnels := "sum without (code) (" + inc(haBackendResponses, `code="1xx"`) + ")"
	noTunnels := func(e string) string { return "clamp_min((" + e + ") - " + tunnels + ", 0) or (" + e + ")" }
	return []Expr{
		{Name: model.MetricOriginals, PromQL: dep(noTunnels(inc(haBackendRequests)))},
		{Name: model.MetricAttempts, PromQL: dep(noTunnels(attempts))},
		{Name: model.MetricRetries, PromQL: dep("clamp_min((" + attempts + ") + " + inc(haBackendConnErrors) + " - " + inc(haBackendRequests) + ", 0)")},
		{Name: model.MetricAdmissionRejected, Labels: []string{model.LabelReason}, PromQL: dep(setLabel(inc(haBackendConnErrors), model.LabelReason, "queue"))},
		{Name: model.MetricResults, Labels: []string{model.LabelResult}, PromQL: dep(results)},
		{Name: model.MetricPendingCalls, PromQL: dep(q.sel(haBackendQueue, named))},
		{Name: model.MetricPoolWaitAverage, PromQL: dep(q.sel(haBackendQueueAvg, named))},
		{Name: model.MetricActiveCalls, PromQL: dep(q.sel(haServerSessions, named))},
		{Name: model.MetricConcurrencyLimit, PromQL: dep(limit)},
		// Server side: requests the frontends received.
		{Name: model.MetricServerReceived, PromQL: noDep(inc(haFrontendRequests))},
		// Responses by class ("2xx", ..., "other"), the code label as is.
		{Name: model.MetricServiceResponses, Labels: []string{model.LabelCode}, PromQL: noDep(inc(haFrontendResponses, `code!=""`))},
		{Name: model.MetricServiceInFlight, PromQL: noDep(q.sel(haServerSessions, named))},
		// The queue: the backends' plus the servers'.
		{Name: model.MetricServiceQueueDepth, PromQL: noDep(q.sel(haBackendQueue, named))},
		{Name: model.MetricServiceQueueDepth, PromQL: noDep(q.sel(haServerQueue, named))},
		{Name: model.MetricServiceSlots, PromQL: noDep(slots)},
	}
}
