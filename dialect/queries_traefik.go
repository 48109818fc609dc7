package dialect

import "github.com/retrytop/retrytop/model"

// Exprs: Traefik's router and service metrics as Translate reads them,
// the service label the dependency.
func (*traefik) Exprs(opts QueryOptions) []Expr {
	q := newQctx(opts)
	dep := func(mk func(string) string) func(string) string {
		return func(extra string) string { return setDep(mk(join(trServiceLabel+`!=""`, extra)), trServiceLabel) }
	}
	inc := func(raw string) func(string) string { return func(m string) string { return q.inc(raw, m) } }
	// One try's status, as trOutcome: 499 the client's cancel, 429 and
	// 5xx temporary errors, the other answers success, the rest none.
	outcomes := []class{
		{`code="499"`, model.OutcomeCancelled},
		{`code=~"[1-4].*", code!~"429|499"`, model.OutcomeSuccess},
		{`code=~"429|5.*"`, model.OutcomeTemporaryError},
		{`code!~"[1-5].*"`, ""},
	}
	byOutcome := func(mk func(string) string) string { return classify(dep(mk), model.LabelOutcome, outcomes) }
	// Router 429s beyond the service's own are the rateLimit/inFlightReq
	// refusals; the service's (at most the router's) are the provider's.
	by := groupList(append(append([]string{}, q.By...), "instance", trServiceLabel))
	r429 := "sum by (" + by + ") (" + q.inc(trRouterReqs, trServiceLabel+`!=""`, `code="429"`) + ")"
	s429 := "(sum by (" + by + ") (" + q.inc(trServiceReqs, trServiceLabel+`!=""`, `code="429"`) + ") or " + r429 + " * 0)"
	rejected := "clamp_min(" + r429 + " - " + s429 + ", 0)"
	results := or(
		setLabel(dep(inc(trRouterReqs))(`code=~"[1-4].*", code!~"429|499"`), model.LabelResult, model.ResultSuccess),
		setLabel(dep(inc(trRouterReqs))(`code="499"`), model.LabelResult, model.ResultCancelled),
		setLabel(dep(inc(trRouterReqs))(`code=~"5.*"`), model.LabelResult, model.ResultProviderError),
		setLabel(setDep("(("+s429+" <= "+r429+") or "+r429+")", trServiceLabel), model.LabelResult, model.ResultProviderError),
		setLabel(setDep(rejected, trServiceLabel), model.LabelResult, model.ResultCapacityRejected),
	)
	out := []Expr{
		{Name: model.MetricOriginals, PromQL: dep(inc(trRouterReqs))("")},
		{Name: model.MetricResults, Labels: []string{model.LabelResult}, PromQL: results},
		// The same refusals, derived, as admission rejections.
		{Name: model.MetricAdmissionRejected, PromQL: setDep(rejected, trServiceLabel)},
		{Name: model.MetricAttempts, Labels: []string{model.LabelOutcome}, PromQL: byOutcome(inc(trServiceReqs))},
		// The never-incremented retries counter is read only where it
		// moved.
		{Name: model.MetricRetries, PromQL: dep(func(m string) string {
			return q.inc(trServiceRetries, m) + " and " + q.sel(trServiceRetries, m) + " > 0"
		})("")},
	}
	out = append(out, q.histExprs(model.MetricAttemptDuration, trServiceDur, false, 1, []string{model.LabelOutcome}, byOutcome)...)
	wrap := func(mk func(string) string) string { return dep(mk)("") }
	out = append(out, q.traefikLabelsOffExprs()...)
	return append(out, q.histExprs(model.MetricRequestDuration, trRouterDuration, false, 1, nil, wrap)...)
}
