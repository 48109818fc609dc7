package dialect

import "github.com/retrytop/retrytop/model"

// Exprs: the 2.16+ route families (policy) and the legacy ServiceProfile
// route families, as Translate reads them. Classifications become label
// matchers that partition the series; "this exposition has family F" (the
// backend statuses over the backend requests, route_actual_response over
// route_actual_request) is checked per scrape target.
func (*linkerd) Exprs(opts QueryOptions) []Expr {
	q := newQctx(opts)
	return append(q.linkerdPolicy(), q.linkerdLegacy()...)
}

// Error label values of the route statuses (lkErrorResult).
var (
	lkShed     = []string{"FAIL_FAST", "LOAD_SHED"}
	lkTimeouts = []string{"REQUEST_TIMEOUT", "RESPONSE_HEADERS_TIMEOUT", "RESPONSE_STREAM_TIMEOUT", "IDLE_TIMEOUT"}
)

// class is a set of label matchers and the contract label value its
// series get ("" removes the label).
type class struct{ matchers, value string }

// classify is the union of the classes' series of mk, each with label set
// to its value.
func classify(mk func(extra string) string, label string, cs []class) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = setLabel(mk(c.matchers), label, c.value)
	}
	return or(parts...)
}

// lkErrorClasses split statuses with an error label as lkErrorResult, the
// ones without by then (for the status classes that follow).
func lkErrorClasses(shed, timeout, cancel, other string) []class {
	known := append(append(append([]string{}, lkShed...), lkTimeouts...), "CANCEL")
	return []class{
		{`error=~` + quote(alt(lkShed...)), shed},
		{`error=~` + quote(alt(lkTimeouts...)), timeout},
		{`error="CANCEL"`, cancel},
		{`error!~` + quote("|"+alt(known...)), other},
	}
}

// httpClasses split error-free HTTP statuses as httpOutcome: 429 and 5xx
// temporary, other 1xx-4xx success, anything else unknown.
func httpClasses(label, success, temporary, unknown string) []class {
	none := `error="", `
	return []class{
		{none + label + `=~"[1-4].*", ` + label + `!="429"`, success},
		{none + label + `=~"429|5.*"`, temporary},
		{none + label + `!~"[1-5].*"`, unknown},
	}
}

// gRPC status names and numbers by grpcOutcome's classes (matched without
// regard to case, as grpcOutcome upper-cases).
var (
	grpcSuccessCodes   = []string{"OK", "0", "INVALID_ARGUMENT", "3", "NOT_FOUND", "5", "ALREADY_EXISTS", "6", "PERMISSION_DENIED", "7", "FAILED_PRECONDITION", "9", "OUT_OF_RANGE", "11", "UNAUTHENTICATED", "16"}
	grpcTemporaryCodes = []string{"UNAVAILABLE", "14", "RESOURCE_EXHAUSTED", "8", "ABORTED", "10"}
	grpcTimeoutCodes   = []string{"DEADLINE_EXCEEDED", "4"}
	grpcCancelCodes    = []string{"CANCELLED", "1"}
)

// grpcClasses split series by a gRPC status label as grpcOutcome, with the
// values given for each outcome (pre: matchers every class adds).
func grpcClasses(pre, label, success, temporary, timeout, cancelled, permanent string) []class {
	ci := func(codes []string) string { return quote("(?i)" + alt(codes...)) }
	all := append(append(append(append([]string{}, grpcSuccessCodes...), grpcTemporaryCodes...), grpcTimeoutCodes...), grpcCancelCodes...)
	return []class{
		{pre + label + `=~` + ci(grpcSuccessCodes), success},
		{pre + label + `=~` + ci(grpcTemporaryCodes), temporary},
		{pre + label + `=~` + ci(grpcTimeoutCodes), timeout},
		{pre + label + `=~` + ci(grpcCancelCodes), cancelled},
		{pre + label + `!~` + ci(all), permanent},
	}
}

func (q qctx) linkerdPolicy() []Expr {
	// dep selects series with a parent (the Service called), named by
	// it, or by their hostname under an EgressNetwork (lkDependency).
	egress := lkParentKindLabel + `="` + lkEgressKind + `"`
	dep := func(mk func(string) string) func(string) string {
		return func(extra string) string {
			return or(
				setDep(mk(join(lkParentLabel+`!=""`, lkParentKindLabel+`!="`+lkEgressKind+`"`, extra)), lkParentLabel),
				setDep(mk(join(lkParentLabel+`!=""`, egress, lkHostnameLabel+`=""`, extra)), lkParentLabel),
				setDep(mk(join(egress, lkHostnameLabel+`!=""`, extra)), lkHostnameLabel))
		}
	}
	inc := func(raw string) func(string) string { return func(m string) string { return q.inc(raw, m) } }
	var out []Expr
	for _, proto := range []struct {
		statuses, backendStatuses, backendReqs string
		grpc                                   bool
	}{{lkStatuses, lkBackendStatus, lkBackendReqs, false}, {lkGRPCStatuses, lkGRPCBackendStat, lkGRPCBackendReqs, true}} {
		st := dep(inc(proto.statuses))
		// Results of originals: the error first, else the status.
		results := lkErrorClasses(model.ResultCapacityRejected, model.ResultDeadlineExhausted, model.ResultCancelled, model.ResultProviderError)
		if proto.grpc {
			results = append(results, grpcClasses(`error="", `, "grpc_status", model.ResultSuccess, model.ResultProviderError,
				model.ResultDeadlineExhausted, model.ResultCancelled, model.ResultPermanentError)...)
		} else {
			results = append(results, httpClasses("http_status", model.ResultSuccess, model.ResultProviderError, model.ResultPermanentError)...)
		}
		// Outcomes of attempts: a cancel is cancelled (the caller's doing),
		// a timeout error is a timeout, other errors temporary; else by
		// status.
		outcomes := lkErrorClasses(model.OutcomeTemporaryError, model.OutcomeTimeout, model.OutcomeCancelled, model.OutcomeTemporaryError)
		if proto.grpc {
			outcomes = append(outcomes, grpcClasses(`error="", `, "grpc_status", model.OutcomeSuccess, model.OutcomeTemporaryError,
				model.OutcomeTimeout, model.OutcomeCancelled, model.OutcomePermanentError)...)
		} else {
			outcomes = append(outcomes, httpClasses("http_status", model.OutcomeSuccess, model.OutcomeTemporaryError, "")...)
		}
		backendReqs := setLabel(q.unlessHas(dep(inc(proto.backendReqs))(""), q.sel(proto.backendStatuses)), model.LabelOutcome, "")
		out = append(out,
			Expr{Name: model.MetricOriginals, PromQL: st("")},
			Expr{Name: model.MetricResults, Labels: []string{model.LabelResult}, PromQL: classify(st, model.LabelResult, results)},
			Expr{Name: model.MetricAdmissionRejected, Labels: []string{model.LabelReason}, PromQL: setLabel(st(`error=~`+quote(alt(lkShed...))), model.LabelReason, "queue")},
			Expr{Name: model.MetricAttempts, Labels: []string{model.LabelOutcome}, PromQL: or(classify(dep(inc(proto.backendStatuses)), model.LabelOutcome, outcomes), backendReqs)},
		)
	}
	targets := []string{model.MetricRetries, model.MetricRescued, model.MetricRetryLimitExceeded, model.MetricBudgetDenied}
	for _, fams := range lkRetry {
		for k, raw := range fams {
			out = append(out, Expr{Name: targets[k], PromQL: dep(inc(raw))("")})
		}
	}
	wrap := func(mk func(string) string) string { return dep(mk)("") }
	for _, h := range []struct{ family, raw string }{
		{model.MetricRequestDuration, lkDuration}, {model.MetricRequestDuration, lkGRPCDuration},
		{model.MetricAttemptDuration, lkBackendDur}, {model.MetricAttemptDuration, lkGRPCBackendDur},
		{model.MetricPoolWait, lkQueueLatency}, {model.MetricPoolWait, lkGRPCQueueLat},
	} {
		out = append(out, q.histExprs(h.family, h.raw, false, 1, nil, wrap)...)
	}
	for _, raw := range []string{lkQueueLength, lkGRPCQueueLength} {
		out = append(out, Expr{Name: model.MetricPendingCalls, PromQL: dep(func(m string) string { return q.sel(raw, m) })("")})
	}
	return out
}

func (q qctx) linkerdLegacy() []Expr {
	// dep selects outbound series with a destination.
	dep := func(mk func(string) string) func(string) string {
		return func(extra string) string {
			return setDep(mk(join(lkLegacyDependencyLbl+`!="", direction!="inbound"`, extra)), lkLegacyDependencyLbl)
		}
	}
	inc := func(raw string) func(string) string { return func(m string) string { return q.inc(raw, m) } }
	byClassification := func(mk func(string) string, label, failure, other string) string {
		return classify(dep(mk), label, []class{{`classification="failure"`, failure}, {`classification!="failure"`, other}})
	}
	actualReqs := setLabel(q.unlessHas(dep(inc(lkLegacyActualReqs))(""), q.sel(lkLegacyActualResps)), model.LabelOutcome, "")
	out := []Expr{
		{Name: model.MetricOriginals, PromQL: dep(inc(lkLegacyRequests))("")},
		{Name: model.MetricResults, Labels: []string{model.LabelResult}, PromQL: byClassification(inc(lkLegacyResponses), model.LabelResult,
			model.ResultProviderError, model.ResultSuccess)},
		{Name: model.MetricAttempts, Labels: []string{model.LabelOutcome}, PromQL: or(byClassification(inc(lkLegacyActualResps), model.LabelOutcome,
			model.OutcomeTemporaryError, model.OutcomeSuccess), actualReqs)},
		// Retries: actual - effective requests of the same route.
		{Name: model.MetricRetries, PromQL: dep(func(m string) string {
			return "clamp_min(" + q.inc(lkLegacyActualReqs, m) + " - " + q.inc(lkLegacyRequests, m) + ", 0)"
		})("")},
		{Name: model.MetricBudgetDenied, PromQL: dep(inc(lkLegacyRetryable))(`skipped="no_budget"`)},
		{Name: model.MetricBudgetDenied, PromQL: dep(inc(lkLegacyRetrySkipped))(`skipped="budget"`)},
	}
	// Latency per logical request, milliseconds, by classification.
	latency := func(mk func(string) string) string {
		return classify(dep(mk), model.LabelResultClass, []class{
			{`classification="success"`, model.ClassSuccess},
			{`classification="failure"`, model.ClassFailure},
			{`classification!~"success|failure"`, ""},
		})
	}
	return append(out, q.histExprs(model.MetricRequestDuration, lkLegacyLatency, false, 0.001, []string{model.LabelResultClass}, latency)...)
}
