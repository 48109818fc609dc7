package dialect

import (
	"github.com/retrytop/retrytop/model"
)

// resilience4j through Micrometer's Prometheus registry (label name = the
// instance, the dependency; kind = the outcome). Since resilience4j 1.3 the
// retry calls are a counter resilience4j_retry_calls_total; before, a gauge
// resilience4j_retry_calls with the same cumulative values.
const (
	r4jRetryCalls        = "resilience4j_retry_calls_total"
	r4jRetryCallsOld     = "resilience4j_retry_calls"
	r4jNotPermitted      = "resilience4j_circuitbreaker_not_permitted_calls_total"
	r4jCBCallsOld        = "resilience4j_circuitbreaker_calls_total" // kind="not_permitted" before 1.x
	r4jBulkheadAvailable = "resilience4j_bulkhead_available_concurrent_calls"
	r4jBulkheadMax       = "resilience4j_bulkhead_max_allowed_concurrent_calls"
	r4jTPQueueDepth      = "resilience4j_bulkhead_queue_depth"
	r4jNameLabel         = "name"
)

type resilience4j struct{}

func (*resilience4j) Name() string { return NameResilience4j }

func (*resilience4j) Families() []string {
	return []string{r4jRetryCalls, r4jRetryCallsOld, r4jNotPermitted, r4jCBCallsOld,
		r4jBulkheadAvailable, r4jBulkheadMax, r4jTPQueueDepth, r4jCBState}
}

// Detect: a retry calls family (either form), the circuit breaker's
// not-permitted calls, or a bulkhead gauge.
func (*resilience4j) Detect(fams []model.Family) bool {
	return index(fams).has(r4jRetryCalls, r4jRetryCallsOld, r4jNotPermitted, r4jBulkheadMax)
}

// r4jKinds maps the retry kinds to final results.
var r4jKinds = map[string]string{
	"successful_without_retry": model.ResultSuccess,
	"successful_with_retry":    model.ResultSuccess,
	"failed_with_retry":        model.ResultProviderError, // maxAttempts spent
	"failed_without_retry":     model.ResultPermanentError,
}

func (*resilience4j) Translate(snap *model.Snapshot) *model.Snapshot {
	r := index(snap.Families)
	o := newOut()
	dep := func(ls model.Labels, drop ...string) (model.Labels, bool) {
		d := ls.Get(r4jNameLabel)
		if d == "" {
			return nil, false
		}
		return relabel(ls, d, append(drop, r4jNameLabel)...), true
	}
	if f := r.first(r4jRetryCalls, r4jRetryCallsOld); f != nil {
		for i := range f.Samples {
			s := &f.Samples[i]
			kind := s.Labels.Get("kind")
			res, known := r4jKinds[kind]
			ls, ok := dep(s.Labels, "kind")
			if !ok || !known {
				continue
			}
			v := scalar(f, s)
			o.counter(model.MetricOriginals, ls, v)
			o.counter(model.MetricResults, ls.With(model.LabelResult, res), v)
			switch kind {
			case "successful_with_retry":
				o.counter(model.MetricRescued, ls, v)
			case "failed_with_retry":
				o.counter(model.MetricRetryLimitExceeded, ls, v)
			}
		}
	}
	// Calls the circuit breaker refused while open.
	reject := func(f *model.Family, s *model.Sample) {
		if ls, ok := dep(s.Labels, "kind"); ok {
			o.counter(model.MetricAdmissionRejected, ls.With(model.LabelReason, model.ReasonCircuitOpen), scalar(f, s))
		}
	}
	if f := r[r4jNotPermitted]; f != nil {
		for i := range f.Samples {
			reject(f, &f.Samples[i])
		}
	} else if f := r[r4jCBCallsOld]; f != nil {
		for i := range f.Samples {
			if f.Samples[i].Labels.Get("kind") == "not_permitted" {
				reject(f, &f.Samples[i])
			}
		}
	}
	r4jBreakerState(r, o, dep)
	// Semaphore bulkhead: active = max - available; limit = max.
	avail := map[string]float64{}
	var key []byte
	if f := r[r4jBulkheadAvailable]; f != nil {
		for i := range f.Samples {
			s := &f.Samples[i]
			if ls, ok := dep(s.Labels); ok {
				key = ls.AppendKey(key[:0])
				avail[string(key)] = s.Value
			}
		}
	}
	if f := r[r4jBulkheadMax]; f != nil {
		for i := range f.Samples {
			s := &f.Samples[i]
			ls, ok := dep(s.Labels)
			if !ok {
				continue
			}
			o.gauge(model.MetricConcurrencyLimit, ls, s.Value)
			key = ls.AppendKey(key[:0])
			if a, ok := avail[string(key)]; ok {
				o.gauge(model.MetricActiveCalls, ls, s.Value-a)
			}
		}
	}
	if f := r[r4jTPQueueDepth]; f != nil {
		for i := range f.Samples {
			s := &f.Samples[i]
			if ls, ok := dep(s.Labels); ok {
				o.gauge(model.MetricPendingCalls, ls, s.Value)
			}
		}
	}
	return o.snapshot(snap)
}
