package dialect

import "github.com/retrytop/retrytop/model"

// Exprs: the interceptor's client families as Translate reads them, the
// grpc_service label the dependency, grpc_code classified as grpcResult.
func (grpcProm) Exprs(opts QueryOptions) []Expr {
	q := newQctx(opts)
	dep := func(mk func(string) string) func(string) string {
		return func(extra string) string { return setDep(mk(join(gpService+`!=""`, extra)), gpService) }
	}
	inc := func(raw string) func(string) string { return func(m string) string { return q.inc(raw, m) } }
	// grpc-go's code names ("DeadlineExceeded"), as gpCanonical reads them.
	goNames := func(codes []string) string {
		out := make([]string, len(codes))
		for i, c := range codes {
			out[i] = gpGoName(c)
		}
		return quote(alt(out...))
	}
	var all []string
	for _, cs := range [][]string{grpcSuccessCodes, grpcTemporaryCodes, grpcTimeoutCodes, grpcCancelCodes} {
		all = append(all, cs...)
	}
	results := []class{
		{gpCode + `=~` + goNames(grpcSuccessCodes), model.ResultSuccess},
		{gpCode + `=~` + goNames(grpcTemporaryCodes), model.ResultProviderError},
		{gpCode + `=~` + goNames(grpcTimeoutCodes), model.ResultDeadlineExhausted},
		{gpCode + `=~` + goNames(grpcCancelCodes), model.ResultCancelled},
		{gpCode + `!~` + goNames(all), model.ResultPermanentError},
	}
	out := []Expr{
		{Name: model.MetricOriginals, PromQL: dep(inc(gpStarted))("")},
		{Name: model.MetricResults, Labels: []string{model.LabelResult}, PromQL: classify(dep(inc(gpHandled)), model.LabelResult, results)},
	}
	wrap := func(mk func(string) string) string { return dep(mk)("") }
	return append(out, q.histExprs(model.MetricRequestDuration, gpHandling, false, 1, nil, wrap)...)
}
