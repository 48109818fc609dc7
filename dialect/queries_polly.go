package dialect

import (
	"strconv"

	"github.com/retrytop/retrytop/model"
)

// Exprs: Polly's meter as Translate reads it, under the exporter's
// _milliseconds names only (the bare names of exporters without unit
// suffixes are not queried), pipeline_name the dependency.
func (polly) Exprs(opts QueryOptions) []Expr {
	q := newQctx(opts)
	dep := func(mk func(string) string) func(string) string {
		return func(extra string) string { return setDep(mk(join(plPipelineLbl+`!=""`, extra)), plPipelineLbl) }
	}
	inc := func(raw string) func(string) string { return func(m string) string { return q.inc(raw, m) } }
	// plOutcome: handled by the retry predicate, else an exception, else
	// success.
	outcomes := []class{
		{`attempt_handled=~"(?i)true"`, model.OutcomeTemporaryError},
		{`attempt_handled!~"(?i)true", exception_type!=""`, model.OutcomePermanentError},
		{`attempt_handled!~"(?i)true", exception_type=""`, model.OutcomeSuccess},
	}
	byOutcome := func(mk func(string) string) string { return classify(dep(mk), model.LabelOutcome, outcomes) }
	event := func(name string) func(string) string {
		return func(m string) string { return q.inc(plEvents, join(m, plEventLbl+`="`+name+`"`)) }
	}
	// Retries: OnRetry events; for a pipeline without them, its attempts
	// numbered 1 and up (0 when none).
	by := groupList(append(append([]string{}, q.By...), "instance", plPipelineLbl))
	count := plAttempt + "_count"
	numbered := "(sum by (" + by + ") (" + q.inc(count, plPipelineLbl+`!=""`, `attempt_number!~"|0"`) + ") or sum by (" + by + ") (" +
		q.inc(count, plPipelineLbl+`!=""`) + ") * 0) unless on (" + by + ") " + q.sel(plEvents, plPipelineLbl+`!=""`, plEventLbl+`="OnRetry"`)
	// The breaker's state from its transitions since the start, as
	// plBreakers reads them: more opens than half-opens is open; as many
	// opens, half-opens and closes is closed; anything else unknown.
	breaker := dep(func(m string) string {
		n := func(ev string) string {
			return "sum by (" + by + ") (" + q.sel(plEvents, join(m, plEventLbl+`="`+ev+`"`)) + ")"
		}
		o, h, c := n(plOpened), n(plHalfOpen), n(plClosed)
		open := "((" + o + " - (" + h + " or " + o + " * 0)) > 0) * 0 + " + strconv.Itoa(model.BreakerOpen)
		closed := "((" + o + " - " + h + ") == 0 and (" + h + " - " + c + ") == 0) * 0 + " + strconv.Itoa(model.BreakerClosed)
		return or(open, closed)
	})("")
	out := []Expr{
		{Name: model.MetricOriginals, PromQL: dep(inc(plPipeline + "_count"))("")},
		{Name: model.MetricAttempts, Labels: []string{model.LabelOutcome}, PromQL: byOutcome(inc(count))},
		{Name: model.MetricRetries, PromQL: or(dep(event("OnRetry"))(""), setDep(numbered, plPipelineLbl))},
		{Name: model.MetricRequestTimeouts, PromQL: dep(event("OnTimeout"))("")},
		{Name: model.MetricHedges, PromQL: dep(event("OnHedging"))("")},
		{Name: model.MetricBreakerState, PromQL: breaker},
		{Name: model.MetricAdmissionRejected, Labels: []string{model.LabelReason}, PromQL: setLabel(dep(event("OnRateLimiterRejected"))(""), model.LabelReason, "rate")},
	}
	out = append(out, q.histExprs(model.MetricAttemptDuration, plAttempt, false, 0.001, []string{model.LabelOutcome}, byOutcome)...)
	wrap := func(mk func(string) string) string { return dep(mk)("") }
	return append(out, q.histExprs(model.MetricRequestDuration, plPipeline, false, 0.001, nil, wrap)...)
}
