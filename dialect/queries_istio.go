package dialect

import "github.com/retrytop/retrytop/model"

// Exprs: istio_requests_total and istio_request_duration_milliseconds as
// Translate reads them (reporter="source": originals, results, admission,
// latency by result class; reporter="destination": server side), and the
// same sidecar's Envoy cluster stats for the rest.
func (*istio) Exprs(opts QueryOptions) []Expr {
	q := newQctx(opts)
	rules := istioRules()
	// source selects reporter="source" series with a destination and
	// extra matchers; dependency as istioDependency.
	source := func(mk func(extra string) string, extra string) string {
		named := setDep(mk(join(`reporter="source", destination_service!~"|unknown"`, extra)), "destination_service")
		short := setDep(mk(join(`reporter="source", destination_service=~"|unknown", destination_service_name!=""`, extra)), "destination_service_name")
		return or(named, short)
	}
	inc := func(raw string) func(string) string { return func(m string) string { return q.inc(raw, m) } }
	// classified is the union, over the rules selected by keep, of the
	// rule's series with label set to value(rule).
	classified := func(mk func(string) string, keep func(istioRule) bool, label string, value func(istioRule) string) string {
		var parts []string
		for _, r := range rules {
			if keep(r) {
				parts = append(parts, setLabel(source(mk, r.matchers), label, value(r)))
			}
		}
		return or(parts...)
	}
	all := func(istioRule) bool { return true }
	out := []Expr{
		{Name: model.MetricOriginals, PromQL: source(inc(istioRequests), "")},
		{Name: model.MetricResults, Labels: []string{model.LabelResult}, PromQL: classified(inc(istioRequests), all, model.LabelResult,
			func(r istioRule) string { return r.result })},
		{Name: model.MetricAdmissionRejected, Labels: []string{model.LabelReason}, PromQL: classified(inc(istioRequests),
			func(r istioRule) bool { return r.reason != "" }, model.LabelReason, func(r istioRule) string { return r.reason })},
	}
	// Latency by result class, milliseconds; histograms only.
	byClass := func(mk func(string) string) string {
		return classified(mk, all, model.LabelResultClass, func(r istioRule) string { return resultClass(r.result) })
	}
	out = append(out, q.histExprs(model.MetricRequestDuration, istioDuration, false, 0.001, []string{model.LabelResultClass}, byClass)...)
	// Server side: what this workload received, every caller's attempts.
	dest := func(mk func(string) string) string {
		return setLabel(mk(`reporter="destination"`), model.LabelDependency, "")
	}
	out = append(out, Expr{Name: model.MetricServerReceived, PromQL: dest(inc(istioRequests))}, q.istioStatsOffExpr(source))
	out = append(out, q.histExprs(model.MetricServerServiceTime, istioDuration, false, 0.001, nil, dest)...)
	// The Envoy cluster stats of the sidecars, not of other Envoys (the
	// envoy dialect reads those).
	for _, e := range q.envoyExprs(envoyParts{}) {
		e.PromQL = "(" + e.PromQL + ") and on (" + q.target() + ") " + q.sel(istioRequests)
		out = append(out, e)
	}
	return out
}

// istioRule is one case of istioResult as label matchers on
// response_flags and response_code; the rules partition the series.
type istioRule struct {
	matchers       string
	result, reason string
}

// istioRules are istioResult's cases in its order: a flag rule excludes
// the flags of the rules before it, the code rules every known flag.
func istioRules() []istioRule {
	flags := []struct {
		flags          []string
		result, reason string
	}{
		{[]string{"UO"}, model.ResultCapacityRejected, "concurrency"},
		{[]string{"RL"}, model.ResultCapacityRejected, "rate"},
		{[]string{"OM"}, model.ResultCapacityRejected, "concurrency"},
		{[]string{"UT"}, model.ResultDeadlineExhausted, ""},
		{[]string{"DC"}, model.ResultCancelled, ""},
		{[]string{"URX", "UF", "UH", "UC", "UR"}, model.ResultProviderError, ""},
		{[]string{"NR", "NC"}, model.ResultPermanentError, ""},
	}
	// has matches a comma-joined flag list holding one of fs.
	has := func(fs []string) string { return quote("(.*,)?(" + alt(fs...) + ")(,.*)?") }
	var out []istioRule
	var before []string
	for _, f := range flags {
		m := `response_flags=~` + has(f.flags)
		if len(before) > 0 {
			m = `response_flags!~` + has(before) + ", " + m
		}
		out = append(out, istioRule{m, f.result, f.reason})
		before = append(before, f.flags...)
	}
	none := `response_flags!~` + has(before)
	codes := []struct{ m, result string }{
		{`response_code=~"0|"`, model.ResultCancelled},
		{`response_code="429"`, model.ResultProviderError},
		{`response_code=~"[1-4].*", response_code!="429"`, model.ResultSuccess},
		{`response_code=~"5.*"`, model.ResultProviderError},
		{`response_code!~"|0|[1-5].*"`, model.ResultPermanentError},
	}
	for _, c := range codes {
		out = append(out, istioRule{none + ", " + c.m, c.result, ""})
	}
	return out
}
