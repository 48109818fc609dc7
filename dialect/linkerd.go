package dialect

import (
	"github.com/retrytop/retrytop/model"
	"net"
	"strings"
)

// Linkerd's proxy (:4191/metrics). Two generations may coexist: the
// Gateway-API/policy route families of 2.16+ (outbound_{http,grpc}_route_*,
// dependency = parent_name, the Service called) and the legacy
// ServiceProfile route families (route_*, route_actual_*, dependency = dst).
const (
	lkStatuses        = "outbound_http_route_request_statuses_total"
	lkGRPCStatuses    = "outbound_grpc_route_request_statuses_total"
	lkBackendReqs     = "outbound_http_route_backend_requests_total"
	lkGRPCBackendReqs = "outbound_grpc_route_backend_requests_total"
	lkBackendStatus   = "outbound_http_route_backend_response_statuses_total"
	lkGRPCBackendStat = "outbound_grpc_route_backend_response_statuses_total"
	lkDuration        = "outbound_http_route_request_duration_seconds"
	lkGRPCDuration    = "outbound_grpc_route_request_duration_seconds"
	lkBackendDur      = "outbound_http_route_backend_response_duration_seconds"
	lkGRPCBackendDur  = "outbound_grpc_route_backend_response_duration_seconds"
	lkQueueLength     = "outbound_http_balancer_queue_length"
	lkGRPCQueueLength = "outbound_grpc_balancer_queue_length"
	lkQueueLatency    = "outbound_http_balancer_queue_latency_seconds"
	lkGRPCQueueLat    = "outbound_grpc_balancer_queue_latency_seconds"

	lkLegacyRequests      = "route_request_total"
	lkLegacyResponses     = "route_response_total"
	lkLegacyActualReqs    = "route_actual_request_total"
	lkLegacyActualResps   = "route_actual_response_total"
	lkLegacyRetryable     = "route_retryable_total"
	lkLegacyRetrySkipped  = "route_actual_retry_skipped_total"
	lkLegacyLatency       = "route_response_latency_ms"
	lkParentLabel         = "parent_name"
	lkParentKindLabel     = "parent_kind"
	lkHostnameLabel       = "hostname"
	lkEgressKind          = "EgressNetwork"
	lkLegacyDependencyLbl = "dst"
)

// Retry families of 2.16+, per protocol: retries, rescued, limit exceeded,
// budget denied.
var lkRetry = [][4]string{
	{"outbound_http_route_retry_requests_total", "outbound_http_route_retry_successes_total",
		"outbound_http_route_retry_limit_exceeded_total", "outbound_http_route_retry_overflow_total"},
	{"outbound_grpc_route_retry_requests_total", "outbound_grpc_route_retry_successes_total",
		"outbound_grpc_route_retry_limit_exceeded_total", "outbound_grpc_route_retry_overflow_total"},
}

type linkerd struct{ g guard }

func (*linkerd) Name() string { return NameLinkerd }

func (*linkerd) Families() []string {
	fs := []string{lkStatuses, lkGRPCStatuses, lkBackendReqs, lkGRPCBackendReqs, lkBackendStatus, lkGRPCBackendStat,
		lkDuration, lkGRPCDuration, lkBackendDur, lkGRPCBackendDur, lkQueueLength, lkGRPCQueueLength,
		lkQueueLatency, lkGRPCQueueLat, lkLegacyRequests, lkLegacyResponses, lkLegacyActualReqs,
		lkLegacyActualResps, lkLegacyRetryable, lkLegacyRetrySkipped, lkLegacyLatency}
	for _, r := range lkRetry {
		fs = append(fs, r[:]...)
	}
	return fs
}

// Detect: a 2.16+ route family or a legacy ServiceProfile route family.
func (*linkerd) Detect(fams []model.Family) bool {
	return index(fams).has(lkStatuses, lkGRPCStatuses, lkBackendReqs, lkGRPCBackendReqs,
		lkLegacyRequests, lkLegacyResponses, lkLegacyActualReqs, lkLegacyActualResps)
}

// lkErrorResult classifies the error label of a route status.
func lkErrorResult(e string) (result, reason string) {
	switch e {
	case "":
		return "", ""
	case "FAIL_FAST", "LOAD_SHED":
		return model.ResultCapacityRejected, "queue"
	case "REQUEST_TIMEOUT", "RESPONSE_HEADERS_TIMEOUT", "RESPONSE_STREAM_TIMEOUT", "IDLE_TIMEOUT":
		return model.ResultDeadlineExhausted, ""
	case "CANCEL":
		return model.ResultCancelled, ""
	}
	return model.ResultProviderError, "" // RESET, IO, REFUSED, GO_AWAY, ENHANCE_YOUR_CALM, UNKNOWN, ...
}

func lkHTTPResult(status string) string {
	switch httpOutcome(status) {
	case model.OutcomeSuccess:
		return model.ResultSuccess
	case model.OutcomeTemporaryError:
		return model.ResultProviderError
	}
	return model.ResultPermanentError
}

func (l *linkerd) Translate(snap *model.Snapshot) *model.Snapshot {
	r := index(snap.Families)
	o := newOut()
	l.g.begin()
	defer l.g.end()
	l.policy(r, o)
	l.legacy(r, o)
	linkerdIdentity(snap.Families, o)
	return o.snapshot(snap)
}

// linkerdIdentity says which workload the proxy belongs to, as
// OpenTelemetry's target_info would (analysis.Identities): the deployment
// and namespace labels Linkerd's Prometheus adds to every series, or else
// the authority of what the proxy received (direction="inbound",
// dst="webapp.booksapp.svc.cluster.local:7000"), which is how its callers
// name it.
func linkerdIdentity(fams []model.Family, o *out) {
	inbound := ""
	for i := range fams {
		for j := range fams[i].Samples {
			ls := fams[i].Samples[j].Labels
			if d := ls.Get("deployment"); d != "" {
				id := model.LabelsFromPairs("service_name", d)
				if ns := ls.Get("namespace"); ns != "" {
					id = id.With("service_namespace", ns)
				}
				o.gauge(model.MetricTargetInfo, id, 1)
				return
			}
			if inbound == "" && ls.Get("direction") == "inbound" {
				inbound = ls.Get("dst")
			}
		}
	}
	host := inbound
	if h, _, err := net.SplitHostPort(inbound); err == nil {
		host = h
	}
	if parts := strings.Split(host, "."); len(parts) >= 2 && parts[0] != "" {
		o.gauge(model.MetricTargetInfo, model.LabelsFromPairs("service_name", parts[0], "service_namespace", parts[1]), 1)
	}
}

// policy translates the 2.16+ families.
func (l *linkerd) policy(r raw, o *out) {
	dep := func(ls model.Labels, drop ...string) (model.Labels, bool) { return lkDependency(ls, drop) }
	// Originals and their final results: route statuses are recorded
	// above the retry layer, once per logical request.
	for _, fam := range []string{lkStatuses, lkGRPCStatuses} {
		f := r[fam]
		if f == nil {
			continue
		}
		for i := range f.Samples {
			s := &f.Samples[i]
			ls, ok := dep(s.Labels, "http_status", "grpc_status", "error")
			if !ok {
				continue
			}
			v := scalar(f, s)
			o.counter(model.MetricOriginals, ls, v)
			res, reason := lkErrorResult(s.Labels.Get("error"))
			if res == "" {
				if fam == lkGRPCStatuses {
					res = grpcResult(s.Labels.Get("grpc_status"))
				} else {
					res = lkHTTPResult(s.Labels.Get("http_status"))
				}
			}
			o.counter(model.MetricResults, ls.With(model.LabelResult, res), v)
			if reason != "" {
				o.counter(model.MetricAdmissionRejected, ls.With(model.LabelReason, reason), v)
			}
		}
	}
	// Attempts: route-backend dispatches, below the retry layer. Their
	// response statuses split them by outcome; without those, the request
	// counter gives the total only.
	for i, pair := range [][2]string{{lkBackendStatus, lkBackendReqs}, {lkGRPCBackendStat, lkGRPCBackendReqs}} {
		if f := r[pair[0]]; f != nil {
			for j := range f.Samples {
				s := &f.Samples[j]
				ls, ok := dep(s.Labels, "http_status", "grpc_status", "error")
				if !ok {
					continue
				}
				outcome := ""
				switch e := s.Labels.Get("error"); {
				case e == "CANCEL":
					outcome = model.OutcomeCancelled
				case e != "":
					if r, _ := lkErrorResult(e); r == model.ResultDeadlineExhausted {
						outcome = model.OutcomeTimeout
					} else {
						outcome = model.OutcomeTemporaryError
					}
				case i == 1:
					outcome = grpcOutcome(s.Labels.Get("grpc_status"))
				default:
					outcome = httpOutcome(s.Labels.Get("http_status"))
				}
				if outcome != "" {
					ls = ls.With(model.LabelOutcome, outcome)
				}
				o.counter(model.MetricAttempts, ls, scalar(f, s))
			}
		} else if f := r[pair[1]]; f != nil {
			for j := range f.Samples {
				s := &f.Samples[j]
				if ls, ok := dep(s.Labels); ok {
					o.counter(model.MetricAttempts, ls, scalar(f, s))
				}
			}
		}
	}
	for _, fams := range lkRetry {
		for k, name := range fams {
			target := [4]string{model.MetricRetries, model.MetricRescued, model.MetricRetryLimitExceeded, model.MetricBudgetDenied}[k]
			f := r[name]
			if f == nil {
				continue
			}
			for i := range f.Samples {
				s := &f.Samples[i]
				if ls, ok := dep(s.Labels); ok {
					o.counter(target, ls, scalar(f, s))
				}
			}
		}
	}
	hist := func(name, to string) {
		f := r[name]
		if f == nil || f.Type != model.Histogram {
			return
		}
		for i := range f.Samples {
			s := &f.Samples[i]
			if ls, ok := dep(s.Labels); ok {
				o.histogram(to, ls, s, 1)
			}
		}
	}
	hist(lkDuration, model.MetricRequestDuration)
	hist(lkGRPCDuration, model.MetricRequestDuration)
	hist(lkBackendDur, model.MetricAttemptDuration)
	hist(lkGRPCBackendDur, model.MetricAttemptDuration)
	hist(lkQueueLatency, model.MetricPoolWait)
	hist(lkGRPCQueueLat, model.MetricPoolWait)
	for _, name := range []string{lkQueueLength, lkGRPCQueueLength} {
		f := r[name]
		if f == nil {
			continue
		}
		for i := range f.Samples {
			s := &f.Samples[i]
			if ls, ok := dep(s.Labels); ok {
				o.gauge(model.MetricPendingCalls, ls, s.Value)
			}
		}
	}
}

// legacy translates the ServiceProfile route families (outbound only).
func (l *linkerd) legacy(r raw, o *out) {
	rs := legacyRoutes{byKey: map[string]*legacyRoute{}}
	rs.readRequests(r, o)
	rs.readAttempts(r, o)
	// Retries: actual - effective requests of the same route.
	for _, k := range rs.order {
		if p := rs.byKey[k]; p.hasAct && p.hasEff {
			o.derived(model.MetricRetries, p.ls, &l.g, model.MetricRetries, p.ls, p.actual, p.effective)
		}
	}
	legacyBudgetDenied(r, o)
	legacyLatency(r, o)
}

// legacyDep relabels a legacy route series: its dependency is the
// dst label, without drop; ok is false for an inbound or unnamed one.
func legacyDep(ls model.Labels, drop ...string) (model.Labels, bool) {
	d := ls.Get(lkLegacyDependencyLbl)
	if d == "" || ls.Get("direction") == "inbound" {
		return nil, false
	}
	return relabel(ls, d, append(drop, lkLegacyDependencyLbl)...), true
}

// legacyRoute is a route's requests above the retry layer (effective) and
// below it (actual).
type legacyRoute struct {
	ls                model.Labels
	effective, actual float64
	hasEff, hasAct    bool
}

// legacyRoutes are a scrape's routes by their labels' key, in the order
// first seen.
type legacyRoutes struct {
	byKey map[string]*legacyRoute
	order []string
	key   []byte
}

// at returns the route of ls, new when first seen.
func (rs *legacyRoutes) at(ls model.Labels) *legacyRoute {
	rs.key = ls.AppendKey(rs.key[:0])
	p := rs.byKey[string(rs.key)]
	if p == nil {
		p = &legacyRoute{ls: ls}
		rs.byKey[string(rs.key)] = p
		rs.order = append(rs.order, string(rs.key))
	}
	return p
}

// readRequests writes the originals, effective (per logical request,
// above retries), and their results.
func (rs *legacyRoutes) readRequests(r raw, o *out) {
	if f := r[lkLegacyRequests]; f != nil {
		for i := range f.Samples {
			s := &f.Samples[i]
			if ls, ok := legacyDep(s.Labels); ok {
				v := scalar(f, s)
				o.counter(model.MetricOriginals, ls, v)
				p := rs.at(ls)
				p.effective += v
				p.hasEff = true
			}
		}
	}
	if f := r[lkLegacyResponses]; f != nil {
		for i := range f.Samples {
			s := &f.Samples[i]
			ls, ok := legacyDep(s.Labels, "classification", "status_code", "grpc_status_code", "error")
			if !ok {
				continue
			}
			res := model.ResultSuccess
			if s.Labels.Get("classification") == "failure" {
				res = model.ResultProviderError
			}
			o.counter(model.MetricResults, ls.With(model.LabelResult, res), scalar(f, s))
		}
	}
}

// readAttempts writes the attempts, actual (below the retry layer): by
// outcome from the actual responses, else the requests.
func (rs *legacyRoutes) readAttempts(r raw, o *out) {
	if f := r[lkLegacyActualReqs]; f != nil {
		for i := range f.Samples {
			s := &f.Samples[i]
			if ls, ok := legacyDep(s.Labels); ok {
				p := rs.at(ls)
				p.actual += scalar(f, s)
				p.hasAct = true
			}
		}
	}
	if f := r[lkLegacyActualResps]; f != nil {
		for i := range f.Samples {
			s := &f.Samples[i]
			ls, ok := legacyDep(s.Labels, "classification", "status_code", "grpc_status_code", "error")
			if !ok {
				continue
			}
			outcome := model.OutcomeSuccess
			if s.Labels.Get("classification") == "failure" {
				outcome = model.OutcomeTemporaryError
			}
			o.counter(model.MetricAttempts, ls.With(model.LabelOutcome, outcome), scalar(f, s))
		}
	} else {
		for _, k := range rs.order {
			if p := rs.byKey[k]; p.hasAct {
				o.counter(model.MetricAttempts, p.ls, p.actual)
			}
		}
	}
}

// legacyBudgetDenied writes the retries skipped for want of budget:
// route_retryable_total{skipped="no_budget"} (proxy edge-20.1.4 on),
// route_actual_retry_skipped_total{skipped="budget"} before.
func legacyBudgetDenied(r raw, o *out) {
	for _, c := range []struct{ fam, value string }{{lkLegacyRetryable, "no_budget"}, {lkLegacyRetrySkipped, "budget"}} {
		f := r[c.fam]
		if f == nil {
			continue
		}
		for i := range f.Samples {
			s := &f.Samples[i]
			if s.Labels.Get("skipped") != c.value {
				continue
			}
			if ls, ok := legacyDep(s.Labels, "skipped"); ok {
				o.counter(model.MetricBudgetDenied, ls, scalar(f, s))
			}
		}
	}
}

// legacyLatency writes the latency per logical request, in milliseconds,
// split by the response classification when it is there.
func legacyLatency(r raw, o *out) {
	if f := r[lkLegacyLatency]; f != nil && f.Type == model.Histogram {
		for i := range f.Samples {
			s := &f.Samples[i]
			ls, ok := legacyDep(s.Labels, "classification", "status_code", "grpc_status_code", "error")
			if !ok {
				continue
			}
			switch s.Labels.Get("classification") {
			case "success":
				ls = ls.With(model.LabelResultClass, model.ClassSuccess)
			case "failure":
				ls = ls.With(model.LabelResultClass, model.ClassFailure)
			}
			o.histogram(model.MetricRequestDuration, ls, s, 0.001)
		}
	}
}

// lkDependency returns the output labels of a 2.16+ series: dependency
// parent_name, the Service called, with the labels in drop and
// parent_name consumed. An EgressNetwork (2.17) is a set of destinations
// outside the cluster, not one: its series are keyed by their hostname
// (consumed, parent_name then kept as identity) when the proxy labels
// them with it (proxy.metrics.hostnameLabels, off by default); without it
// every destination of the network is one row, named by the network.
func lkDependency(ls model.Labels, drop []string) (model.Labels, bool) {
	if ls.Get(lkParentKindLabel) == lkEgressKind {
		if h := ls.Get(lkHostnameLabel); h != "" {
			return relabel(ls, h, append(drop, lkHostnameLabel)...), true
		}
	}
	d := ls.Get(lkParentLabel)
	if d == "" {
		return nil, false
	}
	return relabel(ls, d, append(drop, lkParentLabel)...), true
}
