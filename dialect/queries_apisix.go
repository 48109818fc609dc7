package dialect

import "github.com/retrytop/retrytop/model"

// Exprs: APISIX's families as Translate reads them: the service label the
// dependency, else the route; a failure without a node is APISIX's own
// refusal.
func (apisix) Exprs(opts QueryOptions) []Expr {
	q := newQctx(opts)
	dep := func(mk func(string) string) func(string) string {
		return func(extra string) string {
			return or(setDep(mk(join(`service!=""`, extra)), "service"),
				setDep(mk(join(`service=""`, `route!=""`, extra)), "route"))
		}
	}
	status := dep(func(m string) string { return q.inc(axStatus, m) })
	results := or(
		setLabel(status(`code=~"429|5.*", node=""`), model.LabelResult, model.ResultCapacityRejected),
		setLabel(status(`code=~"429|5.*", node!=""`), model.LabelResult, model.ResultProviderError),
		setLabel(status(`code=~"[1-4].*", code!="429"`), model.LabelResult, model.ResultSuccess),
	)
	out := []Expr{
		{Name: model.MetricOriginals, PromQL: status("")},
		{Name: model.MetricResults, Labels: []string{model.LabelResult}, PromQL: results},
	}
	wrap := func(mk func(string) string) string {
		return dep(func(m string) string { return mk(join(m, `type="request"`)) })("")
	}
	return append(out, q.histExprs(model.MetricRequestDuration, axLatency, false, 0.001, nil, wrap)...)
}
