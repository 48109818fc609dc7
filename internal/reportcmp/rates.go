package reportcmp

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// rateRuleAtCrossing is AtCrossing for the rules whose conditions read
// only counters' rates: HIDDEN_RETRIES, HOP_LOSS, WORK_AFTER_CANCEL,
// ADMISSION_SHEDDING and DEADLINE_NOT_PROPAGATED. Their conditions are
// not restated: analysis.Evaluate (and analysis.EvaluateChains for the
// gaps) runs on rows rebuilt from the reports' counts, and the finding
// holds over them when it fires there.
//
// The windows a finding was judged over. A history finding (evidence
// "bins") of a row rule holds in single bins; a gap finding of the
// history over the last th.GapWindow of bins (EvaluateHistory's
// gapSpan, the bins' counts summed over their sampled spans as
// analysis' aggregate does); a finding without "bins" is Evaluate's, over
// the report's window, whose rows count from each target's first scrape
// inside it: with scrapes every interval, that is the last at or before
// its start plus one interval, so the window is shifted like a bin from
// there.
//
// The shifts. Each reader's sample at a window's edge lies within one
// interval before the edge; fine's reader sampled at grid point g
// somewhere in (g-interval, g]. The grid points from the last at or
// before edge-interval to the first at or after edge+interval therefore
// bracket every sample the other reader can have taken there (three on
// the grid, four off it), and the window's counts on either reader lie
// between fine's over those shifts (the monotone assumption of
// AtCrossing). A gap compares two or more targets, each sampled at its
// own phase by each reader, so each target involved is shifted on its
// own (the callers of the receiving hop, and the receiving target,
// whose phase the dependency_* signals of a row follow): every
// combination is evaluated.
//
// The skew. A gap's tolerance includes the reader's own sample skew
// (analysis' sampleSkew, chain.go): the highest rate near the window's
// edges times how far apart the two targets' samples were, at most one
// interval at each edge, over the window's width. Where a report carries
// its samples' times (built in process: they are not in its JSON), that
// reader's skew is measured as analysis measured it (measuredSkew);
// where it does not, it lies in [0, 2·interval·peak/width), peak the
// highest of the callers' summed attempts/s and the arrivals/s in the
// bins within one bin of the window's edges, on either report
// (skewBound). A window "holds" at a combination of shifts when the rule
// fires there with has's skew (0 when unknown: the least it can be), and
// "does not hold" when it does not fire with other's skew (the bound when
// unknown: the most it can be), each added to the tolerance's absolute
// part (analysis.GapTolerance.AbsolutePerS, so the rule's own arithmetic
// adds it); the other reader "meets the conditions too" when its own
// window fires with its skew (the bound when unknown). The other rules
// have no skew.
//
// The other reader's counts. The monotone assumption says the other
// reader's counts lie between fine's over the shifts; it is checked, not
// assumed: every rate the rule reads (readBy) of the other reader's rows
// over the window must lie within the [min, max] of fine's over the
// shifts of its target, give or take one event at each edge over the
// window (counters count whole events: 2/width per second). Otherwise
// the other reader saw something no phase of fine's produces (lost
// traffic on one path only, or a wrong number) and nothing is explained.
//
// The combinations. Every target is shifted on its own, so a window has
// shifts^targets combinations, each evaluated twice; past
// maxCombinations (a receiver with more than four callers off the grid)
// the finding is left unexplained rather than evaluated.
func rateRuleAtCrossing(f analysis.Finding, has, other, fine analysis.Report, th analysis.Thresholds, interval time.Duration) string {
	step := ms(interval.Seconds())
	gap := f.Code == analysis.CodeHiddenRetries || f.Code == analysis.CodeHopLoss
	wins := windowsOf(f, has, other, th, interval)
	if len(wins) == 0 || step <= 0 {
		return ""
	}
	_, hist := f.Evidence.Get("bins")
	involved := involvedIn(f, has)
	idx := fineIndex(fine, step)
	var why string
	n, crossings := 0, 0
	for _, w := range wins {
		// Each reader's skew: its own, or the least (has) and the most
		// (other) it can be.
		hasSkew, otherSkew, skewText := 0.0, 0.0, "no skew"
		if gap {
			bound := skewBound(f, w, has, other, interval)
			hasSkew, otherSkew = 0, bound
			hasText, otherText := "unknown: 0", fmt.Sprintf("unknown: the bound %.3g/s", bound)
			if v, ok := measuredSkew(f, has, w, hist); ok {
				hasSkew, hasText = v, fmt.Sprintf("%.3g/s", v)
			}
			if v, ok := measuredSkew(f, other, w, hist); ok {
				otherSkew, otherText = v, fmt.Sprintf("%.3g/s", v)
			}
			skewText = fmt.Sprintf("skew: has's %s, other's %s", hasText, otherText)
		}
		if !fires(f, w.has, th, hasSkew) {
			continue
		}
		n++
		if w.other != nil && fires(f, w.other, th, otherSkew) {
			why += fmt.Sprintf("; %s..%s: the other's window meets the conditions too", clock(unix(w.start)), clock(unix(w.to)))
			continue
		}
		sh, ok := shiftsOf(w, idx, step)
		if !ok || w.other == nil {
			return ""
		}
		if out := outOfRange(f, w, sh); out != "" {
			return ""
		}
		held, notHeld, known, total := shifted(f, w, involved, sh, th, hasSkew, otherSkew)
		if total < 0 || held == 0 || !notHeld {
			return ""
		}
		crossings++
		why += fmt.Sprintf("; %s..%s: fires at %d of the %d known shifts of %v (of %d), not at another (%s); the other's rates lie within the shifts'",
			clock(unix(w.start)), clock(unix(w.to)), held, known, slices.Sorted(maps.Keys(involved)), total, skewText)
	}
	if n == 0 || crossings == 0 {
		return ""
	}
	return fmt.Sprintf("held at a threshold crossing in %d of its %d window(s)%s", crossings, n, why)
}

// maxCombinations caps the shift combinations evaluated for one window
// (each runs analysis.Evaluate and EvaluateChains twice): 4^5, a
// receiver and four callers sampled off the grid. A variable so that a
// test can lower it.
var maxCombinations = 1024

// window is one span a rule was judged over: from start to to (Unix
// seconds); each reader's span of it runs from its last scrape at or
// before from to its last at or before to. has and other are the two
// reports' rows over it (other nil when that report has no such window).
type window struct {
	start, from, to float64
	has, other      []model.Signals
}

// windowsOf lists the windows f held over on has's side (see
// rateRuleAtCrossing), nil when they cannot be told.
func windowsOf(f analysis.Finding, has, other analysis.Report, th analysis.Thresholds, interval time.Duration) []window {
	start, end := sec(f.Start), sec(f.End)
	if _, hist := f.Evidence.Get("bins"); !hist {
		// Evaluate's window: the report's rows.
		return []window{{start: start, from: start + interval.Seconds(), to: end, has: rowsOf(has), other: rowsOf(other)}}
	}
	tl := timeline(has, f)
	gap := f.Code == analysis.CodeHiddenRetries || f.Code == analysis.CodeHopLoss
	span := 1
	if gap {
		// EvaluateHistory's gapSpan: th.GapWindow over the bin width,
		// rounded up.
		w := ms(has.BinSeconds)
		if w <= 0 {
			return nil
		}
		span = max(1, int((th.GapWindow.Milliseconds()+w-1)/w))
	}
	var out []window
	for i := span - 1; i < len(tl); i++ {
		from, to := tl[i+1-span].StartUnix, tl[i].EndUnix
		if ms(from) < ms(start) || ms(to) > ms(end) {
			continue
		}
		w := window{start: from, from: from, to: to, has: binRows(has, from, to)}
		if o := binRows(other, from, to); o != nil {
			w.other = o
		}
		out = append(out, w)
	}
	return out
}

// involvedIn are the targets whose phase f's rule reads: for a gap, the
// callers of the receiving hop and that hop; for WORK_AFTER_CANCEL and
// DEADLINE_NOT_PROPAGATED the dependency (their signals are its own,
// joined onto the row); for ADMISSION_SHEDDING the row's target.
func involvedIn(f analysis.Finding, has analysis.Report) map[string]bool {
	out := map[string]bool{}
	switch f.Code {
	case analysis.CodeHiddenRetries, analysis.CodeHopLoss:
		out[f.Dependency] = true
		for _, d := range has.Dependencies {
			if d.Dependency == f.Dependency {
				out[d.Target] = true
			}
		}
	case analysis.CodeAdmissionShedding:
		out[f.Target] = true
	default:
		out[f.Dependency] = true
	}
	return out
}

// shifts are fine's rows over a window shifted to each grid point that
// brackets a reader's sample at its start (rateRuleAtCrossing): sums[k][i]
// is row k's over the window shifted to the i-th of n points.
type shifts struct {
	n    int
	keys []model.Key
	sums map[model.Key][]summed
}

// shiftsOf sums fine's bins over w at every shift; not ok when w is not a
// whole number of fine's bins (no shift can stand for it).
func shiftsOf(w window, idx map[model.Key]map[int64]analysis.BinReport, step int64) (shifts, bool) {
	from, to := ms(w.from), ms(w.to)
	width := to - from
	cells := (width + step/2) / step
	if cells <= 0 || abs64(width-cells*step) > 1 {
		return shifts{}, false
	}
	// The grid points bracketing a sample in (from-step, from].
	lo := floorDiv(from-step, step) * step
	hi := ceilDiv(from, step)*step + step
	sh := shifts{sums: map[model.Key][]summed{}}
	sh.keys = slices.SortedFunc(maps.Keys(idx), func(a, b model.Key) int {
		return cmp.Or(cmp.Compare(a.Target, b.Target), cmp.Compare(a.Dependency, b.Dependency))
	})
	for g := lo; g <= hi; g += step {
		sh.n++
		for _, k := range sh.keys {
			var bins []analysis.BinReport
			ok := true
			for t := g; t < g+cells*step; t += step {
				b, found := idx[k][t]
				if !found {
					ok = false
					break
				}
				bins = append(bins, b)
			}
			s := summed{}
			if ok {
				s = summed{row: sumBins(k, bins), ok: true}
			}
			sh.sums[k] = append(sh.sums[k], s)
		}
	}
	return sh, true
}

// readBy are the rates f's rule reads, by row: for a gap, the callers'
// attempts and their view of the receiver's arrivals, and the receiver's
// own (completed, else originals: analysis' arrivedAt); for the others,
// the finding's row's.
func readBy(f analysis.Finding, k model.Key) []func(*model.Signals) *model.Value {
	attempts := func(s *model.Signals) *model.Value { return &s.AttemptsPerS }
	originals := func(s *model.Signals) *model.Value { return &s.OriginalsPerS }
	received := func(s *model.Signals) *model.Value { return &s.DependencyReceivedPerS }
	switch f.Code {
	case analysis.CodeHiddenRetries, analysis.CodeHopLoss:
		var out []func(*model.Signals) *model.Value
		if k.Dependency == f.Dependency {
			out = append(out, attempts, received)
		}
		if k.Target == f.Dependency {
			out = append(out, func(s *model.Signals) *model.Value { return &s.CompletedPerS }, originals)
		}
		return out
	}
	if k.Target != f.Target || k.Dependency != f.Dependency {
		return nil
	}
	switch f.Code {
	case analysis.CodeWorkAfterCancel:
		return []func(*model.Signals) *model.Value{received, func(s *model.Signals) *model.Value { return &s.DependencyWorkAfterCancelPerS }}
	case analysis.CodeDeadlineDropped:
		return []func(*model.Signals) *model.Value{
			func(s *model.Signals) *model.Value { return &s.DependencyDeadlineMissingPerS },
			func(s *model.Signals) *model.Value { return &s.DependencyDeadlinePropagatedPerS }}
	case analysis.CodeAdmissionShedding:
		return []func(*model.Signals) *model.Value{originals, func(s *model.Signals) *model.Value { return &s.AdmissionRejectedPerS }}
	}
	return nil
}

// outOfRange names the first rate the rule reads that has's row over w
// has and the other reader's either lacks or reads outside fine's
// [min, max] over the shifts, give or take one event at each edge
// (2/width per second: counters count whole events); "" when there is
// none. A rate fine lacks at every shift is out of range too.
func outOfRange(f analysis.Finding, w window, sh shifts) string {
	width := w.to - w.from
	if width <= 0 {
		return "an empty window"
	}
	slack := 2 / width
	others := map[model.Key]*model.Signals{}
	for i := range w.other {
		others[w.other[i].Key()] = &w.other[i]
	}
	for i := range w.has {
		h := &w.has[i]
		k := h.Key()
		for _, get := range readBy(f, k) {
			if !get(h).OK {
				continue
			}
			o, ok := others[k]
			if !ok || !get(o).OK {
				return fmt.Sprintf("%s -> %s: the other reader has no such rate", k.Target, k.Dependency)
			}
			lo, hi, seen := math.Inf(1), math.Inf(-1), false
			for _, s := range sh.sums[k] {
				if v, ok := get(&s.row).Get(); s.ok && ok {
					lo, hi, seen = min(lo, v), max(hi, v), true
				}
			}
			if v := get(o).V; !seen || v < lo-slack || v > hi+slack {
				return fmt.Sprintf("%s -> %s: the other reader's %.4g/s outside the shifts' [%.4g, %.4g]", k.Target, k.Dependency, v, lo, hi)
			}
		}
	}
	return ""
}

// shifted evaluates f's rule on fine's counts over w at every combination
// of the involved targets' shifts: held counts those where it fires with
// has's skew, notHeld says whether it does not fire at one with other's.
// Combinations where a row lacks a signal has's row over w has (a hole in
// fine) are unknown and skipped. total is -1 past maxCombinations.
func shifted(f analysis.Finding, w window, involved map[string]bool, sh shifts, th analysis.Thresholds,
	hasSkew, otherSkew float64) (held int, notHeld bool, known, total int) {
	total = each(w, involved, sh, func(rows []model.Signals) {
		known++
		if fires(f, rows, th, hasSkew) {
			held++
		}
		notHeld = notHeld || !fires(f, rows, th, otherSkew)
	})
	return held, notHeld, known, total
}

// each calls fn with fine's rows over w for every known combination of
// the involved targets' shifts and returns how many combinations there
// were, or -1 (calling fn for none) when there are more than
// maxCombinations.
func each(w window, involved map[string]bool, sh shifts, fn func([]model.Signals)) (total int) {
	names := slices.Sorted(maps.Keys(involved))
	if len(names) == 0 || sh.n == 0 {
		return 0
	}
	combos := 1
	for range names {
		if combos *= sh.n; combos > maxCombinations {
			return -1
		}
	}
	hasRows := map[model.Key]model.Signals{}
	for _, r := range w.has {
		hasRows[r.Key()] = r
	}
	keys, sums := sh.keys, sh.sums
	assign := make([]int, len(names))
	at := map[string]int{}
	for {
		total++
		for i, n := range names {
			at[n] = assign[i]
		}
		rows := make([]model.Signals, 0, len(keys))
		known := true
		for _, k := range keys {
			// A target not involved moves with the first that is; a row's
			// dependency_* signals move with its dependency when that is
			// involved, else with the row's target.
			base := at[names[0]]
			if i, ok := at[k.Target]; ok {
				base = i
			}
			dep := base
			if i, ok := at[k.Dependency]; ok {
				dep = i
			}
			b, d := sums[k][base], sums[k][dep]
			r := model.Signals{Target: k.Target, Dependency: k.Dependency}
			if b.ok {
				copyFields(&r, &b.row, rateFields)
			}
			if d.ok {
				copyFields(&r, &d.row, dependencyFields)
			}
			// A signal has's row over the window has and this one lacks is a
			// hole in fine: the combination says nothing.
			if h, ok := hasRows[k]; ok {
				if involved[k.Target] && !covers(&r, &h, rateFields) || involved[k.Dependency] && !covers(&r, &h, dependencyFields) {
					known = false
				}
			}
			rows = append(rows, r)
		}
		if known {
			fn(rows)
		}
		i := 0
		for ; i < len(assign); i++ {
			if assign[i]++; assign[i] < sh.n {
				break
			}
			assign[i] = 0
		}
		if i == len(assign) {
			return total
		}
	}
}

type summed struct {
	row model.Signals
	ok  bool
}

// fires reports whether analysis' own rules fire f's finding (code,
// target, dependency) over rows, with extra added to the gap tolerance's
// absolute part. The rows carry no sample times, so the rules add no skew
// of their own.
func fires(f analysis.Finding, rows []model.Signals, th analysis.Thresholds, extra float64) bool {
	th.Gap.AbsolutePerS += extra
	chains := analysis.EvaluateChains(rows, nil, th.Gap)
	for _, g := range analysis.Evaluate(model.Frame{Rows: rows}, chains, th) {
		if g.Code == f.Code && g.Target == f.Target && g.Dependency == f.Dependency && g.Chain == f.Chain {
			return true
		}
	}
	return false
}

// skewBound is 2·interval·peak/width (rateRuleAtCrossing): peak the
// highest, on either report, of the callers' summed attempts/s and the
// arrivals/s at f's receiving hop in the bins within one bin of the
// window's edges (the traffic a skew moves across an edge is within one
// interval of it, and a bin is at least an interval wide).
func skewBound(f analysis.Finding, w window, has, other analysis.Report, interval time.Duration) float64 {
	width := w.to - w.start
	if width <= 0 {
		return 0
	}
	peak := 0.0
	for _, rep := range []analysis.Report{has, other} {
		bin := rep.BinSeconds
		near := func(b analysis.BinReport) bool {
			at := func(edge float64) bool { return b.StartUnix < edge+bin-1e-3 && b.EndUnix > edge-bin+1e-3 }
			return at(w.start) || b.StartUnix < w.to-1e-3 && b.EndUnix > w.to-bin+1e-3
		}
		sent := 0.0
		for _, d := range rep.Dependencies {
			var bins []analysis.BinReport
			for _, b := range d.Timeline {
				if near(b) {
					bins = append(bins, b)
				}
			}
			e := peaks(f, d, bins)
			sent += e.sent
			peak = max(peak, e.arrived)
		}
		peak = max(peak, sent)
	}
	return 2 * interval.Seconds() * peak / width
}

// edge are a row's highest attempts/s and arrivals/s over some bins.
type edge struct{ sent, arrived float64 }

// peaks are d's highest attempts/s towards f's receiving hop and
// arrivals/s at it (analysis' peakRates) over bins.
func peaks(f analysis.Finding, d analysis.DependencyReport, bins []analysis.BinReport) edge {
	var e edge
	for _, b := range bins {
		if d.Dependency == f.Dependency {
			if v, ok := b.AttemptsPerS.Get(); ok && finite(v) {
				e.sent = max(e.sent, v)
			}
			if v, ok := b.DependencyReceivedPerS.Get(); ok && finite(v) {
				e.arrived = max(e.arrived, v)
			}
		}
		if d.Target == f.Dependency {
			if v, ok := arrived(&b.Signals).Get(); ok && finite(v) {
				e.arrived = max(e.arrived, v)
			}
		}
	}
	return e
}

// arrived is analysis' arrivedAt: completed operations, else originals.
func arrived(s *model.Signals) model.Value {
	if s.CompletedPerS.OK {
		return s.CompletedPerS
	}
	return s.OriginalsPerS
}

// measuredSkew is the sample skew analysis added to rep's reader over w
// (sampleSkew, chain.go), from the sample times rep carries; not ok when
// it carries none (a report read from JSON). The peaks are analysis' own:
// a window's rows' own rates for Evaluate's window, the bins of the gap
// window and the bin before for the history's (peakRates). With no row
// of the receiving target the arrivals are its callers' own view of it:
// no skew. The receiving target's sample times are its own whatever the
// row; its arrivals are the highest of its rows'.
func measuredSkew(f analysis.Finding, rep analysis.Report, w window, hist bool) (float64, bool) {
	type side struct {
		from, to int64
		e        edge
	}
	sideOf := func(d analysis.DependencyReport) (side, bool) {
		if !hist {
			s := d.Signals
			e := edge{}
			if d.Dependency == f.Dependency && s.AttemptsPerS.OK {
				e.sent = s.AttemptsPerS.V
			}
			if v, ok := arrived(&s).Get(); ok && d.Target == f.Dependency {
				e.arrived = v
			}
			return side{s.SampledFromMs, s.SampledToMs, e}, s.SampledFromMs != 0 && s.SampledToMs != 0
		}
		var in, near []analysis.BinReport
		for _, b := range d.Timeline {
			if ms(b.StartUnix) >= ms(w.from) && ms(b.EndUnix) <= ms(w.to) {
				in = append(in, b)
			}
			if ms(b.StartUnix) >= ms(w.from-rep.BinSeconds) && ms(b.EndUnix) <= ms(w.to) {
				near = append(near, b)
			}
		}
		if len(in) == 0 {
			return side{}, false
		}
		from, to := in[0].SampledFromMs, in[len(in)-1].SampledToMs
		return side{from, to, peaks(f, d, near)}, from != 0 && to != 0
	}
	var width float64
	if hist {
		width = w.to - w.from
	}
	var at *side
	var callers []side
	for _, d := range rep.Dependencies {
		if d.Dependency != f.Dependency && d.Target != f.Dependency {
			continue
		}
		s, ok := sideOf(d)
		if !ok {
			return 0, false
		}
		if d.Dependency == f.Dependency {
			callers = append(callers, s)
		}
		if d.Target == f.Dependency {
			if at == nil {
				at = &s
			}
			at.e.arrived = max(at.e.arrived, s.e.arrived)
			if !hist {
				width = float64(d.EndMs-d.StartMs) / 1000
			}
		}
	}
	if at == nil {
		return 0, len(callers) > 0
	}
	if width <= 0 || len(callers) == 0 {
		return 0, false
	}
	var sent, apart float64
	for _, c := range callers {
		sent += c.e.sent
		apart = max(apart, float64(abs64(c.from-at.from)+abs64(c.to-at.to))/1000)
	}
	return max(sent, at.e.arrived) * apart / width, true
}

// rateFields are the rates of a row's own target the rules above read;
// dependencyFields those of its dependency, joined onto the row
// (docs/findings.md, "Server-side families").
var (
	rateFields = []func(*model.Signals) *model.Value{
		func(s *model.Signals) *model.Value { return &s.OriginalsPerS },
		func(s *model.Signals) *model.Value { return &s.AttemptsPerS },
		func(s *model.Signals) *model.Value { return &s.RetriesPerS },
		func(s *model.Signals) *model.Value { return &s.CompletedPerS },
		func(s *model.Signals) *model.Value { return &s.ProviderErrorsPerS },
		func(s *model.Signals) *model.Value { return &s.TimeoutsPerS },
		func(s *model.Signals) *model.Value { return &s.AdmissionRejectedPerS },
	}
	dependencyFields = []func(*model.Signals) *model.Value{
		func(s *model.Signals) *model.Value { return &s.DependencyReceivedPerS },
		func(s *model.Signals) *model.Value { return &s.DependencyWorkAfterCancelPerS },
		func(s *model.Signals) *model.Value { return &s.DependencyDeadlineMissingPerS },
		func(s *model.Signals) *model.Value { return &s.DependencyDeadlinePropagatedPerS },
	}
)

func copyFields(dst, src *model.Signals, fields []func(*model.Signals) *model.Value) {
	for _, f := range fields {
		*f(dst) = *f(src)
	}
}

// covers reports whether r has every field of fields that h has.
func covers(r, h *model.Signals, fields []func(*model.Signals) *model.Value) bool {
	for _, f := range fields {
		if f(h).OK && !f(r).OK {
			return false
		}
	}
	return true
}

// sumBins is row k's rates over consecutive bins: each rate times the
// time it is a mean over (the bin's sampled seconds, else its width, as
// analysis' rateSeconds) summed, over the sum of those times, as
// analysis' aggregate does for the gap window (findings.go); a rate is
// absent unless every bin has it.
func sumBins(k model.Key, bins []analysis.BinReport) model.Signals {
	s := model.Signals{Target: k.Target, Dependency: k.Dependency}
	if len(bins) == 0 {
		return s
	}
	var secs float64
	for _, b := range bins {
		secs += rateSeconds(b)
	}
	for _, fields := range [][]func(*model.Signals) *model.Value{rateFields, dependencyFields} {
		for _, get := range fields {
			total, ok := 0.0, secs > 0
			for i := range bins {
				v, has := get(&bins[i].Signals).Get()
				if !has {
					ok = false
					break
				}
				total += v * rateSeconds(bins[i])
			}
			if ok {
				*get(&s) = model.Some(total / secs)
			}
		}
	}
	return s
}

func rateSeconds(b analysis.BinReport) float64 {
	if v, ok := b.SampledSeconds.Get(); ok && v > 0 {
		return v
	}
	return b.EndUnix - b.StartUnix
}

// rowsOf are rep's rows over its window, with only the rates the rules
// above read (no sample times: the rules add no skew of their own).
func rowsOf(rep analysis.Report) []model.Signals {
	out := make([]model.Signals, 0, len(rep.Dependencies))
	for _, d := range rep.Dependencies {
		r := model.Signals{Target: d.Target, Dependency: d.Dependency}
		copyFields(&r, &d.Signals, rateFields)
		copyFields(&r, &d.Signals, dependencyFields)
		out = append(out, r)
	}
	return out
}

// binRows are rep's rows over [from, to] summed from their bins inside
// it (a row whose bins do not cover it has no rates); nil when no row's
// do.
func binRows(rep analysis.Report, from, to float64) []model.Signals {
	out := make([]model.Signals, 0, len(rep.Dependencies))
	found := false
	for _, d := range rep.Dependencies {
		var bins []analysis.BinReport
		var covered int64
		for _, b := range d.Timeline {
			if ms(b.StartUnix) >= ms(from) && ms(b.EndUnix) <= ms(to) {
				bins = append(bins, b)
				covered += ms(b.EndUnix) - ms(b.StartUnix)
			}
		}
		k := model.Key{Target: d.Target, Dependency: d.Dependency}
		if covered != ms(to)-ms(from) {
			out = append(out, model.Signals{Target: k.Target, Dependency: k.Dependency})
			continue
		}
		found = true
		out = append(out, sumBins(k, bins))
	}
	if !found {
		return nil
	}
	return out
}

// fineIndex is fine's bins one step wide by row and start (ms).
func fineIndex(fine analysis.Report, step int64) map[model.Key]map[int64]analysis.BinReport {
	out := map[model.Key]map[int64]analysis.BinReport{}
	for _, d := range fine.Dependencies {
		k := model.Key{Target: d.Target, Dependency: d.Dependency}
		m := map[int64]analysis.BinReport{}
		for _, b := range d.Timeline {
			if abs64(ms(b.EndUnix)-ms(b.StartUnix)-step) <= 1 {
				m[ms(b.StartUnix)] = b
			}
		}
		out[k] = m
	}
	return out
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }
