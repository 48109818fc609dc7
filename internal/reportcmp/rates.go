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
// interval at each edge, over the window's width. So a reader's skew lies
// in [0, 2·interval·peak/width), peak the highest of the callers' summed
// attempts/s and the arrivals/s in the window's bins and the bin before,
// on either report. A gap "holds" at a combination when it fires with no
// skew and "does not hold" when it does not fire with that bound added
// to the tolerance (analysis.GapTolerance.AbsolutePerS, so the rule's own
// arithmetic adds it); the other reader "meets the conditions too" only
// when its own window fires with the bound added. The other rules have
// no skew.
func rateRuleAtCrossing(f analysis.Finding, has, other, fine analysis.Report, th analysis.Thresholds, interval time.Duration) string {
	step := ms(interval.Seconds())
	gap := f.Code == analysis.CodeHiddenRetries || f.Code == analysis.CodeHopLoss
	wins := windowsOf(f, has, other, th, interval)
	if len(wins) == 0 || step <= 0 {
		return ""
	}
	involved := involvedIn(f, has)
	idx := fineIndex(fine, step)
	var why string
	n, crossings := 0, 0
	for _, w := range wins {
		skew := 0.0
		if gap {
			skew = skewBound(f, w, has, other, interval)
		}
		if !fires(f, w.has, th, 0) {
			continue
		}
		n++
		if w.other != nil && fires(f, w.other, th, skew) {
			why += fmt.Sprintf("; %s..%s: the other's window meets the conditions too", clock(unix(w.start)), clock(unix(w.to)))
			continue
		}
		held, notHeld, known, total := shifted(f, w, involved, idx, has, step, th, skew)
		if held == 0 || !notHeld {
			return ""
		}
		crossings++
		why += fmt.Sprintf("; %s..%s: fires at %d of the %d known shifts of %v (of %d), not at another with the skew bound %.3g/s added",
			clock(unix(w.start)), clock(unix(w.to)), held, known, slices.Sorted(maps.Keys(involved)), total, skew)
	}
	if n == 0 || crossings == 0 {
		return ""
	}
	return fmt.Sprintf("held at a threshold crossing in %d of its %d window(s)%s", crossings, n, why)
}

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

// shifted evaluates f's rule on fine's counts over w at every combination
// of the involved targets' shifts: held counts those where it fires with
// no skew, notHeld says whether it does not fire at one with the skew
// bound. Combinations where a row lacks a signal has's row over w has (a
// hole in fine) are unknown and skipped.
func shifted(f analysis.Finding, w window, involved map[string]bool, idx map[model.Key]map[int64]analysis.BinReport, has analysis.Report,
	step int64, th analysis.Thresholds, skew float64) (held int, notHeld bool, known, total int) {
	total = each(w, involved, idx, has, step, func(rows []model.Signals) {
		known++
		if fires(f, rows, th, 0) {
			held++
		}
		notHeld = notHeld || !fires(f, rows, th, skew)
	})
	return held, notHeld, known, total
}

// each calls fn with fine's rows over w for every known combination of
// the involved targets' shifts and returns how many combinations there
// were.
func each(w window, involved map[string]bool, idx map[model.Key]map[int64]analysis.BinReport, has analysis.Report, step int64,
	fn func([]model.Signals)) (total int) {
	from, to := ms(w.from), ms(w.to)
	width := to - from
	cells := (width + step/2) / step
	if cells <= 0 || abs64(width-cells*step) > 1 {
		return 0 // not a whole number of fine bins: no shift can stand for it
	}
	// The grid points bracketing a sample in (from-step, from].
	lo := floorDiv(from-step, step) * step
	hi := ceilDiv(from, step)*step + step
	var shifts []int64
	for g := lo; g <= hi; g += step {
		shifts = append(shifts, g)
	}
	names := slices.Sorted(maps.Keys(involved))
	if len(names) == 0 {
		return 0
	}
	hasRows := map[model.Key]model.Signals{}
	for _, r := range w.has {
		hasRows[r.Key()] = r
	}
	keys := slices.SortedFunc(maps.Keys(idx), func(a, b model.Key) int {
		return cmp.Or(cmp.Compare(a.Target, b.Target), cmp.Compare(a.Dependency, b.Dependency))
	})
	// sums[k][i]: row k's fine bins over the window shifted to shifts[i].
	sums := map[model.Key][]summed{}
	for _, k := range keys {
		for _, g := range shifts {
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
			sums[k] = append(sums[k], s)
		}
	}
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
			if assign[i]++; assign[i] < len(shifts) {
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
// highest, on either report, of the summed peaks of the callers'
// attempts/s and the arrivals/s at f's receiving hop over the window's
// bins and the bin before.
func skewBound(f analysis.Finding, w window, has, other analysis.Report, interval time.Duration) float64 {
	width := w.to - w.start
	if width <= 0 {
		return 0
	}
	peak := 0.0
	for _, rep := range []analysis.Report{has, other} {
		from := w.start - rep.BinSeconds
		var sent, arrived float64
		for _, d := range rep.Dependencies {
			var p, a float64
			for _, b := range d.Timeline {
				if b.EndUnix <= from+1e-3 || b.StartUnix >= w.to-1e-3 {
					continue
				}
				if d.Dependency == f.Dependency {
					if v, ok := b.AttemptsPerS.Get(); ok && finite(v) {
						p = max(p, v)
					}
					if v, ok := b.DependencyReceivedPerS.Get(); ok && finite(v) {
						a = max(a, v)
					}
				}
				if d.Target == f.Dependency {
					v := b.CompletedPerS
					if !v.OK {
						v = b.OriginalsPerS
					}
					if v.OK && finite(v.V) {
						a = max(a, v.V)
					}
				}
			}
			sent += p
			arrived = max(arrived, a)
		}
		peak = max(peak, sent, arrived)
	}
	return 2 * interval.Seconds() * peak / width
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
