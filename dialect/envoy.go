package dialect

import (
	"strings"

	"github.com/retrytop/retrytop/model"
)

// Envoy's /stats/prometheus: cluster stats envoy_cluster_<stat> with the
// cluster in label envoy_cluster_name (Envoy's default tag extractors) or
// cluster_name (Istio's bootstrap). Counters have no _total suffix unless
// the stat's own name ends in _total; upstream_rq_time is in milliseconds.
const (
	enCompleted       = "envoy_cluster_upstream_rq_completed"
	enTotal           = "envoy_cluster_upstream_rq_total"
	enPerTryTimeout   = "envoy_cluster_upstream_rq_per_try_timeout"
	enTimeout         = "envoy_cluster_upstream_rq_timeout"
	enRetry           = "envoy_cluster_upstream_rq_retry"
	enRetrySuccess    = "envoy_cluster_upstream_rq_retry_success"
	enRetryOverflow   = "envoy_cluster_upstream_rq_retry_overflow"
	enRetryLimit      = "envoy_cluster_upstream_rq_retry_limit_exceeded"
	enPendingOverflow = "envoy_cluster_upstream_rq_pending_overflow"
	enActive          = "envoy_cluster_upstream_rq_active"
	enPendingActive   = "envoy_cluster_upstream_rq_pending_active"
	enTime            = "envoy_cluster_upstream_rq_time"
	// Exported only with the circuit breakers' track_remaining: the
	// retries the max_retries breaker (or the retry budget replacing it)
	// allows now, at default priority.
	enRemainingRetries = "envoy_cluster_circuit_breakers_default_remaining_retries"

	// Server side: the HTTP connection managers' downstream stats
	// (http.<stat_prefix>.downstream_rq_*), what this Envoy received.
	enDownTotal  = "envoy_http_downstream_rq_total"
	enDownActive = "envoy_http_downstream_rq_active"
	enDownXX     = "envoy_http_downstream_rq_xx"
	enDownTime   = "envoy_http_downstream_rq_time"

	enHCMLabel       = "envoy_http_conn_manager_prefix"
	istioHCMLabel    = "http_conn_manager_prefix"
	enAdminHCM       = "admin"
	enCodeClassLabel = "envoy_response_code_class"

	enClusterLabel      = "envoy_cluster_name"
	istioClusterLabel   = "cluster_name"
	istioOutboundPrefix = "outbound|"
)

var envoyFamilies = []string{enCompleted, enTotal, enPerTryTimeout, enTimeout, enRetry, enRetrySuccess,
	enRetryOverflow, enRetryLimit, enPendingOverflow, enActive, enPendingActive, enTime, enRemainingRetries,
	enRetryOpen, enRqOpen}

var envoyDownstreamFamilies = []string{enDownTotal, enDownActive, enDownXX, enDownTime}

type envoy struct{ g guard }

func (*envoy) Name() string { return NameEnvoy }

func (*envoy) Families() []string {
	return append(append([]string{}, envoyFamilies...), envoyDownstreamFamilies...)
}

// Detect: envoy_cluster_upstream_rq_total is present and
// istio_requests_total is not (an Istio sidecar is read by the istio
// dialect, which includes these stats).
func (*envoy) Detect(fams []model.Family) bool {
	r := index(fams)
	return r.has(enTotal) && !r.has(istioRequests)
}

func (e *envoy) Translate(snap *model.Snapshot) *model.Snapshot {
	o := newOutMemo(&e.g.slots)
	e.g.begin()
	r := index(snap.Families)
	translateEnvoy(r, o, &e.g, envoyAll)
	envoyUsedOnly(r, o, &e.g, model.SettingEnvoyUsedOnly)
	translateEnvoyDownstream(r, o)
	envoyIdentity(r, o)
	e.g.end()
	return o.snapshot(snap)
}

// release implements releaser.
func (e *envoy) release(fams []model.Family) { e.g.slots.release(fams) }

// envoyIdentity names a sidecar as OpenTelemetry's target_info would
// (analysis.Identities) from its inbound cluster when the cluster carries
// the service's host (Istio before 1.10: inbound|9080|http|reviews.default.svc.cluster.local):
// service reviews, namespace default, how its callers' outbound clusters
// name it. Later Istio writes inbound|9080|| (no host; the Istio dialect
// reads the workload labels instead) and plain Envoy has no name in its
// stats at all: none is given, the target keeps its job or host:port.
func envoyIdentity(r raw, o *out) {
	host := ""
	for _, name := range []string{enTotal, enCompleted} {
		for _, s := range r.samples(name) {
			c := s.Labels.Get("envoy_cluster_name")
			if c == "" {
				c = s.Labels.Get("cluster_name")
			}
			if !strings.HasPrefix(c, "inbound|") {
				continue // the check below, without splitting every cluster's name
			}
			parts := strings.Split(c, "|")
			if len(parts) != 4 || parts[0] != "inbound" || parts[3] == "" {
				continue
			}
			if host != "" && host != parts[3] {
				return // several services behind one proxy: no one name
			}
			host = parts[3]
		}
	}
	if labels := strings.Split(host, "."); len(labels) >= 2 && labels[0] != "" {
		o.gauge(model.MetricTargetInfo, model.LabelsFromPairs("service_name", labels[0], "service_namespace", labels[1]), 1)
	}
}

// envoyHCM returns the labels of a downstream series as a server-side
// series (no dependency); ok is false for the admin listener, whose
// requests are the admin interface's own (scrapes of these very stats
// included), and for a series without a connection manager label.
func envoyHCM(ls model.Labels) (model.Labels, bool) {
	name := ls.Get(enHCMLabel)
	if name == "" {
		name = ls.Get(istioHCMLabel)
	}
	if name == "" || name == enAdminHCM {
		return nil, false
	}
	return relabelNoDep(ls), true
}

// translateEnvoyDownstream emits the service-side families from the HTTP
// connection managers' downstream stats (docs/dialects.md, "Server side"):
// requests received, requests active, responses by class and the request
// time (milliseconds, scaled to seconds). Envoy exports no slots, queue or
// cancellation a service could be judged by on this side: those stay
// absent.
func translateEnvoyDownstream(r raw, o *out) {
	each := func(name string, fn func(ls model.Labels, f *model.Family, s *model.Sample)) {
		f := r[name]
		if f == nil {
			return
		}
		for i := range f.Samples {
			s := &f.Samples[i]
			if ls, ok := envoyHCM(s.Labels); ok {
				fn(ls, f, s)
			}
		}
	}
	each(enDownTotal, func(ls model.Labels, f *model.Family, s *model.Sample) {
		o.counter(model.MetricServerReceived, ls, scalar(f, s))
	})
	each(enDownActive, func(ls model.Labels, f *model.Family, s *model.Sample) {
		o.gauge(model.MetricServiceInFlight, ls, scalar(f, s))
	})
	// downstream_rq_1xx..5xx, one class digit per series: only classes.
	each(enDownXX, func(ls model.Labels, f *model.Family, s *model.Sample) {
		c := s.Labels.Get(enCodeClassLabel)
		if len(c) != 1 || statusClass(c) == 0 {
			return
		}
		o.counter(model.MetricServiceResponses, ls.Without(enCodeClassLabel).With(model.LabelCode, c+"xx"), scalar(f, s))
	})
	each(enDownTime, func(ls model.Labels, f *model.Family, s *model.Sample) {
		switch f.Type {
		case model.Histogram:
			o.histogram(model.MetricServerServiceTime, ls, s, 0.001)
		case model.Summary:
			o.countSum(model.MetricServerServiceTime, ls, s.Count, s.Sum*0.001)
		}
	})
}

// envoyCluster returns the dependency of an Envoy cluster series and the
// labels of its output series; ok is false without a cluster label. Istio's
// outbound clusters "outbound|port|subset|host" are named by their host,
// the destination_service of istio_requests_total.
func envoyCluster(ls model.Labels) (model.Labels, bool) {
	name, label := ls.Get(enClusterLabel), enClusterLabel
	if name == "" {
		name, label = ls.Get(istioClusterLabel), istioClusterLabel
	}
	if name == "" {
		return nil, false
	}
	if rest, ok := strings.CutPrefix(name, istioOutboundPrefix); ok {
		if i := strings.LastIndexByte(rest, '|'); i >= 0 && i+1 < len(rest) {
			name = rest[i+1:]
		}
	}
	return relabel(ls, name, label), true
}

// envoyParts selects what translateEnvoy emits.
type envoyParts struct{ originals, admission bool }

var envoyAll = envoyParts{originals: true, admission: true}

// translateEnvoy emits the cluster stats' contract families into o. Under
// Istio, istio_requests_total counts the originals and its response flags
// the admission rejections, so those parts are left out.
func translateEnvoy(r raw, o *out, g *guard, parts envoyParts) {
	tcp := envoyTCPClusters(r, g)
	each := func(name string, fn func(ls model.Labels, v float64)) {
		f := r[name]
		if f == nil {
			return
		}
		for i := range f.Samples {
			s := &f.Samples[i]
			ls, ok := g.clusters.get(s.Labels, envoyCluster)
			if !ok {
				continue
			}
			if tcp[ls.Get(model.LabelDependency)] {
				continue
			}
			fn(ls, scalar(f, s))
		}
	}
	// A cluster read for the first time after a scrape in which it was a
	// TCP cluster holds counts from before: its new series are baselines.
	late := envoyLateHTTP(g, tcp)
	defer func() {
		if len(late) == 0 {
			return
		}
		fams := []string{model.MetricAttempts, model.MetricRetries, model.MetricRescued, model.MetricBudgetDenied,
			model.MetricRetryLimitExceeded, model.MetricRequestTimeouts}
		if parts.originals {
			fams = append(fams, model.MetricOriginals)
		}
		if parts.admission {
			fams = append(fams, model.MetricAdmissionRejected)
		}
		for _, n := range fams {
			if f := o.fams[n]; f != nil {
				for j := range f.Samples {
					if s := &f.Samples[j]; late[s.Labels.Get(model.LabelDependency)] {
						s.Baseline = true
					}
				}
			}
		}
	}()
	// Originals: every logical request ends with exactly one final
	// response charged to upstream_rq_completed, Envoy's own local
	// replies (timeout 504, overflow/reset 503) included; responses that
	// triggered a retry are charged under retry.* instead.
	if parts.originals {
		each(enCompleted, func(ls model.Labels, v float64) { o.counter(model.MetricOriginals, ls, v) })
	}
	// Attempts: streams attached to an upstream connection, first tries,
	// retries, hedges and shadows. Per-try timeouts are the only outcome
	// Envoy counts per attempt.
	perTry := map[string]float64{}
	var key []byte
	// The timeouts are emitted from their own series, whether or not the
	// cluster's upstream_rq_total shows yet, so that neither series'
	// late creation turns the other's history into a new series.
	each(enPerTryTimeout, func(ls model.Labels, v float64) {
		key = ls.AppendKey(key[:0])
		perTry[string(key)] += v
		o.counter(model.MetricAttempts, ls.With(model.LabelOutcome, model.OutcomeTimeout), v)
	})
	// A cluster without a per-try timeout series while other clusters
	// have one has had none yet: 0 (docs/dialects.md, rule 1).
	perTryKnown := r[enPerTryTimeout] != nil
	each(enTotal, func(ls model.Labels, v float64) {
		key = ls.AppendKey(key[:0])
		t, ok := perTry[string(key)]
		if !ok && !perTryKnown {
			o.counter(model.MetricAttempts, ls, v)
			return
		}
		if !ok {
			o.counter(model.MetricAttempts, ls.With(model.LabelOutcome, model.OutcomeTimeout), 0)
		}
		o.derived(model.MetricAttempts, ls, g, model.MetricAttempts, ls, v, t)
	})
	each(enRetry, func(ls model.Labels, v float64) { o.counter(model.MetricRetries, ls, v) })
	each(enRetrySuccess, func(ls model.Labels, v float64) { o.counter(model.MetricRescued, ls, v) })
	each(enRetryOverflow, func(ls model.Labels, v float64) { o.counter(model.MetricBudgetDenied, ls, v) })
	each(enRetryLimit, func(ls model.Labels, v float64) { o.counter(model.MetricRetryLimitExceeded, ls, v) })
	each(enTimeout, func(ls model.Labels, v float64) { o.counter(model.MetricRequestTimeouts, ls, v) })
	if parts.admission {
		each(enPendingOverflow, func(ls model.Labels, v float64) {
			o.counter(model.MetricAdmissionRejected, ls.With(model.LabelReason, "queue"), v)
		})
	}
	each(enActive, func(ls model.Labels, v float64) { o.gauge(model.MetricActiveCalls, ls, v) })
	each(enPendingActive, func(ls model.Labels, v float64) { o.gauge(model.MetricPendingCalls, ls, v) })
	// The retries the breaker whose overflow is budget denied allows now.
	each(enRemainingRetries, func(ls model.Labels, v float64) { o.gauge(model.MetricBudgetBalance, ls, v) })
	each(enRetryOpen, func(ls model.Labels, v float64) { o.gauge(model.MetricBreakerState, ls, envoyBreakerState(v)) })
	// Latency: per logical request (earlier attempts and backoff included),
	// only for requests completed with an upstream response, not split by
	// result; milliseconds.
	if f := r[enTime]; f != nil {
		for i := range f.Samples {
			s := &f.Samples[i]
			ls, ok := g.clusters.get(s.Labels, envoyCluster)
			if !ok {
				continue
			}
			switch f.Type {
			case model.Histogram:
				o.histogram(model.MetricRequestDuration, ls, s, 0.001)
			case model.Summary:
				o.countSum(model.MetricRequestDuration, ls, s.Count, s.Sum*0.001)
			}
		}
	}
}

// envoyTCPClusters names the clusters whose request stats count TCP
// connections, not HTTP requests: a TCP proxy's connection pool increments
// upstream_rq_total (and _active, _pending_*, _cancelled) once per
// connection it hands out, while upstream_rq_completed, charged only for an
// HTTP response, stays 0. A cluster is read as HTTP once one response has
// completed; before that, with upstream_rq_total moving, nothing it says is
// a request, an attempt or an original, and all of it is left out (its
// signals are absent rather than 0 % success). An HTTP cluster whose first
// requests are all still in flight is left out until one completes.
func envoyTCPClusters(r raw, g *guard) map[string]bool {
	// Both maps are the guard's, cleared: the result is read only while
	// its scrape is translated (a map a scrape was much of translating's
	// garbage on a recording of TCP clusters).
	if g.completed == nil {
		g.completed, g.tcp = map[string]bool{}, map[string]bool{}
	}
	completed, tcp := g.completed, g.tcp
	clear(completed)
	clear(tcp)
	if f := r[enCompleted]; f != nil {
		for i := range f.Samples {
			if ls, ok := g.clusters.get(f.Samples[i].Labels, envoyCluster); ok && scalar(f, &f.Samples[i]) > 0 {
				completed[ls.Get(model.LabelDependency)] = true
			}
		}
	}
	if f := r[enTotal]; f != nil {
		for i := range f.Samples {
			ls, ok := g.clusters.get(f.Samples[i].Labels, envoyCluster)
			if !ok || !(scalar(f, &f.Samples[i]) > 0) {
				continue
			}
			if d := ls.Get(model.LabelDependency); !completed[d] {
				tcp[d] = true
			}
		}
	}
	return tcp
}

// envoyLateHTTP returns the clusters read now that were left out as TCP
// at the guard's previous scrape, and records this scrape's TCP clusters
// in g.
func envoyLateHTTP(g *guard, tcp map[string]bool) map[string]bool {
	var late map[string]bool
	for d := range g.tcpPrev {
		if !tcp[d] {
			if late == nil {
				late = map[string]bool{}
			}
			late[d] = true
		}
	}
	if g.tcpPrev == nil {
		g.tcpPrev = map[string]bool{}
	}
	clear(g.tcpPrev)
	for d := range tcp {
		g.tcpPrev[d] = true
	}
	return late
}
