package dialect

import (
	"github.com/retrytop/retrytop/model"
)

// Apache APISIX's prometheus plugin (apisix/plugins/prometheus/exporter.lua):
// apisix_http_status{code, route, matched_uri, matched_host, service,
// consumer, node} once per request, in the log phase, node being the last
// upstream node tried ("" when none was); apisix_http_latency{type, route,
// service, consumer, node} in milliseconds. The APISIX service, else the
// route, is the dependency. The upstream's retries (retries, by default
// one per other node, on connection errors and timeouts) are not counted.
const (
	axStatus  = "apisix_http_status"
	axLatency = "apisix_http_latency"
)

type apisix struct{}

func (apisix) Name() string { return NameAPISIX }

func (apisix) Families() []string { return []string{axStatus, axLatency} }

// Detect: apisix_http_status.
func (apisix) Detect(fams []model.Family) bool { return index(fams).has(axStatus) }

// axDependency is the series' APISIX service, else its route.
func axDependency(ls model.Labels) (model.Labels, bool) {
	if s := ls.Get("service"); s != "" {
		return relabel(ls, s, "service"), true
	}
	if r := ls.Get("route"); r != "" {
		return relabel(ls, r, "route"), true
	}
	return nil, false
}

// axResult classifies one request: without a node APISIX answered before
// any upstream (a limit-req, limit-count or limit-conn refusal, 503 by
// default, or 429 when configured so: capacity_rejected; a 404 for no
// route or a 401 from auth: answered); with a node the status is the
// upstream's or APISIX's after it (502, 504).
func axResult(code, node string) string {
	failed := code == "429" || statusClass(code) == '5'
	switch {
	case failed && node == "":
		return model.ResultCapacityRejected
	case failed:
		return model.ResultProviderError
	case statusClass(code) != 0:
		return model.ResultSuccess
	}
	return ""
}

func (apisix) Translate(snap *model.Snapshot) *model.Snapshot {
	r := index(snap.Families)
	o := newOut()
	if f := r[axStatus]; f != nil {
		for i := range f.Samples {
			s := &f.Samples[i]
			ls, ok := axDependency(s.Labels)
			if !ok {
				continue
			}
			// node, matched_uri and code are per request, not identity
			// of the calls: dropped so that a node change is no new
			// series.
			ls = ls.Without("code", "node", "matched_uri", "matched_host")
			v := scalar(f, s)
			o.counter(model.MetricOriginals, ls, v)
			o.seed(model.MetricResults, ls, model.LabelResult, allResults...)
			if res := axResult(s.Labels.Get("code"), s.Labels.Get("node")); res != "" {
				o.counter(model.MetricResults, ls.With(model.LabelResult, res), v)
			}
		}
	}
	if f := r[axLatency]; f != nil && f.Type == model.Histogram {
		for i := range f.Samples {
			s := &f.Samples[i]
			if s.Labels.Get("type") != "request" {
				continue
			}
			if ls, ok := axDependency(s.Labels); ok {
				o.histogram(model.MetricRequestDuration, ls.Without("type", "node"), s, 0.001)
			}
		}
	}
	return o.snapshot(snap)
}
