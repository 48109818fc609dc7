package dialect

import "github.com/retrytop/retrytop/model"

// Exprs: gRPC's OpenTelemetry client metrics as Translate reads them,
// under their underscore names only: a server that keeps dotted UTF-8
// names (Prometheus 3 with utf8 names) is not queried for them.
func (*grpcOTel) Exprs(opts QueryOptions) []Expr {
	q := newQctx(opts)
	const (
		callCount    = grCallDuration + "_count"
		attemptCount = grAttemptDuration + "_count"
		retriesSum   = grCallRetries + "_sum"
		hedgesSum    = grCallHedges + "_sum"
	)
	dep := func(mk func(string) string) func(string) string {
		return func(extra string) string { return setDep(mk(join(grTargetLabel+`!=""`, extra)), grTargetLabel) }
	}
	inc := func(raw string) func(string) string { return func(m string) string { return q.inc(raw, m) } }
	results := grpcClasses("", grStatusLabel, model.ResultSuccess, model.ResultProviderError,
		model.ResultDeadlineExhausted, model.ResultCancelled, model.ResultPermanentError)
	outcomes := grpcClasses("", grStatusLabel, model.OutcomeSuccess, model.OutcomeTemporaryError,
		model.OutcomeTimeout, model.OutcomeCancelled, model.OutcomePermanentError)
	// Latency class of the call's result: OK and the codes that are the
	// server's answer are successes, every other status a failure.
	classes := grpcClasses("", grStatusLabel, model.ClassSuccess, model.ClassFailure, model.ClassFailure, model.ClassFailure, model.ClassFailure)
	// Attempts started (either name), only where the attempt duration
	// histogram is missing.
	started := setLabel(q.unlessHas(dep(func(m string) string {
		return or(q.inc(grAttemptStarted, m), q.unlessHas(q.inc(grAttemptStarted2, m), q.sel(grAttemptStarted)))
	})(""), q.sel(attemptCount)), model.LabelOutcome, "")
	// Retries: the opt-in retries histogram's sum, else completed attempts
	// minus completed calls over every status (held at 0).
	diff := dep(func(m string) string {
		return "clamp_min(sum without (" + grStatusLabel + ") (" + q.inc(attemptCount, m) + ") - sum without (" + grStatusLabel + ") (" + q.inc(callCount, m) + "), 0)"
	})("")
	out := []Expr{
		{Name: model.MetricOriginals, PromQL: dep(inc(callCount))("")},
		{Name: model.MetricResults, Labels: []string{model.LabelResult}, PromQL: classify(dep(inc(callCount)), model.LabelResult, results)},
		{Name: model.MetricAttempts, Labels: []string{model.LabelOutcome}, PromQL: or(classify(dep(inc(attemptCount)), model.LabelOutcome, outcomes), started)},
		{Name: model.MetricRetries, PromQL: or(dep(inc(retriesSum))(""), q.unlessHas(diff, q.sel(retriesSum)))},
		// A96's hedges: their own family, and retries where the retries
		// histogram (which leaves them out) is read.
		{Name: model.MetricRetries, PromQL: dep(func(m string) string {
			return "(" + q.inc(hedgesSum, m) + ") and on (" + groupList(append(append([]string{}, q.By...), grTargetLabel)) + ") " + q.sel(retriesSum)
		})("")},
		{Name: model.MetricHedges, PromQL: dep(inc(hedgesSum))("")},
	}
	byClass := func(mk func(string) string) string { return classify(dep(mk), model.LabelResultClass, classes) }
	out = append(out, q.histExprs(model.MetricRequestDuration, grCallDuration, false, 1, []string{model.LabelResultClass}, byClass)...)
	byOutcome := func(mk func(string) string) string { return classify(dep(mk), model.LabelOutcome, outcomes) }
	return append(out, q.histExprs(model.MetricAttemptDuration, grAttemptDuration, false, 1, []string{model.LabelOutcome}, byOutcome)...)
}
