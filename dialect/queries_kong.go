package dialect

import "github.com/retrytop/retrytop/model"

// Exprs: Kong's 3.x families as Translate reads them (2.x's kong_http_status
// where a target has no kong_http_requests_total), the service label the
// dependency.
func (kong) Exprs(opts QueryOptions) []Expr {
	q := newQctx(opts)
	dep := func(mk func(string) string) func(string) string {
		return func(extra string) string { return setDep(mk(join(kgService+`!=""`, extra)), kgService) }
	}
	v3 := dep(func(m string) string { return q.inc(kgRequests, m) })
	v2 := dep(func(m string) string { return q.unlessHas(q.inc(kgStatus2, m), q.sel(kgRequests)) })
	// kgResult: a 429 Kong made is a rate-limit refusal.
	kongMade := `source!="service"`
	results := or(
		setLabel(v3(`code="429", `+kongMade), model.LabelResult, model.ResultCapacityRejected),
		setLabel(v3(`code=~"5.*"`), model.LabelResult, model.ResultProviderError),
		setLabel(v3(`code="429", source="service"`), model.LabelResult, model.ResultProviderError),
		setLabel(v3(`code=~"[1-4].*", code!="429"`), model.LabelResult, model.ResultSuccess),
		setLabel(v2(`code=~"429|5.*"`), model.LabelResult, model.ResultProviderError),
		setLabel(v2(`code=~"[1-4].*", code!="429"`), model.LabelResult, model.ResultSuccess),
	)
	out := []Expr{
		{Name: model.MetricOriginals, PromQL: or(v3(""), v2(""))},
		{Name: model.MetricResults, Labels: []string{model.LabelResult}, PromQL: results},
		{Name: model.MetricAdmissionRejected, Labels: []string{model.LabelReason}, PromQL: setLabel(v3(`code="429", `+kongMade), model.LabelReason, "rate")},
	}
	wrap := func(mk func(string) string) string { return dep(mk)("") }
	return append(out, q.histExprs(model.MetricRequestDuration, kgLatency, false, 0.001, nil, wrap)...)
}
