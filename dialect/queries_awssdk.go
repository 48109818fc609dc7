package dialect

import "github.com/retrytop/retrytop/model"

// Exprs: the AWS SDKs' client call metrics as Translate reads them, under
// the unprefixed names (the Kotlin SDK's smithy_ names are read from
// scrapes only), rpc_service the dependency.
func (awsSDK) Exprs(opts QueryOptions) []Expr {
	q := newQctx(opts)
	dep := func(mk func(string) string) func(string) string {
		return func(extra string) string { return setDep(mk(join(awsServiceLbl+`!=""`, extra)), awsServiceLbl) }
	}
	inc := func(raw string) func(string) string { return func(m string) string { return q.inc(raw, m) } }
	out := []Expr{
		{Name: model.MetricOriginals, PromQL: dep(inc(awsDuration + "_count"))("")},
		{Name: model.MetricAttempts, PromQL: dep(inc(awsAttempts))("")},
	}
	wrap := func(mk func(string) string) string { return dep(mk)("") }
	return append(out, q.histExprs(model.MetricRequestDuration, awsDuration, false, 1, nil, wrap)...)
}
