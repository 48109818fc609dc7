package dialect

import (
	"strconv"

	"github.com/retrytop/retrytop/model"
)

// Exprs: resilience4j through Micrometer as Translate reads it, the
// instance name being the dependency. A family Translate takes only when
// another is missing (the pre-1.3 retry gauge, the pre-1.x circuit breaker
// calls) is taken per scrape target the same way. The pre-1.3 gauge holds
// cumulative counts, so increase() reads it like the counter.
func (*resilience4j) Exprs(opts QueryOptions) []Expr {
	q := newQctx(opts)
	dep := func(mk func(string) string) func(string) string {
		return func(extra string) string { return setDep(mk(join(r4jNameLabel+`!=""`, extra)), r4jNameLabel) }
	}
	// calls are the retry calls of the given kinds, from the counter, or
	// the old gauge where the target has no counter.
	calls := func(extra string) string {
		return or(q.inc(r4jRetryCalls, extra), q.unlessHas(q.inc(r4jRetryCallsOld, extra), q.sel(r4jRetryCalls)))
	}
	kinds := func(ks ...string) string { return `kind=~` + quote(alt(ks...)) }
	known := kinds("successful_without_retry", "successful_with_retry", "failed_with_retry", "failed_without_retry")
	results := classify(dep(calls), model.LabelResult, []class{
		{kinds("successful_without_retry", "successful_with_retry"), model.ResultSuccess},
		{kinds("failed_with_retry"), model.ResultProviderError},
		{kinds("failed_without_retry"), model.ResultPermanentError},
	})
	notPermitted := dep(func(m string) string {
		return or(q.inc(r4jNotPermitted, m), q.unlessHas(q.inc(r4jCBCallsOld, join(`kind="not_permitted"`, m)), q.sel(r4jNotPermitted)))
	})("")
	level := func(raw string) string { return dep(func(m string) string { return q.sel(raw, m) })("") }
	return []Expr{
		{Name: model.MetricOriginals, PromQL: dep(calls)(known)},
		{Name: model.MetricResults, Labels: []string{model.LabelResult}, PromQL: results},
		{Name: model.MetricRescued, PromQL: dep(calls)(kinds("successful_with_retry"))},
		{Name: model.MetricRetryLimitExceeded, PromQL: dep(calls)(kinds("failed_with_retry"))},
		{Name: model.MetricAdmissionRejected, Labels: []string{model.LabelReason}, PromQL: setLabel(notPermitted, model.LabelReason, "circuit_open")},
		// Semaphore bulkhead: active = max - available, limit = max.
		{Name: model.MetricConcurrencyLimit, PromQL: level(r4jBulkheadMax)},
		{Name: model.MetricActiveCalls, PromQL: dep(func(m string) string {
			return q.sel(r4jBulkheadMax, m) + " - " + q.sel(r4jBulkheadAvailable, m)
		})("")},
		{Name: model.MetricPendingCalls, PromQL: level(r4jTPQueueDepth)},
		// The state whose series reads 1, as r4jStates codes it.
		{Name: model.MetricBreakerState, PromQL: dep(func(m string) string {
			state := func(states string, code int) string {
				return "(" + q.sel(r4jCBState, join(`state=~"`+states+`"`, m)) + " == 1) * " + strconv.Itoa(code)
			}
			return "sum without (state) (" + or(state("open|forced_open", model.BreakerOpen),
				state("half_open", model.BreakerHalfOpen), state("closed|disabled|metrics_only", model.BreakerClosed)) + ")"
		})("")},
	}
}
