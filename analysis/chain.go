package analysis

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/retrytop/retrytop/model"
)

// Gap codes: the two ways a hop's arrivals can disagree with what its
// callers sent.
const (
	CodeHiddenRetries = "HIDDEN_RETRIES"
	CodeHopLoss       = "HOP_LOSS"
)

// Hop is one step of a call path: Target calling its Dependency.
type Hop struct {
	Target     string `json:"target"`
	Dependency string `json:"dependency"`
}

// Chain is an ordered call path from the user-facing layer down to the
// provider; hop i's dependency is hop i+1's target.
type Chain struct {
	Name string `json:"name"`
	Hops []Hop  `json:"hops"`
}

// chainName is the default name of a chain: its targets and the last
// dependency joined by " -> ".
func chainName(hops []Hop) string {
	if len(hops) == 0 {
		return ""
	}
	parts := make([]string, 0, len(hops)+1)
	for _, h := range hops {
		parts = append(parts, h.Target)
	}
	parts = append(parts, hops[len(hops)-1].Dependency)
	return strings.Join(parts, " -> ")
}

// InferChains links the rows into call paths: a row (A, B) is followed by
// every row (B, C), since a dependency named like a target is taken to be
// that target. It returns every maximal path: each starts at a row whose
// target nobody calls (or, for hops only reachable around a cycle, at the
// smallest such hop) and follows links until a dependency that is not a
// target or a target already on the path. A row linked to nothing is a
// chain of one hop. When a target calls several targets the paths branch
// and share their first hops.
//
// The result is deterministic: longest first, then by name; duplicate rows
// count once.
func InferChains(rows []model.Signals) []Chain {
	next := make(map[string][]Hop) // target -> its hops, sorted by dependency
	called := make(map[string]bool)
	seen := make(map[Hop]bool)
	for i := range rows {
		h := Hop{Target: rows[i].Target, Dependency: rows[i].Dependency}
		if seen[h] || h.Target == "" || h.Dependency == "" {
			continue
		}
		seen[h] = true
		next[h.Target] = append(next[h.Target], h)
		called[h.Dependency] = true
	}
	var targets []string
	for t, hs := range next {
		targets = append(targets, t)
		slices.SortFunc(hs, func(a, b Hop) int { return cmp.Compare(a.Dependency, b.Dependency) })
	}
	slices.Sort(targets)

	var paths [][]Hop
	covered := make(map[Hop]bool)
	var walk func(path []Hop, onPath map[string]bool)
	walk = func(path []Hop, onPath map[string]bool) {
		last := path[len(path)-1]
		var ext []Hop
		if !onPath[last.Dependency] {
			ext = next[last.Dependency]
		}
		if len(ext) == 0 {
			paths = append(paths, slices.Clone(path))
			for _, h := range path {
				covered[h] = true
			}
			return
		}
		onPath[last.Dependency] = true
		for _, h := range ext {
			walk(append(path, h), onPath)
		}
		delete(onPath, last.Dependency)
	}
	start := func(h Hop) { walk([]Hop{h}, map[string]bool{h.Target: true}) }
	for _, t := range targets {
		if called[t] {
			continue
		}
		for _, h := range next[t] {
			start(h)
		}
	}
	// Hops reachable only around a cycle.
	for _, t := range targets {
		for _, h := range next[t] {
			if !covered[h] {
				start(h)
			}
		}
	}

	out := make([]Chain, 0, len(paths))
	for _, p := range paths {
		out = append(out, Chain{Name: chainName(p), Hops: p})
	}
	slices.SortFunc(out, func(a, b Chain) int {
		if c := cmp.Compare(len(b.Hops), len(a.Hops)); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// GapTolerance is how far a hop's arrivals may differ from what its callers
// sent before the difference is called a gap: Relative of what was sent
// plus AbsolutePerS. Attempts are counted when they end and originals when
// they start, and every target is scraped at its own moments, so windows
// never agree exactly.
type GapTolerance struct {
	Relative     float64 `json:"relative"`
	AbsolutePerS float64 `json:"absolute_per_s"`
}

// allowed is the gap tolerated when sent/s were sent and the two sides'
// sampling moments explain skew/s (absent: nothing known).
func (t GapTolerance) allowed(sent float64, skew model.Value) float64 {
	a := t.Relative*sent + t.AbsolutePerS
	if skew.OK() {
		a += skew.V()
	}
	return a
}

// DefaultGapTolerance is 15 % of what was sent plus 0.5 per second.
func DefaultGapTolerance() GapTolerance {
	return GapTolerance{Relative: 0.15, AbsolutePerS: 0.5}
}

// HopResult is one hop of an evaluated chain.
type HopResult struct {
	Target        string      `json:"target"`
	Dependency    string      `json:"dependency"`
	Found         bool        `json:"found"` // the rows hold this hop
	OriginalsPerS model.Value `json:"originals_per_s"`
	AttemptsPerS  model.Value `json:"attempts_per_s"`
	RetriesPerS   model.Value `json:"retries_per_s"`
	Amplification model.Value `json:"amplification"`
	MaxAttempts   model.Value `json:"max_attempts"`
}

// Gap is a hop whose arrivals disagree with what its callers sent.
type Gap struct {
	// Code is HIDDEN_RETRIES (more arrived than was sent) or HOP_LOSS
	// (fewer arrived).
	Code string `json:"code"`
	// From is the sending hop, To the receiving target.
	From Hop    `json:"from"`
	To   string `json:"to"`
	// Basis says when both sides were counted (GapStarted or GapEnded).
	// SentPerS is the attempts/s every visible caller of To sent it (the
	// sum over all rows whose dependency is To, so a second visible caller
	// is not mistaken for a hidden layer): on the started basis, attempts
	// started (ended plus the change of the callers' active calls,
	// ActiveChangePerS), else attempts ended. ArrivedPerS is what To
	// received: its originals/s (started) on its next hop, or its
	// operations ended (ended basis), or for a last hop whose dependency
	// is a target with server-side metrics, the requests/s it received.
	Basis       string  `json:"basis"`
	SentPerS    float64 `json:"sent_per_s"`
	ArrivedPerS float64 `json:"arrived_per_s"`
	// ActiveChangePerS is the change of the callers' active calls, per
	// second, that SentPerS includes on the started basis (absent on the
	// ended one).
	ActiveChangePerS model.Value `json:"active_change_per_s"`
	// InFlightPerS is, on the ended basis, how much To's operations in
	// flight grew or shrank (|originals - ended|/s): calls its callers
	// stopped waiting for that it still runs, or a backlog it finished
	// after they gave up, are on one side only. It is part of the
	// tolerance. Absent on the started basis.
	InFlightPerS model.Value `json:"in_flight_per_s"`
	// GapPerS is ArrivedPerS - SentPerS: positive for hidden retries.
	GapPerS float64 `json:"gap_per_s"`
	// Relative is GapPerS / SentPerS and Factor ArrivedPerS / SentPerS
	// (what a hidden layer multiplies by); both absent when nothing was sent.
	Relative model.Value `json:"relative"`
	Factor   model.Value `json:"factor"`
	// TolerancePerS is the difference that was allowed: GapTolerance's
	// share plus SkewPerS plus InFlightPerS.
	TolerancePerS float64 `json:"tolerance_per_s"`
	// SkewPerS is what the sides' different sampling moments can explain:
	// the highest rate near the window's edges times how far apart the
	// two targets' samples at the edges were, over the window's width
	// (absent when the sample times are unknown).
	SkewPerS model.Value `json:"skew_per_s"`
}

// ChainResult is a chain's amplification now.
type ChainResult struct {
	Name string      `json:"name"`
	Hops []HopResult `json:"hops"`
	// EndToEndAmplification is provider calls per user action that got
	// in: the hops' amplifications multiplied, each by what its next hop
	// received per attempt sent to it (1 without a hidden layer, more with
	// one). Every factor is counted at one moment (a hop's attempts and
	// admitted originals when they end; attempts sent and requests
	// received when each call ends), so it stays within the worst case at
	// a step change unless a hidden layer multiplies. Dividing the last
	// hop's attempts by the first hop's originals directly mixed two
	// moments a deadline apart and read 3.78 on a 3x chain at the
	// slowdown's onset. When a hop is not found: that direct ratio.
	EndToEndAmplification model.Value `json:"end_to_end_amplification"`
	// ProductAmplification multiplies the hops' amplifications; it differs
	// from the end-to-end figure when hops disagree (gaps).
	ProductAmplification model.Value `json:"product_amplification"`
	// WorstCaseAmplification multiplies the hops' configured max attempts
	// (absent when any hop does not export it): what the configuration
	// allows when every layer exhausts its attempts.
	WorstCaseAmplification model.Value `json:"worst_case_amplification"`
	Gaps                   []Gap       `json:"gaps"`
	// Provider is the last dependency's side (AttachProviders); nil until
	// attached.
	Provider *ChainProvider `json:"provider,omitempty"`
}

// EvaluateChain computes a chain's per-hop and end-to-end amplification
// and its gaps from the rows, with DefaultGapTolerance.
func EvaluateChain(c Chain, rows []model.Signals) ChainResult {
	return EvaluateChainWith(c, rows, DefaultGapTolerance())
}

// EvaluateChainWith is EvaluateChain with a given gap tolerance.
//
// Gaps compare, for every hop after the first, its originals/s with the
// attempts/s its callers sent it. For the last hop, whose dependency is
// usually a provider that is not a target, there is nothing to compare
// with unless the rows carry the dependency's own received requests/s
// (Signals.DependencyReceivedPerS). A comparison with an absent side is
// skipped.
func EvaluateChainWith(c Chain, rows []model.Signals, tol GapTolerance) ChainResult {
	return evaluateChain(c, rows, tol, nil)
}

// edgeRates are, per row, the highest rates near the edges of its window:
// attempts sent and requests arrived (arrivedAt). A gap's skew allowance
// multiplies them by how far apart the two sides were sampled.
type edgeRates struct{ sent, arrived float64 }

// evaluateChain is EvaluateChainWith with the rows' edge rates (nil: each
// row's own rates over its window stand for them).
func evaluateChain(c Chain, rows []model.Signals, tol GapTolerance, edges map[model.Key]edgeRates) ChainResult {
	return indexRows(rows).evaluate(c, tol, edges)
}

// rowIndex is what every chain over one set of rows looks up: built once
// per set, not once per chain (a recording with hundreds of rows infers
// hundreds of chains, and the history evaluates them all in every bin).
type rowIndex struct {
	byKey   map[model.Key]*model.Signals
	sentTo  map[string]float64
	sentOK  map[string]bool
	callers map[string][]*model.Signals
	// startedTo is the attempts every caller started (ended plus the
	// change of its active calls), and activeTo that change; valid for a
	// dependency unless startedBad (a caller lacks the change).
	startedTo  map[string]float64
	activeTo   map[string]float64
	startedBad map[string]bool
}

func indexRows(rows []model.Signals) *rowIndex {
	x := &rowIndex{
		byKey:   make(map[model.Key]*model.Signals, len(rows)),
		sentTo:  make(map[string]float64),
		sentOK:  make(map[string]bool),
		callers: make(map[string][]*model.Signals),

		startedTo:  make(map[string]float64),
		activeTo:   make(map[string]float64),
		startedBad: make(map[string]bool),
	}
	for i := range rows {
		k := rows[i].Key()
		if _, dup := x.byKey[k]; dup {
			continue
		}
		x.byKey[k] = &rows[i]
		if v, ok := rows[i].AttemptsPerS.Get(); ok {
			x.sentTo[k.Dependency] += v
			x.sentOK[k.Dependency] = true
			x.callers[k.Dependency] = append(x.callers[k.Dependency], &rows[i])
			if d, ok := rows[i].ActiveCallsChangePerS.Get(); ok && finite(d) {
				x.startedTo[k.Dependency] += v + d
				x.activeTo[k.Dependency] += d
			} else {
				x.startedBad[k.Dependency] = true
			}
		}
	}
	return x
}

// evaluate is evaluateChain over indexed rows.
func (x *rowIndex) evaluate(c Chain, tol GapTolerance, edges map[model.Key]edgeRates) ChainResult {
	byKey, sentTo, sentOK, callers := x.byKey, x.sentTo, x.sentOK, x.callers
	edgeOf := func(s *model.Signals) edgeRates {
		if e, ok := edges[s.Key()]; ok {
			return e
		}
		e := edgeRates{sent: s.AttemptsPerS.V()}
		if a := arrivedAt(s); a.OK() {
			e.arrived = a.V()
		}
		return e
	}
	name := c.Name
	if name == "" {
		name = chainName(c.Hops)
	}
	res := ChainResult{Name: name, Hops: make([]HopResult, 0, len(c.Hops)), Gaps: []Gap{}}
	product, worst := model.Some(1), model.Some(1)
	firstBase := model.Absent
	for i, h := range c.Hops {
		hr := HopResult{Target: h.Target, Dependency: h.Dependency}
		if s := byKey[model.Key{Target: h.Target, Dependency: h.Dependency}]; s != nil {
			hr.Found = true
			hr.OriginalsPerS, hr.AttemptsPerS, hr.RetriesPerS = s.OriginalsPerS, s.AttemptsPerS, s.RetriesPerS
			hr.Amplification, hr.MaxAttempts = s.Amplification, s.MaxAttempts
			if i == 0 {
				firstBase, _ = admittedBase(s)
			}
		}
		product = mul(product, hr.Amplification)
		worst = mul(worst, hr.MaxAttempts)
		res.Hops = append(res.Hops, hr)
	}
	if len(res.Hops) == 0 {
		product, worst = model.Absent, model.Absent
	}
	res.ProductAmplification, res.WorstCaseAmplification = product, worst
	if n := len(res.Hops); n > 0 {
		res.EndToEndAmplification = product
		for i := 1; i < n && res.EndToEndAmplification.OK(); i++ {
			// What a hidden layer between hop i-1 and hop i multiplies
			// by: requests received per attempt sent (all its callers').
			sent, ok := sentTo[c.Hops[i].Target]
			arrived := arrivedAt(byKey[model.Key{Target: c.Hops[i].Target, Dependency: c.Hops[i].Dependency}])
			if ok && sentOK[c.Hops[i].Target] && sent > 0 && arrived.OK() {
				res.EndToEndAmplification = mul(res.EndToEndAmplification, model.Some(arrived.V()/sent))
			}
		}
		if !res.EndToEndAmplification.OK() {
			// A hop not found: the last hop's attempts over the first
			// hop's originals on the basis of its own amplification.
			res.EndToEndAmplification = ratio(res.Hops[n-1].AttemptsPerS, firstBase)
		}
	}

	// check compares what reached `to` (counted in row at, nil when the
	// arrivals are the sender's own view of its dependency) with what its
	// callers sent, both counted at one moment: attempts started against
	// arrivals counted when they start (started), or when the callers lack
	// active calls, attempts ended against operations ended with To's
	// change of operations in flight allowed for (ended, see x.sides).
	check := func(from Hop, to string, at *model.Signals, started, ended model.Value) {
		g, ok := x.sides(to, started, ended, at)
		if !ok {
			return
		}
		g.From, g.To = from, to
		skew := model.Absent
		if at != nil {
			skew = sampleSkew(callers[to], at, edgeOf)
		}
		if g, bad := gapOf(g, tol, skew); bad {
			res.Gaps = append(res.Gaps, g)
		}
	}
	for i := 1; i < len(res.Hops); i++ {
		prev := res.Hops[i-1]
		if prev.Found && prev.AttemptsPerS.OK() && res.Hops[i].Found {
			at := byKey[model.Key{Target: c.Hops[i].Target, Dependency: c.Hops[i].Dependency}]
			check(c.Hops[i-1], c.Hops[i].Target, at, at.OriginalsPerS, arrivedAt(at))
		}
	}
	if n := len(c.Hops); n > 0 {
		last := c.Hops[n-1]
		if s := byKey[model.Key{Target: last.Target, Dependency: last.Dependency}]; s != nil && s.AttemptsPerS.OK() {
			// The dependency's own count is of requests received: when
			// they start.
			check(last, last.Dependency, nil, s.DependencyReceivedPerS, s.DependencyReceivedPerS)
		}
	}
	return res
}

// Bases of a gap's comparison (Gap.Basis).
const (
	GapStarted = "started"
	GapEnded   = "ended"
)

// sides picks what a gap compares for dependency to: its callers'
// attempts started (ended plus their active calls' change) against
// started, what To counted when each arrival started, when every caller
// exports active calls; else their attempts ended against ended, with the
// change of To's operations in flight (row at: originals less those
// ended, either way) as an allowance, since an attempt its caller stopped
// waiting for ends at the caller while To still runs it. ok is false when
// a side is absent.
func (x *rowIndex) sides(to string, started, ended model.Value, at *model.Signals) (Gap, bool) {
	if !x.sentOK[to] {
		return Gap{}, false
	}
	if !x.startedBad[to] && started.OK() {
		return Gap{Basis: GapStarted, SentPerS: x.startedTo[to], ArrivedPerS: started.V(),
			ActiveChangePerS: model.Some(x.activeTo[to])}, true
	}
	if !ended.OK() {
		return Gap{}, false
	}
	g := Gap{Basis: GapEnded, SentPerS: x.sentTo[to], ArrivedPerS: ended.V()}
	if at != nil && at.CompletedPerS.OK() && at.OriginalsPerS.OK() && ended == at.CompletedPerS {
		g.InFlightPerS = model.Some(math.Abs(at.OriginalsPerS.V() - at.CompletedPerS.V()))
	}
	return g, true
}

// sampleSkew is the part of a gap that the moments the two sides were
// sampled at can explain, per second of the window. Each side's rate is
// its counter's increase between its own samples at the window's edges;
// when a caller's sample at an edge is d seconds away from the receiver's,
// the traffic of those d seconds is on one side only, at most d times the
// highest rate near that edge. Summed over both edges and every caller,
// over the window's width. Absent when a side's sample times are unknown.
func sampleSkew(callers []*model.Signals, at *model.Signals, edgeOf func(*model.Signals) edgeRates) model.Value {
	width := float64(at.EndMs-at.StartMs) / 1000
	if width <= 0 || at.SampledFromMs == 0 || at.SampledToMs == 0 || len(callers) == 0 {
		return model.Absent
	}
	atEdge := edgeOf(at)
	var sentPeak, apart float64
	for _, c := range callers {
		if c.SampledFromMs == 0 || c.SampledToMs == 0 {
			return model.Absent
		}
		sentPeak += edgeOf(c).sent
		d := float64(absMs(c.SampledFromMs-at.SampledFromMs)+absMs(c.SampledToMs-at.SampledToMs)) / 1000
		apart = max(apart, d)
	}
	return model.Some(max(sentPeak, atEdge.arrived) * apart / width)
}

func absMs(d int64) int64 {
	if d < 0 {
		return -d
	}
	return d
}

// arrivedAt is what a hop received, as its callers' attempts are counted:
// the operations it ended (every result), which end just before the
// callers' attempts do, so a step change moves both sides alike; its
// originals started (counted a whole latency earlier) only when it
// exports no results.
func arrivedAt(s *model.Signals) model.Value {
	if s == nil {
		return model.Absent
	}
	if s.CompletedPerS.OK() {
		return s.CompletedPerS
	}
	return s.OriginalsPerS
}

// gapOf compares what arrived (g.ArrivedPerS) with what the callers sent
// (g.SentPerS); bad when the difference exceeds the tolerance.
func gapOf(g Gap, tol GapTolerance, skew model.Value) (Gap, bool) {
	sent, arrived := g.SentPerS, g.ArrivedPerS
	g.GapPerS, g.SkewPerS = arrived-sent, skew
	g.TolerancePerS = g.allowed(tol)
	if sent > 0 {
		g.Relative = model.Some(g.GapPerS / sent)
		g.Factor = model.Some(arrived / sent)
	}
	switch {
	case g.GapPerS > g.TolerancePerS:
		g.Code = CodeHiddenRetries
	case -g.GapPerS > g.TolerancePerS:
		g.Code = CodeHopLoss
	default:
		return g, false
	}
	return g, true
}

// allowed is the difference tol allows g: its share of what was sent, the
// sample skew and the change of the callee's operations in flight.
func (g Gap) allowed(tol GapTolerance) float64 {
	a := tol.allowed(g.SentPerS, g.SkewPerS)
	if v, ok := g.InFlightPerS.Get(); ok && finite(v) {
		a += v
	}
	return a
}

// mul multiplies two values; absent when either is.
func mul(a, b model.Value) model.Value {
	if !a.OK() || !b.OK() {
		return model.Absent
	}
	return model.Some(a.V() * b.V())
}

// EvaluateChains evaluates chains over rows with the given tolerance; with
// no chains it evaluates InferChains(rows).
func EvaluateChains(rows []model.Signals, chains []Chain, tol GapTolerance) []ChainResult {
	if len(chains) == 0 {
		chains = InferChains(rows)
	}
	out := make([]ChainResult, 0, len(chains))
	idx := indexRows(rows)
	for _, c := range chains {
		out = append(out, idx.evaluate(c, tol, nil))
	}
	return out
}

// finite reports whether v is a usable number (not NaN or infinite).
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
