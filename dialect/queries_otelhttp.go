package dialect

import "github.com/retrytop/retrytop/model"

// Exprs: the OTel HTTP client duration as Translate reads it, under the
// underscore name only; originals and retries only on a target whose
// series carry http_request_resend_count.
func (otelHTTP) Exprs(opts QueryOptions) []Expr {
	q := newQctx(opts)
	count := ohDuration + "_count"
	dep := func(mk func(string) string) func(string) string {
		return func(extra string) string { return setDep(mk(join(ohServer+`!=""`, extra)), ohServer) }
	}
	const timeout, cancel = `(?i).*(timeout|deadline).*`, `(?i).*cancel.*`
	outcomes := []class{
		{ohStatus + `=~"[1-4].*", ` + ohStatus + `!="429"`, model.OutcomeSuccess},
		{ohStatus + `=~"429|5.*"`, model.OutcomeTemporaryError},
		{ohStatus + `="", ` + ohErrorType + `=~"` + timeout + `"`, model.OutcomeTimeout},
		{ohStatus + `="", ` + ohErrorType + `!~"` + timeout + `", ` + ohErrorType + `=~"` + cancel + `"`, model.OutcomeCancelled},
		{ohStatus + `="", ` + ohErrorType + `!="", ` + ohErrorType + `!~"` + timeout + "|" + cancel + `"`, model.OutcomeTemporaryError},
		{ohStatus + `="", ` + ohErrorType + `=""`, ""},
		{ohStatus + `!~"[1-5].*|"`, ""},
	}
	byOutcome := func(mk func(string) string) string { return classify(dep(mk), model.LabelOutcome, outcomes) }
	inc := func(m string) string { return q.inc(count, m) }
	by := groupList(append(append([]string{}, q.By...), "instance", ohServer))
	labelled := q.sel(count, ohServer+`!=""`, ohResend+`!=""`)
	// Retries: tries numbered 1 and up, 0 on a target that numbers its
	// tries but sent none again.
	retries := "(sum by (" + by + ") (" + q.inc(count, ohServer+`!=""`, ohResend+`!~"|0"`) + ") or sum by (" + by + ") (" +
		q.inc(count, ohServer+`!=""`, ohResend+`!=""`) + ") * 0)"
	out := []Expr{
		{Name: model.MetricAttempts, Labels: []string{model.LabelOutcome}, PromQL: byOutcome(inc)},
		{Name: model.MetricOriginals, PromQL: setDep("("+q.inc(count, ohServer+`!=""`, ohResend+`=~"|0"`)+") and on ("+q.target()+") "+labelled, ohServer)},
		{Name: model.MetricRetries, PromQL: setDep(retries, ohServer)},
	}
	return append(out, q.histExprs(model.MetricAttemptDuration, ohDuration, false, 1, []string{model.LabelOutcome}, byOutcome)...)
}
