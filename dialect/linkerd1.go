package dialect

import (
	"github.com/retrytop/retrytop/model"
)

// Linkerd 1 (Finagle-based; 1.7.5 the last release) through its
// io.l5d.prometheus telemeter (/admin/metrics/prometheus, prefix "" by
// default): finagle's scopes rt/<router>/{service,client}/<id>/... become
// rt:service:... and rt:client:... with labels rt and service or client
// (linkerd/linkerd telemetry/prometheus PrometheusTelemeter.scala). No
// TYPE lines: every family is untyped.
//
// Two retry layers, two kinds of rows:
//   - service (the logical name, e.g. svc/users): linkerd's RetryFilter
//     retries what the response classifier calls retryable. requests are
//     the originals, retries:total the retries, retries:budget_exhausted
//     the retries the budget refused; success and failures the results.
//   - client (the bound name, e.g. #/io.l5d.k8s/default/http/users):
//     finagle's requeues of connection failures. requests are physical
//     requests (requeues included), retries:requeues the requeues.
//
// Latency is not read: a stat (request_latency_ms) is a summary of the
// last snapshot interval (the metrics export telemeter resets every
// minute), not a cumulative histogram, so its _count and _sum fall.
const (
	l1SvcRequests  = "rt:service:requests"
	l1SvcSuccess   = "rt:service:success"
	l1SvcFailures  = "rt:service:failures" // {exception} per cause beside the total without
	l1SvcPending   = "rt:service:pending"
	l1SvcRetries   = "rt:service:retries:total"
	l1SvcExhausted = "rt:service:retries:budget_exhausted"
	l1SvcBudget    = "rt:service:retries:budget"
	l1CltRequests  = "rt:client:requests"
	l1CltPending   = "rt:client:pending"
	l1CltRequeues  = "rt:client:retries:requeues"
	l1CltExhausted = "rt:client:retries:budget_exhausted"
	l1CltLimit     = "rt:client:retries:request_limit"
	l1CltBudget    = "rt:client:retries:budget"
	l1Exception    = "exception"
)

type linkerd1 struct{}

func (linkerd1) Name() string { return NameLinkerd1 }

func (linkerd1) Families() []string {
	return []string{l1SvcRequests, l1SvcSuccess, l1SvcFailures, l1SvcPending, l1SvcRetries, l1SvcExhausted, l1SvcBudget,
		l1CltRequests, l1CltPending, l1CltRequeues, l1CltExhausted, l1CltLimit, l1CltBudget}
}

// Detect: a service's or a client's request counter, or either retry
// scope's counters.
func (linkerd1) Detect(fams []model.Family) bool {
	return index(fams).has(l1SvcRequests, l1CltRequests, l1SvcRetries, l1CltRequeues)
}

func (linkerd1) Translate(snap *model.Snapshot) *model.Snapshot {
	r := index(snap.Families)
	o := newOut()
	// each calls fn for the samples of a family with the stack's label
	// set, without an exception label (the per-cause failures, which the
	// total without one already counts), as a series of that dependency.
	each := func(name, stack string, fn func(v float64, ls model.Labels)) {
		f := r[name]
		if f == nil {
			return
		}
		for i := range f.Samples {
			s := &f.Samples[i]
			id := s.Labels.Get(stack)
			if id == "" || s.Labels.Has(l1Exception) {
				continue
			}
			fn(scalar(f, s), relabel(s.Labels, id, stack))
		}
	}
	counter := func(contract string) func(float64, model.Labels) {
		return func(v float64, ls model.Labels) { o.counter(contract, ls, v) }
	}
	gauge := func(contract string) func(float64, model.Labels) {
		return func(v float64, ls model.Labels) { o.gauge(contract, ls, v) }
	}
	// Service rows. Attempts are the originals plus the retries (each
	// retry is one more try through the client below), only where both
	// are exposed.
	retries := map[string]float64{}
	each(l1SvcRetries, "service", func(v float64, ls model.Labels) {
		o.counter(model.MetricRetries, ls, v)
		retries[string(ls.AppendKey(nil))] = v
	})
	each(l1SvcRequests, "service", func(v float64, ls model.Labels) {
		o.counter(model.MetricOriginals, ls, v)
		o.seed(model.MetricResults, ls, model.LabelResult, allResults...)
		if n, ok := retries[string(ls.AppendKey(nil))]; ok {
			o.counter(model.MetricAttempts, ls, v+n)
		}
	})
	each(l1SvcSuccess, "service", func(v float64, ls model.Labels) {
		o.counter(model.MetricResults, ls.With(model.LabelResult, model.ResultSuccess), v)
	})
	each(l1SvcFailures, "service", func(v float64, ls model.Labels) {
		o.counter(model.MetricResults, ls.With(model.LabelResult, model.ResultProviderError), v)
	})
	each(l1SvcExhausted, "service", counter(model.MetricBudgetDenied))
	each(l1SvcBudget, "service", gauge(model.MetricBudgetBalance))
	each(l1SvcPending, "service", gauge(model.MetricActiveCalls))
	// Client rows: the requeue layer. Its originals (the tries the
	// services sent) are not told per client.
	each(l1CltRequests, "client", counter(model.MetricAttempts))
	each(l1CltRequeues, "client", counter(model.MetricRetries))
	each(l1CltExhausted, "client", counter(model.MetricBudgetDenied))
	each(l1CltLimit, "client", counter(model.MetricRetryLimitExceeded))
	each(l1CltBudget, "client", gauge(model.MetricBudgetBalance))
	each(l1CltPending, "client", gauge(model.MetricActiveCalls))
	return o.snapshot(snap)
}
