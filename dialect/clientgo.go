package dialect

import (
	"net/url"

	"github.com/retrytop/retrytop/model"
)

// Kubernetes client-go's REST client metrics (k8s.io/client-go/tools/metrics,
// registered by k8s.io/component-base/metrics/prometheus/restclient or by
// controller-runtime), in every controller, operator and kubelet: calls to
// the API server, host being the dependency. docs/dialects.md says when
// each is counted.
const (
	cgRequests    = "rest_client_requests_total"                // {code, method, host}: one per attempt
	cgRetries     = "rest_client_request_retries_total"         // {code, verb, host}: one per retry (client-go 1.27+)
	cgDuration    = "rest_client_request_duration_seconds"      // {verb, host} (older: url): one per logical request
	cgRateLimiter = "rest_client_rate_limiter_duration_seconds" // {verb, host}: the client-side throttle's wait, per attempt
	cgErrorCode   = "<error>"                                   // an attempt that got no HTTP response
)

type clientGo struct{ g guard }

func (*clientGo) Name() string { return NameClientGo }

func (*clientGo) Families() []string {
	return []string{cgRequests, cgRetries, cgDuration, cgRateLimiter}
}

// Detect: rest_client_requests_total.
func (*clientGo) Detect(fams []model.Family) bool { return index(fams).has(cgRequests) }

// cgHost is the dependency of a client-go series: its host label, or the
// host of its url label (component-base before 1.24 labelled latency by
// url).
func cgHost(ls model.Labels) (string, []string) {
	if h := ls.Get("host"); h != "" {
		return h, []string{"host", "url"}
	}
	if u, err := url.Parse(ls.Get("url")); err == nil && u.Host != "" {
		return u.Host, []string{"url"}
	}
	return "", nil
}

func (c *clientGo) Translate(snap *model.Snapshot) *model.Snapshot {
	r := index(snap.Families)
	o := newOut()
	c.g.begin()
	defer c.g.end()
	hosts := map[string]bool{}
	var order []string
	each := func(name string, fn func(f *model.Family, s *model.Sample, host string, ls model.Labels)) {
		f := r[name]
		if f == nil {
			return
		}
		for i := range f.Samples {
			s := &f.Samples[i]
			host, drop := cgHost(s.Labels)
			if host == "" {
				continue
			}
			fn(f, s, host, relabel(s.Labels, host, append(drop, "code")...))
		}
	}
	// Attempts: client-go counts every response (and every transport
	// error, code "<error>") of every try, retries included, when it
	// returns. "<error>" may be a refused connection, a timeout or the
	// caller's cancel, which no label tells apart: a host with such
	// attempts has none of its attempts split by outcome (its errors,
	// timeouts and attempt success are then absent, not a made-up 0).
	// Its unsplit series are new when the first "<error>" shows, and hold
	// the host's history: derived, so a late one is a baseline.
	transport := map[string]bool{}
	each(cgRequests, func(f *model.Family, s *model.Sample, host string, ls model.Labels) {
		if !hosts[host] {
			hosts[host] = true
			order = append(order, host)
		}
		if s.Labels.Get("code") == cgErrorCode {
			transport[host] = true
		}
	})
	unsplit := map[string]float64{}
	var unsplitOrder []string
	unsplitLs := map[string]model.Labels{}
	var key []byte
	each(cgRequests, func(f *model.Family, s *model.Sample, host string, ls model.Labels) {
		if transport[host] {
			key = ls.AppendKey(key[:0])
			k := string(key)
			if _, ok := unsplit[k]; !ok {
				unsplitOrder = append(unsplitOrder, k)
				unsplitLs[k] = ls
			}
			if v := scalar(f, s); valid(v) {
				unsplit[k] += v
			}
			return
		}
		o.seed(model.MetricAttempts, ls, model.LabelOutcome, model.OutcomeSuccess, model.OutcomeTemporaryError)
		o.counter(model.MetricAttempts, ls.With(model.LabelOutcome, httpOutcome(s.Labels.Get("code"))), scalar(f, s))
	})
	for _, k := range unsplitOrder {
		o.derived(model.MetricAttempts, unsplitLs[k], &c.g, model.MetricAttempts, unsplitLs[k], unsplit[k], 0)
	}
	// Retries, counted when client-go decides one (a 429 or 5xx with
	// Retry-After, a connection reset or EOF on a GET; at most 10). The
	// counter vector shows no series before its first retry, and older
	// client-go (< 1.27) or a registry that does not register it never
	// shows any: a target without the family has retries unknown, not 0.
	// With the family, a host without a series has had none.
	if r[cgRetries] != nil {
		seen := map[string]bool{}
		each(cgRetries, func(f *model.Family, s *model.Sample, host string, ls model.Labels) {
			seen[host] = true
			o.counter(model.MetricRetries, ls, scalar(f, s))
		})
		for _, h := range order {
			if !seen[h] {
				o.counter(model.MetricRetries, model.LabelsFromPairs(model.LabelDependency, h), 0)
			}
		}
	}
	// Originals: request() observes its latency once per logical request,
	// retries and backoff included, when it ends: the histogram's count.
	// Not split by result (client-go has no per-request result).
	each(cgDuration, func(f *model.Family, s *model.Sample, host string, ls model.Labels) {
		o.counter(model.MetricOriginals, ls, scalar(f, s))
		switch f.Type {
		case model.Histogram:
			o.histogram(model.MetricRequestDuration, ls, s, 1)
		case model.Summary:
			o.countSum(model.MetricRequestDuration, ls, s.Count, s.Sum)
		}
	})
	// The client-side rate limiter (QPS/burst) delays each try before it
	// is sent: a wait for a slot.
	each(cgRateLimiter, func(f *model.Family, s *model.Sample, host string, ls model.Labels) {
		if f.Type == model.Histogram {
			o.histogram(model.MetricPoolWait, ls, s, 1)
		}
	})
	return o.snapshot(snap)
}
