package dialect

import (
	"github.com/retrytop/retrytop/model"
)

// Traefik 2.x/3.x's Prometheus metrics (pkg/metrics/prometheus.go): the
// router metrics (opt-in: addRoutersLabels) count each request a router
// handled, once, above its middlewares (retry, rateLimit, inFlightReq);
// the service metrics (addServicesLabels, on by default) wrap the load
// balancer below them, so every try the retry middleware makes is one
// service request. The service (its name, "whoami@docker") is the
// dependency.
const (
	trRouterReqs     = "traefik_router_requests_total"           // {code, method, protocol, router, service}
	trRouterDuration = "traefik_router_request_duration_seconds" // same labels
	trServiceReqs    = "traefik_service_requests_total"          // {code, method, protocol, service}
	trServiceDur     = "traefik_service_request_duration_seconds"
	trServiceRetries = "traefik_service_retries_total" // {service}: registered, never incremented (see Translate)
	trServiceLabel   = "service"
	trClientClosed   = "499" // Traefik's status for a request its client cancelled
)

type traefik struct{ g guard }

// trDerived is what the traefik dialect derives rather than reads, for
// reports to mark (DerivedByDialect).
var trDerived = map[string]string{
	model.MetricAdmissionRejected: "router 429s - service 429s (rateLimit or inFlightReq refusals)",
}

// Derived implements deriver.
func (*traefik) Derived() map[string]string { return trDerived }

func (*traefik) Name() string { return NameTraefik }

func (*traefik) Families() []string {
	return []string{trRouterReqs, trRouterDuration, trServiceReqs, trServiceDur, trServiceRetries, trEntryReqs}
}

// Detect: a service, router or entry-point request counter (with only
// the last, the dialect says which settings hide the rest).
func (*traefik) Detect(fams []model.Family) bool {
	return index(fams).has(trServiceReqs, trRouterReqs, trEntryReqs)
}

// trOutcome classifies one try's status; 499 is the client's cancel.
func trOutcome(code string) string {
	if code == trClientClosed {
		return model.OutcomeCancelled
	}
	return httpOutcome(code)
}

func (t *traefik) Translate(snap *model.Snapshot) *model.Snapshot {
	r := index(snap.Families)
	o := newOut()
	t.g.begin()
	defer t.g.end()
	each := func(name string, fn func(f *model.Family, s *model.Sample, ls model.Labels)) {
		f := r[name]
		if f == nil {
			return
		}
		for i := range f.Samples {
			s := &f.Samples[i]
			if svc := s.Labels.Get(trServiceLabel); svc != "" {
				fn(f, s, relabel(s.Labels, svc, trServiceLabel, "code"))
			}
		}
	}
	// Attempts: service requests by the try's status.
	svc429 := map[string]float64{}
	each(trServiceReqs, func(f *model.Family, s *model.Sample, ls model.Labels) {
		o.seed(model.MetricAttempts, ls, model.LabelOutcome, model.OutcomeSuccess, model.OutcomeTemporaryError, model.OutcomeCancelled)
		code := s.Labels.Get("code")
		if out := trOutcome(code); out != "" {
			ls = ls.With(model.LabelOutcome, out)
		}
		o.counter(model.MetricAttempts, ls, scalar(f, s))
		if code == "429" {
			svc429[ls.Get(model.LabelDependency)] += scalar(f, s)
		}
	})
	each(trServiceDur, func(f *model.Family, s *model.Sample, ls model.Labels) {
		if out := trOutcome(s.Labels.Get("code")); out != "" {
			ls = ls.With(model.LabelOutcome, out)
		}
		if f.Type == model.Histogram {
			o.histogram(model.MetricAttemptDuration, ls, s, 1)
		}
	})
	// Retries: traefik_service_retries_total is registered but the retry
	// middleware never increments it (traefik/traefik#10928; PR #10983
	// drops it from the docs), so its 0 says nothing: only a series that
	// moved is read, and a service without one has retries unknown.
	each(trServiceRetries, func(f *model.Family, s *model.Sample, ls model.Labels) {
		if v := scalar(f, s); v > 0 {
			o.counter(model.MetricRetries, ls, v)
		}
	})
	// Originals and results: router requests by final status. A 429 the
	// service did not answer came from rateLimit or inFlightReq in front
	// of it (Traefik's retry middleware never retries on a status, so
	// each upstream 429 is a final one): capacity_rejected, and an
	// admission rejection (derived, trDerived); the service's own 429s
	// and the 5xx are provider errors; 499 the client's cancel.
	type svc struct {
		ls     model.Labels
		r429   float64
		has429 bool
	}
	svcs := map[string]*svc{}
	var order []string
	each(trRouterReqs, func(f *model.Family, s *model.Sample, ls model.Labels) {
		v := scalar(f, s)
		o.counter(model.MetricOriginals, ls, v)
		base := ls.Without("router", "method", "protocol")
		dep := ls.Get(model.LabelDependency)
		sv := svcs[dep]
		if sv == nil {
			sv = &svc{ls: model.LabelsFromPairs(model.LabelDependency, dep)}
			svcs[dep] = sv
			order = append(order, dep)
		}
		o.seed(model.MetricResults, base, model.LabelResult, allResults...)
		switch code := s.Labels.Get("code"); {
		case code == "429":
			sv.r429 += v
			sv.has429 = true
		case code == trClientClosed:
			o.counter(model.MetricResults, base.With(model.LabelResult, model.ResultCancelled), v)
		case statusClass(code) == '5':
			o.counter(model.MetricResults, base.With(model.LabelResult, model.ResultProviderError), v)
		case statusClass(code) != 0:
			o.counter(model.MetricResults, base.With(model.LabelResult, model.ResultSuccess), v)
		}
	})
	for _, dep := range order {
		sv := svcs[dep]
		if !sv.has429 {
			continue
		}
		own := min(svc429[dep], sv.r429)
		o.counter(model.MetricResults, sv.ls.With(model.LabelResult, model.ResultProviderError), own)
		// Every upstream 429 is a router 429 at the same moment, so the
		// router's 429 series is never younger than the service's: when
		// the difference is first derived on a target already read, both
		// sides began after the previous scrape and it counts from 0.
		rejected := t.g.diff(model.MetricResults+"/capacity_rejected", sv.ls, sv.r429, svc429[dep])
		o.counter(model.MetricResults, sv.ls.With(model.LabelResult, model.ResultCapacityRejected), rejected)
		o.counter(model.MetricAdmissionRejected, sv.ls, rejected)
	}
	each(trRouterDuration, func(f *model.Family, s *model.Sample, ls model.Labels) {
		if f.Type == model.Histogram {
			o.histogram(model.MetricRequestDuration, ls, s, 1)
		}
	})
	traefikLabelsOff(r, o)
	return o.snapshot(snap)
}
