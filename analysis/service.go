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

	// sim provider
	received, completed, workAfterCancel, errors503 []points
	inFlight, queueDepth, queueOldest               []points
	queueWait, serviceTime                          parts

	// promhttp
	phRequests []codeSeries
	phInFlight []points
	phDuration parts

	// OpenTelemetry
	otelCount    []codeSeries // http_server_request_duration_seconds_count
	otelActive   []points
	otelDuration parts
}

// codeSeries is one counter series with its status code parsed (0 when the
// label is missing or not a number).
type codeSeries struct {
	code int
	pts  points
}

// selectService reads one target's service families from the store.
func selectService(st *model.Store, target string, times []int64, sinceMs int64) *service {
	if len(times) == 0 {
		return nil
	}
	sv := &service{target: target, times: times}
	flat := func(name string) []points {
		var out []points
		for _, s := range st.SelectSince(target, name, noDependency, sinceMs) {
			out = append(out, newPoints(times, s.Points))
		}
		return out
	}
	hist := func(name string) parts {
		var hs []model.Series
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			hs = append(hs, st.SelectSince(target, name+suffix, noDependency, sinceMs)...)
		}
		if len(hs) == 0 {
			return nil
		}
		return histParts(hs, times)
	}
	coded := func(name, label string) []codeSeries {
		var out []codeSeries
		for _, s := range st.SelectSince(target, name, noDependency, sinceMs) {
			code, _ := strconv.Atoi(s.Labels.Get(label))
			out = append(out, codeSeries{code: code, pts: newPoints(times, s.Points)})
		}
		return out
	}
	sv.received = flat(model.MetricServerReceived)
	sv.completed = flat(model.MetricServiceCompleted)
	sv.workAfterCancel = flat(model.MetricServerWorkAfterCancel)
	sv.errors503 = append(flat(model.MetricServiceErrorsInjected), flat(model.MetricServiceRejected)...)
	sv.inFlight = flat(model.MetricServiceInFlight)
	sv.queueDepth = flat(model.MetricServiceQueueDepth)
	sv.queueOldest = flat(model.MetricServiceQueueOldestAge)
	sv.queueWait = hist(model.MetricServiceQueueWait)
	sv.serviceTime = hist(model.MetricServerServiceTime)

	sv.phRequests = coded(model.MetricPromHTTPRequests, model.LabelCode)
	sv.phInFlight = flat(model.MetricPromHTTPInFlight)
	sv.phDuration = hist(model.MetricPromHTTPDuration)

	sv.otelCount = coded(model.MetricOTelServerDuration+"_count", model.LabelOTelStatusCode)
	sv.otelActive = flat(model.MetricOTelServerActive)
	sv.otelDuration = hist(model.MetricOTelServerDuration)
	if sv.empty() {
		return nil
	}
	return sv
}

func (sv *service) sim() bool {
	return len(sv.received)+len(sv.completed)+len(sv.workAfterCancel)+len(sv.errors503)+
		len(sv.inFlight)+len(sv.queueDepth)+len(sv.queueOldest)+len(sv.queueWait)+len(sv.serviceTime) > 0
}

func (sv *service) promhttp() bool {
	return len(sv.phRequests)+len(sv.phInFlight)+len(sv.phDuration) > 0
}

func (sv *service) otel() bool {
	return len(sv.otelCount)+len(sv.otelActive)+len(sv.otelDuration) > 0
}

func (sv *service) empty() bool { return !sv.sim() && !sv.promhttp() && !sv.otel() }

// gaugeSum adds a gauge family's values (every label set) at the window's
// newest scrape; Absent when no series has a value there.
func gaugeSum(series []points, w *window) model.Value {
	out := model.Absent
	for _, p := range series {
		if v, ok := w.gauge(p); ok {
			out = model.Some(out.V + v)
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

// codeRates splits a status-coded counter family into the response
// classes. A family that is present but has no series of a class gives 0
// for it (a code appears once it has been answered); a missing family gives
// every class Absent.
func codeRates(series []codeSeries, w *window) (total, c2xx, c429, c503, other5xx model.Value) {
	if len(series) == 0 {
		return
	}
	var sums [5]float64
	seen := false
	for _, s := range series {
		inc, ok := increase(w.span(s.pts))
		if !ok {
			continue
		}
		seen = true
		sums[0] += inc
		switch c := s.code; {
		case c >= 200 && c < 300:
			sums[1] += inc
		case c == 429:
			sums[2] += inc
		case c == 503:
			sums[3] += inc
		case c >= 500 && c < 600:
			sums[4] += inc
		}
	}
	return w.rate(sums[0], seen), w.rate(sums[1], seen), w.rate(sums[2], seen), w.rate(sums[3], seen), w.rate(sums[4], seen)
}

// first returns the first present value.
func first(vs ...model.Value) model.Value {
	for _, v := range vs {
		if v.OK {
			return v
		}
	}
	return model.Absent
}

// eval computes the service signals over w. For each signal the sim's
// families win over promhttp's, which win over OpenTelemetry's.
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

	phTotal, ph2xx, ph429, ph503, phOther := codeRates(sv.phRequests, &w)
	otTotal, ot2xx, ot429, ot503, otOther := codeRates(sv.otelCount, &w)

	s.ReceivedPerS = first(counterRate(sv.received, &w), phTotal, otTotal)
	s.InFlight = first(gaugeSum(sv.inFlight, &w), gaugeSum(sv.phInFlight, &w), gaugeSum(sv.otelActive, &w))
	s.QueueDepth = gaugeSum(sv.queueDepth, &w)
	s.QueueOldestAge = gaugeSum(sv.queueOldest, &w)
	if h, ok := sv.queueWait.increase(w); ok {
		s.QueueWaitP99 = quantile(0.99, h.Buckets)
	}
	for _, ps := range []parts{sv.serviceTime, sv.phDuration, sv.otelDuration} {
		if h, ok := ps.increase(w); ok && len(h.Buckets) > 0 {
			s.ServiceTimeP50 = quantile(0.5, h.Buckets)
			s.ServiceTimeP99 = quantile(0.99, h.Buckets)
			break
		}
	}
	s.WorkAfterCancelPerS = counterRate(sv.workAfterCancel, &w)

	// The sim answers 200 to every completed request whose caller is still
	// there, and 503 to injected errors and queue-full rejections; it
	// exports no 429 or other 5xx counter, so those stay Absent.
	var sim2xx model.Value
	if done := counterRate(sv.completed, &w); done.OK {
		if wac := s.WorkAfterCancelPerS; wac.OK {
			sim2xx = model.Some(max(done.V-wac.V, 0))
		}
	}
	sim503 := counterRate(sv.errors503, &w)
	s.Responses2xxPerS = first(sim2xx, ph2xx, ot2xx)
	s.Responses429PerS = first(ph429, ot429)
	s.Responses503PerS = first(sim503, ph503, ot503)
	s.ResponsesOther5xxPerS = first(phOther, otOther)
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
	for _, t := range st.Targets() {
		for _, n := range serviceProbeNames {
			if len(st.Select(t, n, nil)) > 0 {
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
	model.MetricServiceInFlight, model.MetricServiceQueueDepth, model.MetricServiceQueueOldestAge,
	model.MetricServiceQueueWait + "_count", model.MetricServiceCompleted, model.MetricServiceErrorsInjected,
	model.MetricServiceRejected,
	model.MetricPromHTTPRequests, model.MetricPromHTTPDuration + "_count", model.MetricPromHTTPInFlight,
	model.MetricOTelServerDuration + "_count", model.MetricOTelServerActive,
}
