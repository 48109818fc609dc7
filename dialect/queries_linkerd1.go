package dialect

import "github.com/retrytop/retrytop/model"

// Exprs: Linkerd 1's telemeter families as Translate reads them: service
// rows by the service label, client rows by the client label, series
// with an exception label (per-cause failures) left out.
func (linkerd1) Exprs(opts QueryOptions) []Expr {
	q := newQctx(opts)
	row := func(stack string) func(raw string, gauge bool) string {
		return func(raw string, gauge bool) string {
			m := []string{stack + `!=""`, l1Exception + `=""`}
			if gauge {
				return setDep(q.sel(raw, m...), stack)
			}
			return setDep(q.inc(raw, m...), stack)
		}
	}
	svc, clt := row("service"), row("client")
	results := or(
		setLabel(svc(l1SvcSuccess, false), model.LabelResult, model.ResultSuccess),
		setLabel(svc(l1SvcFailures, false), model.LabelResult, model.ResultProviderError),
	)
	return []Expr{
		{Name: model.MetricOriginals, PromQL: svc(l1SvcRequests, false)},
		{Name: model.MetricResults, Labels: []string{model.LabelResult}, PromQL: results},
		// Attempts: a service's originals plus its retries (both
		// exposed: + matches them on every label), and a client's
		// requests.
		{Name: model.MetricAttempts, PromQL: or(
			setDep(q.inc(l1SvcRequests, `service!=""`)+" + "+q.inc(l1SvcRetries, `service!=""`), "service"),
			clt(l1CltRequests, false))},
		{Name: model.MetricRetries, PromQL: or(svc(l1SvcRetries, false), clt(l1CltRequeues, false))},
		{Name: model.MetricBudgetDenied, PromQL: or(svc(l1SvcExhausted, false), clt(l1CltExhausted, false))},
		{Name: model.MetricRetryLimitExceeded, PromQL: clt(l1CltLimit, false)},
		{Name: model.MetricBudgetBalance, PromQL: or(svc(l1SvcBudget, true), clt(l1CltBudget, true))},
		{Name: model.MetricActiveCalls, PromQL: or(svc(l1SvcPending, true), clt(l1CltPending, true))},
	}
}
