package analysis

import (
	"sort"
	"strconv"
	"strings"

	"github.com/retrytop/retrytop/model"
)

// service is the service-side series of one target (model.ServiceFamilies),
// selected once and evaluated over any window of the target's scrape times.
type service struct {
	target string
	times  []int64

	// The contract's families (the sim provider's names; dialects
	// translate into them too).
	received, completed, workAfterCancel    []points
	injected, rejected, cancelled           []points
	inFlight, slots, queueDepth, queueLimit []points
	queueOldest                             []points
	responses                               []codeSeries
	queueWait, serviceTime                  parts

	// promhttp
	phRequests []codeSeries
	phInFlight []points
	phDuration codedHist

	// OpenTelemetry
	otelCount    []codeSeries // http_server_request_duration_seconds_count
	otelActive   []points
	otelDuration codedHist
}

// codeSeries is one counter series with its status parsed: an exact code
// ("503": code 503, class '5'), a class only ("5xx": code 0, class '5'),
// or neither (missing or unknown: both 0).
type codeSeries struct {
	code  int
	class byte
	pts   points
}

// parseCode reads a status label value: an HTTP code 100-599, or a class
// "1xx".."5xx" as HAProxy and the dialects write it.
func parseCode(v string) (code int, class byte) {
	if len(v) != 3 || v[0] < '1' || v[0] > '5' {
		return 0, 0
	}
	if v[1:] == "xx" {
		return 0, v[0]
	}
	if n, err := strconv.Atoi(v); err == nil {
		return n, v[0]
	}
	return 0, 0
}

// httpError reports whether an exact status code is an error for the
// service-time split: 429 and 5xx (the rest is an answer, as for the
// contract's attempt outcomes).
func httpError(code int) bool { return code == 429 || (code >= 500 && code < 600) }

// codedHist is a duration histogram, whole and split by the status code
// label of its series. split is false unless every series carries an exact
// code (a class such as "4xx" hides whether a 429 is inside).
type codedHist struct {
	all, success, errors parts
	split                bool
}

// selectService reads one target's service families from the store.
func selectService(st *model.Store, target string, times []int64, sinceMs int64) *service {
	return serviceFrom(target, times, func(name string) []model.Series {
		return st.SelectSince(target, name, noDependency, sinceMs)
	})
}

// serviceNames are the flat series serviceFrom reads (histograms by their
// _bucket, _count and _sum), each without a dependency label.
var serviceNames = func() []string {
	ns := []string{model.MetricServerReceived, model.MetricServiceCompleted, model.MetricServerWorkAfterCancel,
		model.MetricServiceErrorsInjected, model.MetricServiceRejected, model.MetricServiceCancelled, model.MetricServiceInFlight,
		model.MetricServiceSlots, model.MetricServiceQueueDepth, model.MetricServiceQueueLimit, model.MetricServiceQueueOldestAge,
		model.MetricServiceResponses, model.MetricPromHTTPRequests, model.MetricPromHTTPInFlight, model.MetricOTelServerActive}
	for _, h := range []string{model.MetricServiceQueueWait, model.MetricServerServiceTime, model.MetricPromHTTPDuration, model.MetricOTelServerDuration} {
		ns = append(ns, h+"_bucket", h+"_count", h+"_sum")
	}
	return ns
}()

// serviceFrom builds a target's service from its series: sel returns those
// of one name of serviceNames, as SelectSince with noDependency does, over
// times.
func serviceFrom(target string, times []int64, sel func(name string) []model.Series) *service {
	if len(times) == 0 {
		return nil
	}
	sv := &service{target: target, times: times}
	flat := func(name string) []points {
		var out []points
		for _, s := range sel(name) {
			out = append(out, newPoints(times, s.Points))
		}
		return out
	}
	histSeries := func(name string) []model.Series {
		var hs []model.Series
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			hs = append(hs, sel(name+suffix)...)
		}
		return hs
	}
	hist := func(name string) parts {
		hs := histSeries(name)
		if len(hs) == 0 {
			return nil
		}
		return histParts(hs, times)
	}
	coded := func(name, label string) []codeSeries {
		var out []codeSeries
		for _, s := range sel(name) {
			code, class := parseCode(s.Labels.Get(label))
			out = append(out, codeSeries{code: code, class: class, pts: newPoints(times, s.Points)})
		}
		return out
	}
	codedH := func(name, label string) codedHist {
		hs := histSeries(name)
		if len(hs) == 0 {
			return codedHist{}
		}
		var ok, bad []model.Series
		split := true
		for _, s := range hs {
			code, _ := parseCode(s.Labels.Get(label))
			switch {
			case code == 0:
				split = false
			case httpError(code):
				bad = append(bad, s)
			default:
				ok = append(ok, s)
			}
		}
		h := codedHist{all: histParts(hs, times), split: split}
		if split {
			h.success, h.errors = histParts(ok, times), histParts(bad, times)
		}
		return h
	}
	sv.received = flat(model.MetricServerReceived)
	sv.completed = flat(model.MetricServiceCompleted)
	sv.workAfterCancel = flat(model.MetricServerWorkAfterCancel)
	sv.injected = flat(model.MetricServiceErrorsInjected)
	sv.rejected = flat(model.MetricServiceRejected)
	sv.cancelled = flat(model.MetricServiceCancelled)
	sv.inFlight = flat(model.MetricServiceInFlight)
	sv.slots = flat(model.MetricServiceSlots)
	sv.queueDepth = flat(model.MetricServiceQueueDepth)
	sv.queueLimit = flat(model.MetricServiceQueueLimit)
	sv.queueOldest = flat(model.MetricServiceQueueOldestAge)
	sv.responses = coded(model.MetricServiceResponses, model.LabelCode)
	sv.queueWait = hist(model.MetricServiceQueueWait)
	sv.serviceTime = hist(model.MetricServerServiceTime)

	sv.phRequests = coded(model.MetricPromHTTPRequests, model.LabelCode)
	sv.phInFlight = flat(model.MetricPromHTTPInFlight)
	sv.phDuration = codedH(model.MetricPromHTTPDuration, model.LabelCode)

	sv.otelCount = coded(model.MetricOTelServerDuration+"_count", model.LabelOTelStatusCode)
	sv.otelActive = flat(model.MetricOTelServerActive)
	sv.otelDuration = codedH(model.MetricOTelServerDuration, model.LabelOTelStatusCode)
	if sv.empty() {
		return nil
	}
	return sv
}

func (sv *service) sim() bool {
	return len(sv.received)+len(sv.completed)+len(sv.workAfterCancel)+len(sv.injected)+len(sv.rejected)+
		len(sv.cancelled)+len(sv.inFlight)+len(sv.slots)+len(sv.queueDepth)+len(sv.queueLimit)+
		len(sv.queueOldest)+len(sv.responses)+len(sv.queueWait)+len(sv.serviceTime) > 0
}

func (sv *service) promhttp() bool {
	return len(sv.phRequests)+len(sv.phInFlight)+len(sv.phDuration.all) > 0
}

func (sv *service) otel() bool {
	return len(sv.otelCount)+len(sv.otelActive)+len(sv.otelDuration.all) > 0
}

func (sv *service) empty() bool { return !sv.sim() && !sv.promhttp() && !sv.otel() }

// gaugeSum adds a gauge family's values (every label set) at the window's
// newest scrape; Absent when no series has a value there.
func gaugeSum(series []points, w *window) model.Value {
	out := model.Absent
	for _, p := range series {
		if v, ok := w.gauge(p); ok {
			out = model.Some(out.V() + v)
		}
	}
	return out
}

// counterRate is the summed rate of a counter family; Absent when the
// family is missing or has too little data in the window.
func counterRate(series []points, w *window) model.Value {
	if len(series) == 0 {
		return model.Absent
	}
	return w.rate(groupIncrease(series, w))
}

// responseRates are a status-coded counter family's rates by class.
type responseRates struct {
	total, c2xx, c429, c503, other5xx, c5xx model.Value
}

// codeRates splits a status-coded counter family into the response
// classes. A family that is present but has no series of a code gives 0
// for it (a code appears once it has been answered); a missing family gives
// every class Absent. A series that only knows its class ("4xx", "5xx")
// counts in its class and the total, and makes the exact codes inside that
// class (429; 503 and the other 5xx) Absent: they cannot be told apart.
func codeRates(series []codeSeries, w *window) (r responseRates) {
	if len(series) == 0 {
		return r
	}
	var total, c2xx, c429, c503, other5xx, c5xx float64
	seen, only4xx, only5xx := false, false, false
	for _, s := range series {
		if s.code == 0 {
			only4xx = only4xx || s.class == '4'
			only5xx = only5xx || s.class == '5'
		}
		inc, ok := w.increase(s.pts)
		if !ok {
			continue
		}
		seen = true
		total += inc
		switch {
		case s.class == '2':
			c2xx += inc
		case s.code == 429:
			c429 += inc
		case s.class == '5':
			c5xx += inc
			if s.code == 503 {
				c503 += inc
			} else if s.code != 0 {
				other5xx += inc
			}
		}
	}
	r = responseRates{
		total: w.rate(total, seen), c2xx: w.rate(c2xx, seen), c429: w.rate(c429, seen),
		c503: w.rate(c503, seen), other5xx: w.rate(other5xx, seen), c5xx: w.rate(c5xx, seen),
	}
	if only4xx {
		r.c429 = model.Absent
	}
	if only5xx {
		r.c503, r.other5xx = model.Absent, model.Absent
	}
	return r
}

// histMean is a histogram's mean observation over w, its _sum increase
// over its _count increase: exact, unlike a quantile. Absent without both
// series, with too little data or without observations.
func histMean(ps parts, w *window) model.Value {
	var sum, count float64
	var hasSum, hasCount bool
	for i := range ps {
		p := &ps[i]
		if p.kind == partBucket {
			continue
		}
		inc, ok := w.increase(p.points)
		if !ok {
			continue
		}
		if p.kind == partSum {
			sum, hasSum = sum+inc, true
		} else {
			count, hasCount = count+inc, true
		}
	}
	if !hasSum || !hasCount || !(count > 0) {
		return model.Absent
	}
	return model.Some(sum / count)
}

// quantiles returns the p50 and p99 of a histogram over w (Absent without
// data or observations).
func quantiles(ps parts, w window) (p50, p99 model.Value) {
	if h, ok := ps.increase(w); ok && len(h.Buckets) > 0 {
		return quantile(0.5, h.Buckets), quantile(0.99, h.Buckets)
	}
	return model.Absent, model.Absent
}

// first returns the first present value.
func first(vs ...model.Value) model.Value {
	for _, v := range vs {
		if v.OK() {
			return v
		}
	}
	return model.Absent
}

// eval computes the service signals over w. For each signal the contract's
// (sim) families win over promhttp's, which win over OpenTelemetry's.
func (sv *service) eval(w window) model.ServiceSignals {
	s := model.ServiceSignals{Target: sv.target, StartMs: w.start, EndMs: w.end}
	var src []string
	if sv.sim() {
		src = append(src, model.ServiceSourceSim)
	}
	if sv.promhttp() {
		src = append(src, model.ServiceSourcePromHTTP)
	}
	if sv.otel() {
		src = append(src, model.ServiceSourceOTel)
	}
	s.Source = strings.Join(src, "+")

	sim := codeRates(sv.responses, &w)
	ph := codeRates(sv.phRequests, &w)
	ot := codeRates(sv.otelCount, &w)

	s.ReceivedPerS = first(counterRate(sv.received, &w), ph.total, ot.total)
	s.InFlight = first(gaugeSum(sv.inFlight, &w), gaugeSum(sv.phInFlight, &w), gaugeSum(sv.otelActive, &w))
	s.Slots = gaugeSum(sv.slots, &w)
	s.QueueDepth = gaugeSum(sv.queueDepth, &w)
	s.QueueLimit = gaugeSum(sv.queueLimit, &w)
	s.QueueOldestAge = gaugeSum(sv.queueOldest, &w)
	_, s.QueueWaitP99 = quantiles(sv.queueWait, w)
	s.QueueWaitMean = histMean(sv.queueWait, &w)
	for _, ps := range []parts{sv.serviceTime, sv.phDuration.all, sv.otelDuration.all} {
		if p50, p99 := quantiles(ps, w); p50.OK() || p99.OK() {
			s.ServiceTimeP50, s.ServiceTimeP99 = p50, p99
			break
		}
	}
	// The split comes from the first shape that labels its durations with
	// exact codes; the sim's service time covers finished work only.
	for _, h := range []codedHist{sv.phDuration, sv.otelDuration} {
		if h.split {
			s.SuccessServiceTimeP50, s.SuccessServiceTimeP99 = quantiles(h.success, w)
			s.ErrorServiceTimeP50, s.ErrorServiceTimeP99 = quantiles(h.errors, w)
			break
		}
	}
	s.WorkAfterCancelPerS = counterRate(sv.workAfterCancel, &w)
	s.CancelledPerS = counterRate(sv.cancelled, &w)

	// Without sim_provider_responses_total (older recordings), the sim's
	// answers are derived: 200 for every completed request whose caller is
	// still there, 503 for injected errors and rejections. Its 429s and
	// other 5xx are then unknown.
	var sim2xx model.Value
	if done := counterRate(sv.completed, &w); done.OK() {
		if wac := s.WorkAfterCancelPerS; wac.OK() {
			sim2xx = model.Some(max(done.V()-wac.V(), 0))
		}
	}
	var sim503 model.Value
	if len(sv.injected)+len(sv.rejected) > 0 {
		sim503 = w.rate(groupIncrease(append(append([]points{}, sv.injected...), sv.rejected...), &w))
	}
	s.Responses2xxPerS = first(sim.c2xx, sim2xx, ph.c2xx, ot.c2xx)
	s.Responses429PerS = first(sim.c429, ph.c429, ot.c429)
	s.Responses503PerS = first(sim.c503, sim503, ph.c503, ot.c503)
	s.ResponsesOther5xxPerS = first(sim.other5xx, ph.other5xx, ot.other5xx)
	s.Responses5xxPerS = first(sim.c5xx, ph.c5xx, ot.c5xx)
	// Only the sim's rejections say they carried Retry-After.
	s.Responses503RetryAfterPerS = counterRate(sv.rejected, &w)
	return s
}

// ServiceSignalsFor computes the service-side signals of target over
// [startMs, endMs] from the families of model.ServiceFamilies: counters use
// the samples inside the window and are divided by the time between the
// target's first and last scrape in it, gauges are read at its newest
// scrape in it. A target exporting none of them gets only its name, every
// signal Absent.
func ServiceSignalsFor(st *model.Store, target string, startMs, endMs int64) model.ServiceSignals {
	times := st.TimesSince(target, startMs)
	sv := selectService(st, target, times, startMs)
	if sv == nil {
		return model.ServiceSignals{Target: target, StartMs: startMs, EndMs: endMs}
	}
	return sv.eval(rangeWindow(times, startMs, endMs))
}

// Services lists, sorted, the targets whose retained history holds any
// service-side family (a service shape).
func Services(st *model.Store) []string {
	var out []string
	// The dashboard asks every frame: look at the names, not at copies of
	// the series' history.
	for _, t := range st.Targets() {
		names := st.Names(t) // sorted
		for _, n := range serviceProbeNames {
			if _, found := sort.Find(len(names), func(i int) int { return strings.Compare(n, names[i]) }); found {
				out = append(out, t)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// serviceProbeNames are flat series names that cover every service family:
// counters and gauges as they are, histograms by their _count.
var serviceProbeNames = []string{
	model.MetricServerReceived, model.MetricServerWorkAfterCancel, model.MetricServerServiceTime + "_count",
	model.MetricServiceInFlight, model.MetricServiceSlots, model.MetricServiceQueueDepth, model.MetricServiceQueueLimit,
	model.MetricServiceQueueOldestAge, model.MetricServiceQueueWait + "_count", model.MetricServiceCompleted,
	model.MetricServiceErrorsInjected, model.MetricServiceRejected, model.MetricServiceCancelled,
	model.MetricServiceResponses,
	model.MetricPromHTTPRequests, model.MetricPromHTTPDuration + "_count", model.MetricPromHTTPInFlight,
	model.MetricOTelServerDuration + "_count", model.MetricOTelServerActive,
}
