package analysis

import (
	"slices"
	"strings"

	"github.com/retrytop/retrytop/model"
)

// Aggregate combines the rows of several targets calling one dependency
// (the replicas of one service, say) into one group row whose Target is
// name and whose Dependency is the first member's. Every member should be
// a row of the same dependency over the same window.
//
//   - Rates are summed; a rate is absent only when it is absent in every
//     member (a replica without enough data adds nothing, it does not make
//     the fleet's rate unknown). ResultsPerS is summed by result and
//     AdmissionRejectedBy by key (sorted by key).
//   - Ratios are recomputed from the sums exactly as SignalsFor computes
//     them for one row: amplification = attempts/originals, effective
//     success = successes/originals, attempt success = successful
//     attempts/attempts, where a member's successful attempts are its
//     attempt success x attempts (0 when it split attempts by outcome and
//     made none), counted only for members that split attempts by outcome,
//     as one row counts an unsplit series in attempts but not in
//     successes.
//   - Active calls, concurrency limit and budget balance are summed: fleet
//     totals (a per-replica limit of 10 on 20 replicas admits 200). Policy
//     max attempts and deadline are the largest of the members'.
//   - Latency per result class is computed from the members' window
//     histograms (Signals.LatencyHist) merged by le, when every member that
//     has observations of the class has a histogram with the same bucket
//     bounds; MixedLatency then merges the classes as a row does. When the
//     bounds differ a merge would misplace observations, so the class's
//     quantiles are the worst member's (largest p99, then p90, then p50),
//     the class has no LatencyHist, and MixedLatency is the worst member's
//     too.
//   - Pool wait and backoff p50 and p99 are each the largest of the
//     members' (the worst replica's): their histograms are not kept.
//   - The dependency's own view (Dependency*) is the same service for
//     every member: it is taken once, from the first member that has it,
//     never summed.
//   - Dialect is the members' common dialect (members without one, not
//     yet scraped, are left out), or "mixed" when they differ.
//     StartMs and EndMs span the members' windows.
//
// No member gives a row with every signal absent.
func Aggregate(name string, members []model.Signals) model.Signals {
	ps := make([]*model.Signals, len(members))
	for i := range members {
		ps[i] = &members[i]
	}
	var a aggregator
	return a.aggregate(name, ps)
}

// AggregateTimeline combines the members' timelines bin by bin with the
// rules of Aggregate, each bin named key: its Target key.Target and, when
// key.Dependency is set, its Dependency that (else the members'). Bins are
// matched by their edges (StartMs, EndMs), as the timelines of one frame
// built with aligned bins share them: the result has the bins of the
// longest member timeline (the first of the longest), and a member's bin
// whose edges are not among those is left out (a member with fewer bins
// contributes to the bins it has). It returns nil when no member has a
// bin. Each member's bin is read once, into scratch.
func AggregateTimeline(key model.Key, members []*model.Timeline) *model.Timeline {
	ref := -1
	for i, tl := range members {
		if tl.Len() > 0 && (ref < 0 || tl.Len() > members[ref].Len()) {
			ref = i
		}
	}
	if ref < 0 {
		return nil
	}
	edges := members[ref]
	scratch := make([]model.BinScratch, len(members))
	pos := make([]int, len(members))
	buf := make([]*model.Signals, 0, len(members))
	var (
		a  aggregator
		tb model.TimelineBuilder
	)
	for i := range edges.Len() {
		start, end := edges.Edges(i)
		buf = buf[:0]
		for m, tl := range members {
			j := pos[m]
			for j < tl.Len() {
				if s, _ := tl.Edges(j); s >= start {
					break
				}
				j++
			}
			pos[m] = j
			if j < tl.Len() {
				if s, e := tl.Edges(j); s == start && e == end {
					buf = append(buf, tl.Into(&scratch[m], j))
				}
			}
		}
		s := a.aggregate(key.Target, buf)
		s.StartMs, s.EndMs = start, end
		if key.Dependency != "" {
			s.Dependency = key.Dependency
		}
		tb.Add(s)
	}
	return tb.Timeline()
}

// acc sums Values: absent until a present value is added.
type acc struct {
	v  float64
	ok bool
}

func (s *acc) add(v model.Value) {
	if v.OK() {
		s.v += v.V()
		s.ok = true
	}
}

func (s *acc) max(v model.Value) {
	if v.OK() && (!s.ok || v.V() > s.v) {
		s.v, s.ok = v.V(), true
	}
}

func (s acc) value() model.Value {
	if !s.ok {
		return model.Absent
	}
	return model.Some(s.v)
}

// firstOf keeps the first present value.
func firstOf(dst *model.Value, v model.Value) {
	if !dst.OK() && v.OK() {
		*dst = v
	}
}

// keyed is one summed entry of ResultsPerS or AdmissionRejectedBy.
type keyed struct {
	key    string
	labels model.Labels
	sum    acc
}

// classAcc gathers one latency class over the members.
type classAcc struct {
	class  string
	bounds []model.Bucket // the first histogram's buckets: the bounds all must share
	counts []float64      // summed cumulative counts, by bound
	count  float64
	sum    float64
	hists  int
	agree  bool // every member with observations has a histogram with bounds
	worst  model.Quantiles
}

// aggregator keeps scratch space across the bins of a timeline.
type aggregator struct {
	results   []keyed
	admission []keyed
	nested    []keyed
	classes   []classAcc
}

// worse orders quantiles by p99, then p90, then p50; absent is best.
func worse(a, b model.Quantiles) bool {
	for _, p := range [3][2]model.Value{{a.P99, b.P99}, {a.P90, b.P90}, {a.P50, b.P50}} {
		x, y := p[0], p[1]
		switch {
		case x.OK() && !y.OK():
			return true
		case !x.OK() && y.OK():
			return false
		case x.OK() && y.OK() && x.V() != y.V():
			return x.V() > y.V()
		}
	}
	return false
}

func hasAny(q model.Quantiles) bool { return q.P50.OK() || q.P90.OK() || q.P99.OK() }

func sameBounds(a, b []model.Bucket) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].UpperBound != b[i].UpperBound {
			return false
		}
	}
	return true
}

func addKeyed(ks []keyed, key string, labels model.Labels, v model.Value) []keyed {
	for i := range ks {
		if ks[i].key == key {
			ks[i].sum.add(v)
			return ks
		}
	}
	k := keyed{key: key, labels: labels}
	k.sum.add(v)
	return append(ks, k)
}

func (a *aggregator) class(name string) *classAcc {
	for i := range a.classes {
		if a.classes[i].class == name {
			return &a.classes[i]
		}
	}
	a.classes = append(a.classes, classAcc{class: name, agree: true})
	return &a.classes[len(a.classes)-1]
}

func (a *aggregator) aggregate(name string, ms []*model.Signals) model.Signals {
	out := model.Signals{Target: name}
	if len(ms) == 0 {
		return out
	}
	out.Dependency = ms[0].Dependency
	out.Dialect = ms[0].Dialect
	out.StartMs, out.EndMs = ms[0].StartMs, ms[0].EndMs
	var (
		sums       memberSums
		mixedWorst model.Quantiles
		hasLatency bool
	)
	a.results, a.admission, a.classes, a.nested = a.results[:0], a.admission[:0], a.classes[:0], a.nested[:0]
	for _, s := range ms {
		switch {
		case s.Dialect == "" || s.Dialect == out.Dialect:
		case out.Dialect == "":
			out.Dialect = s.Dialect
		default:
			out.Dialect = "mixed"
		}
		out.StartMs, out.EndMs = min(out.StartMs, s.StartMs), max(out.EndMs, s.EndMs)
		sums.add(s)
		for i := range s.NestedIn {
			b := &s.NestedIn[i]
			a.nested = addKeyed(a.nested, b.Key, b.Labels, model.Some(b.PerS))
		}
		firstOf(&out.DependencyReceivedPerS, s.DependencyReceivedPerS)
		firstOf(&out.DependencyServiceTimeP50, s.DependencyServiceTimeP50)
		firstOf(&out.DependencyWorkAfterCancelPerS, s.DependencyWorkAfterCancelPerS)
		firstOf(&out.DependencyDeadlinePropagatedPerS, s.DependencyDeadlinePropagatedPerS)
		firstOf(&out.DependencyDeadlineMissingPerS, s.DependencyDeadlineMissingPerS)
		a.addResults(s)
		for i := range s.AdmissionRejectedBy {
			b := &s.AdmissionRejectedBy[i]
			a.admission = addKeyed(a.admission, b.Key, b.Labels, model.Some(b.PerS))
		}
		if s.Latency != nil {
			hasLatency = true
		}
		if worse(s.MixedLatency, mixedWorst) {
			mixedWorst = s.MixedLatency
		}
		a.addLatency(s)
	}
	sums.fill(&out)
	a.fillKeyed(&out)
	deriveRatios(&out)
	a.latency(&out, hasLatency, mixedWorst)
	return out
}

// memberSums sums the members' rates and counts, and keeps the worst
// (largest) of what does not add up.
type memberSums struct {
	orig, att, retries, rescued, budget, admission acc
	provider, temporary, permanent, timeouts       acc
	successes, deadline, attOK                     acc
	completed, admitted                            acc
	cancelledAtt, abandoned, late, nested, hedges  acc
	hedgesWon, hedgesAbandoned                     acc
	opAttempts, poolMean, queueDepth               acc
	opAttemptsMissing                              bool
	// A basis of amplification counts only if every replica with
	// attempts has it: mixing bases would divide some replicas'
	// attempts by nothing.
	completedMissing, admittedMissing         bool
	active, limit, balance, maxAtt, deadlineS acc
	// The change of active calls counts only if every replica with
	// attempts has it (attempts started are summed from both).
	activeChange                       acc
	activeChangeMissing                bool
	poolP50, poolP99, backP50, backP99 acc
}

// add adds member s.
func (m *memberSums) add(s *model.Signals) {
	m.orig.add(s.OriginalsPerS)
	m.att.add(s.AttemptsPerS)
	m.completed.add(s.CompletedPerS)
	m.admitted.add(s.AdmittedPerS)
	m.cancelledAtt.add(s.CancelledAttemptsPerS)
	m.abandoned.add(s.AbandonedAttemptsPerS)
	m.late.add(s.LateSuccessesPerS)
	m.hedges.add(s.HedgesPerS)
	m.hedgesWon.add(s.HedgesWonPerS)
	m.hedgesAbandoned.add(s.HedgesAbandonedPerS)
	m.opAttempts.add(s.OperationAttemptsPerS)
	m.opAttemptsMissing = m.opAttemptsMissing || (s.AttemptsPerS.OK() && !s.OperationAttemptsPerS.OK())
	m.nested.add(s.NestedPerS)
	m.completedMissing = m.completedMissing || (s.AttemptsPerS.OK() && !s.CompletedPerS.OK())
	m.admittedMissing = m.admittedMissing || (s.AttemptsPerS.OK() && !s.AdmittedPerS.OK())
	m.retries.add(s.RetriesPerS)
	m.rescued.add(s.RescuedPerS)
	m.budget.add(s.BudgetDeniedPerS)
	m.admission.add(s.AdmissionRejectedPerS)
	m.provider.add(s.ProviderErrorsPerS)
	m.temporary.add(s.TemporaryErrorsPerS)
	m.permanent.add(s.PermanentErrorsPerS)
	m.timeouts.add(s.TimeoutsPerS)
	m.successes.add(s.SuccessesPerS)
	m.deadline.add(s.DeadlineExhaustedPerS)
	m.attOK.add(attemptSuccesses(s))
	m.active.add(s.ActiveCalls)
	m.activeChange.add(s.ActiveCallsChangePerS)
	m.activeChangeMissing = m.activeChangeMissing || (s.AttemptsPerS.OK() && !s.ActiveCallsChangePerS.OK())
	m.limit.add(s.ConcurrencyLimit)
	m.balance.add(s.BudgetBalance)
	m.maxAtt.max(s.MaxAttempts)
	m.deadlineS.max(s.DeadlineSeconds)
	m.poolP50.max(s.PoolWaitP50)
	// A mean of replicas' means is no mean; the worst replica's is
	// what a fleet row can say, as for the quantiles. Waiting calls
	// add up.
	m.poolMean.max(s.PoolWaitMean)
	m.queueDepth.add(s.QueueDepth)
	m.poolP99.max(s.PoolWaitP99)
	m.backP50.max(s.BackoffP50)
	m.backP99.max(s.BackoffP99)
}

// fill sets out's rates, counts and worsts.
func (m *memberSums) fill(out *model.Signals) {
	out.OriginalsPerS = m.orig.value()
	out.AttemptsPerS = m.att.value()
	out.CancelledAttemptsPerS = m.cancelledAtt.value()
	out.AbandonedAttemptsPerS = m.abandoned.value()
	out.LateSuccessesPerS = m.late.value()
	out.HedgesPerS = m.hedges.value()
	out.HedgesWonPerS = m.hedgesWon.value()
	out.HedgesAbandonedPerS = m.hedgesAbandoned.value()
	if !m.opAttemptsMissing {
		out.OperationAttemptsPerS = m.opAttempts.value()
	}
	out.NestedPerS = m.nested.value()
	if !m.completedMissing {
		out.CompletedPerS = m.completed.value()
	}
	if !m.admittedMissing {
		out.AdmittedPerS = m.admitted.value()
	}
	out.RetriesPerS = m.retries.value()
	out.RescuedPerS = m.rescued.value()
	out.BudgetDeniedPerS = m.budget.value()
	out.AdmissionRejectedPerS = m.admission.value()
	out.ProviderErrorsPerS = m.provider.value()
	out.TemporaryErrorsPerS = m.temporary.value()
	out.PermanentErrorsPerS = m.permanent.value()
	out.TimeoutsPerS = m.timeouts.value()
	out.SuccessesPerS = m.successes.value()
	out.DeadlineExhaustedPerS = m.deadline.value()
	out.AttemptSuccess = ratio(m.attOK.value(), out.AttemptsPerS)
	out.ActiveCalls = m.active.value()
	if !m.activeChangeMissing {
		out.ActiveCallsChangePerS = m.activeChange.value()
	}
	out.ConcurrencyLimit = m.limit.value()
	out.BudgetBalance = m.balance.value()
	out.MaxAttempts = m.maxAtt.value()
	out.DeadlineSeconds = m.deadlineS.value()
	out.PoolWaitP50, out.PoolWaitP99 = m.poolP50.value(), m.poolP99.value()
	out.PoolWaitMean, out.QueueDepth = m.poolMean.value(), m.queueDepth.value()
	out.BackoffP50, out.BackoffP99 = m.backP50.value(), m.backP99.value()
}

// fillKeyed sets out's keyed sums: nested retries by layer, results and
// admission rejections by reason.
func (a *aggregator) fillKeyed(out *model.Signals) {
	if len(a.nested) > 0 {
		slices.SortFunc(a.nested, func(x, y keyed) int { return strings.Compare(x.key, y.key) })
		out.NestedIn = make([]model.Breakdown, len(a.nested))
		for i, k := range a.nested {
			out.NestedIn[i] = model.Breakdown{Labels: k.labels, Key: k.key, PerS: k.sum.v}
		}
	}
	if len(a.results) > 0 {
		out.ResultsPerS = make(map[string]model.Value, len(a.results))
		for _, k := range a.results {
			out.ResultsPerS[k.key] = k.sum.value()
		}
	}
	if len(a.admission) > 0 {
		slices.SortFunc(a.admission, func(x, y keyed) int { return strings.Compare(x.key, y.key) })
		out.AdmissionRejectedBy = make([]model.Breakdown, len(a.admission))
		for i, k := range a.admission {
			out.AdmissionRejectedBy[i] = model.Breakdown{Labels: k.labels, Key: k.key, PerS: k.sum.v}
		}
	}
}

// addResults sums a member's results. The contract's results are looked
// up by name: ranging over the map costs more, and a frame of 200
// replicas x 30 bins does this 6,000 times.
func (a *aggregator) addResults(s *model.Signals) {
	if len(s.ResultsPerS) == 0 {
		return
	}
	found := 0
	for _, r := range contractResults {
		if v, ok := s.ResultsPerS[r]; ok {
			a.results = addKeyed(a.results, r, nil, v)
			found++
		}
	}
	if found == len(s.ResultsPerS) {
		return
	}
	for k, v := range s.ResultsPerS {
		if !slices.Contains(contractResults, k) {
			a.results = addKeyed(a.results, k, nil, v)
		}
	}
}

// addLatency gathers a member's latency classes, the contract's by name
// first (see addResults), then any others.
func (a *aggregator) addLatency(s *model.Signals) {
	if len(s.Latency) == 0 && len(s.LatencyHist) == 0 {
		return
	}
	nq, nh := 0, 0
	for _, class := range model.LatencyClasses {
		q, okQ := s.Latency.Get(class)
		h, okH := s.LatencyHist.Get(class)
		if okQ {
			nq++
		}
		if okH {
			nh++
		}
		if okQ || okH {
			a.class(class).add(q, okQ, h, okH)
		}
	}
	if nq == len(s.Latency) && nh == len(s.LatencyHist) {
		return
	}
	for _, e := range s.Latency {
		if !slices.Contains(model.LatencyClasses, e.Class) {
			h, okH := s.LatencyHist.Get(e.Class)
			a.class(e.Class).add(e.V, true, h, okH)
		}
	}
	for _, e := range s.LatencyHist {
		if !s.Latency.Has(e.Class) && !slices.Contains(model.LatencyClasses, e.Class) {
			a.class(e.Class).add(model.Quantiles{}, false, e.V, true)
		}
	}
}

// add gathers one member's quantiles and histogram of the class.
func (c *classAcc) add(q model.Quantiles, okQ bool, h model.HistogramWindow, okH bool) {
	if okQ && worse(q, c.worst) {
		c.worst = q
	}
	if !okH || len(h.Buckets) == 0 {
		// Observations without a histogram cannot be merged.
		if hasAny(q) {
			c.agree = false
		}
		return
	}
	c.addHist(h)
}

// attemptSuccesses is a member's successful attempts per second: absent
// when it does not split attempts by outcome (its timeouts, like every
// outcome rate, are then absent).
func attemptSuccesses(s *model.Signals) model.Value {
	switch {
	case s.AttemptSuccess.OK() && s.AttemptsPerS.OK():
		return model.Some(s.AttemptSuccess.V() * s.AttemptsPerS.V())
	case s.TimeoutsPerS.OK() && s.AttemptsPerS.OK() && s.AttemptsPerS.V() == 0:
		return model.Some(0)
	}
	return model.Absent
}

func (c *classAcc) addHist(h model.HistogramWindow) {
	if c.hists == 0 {
		c.bounds = h.Buckets
		c.counts = make([]float64, len(h.Buckets))
	} else if !sameBounds(c.bounds, h.Buckets) {
		c.agree = false
	}
	c.hists++
	if c.agree {
		for i := range h.Buckets {
			c.counts[i] += h.Buckets[i].Count
		}
		c.count += h.Count
		c.sum += h.Sum
	}
}

// latency fills per-class latency and the mixed latency from the classes
// gathered by aggregate.
func (a *aggregator) latency(out *model.Signals, hasLatency bool, mixedWorst model.Quantiles) {
	if !hasLatency && len(a.classes) == 0 {
		return
	}
	// Classes in a fixed order, so that merging adds in the same order
	// whatever the order the members' maps were read in.
	slices.SortFunc(a.classes, func(x, y classAcc) int {
		if c := classRank(x.class) - classRank(y.class); c != 0 {
			return c
		}
		return strings.Compare(x.class, y.class)
	})
	out.Latency = make(model.ByClass[model.Quantiles], 0, len(a.classes))
	allAgree := true
	var merged []model.HistogramWindow
	for i := range a.classes {
		c := &a.classes[i]
		if !c.agree {
			allAgree = false
			out.Latency.Set(c.class, c.worst)
			continue
		}
		if c.hists == 0 {
			out.Latency.Set(c.class, model.Quantiles{})
			continue
		}
		h := model.HistogramWindow{Buckets: make([]model.Bucket, len(c.bounds)), Count: c.count, Sum: c.sum}
		for j := range c.bounds {
			h.Buckets[j] = model.Bucket{UpperBound: c.bounds[j].UpperBound, Count: c.counts[j]}
		}
		if out.LatencyHist == nil {
			out.LatencyHist = make(model.ByClass[model.HistogramWindow], 0, len(a.classes))
		}
		out.LatencyHist.Set(c.class, h)
		out.Latency.Set(c.class, Quantiles(h.Buckets))
		merged = append(merged, h)
	}
	switch {
	case !allAgree:
		out.MixedLatency = mixedWorst
	case len(merged) > 0:
		out.MixedLatency = Quantiles(MergeHistograms(merged...).Buckets)
	}
}

// classRank orders the contract's latency classes first, in display order.
func classRank(class string) int {
	if i := slices.Index(model.LatencyClasses, class); i >= 0 {
		return i
	}
	return len(model.LatencyClasses)
}
