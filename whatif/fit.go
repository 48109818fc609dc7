package whatif

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/policy"
)

// Assumption is one thing the fit took from the recording or had to
// assume, and the signal it came from.
type Assumption struct {
	What   string `json:"what"`
	Value  string `json:"value"`
	Source string `json:"source"`
	// Confidence is how the value is known: exact, measured, carried,
	// assumed or undetermined (the Confidence* constants); empty for a
	// note that fits no parameter.
	Confidence string `json:"confidence,omitempty"`
}

// Fitted is a model fitted from a recording and the recording's own
// per-bin numbers, computed by the definitions the model's are.
type Fitted struct {
	Model       Model
	Recording   Series
	Assumptions []Assumption
	// Chain is the targets from the user-facing hop down to the provider.
	Chain []string
	// StartMs is the wall time of the first bin.
	StartMs int64
}

// DefaultReserve is the time a hop below the user-facing one is assumed to
// keep back from its caller's deadline for its own reply, which no metric
// exports: retry.DefaultPolicy's DeadlineReserve.
const DefaultReserve = 50 * time.Millisecond

// DefaultMinAttemptTime is retry.DefaultMinAttemptTime.
const DefaultMinAttemptTime = 50 * time.Millisecond

// Fit fits a model from a loaded recording (a store filled by
// dump.LoadStore, as `analyze FILE` does) with bins of width bin.
func Fit(st *model.Store, bin time.Duration) (Fitted, error) {
	var f Fitted
	if bin < time.Second {
		return f, fmt.Errorf("whatif: bin %v is shorter than 1s", bin)
	}
	chain, err := findChain(st)
	if err != nil {
		return f, err
	}
	f.Chain = chain
	user := chain[0]
	times := st.Times(user)
	if len(times) < 3 {
		return f, fmt.Errorf("whatif: %q has %d scrapes, too few to fit", user, len(times))
	}
	binMs := bin.Milliseconds()
	start := times[0]
	n := int((times[len(times)-1] - start) / binMs)
	if n < 2 {
		return f, fmt.Errorf("whatif: the recording spans less than two bins of %v", bin)
	}
	end := start + int64(n)*binMs
	f.StartMs = start
	w := bin.Seconds()
	add := func(what, value, source string, conf ...string) {
		f.Assumptions = append(f.Assumptions, Assumption{what, value, source, first(conf)})
	}
	m := Model{Bin: bin, Seed: 1}
	rec := Series{Bin: bin}

	// The user-facing hop: arrivals, outcomes.
	lastCaller := len(chain) - 2
	rows := make([][]model.Signals, lastCaller+1)
	for i := 0; i <= lastCaller; i++ {
		rows[i] = analysis.Timeline(st, model.Key{Target: chain[i], Dependency: chain[i+1]}, bin, start, end)
		if len(rows[i]) != n {
			return f, fmt.Errorf("whatif: %q -> %q: %d bins, want %d", chain[i], chain[i+1], len(rows[i]), n)
		}
	}
	edges := make([]int64, n+1)
	for i := range edges {
		edges[i] = start + int64(i)*binMs
	}
	dep0 := depIs(chain[1])
	rec.Offered = perBin(st, user, model.MetricOriginals, dep0, edges)
	rec.Ended = perBin(st, user, model.MetricResults, dep0, edges)
	rec.Succeeded = perBin(st, user, model.MetricResults, labelIs("result", "success", dep0), edges)
	for _, o := range rec.Offered {
		m.Arrivals = append(m.Arrivals, zeroNaN(o))
	}
	add("arrivals", fmt.Sprintf("%.1f/s mean, open loop, spread evenly in each %v bin", mean(m.Arrivals)/w, bin),
		user+" "+model.MetricOriginals+"{dependency=\""+chain[1]+"\"}, read between scrapes by linear interpolation", ConfidenceMeasured)
	rec.Attempts = perBin(st, chain[lastCaller], model.MetricAttempts, depIs(chain[lastCaller+1]), edges)
	provDep := depIs(chain[lastCaller+1])
	rec.Failed = perBin(st, chain[lastCaller], model.MetricAttempts, func(ls model.Labels) bool {
		return provDep(ls) && ls.Get(model.LabelOutcome) != model.OutcomeSuccess
	}, edges)
	rec.TimedOut = perBin(st, chain[lastCaller], model.MetricAttempts, labelIs(model.LabelOutcome, model.OutcomeTimeout, provDep), edges)

	// Each hop's policy and timing.
	for i := 0; i <= lastCaller; i++ {
		h, notes := fitHop(st, chain, i, rows[i], start, end)
		m.Hops = append(m.Hops, h)
		f.Assumptions = append(f.Assumptions, notes...)
	}

	// The provider.
	prov := chain[len(chain)-1]
	notes, err := fitProvider(st, &m, &rec, prov, rows[lastCaller], bin, start, end, n)
	if err != nil {
		return f, err
	}
	f.Assumptions = append(f.Assumptions, notes...)
	m.Trigger = trigger(m.Provider.ServiceTime)
	rec.Trigger = m.Trigger
	for k, b := range []int{m.Trigger.Start, m.Trigger.End} {
		if m.Trigger.End <= m.Trigger.Start || b < 2 || b+1 >= n {
			continue
		}
		at := calibrateEdge(&m, rec, b)
		if k == 1 {
			m.TriggerEnd, rec.TriggerEnd = at, at
		}
		add(fmt.Sprintf("service time change near bin %d", b), fmt.Sprintf("at %.1fs, from %v to %v", at.Seconds(), m.Provider.Edges[len(m.Provider.Edges)-1].Before.Round(time.Millisecond), m.Provider.Edges[len(m.Provider.Edges)-1].After.Round(time.Millisecond)),
			"the moment (in tenths of a bin, over the two bins around the change) whose replay under the recorded policy best matches the recording's finished and successful originals there", ConfidenceMeasured)
	}
	if m.Trigger.End > m.Trigger.Start {
		add("trigger", fmt.Sprintf("bins %d..%d (%.0fs..%.0fs): service time above 1.5x its lowest", m.Trigger.Start, m.Trigger.End-1,
			float64(m.Trigger.Start)*w, float64(m.Trigger.End)*w), "the provider's service time per bin (above)", ConfidenceMeasured)
	} else {
		add("trigger", "none found: no recovery time", "the provider's service time per bin")
	}
	f.Model, f.Recording = m, rec
	return f, nil
}

func zeroNaN(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

func nan(v model.Value) float64 { return v.Or(math.NaN()) }

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// findChain follows dependencies from the user-facing target (a target
// that calls others and that no target names as its dependency) down to a
// target that calls nothing (the provider), by target name.
func findChain(st *model.Store) ([]string, error) {
	targets := st.Targets()
	sort.Strings(targets)
	deps := map[string][]string{}
	called := map[string]bool{}
	for _, t := range targets {
		ds := analysis.Dependencies(st, t)
		deps[t] = ds
		for _, d := range ds {
			called[d] = true
		}
	}
	for _, t := range targets {
		if called[t] || len(deps[t]) == 0 {
			continue
		}
		chain := []string{t}
		for cur := t; ; {
			ds := deps[cur]
			if len(ds) == 0 {
				break
			}
			next := ds[0]
			if slices.Contains(chain, next) {
				return nil, fmt.Errorf("whatif: the dependencies of %q loop back to %q", cur, next)
			}
			chain = append(chain, next)
			if _, scraped := deps[next]; !scraped {
				break
			}
			cur = next
		}
		if len(chain) >= 2 {
			return chain, nil
		}
	}
	return nil, fmt.Errorf("whatif: no chain of callers in the recording (want a target whose retry_* families name a dependency)")
}

// histMean is the mean of a histogram family's observations over
// [startMs, endMs] whose labels match, from its _sum and _count.
func histMean(st *model.Store, target, family string, match func(model.Labels) bool, startMs, endMs int64) (mean, count float64, ok bool) {
	var sum, cnt float64
	for _, s := range st.Select(target, family+"_sum", match) {
		if v, ok := edgeIncrease(s.Points, startMs, endMs); ok {
			sum += v
		}
	}
	got := false
	for _, s := range st.Select(target, family+"_count", match) {
		if v, ok := edgeIncrease(s.Points, startMs, endMs); ok {
			cnt += v
			got = true
		}
	}
	if !got || cnt <= 0 {
		return 0, cnt, false
	}
	return sum / cnt, cnt, true
}

// edgeIncrease is a counter's increase from its last sample at or before
// startMs to its last sample at or before endMs, as analysis.Timeline
// counts a bin, so consecutive bins lose and double nothing.
func edgeIncrease(pts []model.Point, startMs, endMs int64) (float64, bool) {
	i := sort.Search(len(pts), func(k int) bool { return pts[k].T > startMs }) - 1
	j := sort.Search(len(pts), func(k int) bool { return pts[k].T > endMs }) - 1
	if i < 0 {
		i = 0 // the series begins inside the range: its first value is the baseline
	}
	if j <= i {
		return 0, false
	}
	return analysis.Increase(pts, pts[i].T, pts[j].T)
}

func depIs(dep string) func(model.Labels) bool {
	return func(ls model.Labels) bool { return ls.Get(model.LabelDependency) == dep }
}

func fitHop(st *model.Store, chain []string, i int, row []model.Signals, start, end int64) (Hop, []Assumption) {
	target, dep := chain[i], chain[i+1]
	var notes []Assumption
	add := func(what, value, source string, conf ...string) {
		notes = append(notes, Assumption{target + " " + what, value, source, first(conf)})
	}
	h := Hop{Name: target, Dependency: dep}
	maxOf := func(get func(model.Signals) model.Value) (float64, bool) {
		v, ok := 0.0, false
		for _, s := range row {
			if x, good := get(s).Get(); good {
				v, ok = max(v, x), true
			}
		}
		return v, ok
	}
	src := func(fam string) string { return fmt.Sprintf("%s %s{dependency=%q}", target, fam, dep) }
	if a, ok := maxOf(func(s model.Signals) model.Value { return s.MaxAttempts }); ok && a >= 1 {
		h.Base.MaxAttempts = int(a)
		add("max attempts", fmt.Sprint(h.Base.MaxAttempts), src("retry_policy_max_attempts"), ConfidenceExact)
	} else {
		h.Base.MaxAttempts = 1
		add("max attempts", "1 (assumed: not exported)", src("retry_policy_max_attempts")+" absent", ConfidenceAssumed)
	}
	if d, ok := maxOf(func(s model.Signals) model.Value { return s.DeadlineSeconds }); ok && d > 0 {
		h.Deadline = time.Duration(d * float64(time.Second))
		add("deadline", h.Deadline.String(), src("retry_policy_deadline_seconds"), ConfidenceExact)
	}
	timeoutOnly := func(ls model.Labels) bool {
		return ls.Get(model.LabelDependency) == dep && ls.Get(model.LabelOutcome) == "timeout"
	}
	if mt, n, ok := histMean(st, target, model.MetricAttemptDuration, timeoutOnly, start, end); ok {
		h.PerAttemptTimeout = time.Duration(mt * float64(time.Second)).Round(time.Millisecond)
		add("per-attempt timeout", h.PerAttemptTimeout.String(), fmt.Sprintf("mean of %.0f timed-out attempts, %s", n, src("retry_attempt_duration_seconds{outcome=\"timeout\"}")), ConfidenceMeasured)
	} else if h.Deadline <= 0 {
		add("per-attempt timeout", "none", "no attempt timed out", ConfidenceMeasured)
	}
	if i > 0 {
		h.Propagate = len(st.Select(target, model.MetricServerRequests, nil)) > 0 || len(st.Select(target, model.MetricServerRequests+"_total", nil)) > 0
		h.Reserve = DefaultReserve
		how := "does not honour its caller's deadline (no retry_server_requests_total)"
		if h.Propagate {
			how = "honours its caller's remaining time (retry_server_requests_total)"
		}
		add("deadline propagation", how, target+" "+model.MetricServerRequests, ConfidenceMeasured)
		add("deadline reserve", DefaultReserve.String()+" (assumed: not exported; retry.DefaultPolicy's)", "none", ConfidenceAssumed)
	}
	if h.Deadline <= 0 && h.PerAttemptTimeout > 0 {
		h.Deadline = time.Duration(h.Base.MaxAttempts) * h.PerAttemptTimeout
		add("deadline", h.Deadline.String()+" (derived: attempts x per-attempt timeout, as retry.Policy does)", "none", ConfidenceAssumed)
	}
	h.MinAttemptTime = DefaultMinAttemptTime
	if h.PerAttemptTimeout > 0 {
		h.MinAttemptTime = min(h.MinAttemptTime, h.PerAttemptTimeout/2)
	}
	if l, ok := maxOf(func(s model.Signals) model.Value { return s.ConcurrencyLimit }); ok && l >= 1 {
		h.Base.Limit = int(l)
		add("admission limit", fmt.Sprint(h.Base.Limit), src("retry_concurrency_limit"), ConfidenceExact)
	}
	if b, ok := maxOf(func(s model.Signals) model.Value { return s.BudgetBalance }); ok {
		cap := max(int64(math.Round(b))*10, 10)
		h.Base.Budget = &policy.BudgetRules{Earn: 1, Cost: 10, Cap: cap}
		add("retry budget", fmt.Sprintf("1 credit per original, 10 per retry (assumed: the seed's), cap %d credits (the highest balance seen, %.0f retries)", cap, b),
			src("retry_budget_balance"), ConfidenceAssumed)
	}
	if mb, n, ok := histMean(st, target, model.MetricBackoff, depIs(dep), start, end); ok && mb > 0 {
		// A full-jitter delay's mean is half its ceiling; the ceiling
		// doubles per retry, so the mean over retries is a rough base.
		base := time.Duration(2 * mb * float64(time.Second)).Round(time.Millisecond)
		h.Base.Backoff = policy.Backoff{Kind: "full_jitter", Base: base, Cap: 8 * base}
		add("backoff", h.Base.Backoff.String()+" (assumed full jitter, ceiling twice the mean delay, cap 8x)",
			fmt.Sprintf("mean of %.0f delays, %s", n, src("retry_backoff_seconds")), ConfidenceMeasured)
	}
	return h, notes
}

func fitProvider(st *model.Store, m *Model, rec *Series, prov string, caller []model.Signals, bin time.Duration, start, end int64, n int) ([]Assumption, error) {
	var notes []Assumption
	add := func(what, value, source string, conf ...string) {
		notes = append(notes, Assumption{prov + " " + what, value, source, first(conf)})
	}
	w := bin.Seconds()
	svc := analysis.ServiceTimeline(st, prov, bin, start, end)
	if len(svc) == n && slices.ContainsFunc(svc, func(s model.ServiceSignals) bool { return s.Slots.OK() }) {
		slots := 0.0
		for _, s := range svc {
			slots = max(slots, s.Slots.Or(0))
		}
		m.Provider.Slots = int(slots)
		rec.Slots = slots
		add("slots", fmt.Sprint(m.Provider.Slots), prov+" "+model.MetricServiceSlots, ConfidenceExact)
		for _, s := range svc {
			h := math.NaN()
			if s.InFlight.OK() && s.QueueDepth.OK() {
				h = s.InFlight.V() + s.QueueDepth.V()
			}
			rec.Held = append(rec.Held, h)
			if q := s.QueueLimit.Or(0); q > 0 {
				m.Provider.MaxQueue = int(q)
			}
		}
		if m.Provider.MaxQueue > 0 {
			add("queue limit", fmt.Sprint(m.Provider.MaxQueue), prov+" "+model.MetricServiceQueueLimit, ConfidenceExact)
		}
		edges := make([]int64, n+1)
		for i := range edges {
			edges[i] = start + int64(i)*bin.Milliseconds()
		}
		sf, err := fitServiceTime(st, prov, edges, m.Provider.Slots, m.Hops[len(m.Hops)-1].PerAttemptTimeout)
		if err != nil {
			return notes, err
		}
		m.Provider.ServiceTime = sf.Times
		notes = append(notes, sf.Notes...)
		add("service time", summarizeDurations(m.Provider.ServiceTime), "per bin: the mean of the requests that finished in it, or in a slow stretch the stretch's level (above)")
		var recv, wac float64
		for _, s := range svc {
			recv += s.ReceivedPerS.Or(0) * w
		}
		for _, s := range caller {
			wac += s.DependencyWorkAfterCancelPerS.Or(0) * w
		}
		m.Provider.IgnoreCancel = recv > 0 && wac > 0.05*recv
		add("cancellation", map[bool]string{true: "ignored: work goes on after the caller gave up", false: "honoured: a cancelled request leaves the queue or frees its slot"}[m.Provider.IgnoreCancel],
			fmt.Sprintf("%s %s: %.0f of %.0f received (ignored above 5 %%)", prov, model.MetricServerWorkAfterCancel, wac, recv), ConfidenceMeasured)
		return notes, nil
	}
	// No provider side: the caller's successful attempts per bin and their
	// latency. Little's law gives the requests being served at once
	// (successes/s x latency); its highest value over the bins is taken as
	// the slots, the latency per bin as the service time. Both include
	// any wait in a queue, so the capacity is a bound, and it says so.
	callerName := chainCaller(caller)
	binMs := bin.Milliseconds()
	okAttempt := func(ls model.Labels) bool {
		return ls.Get(model.LabelDependency) == prov && ls.Get(model.LabelOutcome) == "success"
	}
	lat := make([]float64, n)
	var slots float64
	for i := range n {
		lat[i] = math.NaN()
		a, c, ok := histMean(st, callerName, model.MetricAttemptDuration, okAttempt, start+int64(i)*binMs, start+int64(i+1)*binMs)
		if !ok {
			continue
		}
		lat[i] = a
		slots = max(slots, c/w*a)
	}
	rec.Held = make([]float64, n)
	for i := range rec.Held {
		rec.Held[i] = math.NaN() // the provider's queue is not recorded
	}
	if slots <= 0 {
		return notes, fmt.Errorf("whatif: %q is not recorded and %q's attempts never succeeded: no capacity to fit", prov, callerName)
	}
	m.Provider.Slots = max(int(math.Round(slots)), 1)
	add("slots", fmt.Sprintf("%d (Little's law: the most successful attempts per second x their latency in a bin, %.1f; the provider side is not recorded)", m.Provider.Slots, slots),
		callerName+" "+model.MetricAttemptDuration+"{outcome=\"success\"}", ConfidenceMeasured)
	m.Provider.ServiceTime = fill(lat)
	add("service time", summarizeDurations(m.Provider.ServiceTime)+" (the mean successful attempt's latency per bin, any queue wait included)",
		callerName+" "+model.MetricAttemptDuration+"{outcome=\"success\"}", ConfidenceMeasured)
	return notes, nil
}

// chainCaller is the target of the last caller row.
func chainCaller(rows []model.Signals) string {
	if len(rows) == 0 {
		return ""
	}
	return rows[0].Target
}

// fill turns seconds per bin into durations, carrying the last known value
// over gaps (and the first back over leading ones); nil when nothing is
// known.
func fill(xs []float64) []time.Duration {
	first := slices.IndexFunc(xs, func(x float64) bool { return !math.IsNaN(x) })
	if first < 0 {
		return nil
	}
	out := make([]time.Duration, len(xs))
	cur := xs[first]
	for i, x := range xs {
		if !math.IsNaN(x) {
			cur = x
		}
		out[i] = time.Duration(cur * float64(time.Second))
	}
	return out
}

func summarizeDurations(ds []time.Duration) string {
	lo, hi := ds[0], ds[0]
	for _, d := range ds {
		lo, hi = min(lo, d), max(hi, d)
	}
	return fmt.Sprintf("%v .. %v per bin", lo.Round(100*time.Microsecond), hi.Round(100*time.Microsecond))
}

// trigger is the longest run of bins whose service time is above 1.5x
// the lowest.
func trigger(st []time.Duration) Span {
	if len(st) == 0 {
		return Span{}
	}
	lo := slices.Min(st)
	th := lo + lo/2
	var best, cur Span
	for i, d := range st {
		if d > th {
			if cur.End != i {
				cur = Span{i, i}
			}
			cur.End = i + 1
			if cur.End-cur.Start > best.End-best.Start {
				best = cur
			}
		}
	}
	return best
}

// perBin is the increase of the summed counter series per bin between
// consecutive edges, each series' running total (counter resets counted
// as in Prometheus) read at an edge by linear interpolation between the
// samples around it. Scrapes land anywhere in a bin; read only at
// samples, a bin with no scrape holds nothing and the next one two bins'
// worth (a 1 s bin at 1 s scrapes: 0 then 100 originals for 50/s).
// Interpolation assumes the rate is even between two scrapes. A bin whose
// edges fall outside every series' samples is NaN.
func perBin(st *model.Store, target, name string, match func(model.Labels) bool, edges []int64) []float64 {
	out := make([]float64, len(edges)-1)
	for i := range out {
		out[i] = math.NaN()
	}
	for _, s := range st.Select(target, name, match) {
		pts := s.Points
		if len(pts) < 2 {
			continue
		}
		run := make([]float64, len(pts))
		for k := 1; k < len(pts); k++ {
			d := pts[k].V - pts[k-1].V
			if d < 0 {
				d = pts[k].V // a reset: the value after it counts in full
			}
			run[k] = run[k-1] + d
		}
		at := func(t int64) (float64, bool) {
			if t < pts[0].T || t > pts[len(pts)-1].T {
				return 0, false
			}
			k := sort.Search(len(pts), func(k int) bool { return pts[k].T >= t })
			if pts[k].T == t || k == 0 {
				return run[k], true
			}
			f := float64(t-pts[k-1].T) / float64(pts[k].T-pts[k-1].T)
			return run[k-1] + float64(f*(run[k]-run[k-1])), true // float64(): no FMA, the same sums on every architecture
		}
		for i := range out {
			a, ok1 := at(edges[i])
			b, ok2 := at(edges[i+1])
			if !ok1 || !ok2 {
				continue
			}
			if math.IsNaN(out[i]) {
				out[i] = 0
			}
			out[i] += b - a
		}
	}
	return out
}

func labelIs(key, value string, also func(model.Labels) bool) func(model.Labels) bool {
	return func(ls model.Labels) bool { return ls.Get(key) == value && (also == nil || also(ls)) }
}

// calibrateEdge places the change of service time near bin b: per-bin
// data cannot say where in the bin it happened (a mean of a bin that mixes
// both levels may look like either), and with operations that last about
// a bin, a change at a bin's start or its end gives different outcomes in
// the next bin. Each tenth of bins b-1 and b is replayed under the
// recorded policy, with the clean levels of bins b-2 and b+1 on either
// side, and the moment whose finished and successful originals in bins
// b-2..b+2 are closest (least squares) to the recording's is kept.
func calibrateEdge(m *Model, rec Series, b int) time.Duration {
	st := m.Provider.ServiceTime
	base := m.Provider.Edges
	best, bestErr := time.Duration(0), math.Inf(1)
	var bestEdge Edge
	for k := range 20 {
		e := Edge{From: b - 1, At: time.Duration(b-1)*m.Bin + time.Duration(k)*m.Bin/10, Before: st[b-2], After: st[b+1]}
		m.Provider.Edges = append(append([]Edge(nil), base...), e)
		r, err := Run(*m, nil)
		if err != nil {
			continue // the model was checked before: unreachable
		}
		var sq float64
		for j := max(b-2, 0); j <= min(b+2, len(r.Bins)-1); j++ {
			for _, d := range []float64{float64(r.Bins[j].Succeeded) - at(rec.Succeeded, j), float64(r.Bins[j].Ended) - at(rec.Ended, j)} {
				if !math.IsNaN(d) {
					sq += float64(d * d)
				}
			}
		}
		if sq < bestErr {
			best, bestErr, bestEdge = e.At, sq, e
		}
	}
	m.Provider.Edges = append(base, bestEdge)
	return best
}

// first is the optional confidence of an add, "" without one.
func first(conf []string) string {
	if len(conf) == 0 {
		return ""
	}
	return conf[0]
}
