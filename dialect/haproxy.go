package dialect

import (
	"math"
	"strings"

	"github.com/retrytop/retrytop/model"
)

// HAProxy's built-in Prometheus exporter (PROMEX): haproxy_backend_* per
// backend (label proxy, the dependency) and haproxy_server_* per server.
// No family gives retries directly, and several that look like attempts are
// not: docs/dialects.md explains the choices, checked against a real
// HAProxy by TestHAProxyIntegration.
const (
	haBackendRequests   = "haproxy_backend_http_requests_total"
	haBackendConnects   = "haproxy_backend_connection_attempts_total"
	haBackendReuses     = "haproxy_backend_connection_reuses_total"
	haBackendConnErrors = "haproxy_backend_connection_errors_total"
	haBackendResponses  = "haproxy_backend_http_responses_total"
	haBackendQueue      = "haproxy_backend_current_queue"
	haBackendQueueAvg   = "haproxy_backend_queue_time_average_seconds"
	haServerSessions    = "haproxy_server_current_sessions"
	haServerLimit       = "haproxy_server_limit_sessions"
	haServerQueue       = "haproxy_server_current_queue"
	haProcessPrefix     = "haproxy_process_"

	// Server side: what HAProxy, as the front of a service, received.
	haFrontendRequests  = "haproxy_frontend_http_requests_total"
	haFrontendResponses = "haproxy_frontend_http_responses_total"
)

type haproxy struct{ g guard }

func (*haproxy) Name() string { return NameHAProxy }

func (*haproxy) Families() []string {
	return []string{haBackendRequests, haBackendConnects, haBackendReuses, haBackendConnErrors,
		haBackendResponses, haBackendQueue, haBackendQueueAvg, haServerSessions, haServerLimit,
		haServerQueue, haFrontendRequests, haFrontendResponses}
}

// Detect: a haproxy_backend_http_requests_total family (PROMEX exports it
// for every backend, HTTP or not).
func (*haproxy) Detect(fams []model.Family) bool {
	return index(fams).has(haBackendRequests)
}

func (h *haproxy) Translate(snap *model.Snapshot) *model.Snapshot {
	r := index(snap.Families)
	o := newOut()
	h.g.begin()
	defer h.g.end()
	bs := haBackends{byName: map[string]*haBackend{}}
	bs.readRequests(r, o)
	bs.readResponses(r, o)
	for _, name := range bs.order {
		h.backendCounters(o, bs.byName[name], r[haBackendConnErrors] != nil)
	}
	for _, s := range r.samples(haBackendQueue) {
		if b := bs.get(s.Labels); b != nil {
			o.gauge(model.MetricPendingCalls, b.ls, s.Value)
		}
	}
	for _, s := range r.samples(haBackendQueueAvg) {
		if b := bs.get(s.Labels); b != nil {
			o.gauge(model.MetricPoolWaitAverage, b.ls, s.Value)
		}
	}
	for _, s := range r.samples(haServerSessions) {
		if name := s.Labels.Get("proxy"); name != "" {
			o.gauge(model.MetricActiveCalls, relabel(s.Labels, name, "proxy"), s.Value)
		}
	}
	lorder, limits, allLimited := haproxyLimits(r, o)
	haproxyServerSide(r, o, lorder, limits, allLimited)
	haproxyIdentity(r, o)
	return o.snapshot(snap)
}

// haBackend is what a scrape's backend families say of one backend.
type haBackend struct {
	originals, attempts, connErrors, xx5, xx1               float64
	hasOrig, hasAttempts, hasErrors, hasXX, hasResp, has1xx bool
	ls                                                      model.Labels
}

// haBackends are a scrape's backends by name, in the order first seen.
type haBackends struct {
	byName map[string]*haBackend
	order  []string
}

// get returns the backend the proxy label of ls names, nil without one.
func (bs *haBackends) get(ls model.Labels) *haBackend {
	name := ls.Get("proxy")
	if name == "" {
		return nil
	}
	b := bs.byName[name]
	if b == nil {
		b = &haBackend{ls: relabel(ls, name, "proxy")}
		bs.byName[name] = b
		bs.order = append(bs.order, name)
	}
	return b
}

// readRequests reads the backends' requests, attempts and connection
// errors; the errors are admission rejections.
func (bs *haBackends) readRequests(r raw, o *out) {
	for _, s := range r.samples(haBackendRequests) {
		if b := bs.get(s.Labels); b != nil && valid(s.Value) {
			b.originals += s.Value
			b.hasOrig = true
		}
	}
	// Attempts: every connection handed a request, new or reused.
	// Requests refused in the queue never get one; L7 retries get one
	// each (HAProxy 2.6: equal to the provider's count, see the
	// integration test).
	for _, name := range []string{haBackendConnects, haBackendReuses} {
		for _, s := range r.samples(name) {
			if b := bs.get(s.Labels); b != nil && valid(s.Value) {
				b.attempts += s.Value
				b.hasAttempts = true
			}
		}
	}
	// Admission: connection errors count requests that never got a
	// server connection: queue timeout, full queue, no server, and
	// connections that failed once the retries were spent.
	for _, s := range r.samples(haBackendConnErrors) {
		if b := bs.get(s.Labels); b != nil && valid(s.Value) {
			b.connErrors += s.Value
			b.hasErrors = true
			o.counter(model.MetricAdmissionRejected, b.ls.With(model.LabelReason, "queue"), s.Value)
		}
	}
}

// readResponses reads the backends' final responses by class, HAProxy's
// own 503/504 included: successes and cancellations are results, the 5xx
// and 1xx are kept for backendCounters.
func (bs *haBackends) readResponses(r raw, o *out) {
	for _, s := range r.samples(haBackendResponses) {
		b := bs.get(s.Labels)
		if b == nil || !valid(s.Value) {
			continue
		}
		b.hasResp = true
		code := s.Labels.Get("code")
		switch statusClass(code) {
		case '2', '3', '4':
			o.counter(model.MetricResults, b.ls.With(model.LabelResult, model.ResultSuccess), s.Value)
		case '5':
			b.xx5 += s.Value
			b.hasXX = true
		case '1':
			b.xx1 += s.Value
			b.has1xx = true
			// A 1xx final status is a 101 Switching Protocols: the
			// request became a tunnel (WebSocket) whose outcome no HTTP
			// counter tells (a backend of them shows millions of
			// response_errors_total and server_aborts_total, which
			// overlap the 5xx of plain requests): no result, so a
			// tunnel-only backend's effective success is absent, not
			// 100 %. Tunnels leave the originals and attempts too (one
			// request and one connection each), so that the row's ratios
			// are those of its plain requests.
		default:
			// "other": the stream ended with no status at all (HAProxy
			// counts txn->status -1 there when it frees the stream): the
			// client went away before any response.
			if code == "other" {
				o.counter(model.MetricResults, b.ls.With(model.LabelResult, model.ResultCancelled), s.Value)
			}
		}
	}
}

// backendCounters writes b's originals, attempts, retries and results.
// connErrorsKnown says the exposition has the connection errors' family.
func (h *haproxy) backendCounters(o *out, b *haBackend, connErrorsKnown bool) {
	// PROMEX exports every class of an HTTP backend, 1xx at 0
	// included, so a backend is read with or without tunnels from
	// its first scrape on.
	switch {
	case b.hasOrig && b.has1xx:
		o.derived(model.MetricOriginals, b.ls, &h.g, model.MetricOriginals, b.ls, b.originals, b.xx1)
	case b.hasOrig:
		o.counter(model.MetricOriginals, b.ls, b.originals)
	}
	switch {
	case b.hasAttempts && b.has1xx:
		o.derived(model.MetricAttempts, b.ls, &h.g, model.MetricAttempts, b.ls, b.attempts, b.xx1)
	case b.hasAttempts:
		o.counter(model.MetricAttempts, b.ls, b.attempts)
	}
	// A counter of a backend the exposition knows but without a
	// series yet (families whose series exist for other backends, or
	// the 5xx class before its first response) is 0: emitters create
	// a series on its first event, and a difference or result gated
	// on it would otherwise start mid-way with the history of the
	// counters it is derived from (docs/dialects.md, rule 1).
	hasErrors := b.hasErrors || connErrorsKnown
	if b.hasAttempts && b.hasOrig && hasErrors {
		// Retries decided: attempts - (originals - refused).
		o.derived(model.MetricRetries, b.ls, &h.g, model.MetricRetries, b.ls, b.attempts+b.connErrors, b.originals)
	}
	if (b.hasXX || b.hasResp) && hasErrors {
		o.counter(model.MetricResults, b.ls.With(model.LabelResult, model.ResultCapacityRejected), b.connErrors)
		o.derived(model.MetricResults, b.ls.With(model.LabelResult, model.ResultProviderError),
			&h.g, model.MetricResults+"/provider_error", b.ls, b.xx5, b.connErrors)
	}
}

// haproxyLimits writes each backend's concurrency limit: the sum of its
// servers' maxconn, and only when every server of the backend has one (0
// or NaN: unlimited). It returns the backends with servers in order, their
// sums, and whether every one of them is limited.
func haproxyLimits(r raw, o *out) (order []string, limits map[string]float64, allLimited bool) {
	limits = map[string]float64{}
	unlimited := map[string]bool{}
	for _, s := range r.samples(haServerLimit) {
		name := s.Labels.Get("proxy")
		if name == "" {
			continue
		}
		if _, seen := limits[name]; !seen {
			order = append(order, name)
		}
		if !(s.Value > 0) || math.IsInf(s.Value, 0) {
			unlimited[name] = true
		}
		limits[name] += s.Value
	}
	allLimited = len(order) > 0
	for _, name := range order {
		if !unlimited[name] {
			o.gauge(model.MetricConcurrencyLimit, model.LabelsFromPairs(model.LabelDependency, name), limits[name])
		}
		allLimited = allLimited && !unlimited[name]
	}
	return order, limits, allLimited
}

// haproxyIdentity names the target as OpenTelemetry's target_info would
// (analysis.Identities): by its one frontend that serves traffic, which is
// how its callers name it; the frontends that serve HAProxy's own stats or
// metrics (a name with "stats", "prom" or "metrics") do not count. With
// several such frontends the instance fronts several services and has no
// one name: none is given.
func haproxyIdentity(r raw, o *out) {
	name := ""
	for _, s := range r.samples(haFrontendRequests) {
		fe := s.Labels.Get("proxy")
		low := strings.ToLower(fe)
		if fe == "" || fe == name || strings.Contains(low, "stats") || strings.Contains(low, "prom") || strings.Contains(low, "metrics") {
			continue
		}
		if name != "" {
			return
		}
		name = fe
	}
	if name != "" {
		o.gauge(model.MetricTargetInfo, model.LabelsFromPairs("service_name", name), 1)
	}
}

// haproxyServerSide emits the service-side families (docs/dialects.md,
// "Server side"): HAProxy seen as the front of the services behind it,
// whose execution slots are the servers' maxconn and whose queue is
// HAProxy's. Series carry no dependency; proxy and server stay as
// identity labels. limits are the backends' summed maxconn (in order);
// slots are emitted only when every server of every backend has one, since
// a sum that leaves out an unlimited server would read as a smaller limit.
func haproxyServerSide(r raw, o *out, order []string, limits map[string]float64, allLimited bool) {
	for _, s := range r.samples(haFrontendRequests) {
		if s.Labels.Get("proxy") != "" {
			o.counter(model.MetricServerReceived, relabelNoDep(s.Labels), s.Value)
		}
	}
	// Classes only ("2xx", ..., "other"): kept as the code label.
	for _, s := range r.samples(haFrontendResponses) {
		if s.Labels.Get("proxy") != "" && s.Labels.Get("code") != "" {
			o.counter(model.MetricServiceResponses, relabelNoDep(s.Labels), s.Value)
		}
	}
	for _, s := range r.samples(haServerSessions) {
		if s.Labels.Get("proxy") != "" {
			o.gauge(model.MetricServiceInFlight, relabelNoDep(s.Labels), s.Value)
		}
	}
	// The queue is the backend's (requests not yet assigned to a server)
	// plus each server's (requests bound to that server): analysis adds
	// them up.
	for _, name := range []string{haBackendQueue, haServerQueue} {
		for _, s := range r.samples(name) {
			if s.Labels.Get("proxy") != "" {
				o.gauge(model.MetricServiceQueueDepth, relabelNoDep(s.Labels), s.Value)
			}
		}
	}
	if allLimited {
		for _, name := range order {
			o.gauge(model.MetricServiceSlots, model.LabelsFromPairs("proxy", name), limits[name])
		}
	}
}
