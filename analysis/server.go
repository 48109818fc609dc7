package analysis

import "github.com/retrytop/retrytop/model"

// server is the server-side series of one target (model.MetricServer*,
// series without a dependency label), selected once and joined onto the
// rows of every target that names it as its dependency.
type server struct {
	times           []int64 // the server target's own scrape times
	received        []points
	workAfterCancel []points
	service         parts
	// deadline splits retry_server_requests_total: propagated, and the
	// rest (missing, invalid).
	propagated, missing []points
	// bySource is the received series that name their caller's workload
	// (Istio's reporter="destination" series), by workloadKey.
	bySource []sourced
	// reduced is the server target's scrapes' extent, for a server over
	// reduced points (WholeBuilder), which has no scrape times.
	reduced *wholeTarget
}

// noDependency accepts series without a dependency label.
func noDependency(ls model.Labels) bool { return ls.Get(model.LabelDependency) == "" }

// serverNames are the flat series a server is built from (serverFrom).
var serverNames = []string{
	model.MetricServerReceived, model.MetricServerWorkAfterCancel, model.MetricServerRequests,
	model.MetricServerServiceTime + "_bucket", model.MetricServerServiceTime + "_sum",
}

// selectServer copies target's server-side series from the store; nil when
// target exports none (or is not a target at all).
func selectServer(st *model.Store, target string, times []int64, sinceMs int64) *server {
	if len(times) == 0 {
		return nil
	}
	series := make(map[string][]model.Series, len(serverNames))
	for _, n := range serverNames {
		series[n] = st.SelectSince(target, n, noDependency, sinceMs)
	}
	return serverFrom(times, series)
}

// serverFrom builds a server from its series by name (serverNames, without
// a dependency label), nil when there are none.
func serverFrom(times []int64, series map[string][]model.Series) *server {
	sv := &server{times: times}
	for _, s := range series[model.MetricServerReceived] {
		pts := newPoints(times, s.Points)
		sv.received = append(sv.received, pts)
		if k := workloadKey(s.Labels); k != "" {
			sv.bySource = append(sv.bySource, sourced{key: k, pts: pts})
		}
	}
	for _, s := range series[model.MetricServerWorkAfterCancel] {
		sv.workAfterCancel = append(sv.workAfterCancel, newPoints(times, s.Points))
	}
	for _, s := range series[model.MetricServerRequests] {
		if s.Labels.Get(model.LabelDeadline) == "propagated" {
			sv.propagated = append(sv.propagated, newPoints(times, s.Points))
		} else {
			sv.missing = append(sv.missing, newPoints(times, s.Points))
		}
	}
	var hs []model.Series
	for _, suffix := range []string{"_bucket", "_sum"} {
		hs = append(hs, series[model.MetricServerServiceTime+suffix]...)
	}
	if len(hs) > 0 {
		sv.service = histParts(hs, times)
	}
	if len(sv.received) == 0 && len(sv.workAfterCancel) == 0 && len(sv.service) == 0 &&
		len(sv.propagated) == 0 && len(sv.missing) == 0 {
		return nil
	}
	return sv
}

// fill sets the Dependency* signals of s from the server's series over the
// same range as w (a range window or a bin, resolved against the server's
// own scrape times). A nil server leaves them Absent.
func (sv *server) fill(s *model.Signals, w *window) {
	if sv == nil {
		return
	}
	sw := sv.window(w)
	if len(sv.received) > 0 {
		s.DependencyReceivedPerS = sw.rate(groupIncrease(sv.received, &sw))
	}
	if len(sv.workAfterCancel) > 0 {
		s.DependencyWorkAfterCancelPerS = sw.rate(groupIncrease(sv.workAfterCancel, &sw))
	}
	if h, ok := sv.service.increase(sw); ok {
		s.DependencyServiceTimeP50 = quantile(0.5, h.Buckets)
	}
	if len(sv.propagated)+len(sv.missing) > 0 {
		// The family exports every state from the start: a state without
		// a series is one that never happened.
		p, pok := groupIncrease(sv.propagated, &sw)
		m, mok := groupIncrease(sv.missing, &sw)
		if pok || mok {
			s.DependencyDeadlinePropagatedPerS = sw.rate(p, true)
			s.DependencyDeadlineMissingPerS = sw.rate(m, true)
		}
	}
}

// window is w resolved against the server's own scrape times.
func (sv *server) window(w *window) window {
	switch {
	case sv.reduced != nil:
		return sv.reduced.cover(w.start, w.end).window(w.start, w.end)
	case w.back:
		return binWindow(sv.times, w.start, w.end)
	}
	return rangeWindow(sv.times, w.start, w.end)
}
