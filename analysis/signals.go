package analysis

import (
	"math"
	"sort"

	"github.com/retrytop/retrytop/model"
)

// SignalsFor computes the retry signals of one (target, dependency) over
// [startMs, endMs] from the metric contract's families in st. Counters use
// the samples inside the window (see Increase) and are divided by the time
// between the target's first and last scrape in it; gauges are read at the
// target's newest scrape in it. Any signal without enough data is Absent.
func SignalsFor(st *model.Store, target, dependency string, startMs, endMs int64) model.Signals {
	r := selectRow(st, target, dependency, startMs)
	return r.eval(rangeWindow(r.times, startMs, endMs))
}

// Dependencies lists, sorted, the dependency label values target exposes in
// any family of the metric contract within the retained history.
func Dependencies(st *model.Store, target string) []string {
	seen := make(map[string]bool)
	for _, n := range dependencyNames {
		for _, s := range st.Select(target, n, nil) {
			if d := s.Labels.Get(model.LabelDependency); d != "" {
				seen[d] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// dependencyNames are the cheapest flat series that cover every contract
// family: counters and gauges as they are, histograms by their _count.
var dependencyNames = func() []string {
	var ns []string
	ns = append(ns, counterNames[:]...)
	ns = append(ns, gaugeNames[:]...)
	for _, h := range histNames {
		ns = append(ns, h+"_count")
	}
	return append(ns, model.MetricAttemptDuration+"_count")
}()

// selectRow selects one (target, dependency) from the store.
func selectRow(st *model.Store, target, dep string, sinceMs int64) *row {
	times := st.TimesSince(target, sinceMs)
	r := selectTarget(st, target, times, matchDependency(dep), sinceMs).rows()[dep]
	if r == nil {
		r = emptyRow(target, dep, times)
	}
	r.server = selectServer(st, dep, st.TimesSince(dep, sinceMs), sinceMs)
	return r
}

// eval computes the row's signals over one window.
func (r *row) eval(w window) model.Signals {
	s := model.Signals{Target: r.target, Dependency: r.dep, StartMs: w.start, EndMs: w.end}
	switch {
	case w.back && w.to > w.from:
		s.SampledFromMs, s.SampledToMs = w.from, w.to
	case !w.back && w.hasLast:
		s.SampledFromMs, s.SampledToMs = w.first, w.last
	}

	s.OriginalsPerS = w.rate(r.sum(cOriginals, &w))
	s.RetriesPerS = w.rate(r.sum(cRetries, &w))
	s.RescuedPerS = w.rate(r.sum(cRescued, &w))
	s.BudgetDeniedPerS = w.rate(r.sum(cBudgetDenied, &w))
	r.attempts(&s, &w)
	r.admissionRejected(&s, &w)
	r.finalResults(&s, &w)
	r.admitted(&s, &w)
	s.AbandonedAttemptsPerS = w.rate(r.sum(cAbandoned, &w))
	s.LateSuccessesPerS = w.rate(r.sum(cLateSuccesses, &w))
	s.HedgesPerS = w.rate(r.sum(cHedges, &w))
	s.HedgesWonPerS = w.rate(r.sum(cHedgesWon, &w))
	s.HedgesAbandonedPerS = w.rate(r.sum(cHedgesAbandoned, &w))
	s.OperationAttemptsPerS = w.rate(r.sum(cOperationAttempts, &w))
	r.nested(&s, &w)
	deriveRatios(&s)
	r.breakersAndSettings(&s, &w)

	s.ActiveCalls = r.gauge(gActive, &w, sumOf)
	s.ActiveCallsChangePerS = r.gaugeChange(gActive, &w)
	s.ConcurrencyLimit = r.gauge(gLimit, &w, sumOf)
	s.BudgetBalance = r.gauge(gBalance, &w, sumOf)
	s.MaxAttempts = r.gauge(gMaxAttempts, &w, maxOf)
	s.DeadlineSeconds = r.gauge(gDeadline, &w, maxOf)
	s.QueueDepth = r.gauge(gPending, &w, sumOf)

	if h, ok := r.histogram(hPoolWait, &w); ok {
		s.PoolWaitP50, s.PoolWaitP99 = quantile(0.5, h.Buckets), quantile(0.99, h.Buckets)
		if h.Count > 0 && finite(h.Sum) {
			s.PoolWaitMean = model.Some(h.Sum / h.Count)
		}
	}
	if h, ok := r.histogram(hBackoff, &w); ok {
		s.BackoffP50, s.BackoffP99 = quantile(0.5, h.Buckets), quantile(0.99, h.Buckets)
	}
	r.latency(&s, &w)
	r.server.fill(&s, &w)
	r.edge(&s, &w)
	provenActive(&s)
	return s
}

// provenActive makes a counter the configuration proves is in force a
// present 0 when its family never showed up: an emitter that exports an
// admission limit but creates its rejection series on the first rejection
// has rejected nothing yet, and a budget with a balance has denied
// nothing. Zero is never absent. Only for a window with traffic data.
func provenActive(s *model.Signals) {
	if !s.OriginalsPerS.OK() && !s.AttemptsPerS.OK() {
		return
	}
	if s.ConcurrencyLimit.OK() && !s.AdmissionRejectedPerS.OK() {
		s.AdmissionRejectedPerS = model.Some(0)
	}
	if s.BudgetBalance.OK() && !s.BudgetDeniedPerS.OK() {
		s.BudgetDeniedPerS = model.Some(0)
	}
}

// sum adds up the window increases of every series of a counter family;
// ok when at least one series had enough data.
func (r *row) sum(c int, w *window) (float64, bool) {
	var total float64
	seen := false
	for i := range r.counters[c] {
		if inc, ok := w.increase(r.counters[c][i].points); ok {
			total += inc
			seen = true
		}
	}
	return total, seen
}

// attempts fills attempts/s and its split by outcome. Provider errors are
// the errors the provider answered with (temporary + permanent); timeouts
// are their own outcome and never provider errors.
func (r *row) attempts(s *model.Signals, w *window) {
	var total, success, temporary, permanent, timeout, cancelled float64
	seen := false
	// An emitter that does not label attempts by outcome (HAProxy) says
	// nothing about errors: those stay absent, not 0. One that labels only
	// some of them (Envoy counts per-try timeouts, the rest unlabelled)
	// tells its timeouts and nothing else: a provider error or an attempt
	// success it cannot know is absent, never a made-up 0.
	labelled, unlabelled := false, false
	for _, c := range r.counters[cAttempts] {
		if c.key == "" {
			unlabelled = true
		} else {
			labelled = true
		}
	}
	split := labelled && !unlabelled
	for _, c := range r.counters[cAttempts] {
		inc, ok := w.increase(c.points)
		if !ok {
			continue
		}
		seen = true
		total += inc
		switch c.key {
		case model.OutcomeSuccess:
			success += inc
		case model.OutcomeTemporaryError:
			temporary += inc
		case model.OutcomePermanentError:
			permanent += inc
		case model.OutcomeTimeout:
			timeout += inc
		case model.OutcomeCancelled:
			cancelled += inc
		}
	}
	s.AttemptsPerS = w.rate(total, seen)
	s.TemporaryErrorsPerS = w.rate(temporary, seen && split)
	s.PermanentErrorsPerS = w.rate(permanent, seen && split)
	s.ProviderErrorsPerS = w.rate(temporary+permanent, seen && split)
	s.TimeoutsPerS = w.rate(timeout, seen && labelled)
	s.CancelledAttemptsPerS = w.rate(cancelled, seen && split)
	s.AttemptSuccess = ratio(w.rate(success, seen && split), s.AttemptsPerS)
}

// admissionRejected fills admission rejections/s and their split by
// (reason, priority), sorted by key; only keys with enough data are listed.
func (r *row) admissionRejected(s *model.Signals, w *window) {
	var total float64
	seen := false
	for _, g := range r.admission {
		inc, ok := groupIncrease(g.series, w)
		if !ok {
			continue
		}
		seen = true
		total += inc
		if v := w.rate(inc, true); v.OK() {
			s.AdmissionRejectedBy = append(s.AdmissionRejectedBy, model.Breakdown{Labels: g.labels, Key: g.key, PerS: v.V()})
		}
	}
	s.AdmissionRejectedPerS = w.rate(total, seen)
}

// finalResults fills results/s by result. When the family has data, every
// result of the contract is listed, zero when it never occurred.
func (r *row) finalResults(s *model.Signals, w *window) {
	if len(r.results) == 0 || w.seconds <= 0 {
		return
	}
	var buf [16]float64
	incs := buf[:0]
	seen := false
	for _, g := range r.results {
		inc, ok := groupIncrease(g.series, w)
		incs = append(incs, inc)
		seen = seen || ok
	}
	if !seen {
		return
	}
	s.ResultsPerS = make(map[string]model.Value, len(r.results))
	var completed float64
	for i, g := range r.results {
		s.ResultsPerS[g.key] = w.rate(incs[i], true)
		completed += incs[i]
	}
	s.CompletedPerS = w.rate(completed, true)
	s.SuccessesPerS = s.ResultsPerS[model.ResultSuccess]
	s.DeadlineExhaustedPerS = s.ResultsPerS[model.ResultDeadlineExhausted]
}

// nested fills NestedPerS and NestedIn, by outer dependency, sorted.
func (r *row) nested(s *model.Signals, w *window) {
	var total float64
	seen := false
	for _, c := range r.counters[cNested] {
		inc, ok := w.increase(c.points)
		if !ok {
			continue
		}
		seen = true
		total += inc
		if v := w.rate(inc, true); v.OK() {
			s.NestedIn = append(s.NestedIn, model.Breakdown{Key: c.key, PerS: v.V(),
				Labels: model.LabelsFromPairs(model.LabelOuterDependency, c.key)})
		}
	}
	sort.Slice(s.NestedIn, func(i, j int) bool { return s.NestedIn[i].Key < s.NestedIn[j].Key })
	s.NestedPerS = w.rate(total, seen)
}

// admitted fills AdmittedPerS: originals that ended after at least one
// attempt, the request-duration histogram's success and failure classes.
// Only an emitter that also exports the fast_failure class (refused before
// any attempt) tells them from the rest; for others it stays absent.
func (r *row) admitted(s *model.Signals, w *window) {
	var total float64
	seen, split := false, false
	for _, g := range r.hists[hRequest] {
		switch g.class {
		case model.ClassFastFailure:
			split = split || len(g.parts) > 0
		case model.ClassSuccess, model.ClassFailure:
			if h, ok := g.parts.increase(*w); ok {
				total += h.Count
				seen = true
			}
		}
	}
	if split {
		s.AdmittedPerS = w.rate(total, seen)
	}
}

func groupIncrease(series []points, w *window) (float64, bool) {
	var total float64
	seen := false
	for _, pts := range series {
		if inc, ok := w.increase(pts); ok {
			total += inc
			seen = true
		}
	}
	return total, seen
}

func sumOf(a, b float64) float64 { return a + b }
func maxOf(a, b float64) float64 { return math.Max(a, b) }

// gauge combines a gauge family's values at the window's newest scrape.
func (r *row) gauge(g int, w *window, combine func(a, b float64) float64) model.Value {
	out := model.Absent
	for _, pts := range r.gauges[g] {
		v, ok := w.gauge(pts)
		if !ok {
			continue
		}
		if out.OK() {
			v = combine(out.V(), v)
		}
		out = model.Some(v)
	}
	return out
}

// gaugeChange is how much a gauge family's sum changed between the
// window's first and newest scrapes, per second; absent when a series
// lacks a sample at either edge (or the history is reduced).
func (r *row) gaugeChange(g int, w *window) model.Value {
	if len(r.gauges[g]) == 0 || !w.hasLast || w.seconds <= 0 {
		return model.Absent
	}
	var d float64
	for _, p := range r.gauges[g] {
		if p.base == reducedBase {
			return model.Absent
		}
		pts := w.span(p)
		if len(pts) < 2 || pts[0].T != w.first || pts[len(pts)-1].T != w.last {
			return model.Absent
		}
		d += pts[len(pts)-1].V - pts[0].V
	}
	if !finite(d) {
		return model.Absent
	}
	return model.Some(d / w.seconds)
}

// histogram is the window increase of a single-group histogram family.
func (r *row) histogram(h int, w *window) (model.HistogramWindow, bool) {
	if len(r.hists[h]) == 0 {
		return model.HistogramWindow{}, false
	}
	return r.hists[h][0].parts.increase(*w)
}

// latency fills per-class latency quantiles and histograms, and the mixed
// latency of all classes summed by le.
func (r *row) latency(s *model.Signals, w *window) {
	groups := r.hists[hRequest]
	if len(groups) == 0 {
		return
	}
	s.Latency = make(model.ByClass[model.Quantiles], 0, len(groups))
	// The histograms are sized to the classes present: a timeline keeps
	// one per row and bin, and a bin often has one class of several.
	var (
		buf     [4]model.HistogramWindow
		classes [4]string
	)
	present, names := buf[:0], classes[:0]
	var one model.Quantiles
	for _, g := range groups {
		h, ok := g.parts.increase(*w)
		if !ok {
			s.Latency.Set(g.class, model.Quantiles{})
			continue
		}
		one = Quantiles(h.Buckets)
		s.Latency.Set(g.class, one)
		present, names = append(present, h), append(names, g.class)
	}
	if len(present) == 0 {
		return
	}
	s.LatencyHist = make(model.ByClass[model.HistogramWindow], 0, len(present))
	for i, h := range present {
		s.LatencyHist.Set(names[i], h)
	}
	if len(present) == 1 {
		// One class: the mix is that class.
		s.MixedLatency = one
		return
	}
	s.MixedLatency = Quantiles(MergeHistograms(present...).Buckets)
}
