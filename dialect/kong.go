package dialect

import (
	"github.com/retrytop/retrytop/model"
)

// Kong Gateway's Prometheus plugin (kong/plugins/prometheus/exporter.lua):
// 3.x kong_http_requests_total{service, route, code, source, consumer}
// (opt-in status_code_metrics) and kong_request_latency_ms (opt-in
// latency_metrics, milliseconds); 2.x kong_http_status{code, service,
// route} and kong_latency{type}. The Kong service is the dependency. One
// series per request Kong answered: Kong's own balancer retries (retries,
// default 5, on connection errors and timeouts) are not counted anywhere.
const (
	kgRequests  = "kong_http_requests_total"
	kgStatus2   = "kong_http_status" // 2.x
	kgLatency   = "kong_request_latency_ms"
	kgLatency2  = "kong_latency" // 2.x, type="request"
	kgService   = "service"
	kgSourceLbl = "source"
)

type kong struct{}

func (kong) Name() string { return NameKong }

func (kong) Families() []string { return []string{kgRequests, kgStatus2, kgLatency, kgLatency2} }

// Detect: the status counter of 3.x or 2.x.
func (kong) Detect(fams []model.Family) bool { return index(fams).has(kgRequests, kgStatus2) }

// kgResult classifies one request Kong answered. source "service": the
// upstream's status; otherwise Kong (or a plugin) produced it: its 429 is
// the rate-limiting plugin's refusal, its 5xx an upstream it could not
// reach or that timed out. 2.x has no source: a 429 cannot be told and is
// the provider's.
func kgResult(code, source string, hasSource bool) (result, reason string) {
	kongMade := hasSource && source != "service"
	switch {
	case code == "429" && kongMade:
		return model.ResultCapacityRejected, "rate"
	case code == "429" || statusClass(code) == '5':
		return model.ResultProviderError, ""
	case statusClass(code) != 0:
		return model.ResultSuccess, ""
	}
	return "", ""
}

func (kong) Translate(snap *model.Snapshot) *model.Snapshot {
	r := index(snap.Families)
	o := newOut()
	f := r.first(kgRequests, kgStatus2)
	if f != nil {
		hasSource := f.Name == kgRequests
		for i := range f.Samples {
			s := &f.Samples[i]
			svc := s.Labels.Get(kgService)
			if svc == "" {
				continue
			}
			ls := relabel(s.Labels, svc, kgService, "code", kgSourceLbl, "consumer")
			v := scalar(f, s)
			o.counter(model.MetricOriginals, ls, v)
			o.seed(model.MetricResults, ls, model.LabelResult, allResults...)
			res, reason := kgResult(s.Labels.Get("code"), s.Labels.Get(kgSourceLbl), hasSource)
			if res != "" {
				o.counter(model.MetricResults, ls.With(model.LabelResult, res), v)
			}
			if reason != "" {
				o.counter(model.MetricAdmissionRejected, ls.With(model.LabelReason, reason), v)
			}
		}
	}
	if f := r[kgLatency]; f != nil && f.Type == model.Histogram {
		for i := range f.Samples {
			if svc := f.Samples[i].Labels.Get(kgService); svc != "" {
				o.histogram(model.MetricRequestDuration, relabel(f.Samples[i].Labels, svc, kgService), &f.Samples[i], 0.001)
			}
		}
	} else if f := r[kgLatency2]; f != nil && f.Type == model.Histogram {
		for i := range f.Samples {
			s := &f.Samples[i]
			if svc := s.Labels.Get(kgService); svc != "" && s.Labels.Get("type") == "request" {
				o.histogram(model.MetricRequestDuration, relabel(s.Labels, svc, kgService, "type"), s, 0.001)
			}
		}
	}
	return o.snapshot(snap)
}
