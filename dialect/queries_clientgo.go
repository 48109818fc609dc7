package dialect

import "github.com/retrytop/retrytop/model"

// Exprs: client-go's REST client metrics as Translate reads them, the
// host label the dependency (the url label of component-base before 1.24
// is not parsed here: PromQL cannot take a URL apart reliably).
func (*clientGo) Exprs(opts QueryOptions) []Expr {
	q := newQctx(opts)
	dep := func(mk func(string) string) func(string) string {
		return func(extra string) string { return setDep(mk(join(`host!=""`, extra)), "host") }
	}
	inc := func(raw string) func(string) string { return func(m string) string { return q.inc(raw, m) } }
	attempts := dep(inc(cgRequests))
	tgt := q.target()
	// A host with attempts that got no HTTP response ("<error>") has no
	// outcome on any of its attempts, as Translate.
	transport := q.sel(cgRequests, `host!=""`, `code="`+cgErrorCode+`"`)
	split := func(extra string) string {
		return "(" + attempts(extra) + ") unless on (" + tgt + ", host) " + transport
	}
	outcomes := or(
		setLabel(split(`code=~"[1-4].*", code!="429"`), model.LabelOutcome, model.OutcomeSuccess),
		setLabel(split(`code=~"429|5.*"`), model.LabelOutcome, model.OutcomeTemporaryError),
		setLabel(setDep("sum without (code) ("+q.inc(cgRequests, `host!=""`)+") and on ("+tgt+", host) "+transport, "host"), model.LabelOutcome, ""),
	)
	// Retries where the target exports the family: a host without a
	// series of it has had none (0), one whose target lacks the family
	// is unknown.
	retries := dep(inc(cgRetries))("")
	zero := "(sum by (" + tgt + ", host) (" + q.inc(cgRequests, `host!=""`) + ") * 0 unless on (" + tgt + ", host) " +
		q.sel(cgRetries, `host!=""`) + ") and on (" + tgt + ") " + q.sel(cgRetries)
	retriesZero := setDep(zero, "host")
	out := []Expr{
		{Name: model.MetricAttempts, Labels: []string{model.LabelOutcome}, PromQL: outcomes},
		{Name: model.MetricRetries, PromQL: or(retries, retriesZero)},
		{Name: model.MetricOriginals, PromQL: dep(inc(cgDuration + "_count"))("")},
	}
	wrap := func(mk func(string) string) string { return dep(mk)("") }
	out = append(out, q.histExprs(model.MetricRequestDuration, cgDuration, false, 1, nil, wrap)...)
	return append(out, q.histExprs(model.MetricPoolWait, cgRateLimiter, false, 1, nil, wrap)...)
}
