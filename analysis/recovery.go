package analysis

import (
	"slices"

	"github.com/retrytop/retrytop/model"
)

// RecoveryBin is one bin of a goodput series: its edges and its success
// ratio (successful originals over those that ended), absent where it is
// unknown (too little traffic to tell).
type RecoveryBin struct {
	StartMs, EndMs int64
	Ratio          model.Value
}

// Recovery is how long after endMs (the trigger's end) goodput came back
// for good: from that moment on, every known bin's ratio reaches
// threshold. The bins considered are those ending after endMs, the one
// holding it included.
//
// The moment is read inside a bin: the last bin still below threshold,
// when the bin after it is known and above, is taken to hold the ratio of
// the bin before it (below threshold; 0 when that bin is unknown or
// above) until a step to the ratio of the bin after, placed so that the
// bin's mean is what was measured. Unknown bins between the last one below
// and the next known one leave the moment at that known bin's start; with
// no bin below at all, the moment is the first known bin's start. A moment
// before endMs is 0: back at once.
//
// seconds is absent when no known bin ends after endMs, or when the last
// known one is still below threshold: then stuck is true (the series ends
// unrecovered).
func Recovery(bins []RecoveryBin, endMs int64, threshold float64) (seconds model.Value, stuck bool) {
	first := -1
	for i := range bins {
		if bins[i].EndMs > endMs {
			first = i
			break
		}
	}
	if first < 0 {
		return model.Absent, false
	}
	last, below := -1, -1 // the last known bin, the last known one below threshold
	for i := first; i < len(bins); i++ {
		if r, ok := bins[i].Ratio.Get(); ok {
			last = i
			if r < threshold {
				below = i
			}
		}
	}
	switch {
	case last < 0:
		return model.Absent, false
	case below == last:
		return model.Absent, true
	}
	var at float64 // ms after endMs
	if below < 0 {
		for i := first; i <= last; i++ {
			if bins[i].Ratio.OK() {
				at = float64(bins[i].StartMs - endMs)
				break
			}
		}
	} else {
		at = stepInside(bins, below, threshold, endMs)
	}
	return model.Some(max(at, 0) / 1000), false
}

// stepInside is the moment goodput came back inside bin l, the last one
// below threshold (see Recovery), in ms after endMs.
func stepInside(bins []RecoveryBin, l int, threshold float64, endMs int64) float64 {
	b := &bins[l]
	n := l + 1
	for n < len(bins) && !bins[n].Ratio.OK() {
		n++
	}
	if n > l+1 {
		return float64(bins[n].StartMs - endMs) // unknown in between: not known before
	}
	before := 0.0
	if l > 0 {
		if r, ok := bins[l-1].Ratio.Get(); ok && r < threshold {
			before = r
		}
	}
	after := bins[n].Ratio.V()
	// mean = f*before + (1-f)*after: f of the bin was still failing.
	f := 1.0
	if after > before {
		f = min(max((after-b.Ratio.V())/(after-before), 0), 1)
	}
	return float64(b.StartMs-endMs) + f*float64(b.EndMs-b.StartMs)
}

// RecoveryFraction of the success ratio before the trigger counts as
// recovered: the sim's ground truth and whatif use the same 95 %.
const RecoveryFraction = 0.95

// rowRecovery is Recovery of a row's timeline from the end of the
// trigger's last bin (lastOn; firstOn its first): the ratio is goodput
// over offered load per bin (successes over originals, where the row has
// traffic: busy), the threshold recoveryThreshold.
func rowRecovery(tl []model.Signals, firstOn, lastOn int, th Thresholds) model.Value {
	bins := make([]RecoveryBin, len(tl))
	for i := range tl {
		s := &tl[i]
		bins[i] = RecoveryBin{StartMs: s.StartMs, EndMs: s.EndMs}
		if busy(s, th) {
			bins[i].Ratio = ratio(s.SuccessesPerS, s.OriginalsPerS)
		}
	}
	rec, _ := Recovery(bins, tl[lastOn].EndMs, recoveryThreshold(tl, firstOn, th))
	return rec
}

// recoveryThreshold is RecoveryFraction of the row's goodput over its
// offered load in the bins before the trigger's first (firstOn), where
// it had traffic; th.GoodputLow when none had.
func recoveryThreshold(tl []model.Signals, firstOn int, th Thresholds) float64 {
	var succ, orig float64
	for i := 0; i < firstOn; i++ {
		s := &tl[i]
		if !busy(s, th) || !ratio(s.SuccessesPerS, s.OriginalsPerS).OK() {
			continue
		}
		w := rateSeconds(s)
		succ += s.SuccessesPerS.V() * w
		orig += s.OriginalsPerS.V() * w
	}
	if orig > 0 {
		return RecoveryFraction * succ / orig
	}
	return th.GoodputLow
}

// recoveryMinOriginals is the fewest originals a span of scrapes needs
// for its goodput to be judged: one failure among them is 5 %, the
// margin RecoveryFraction leaves under a ratio of 1.
const recoveryMinOriginals = 20

// scrapeRecovery is the recovery of a row whose timeline is tl, dated
// from the scrapes rather than the bins: the trigger's start and end
// from its dependency's service steps (triggerRun), goodput's return
// from the row's goodput steps (goodputBins) by Recovery, with
// RecoveryFraction of the row's goodput over its offered load before the
// trigger's start as the threshold (th.GoodputLow when it had none). ok
// is false when the steps cannot date the trigger (the bins' value
// stands).
func scrapeRecovery(tl []model.Signals, g goodputSteps, s serviceSteps, th Thresholds) (rec model.Value, ok bool) {
	trig, lastOn := triggers(tl, th)
	if lastOn < 0 {
		return model.Absent, false
	}
	base := serviceBase(tl)
	first, ok1 := s.triggerRun(tl, slices.Index(trig, triggerOn), -1, base, th)
	last, ok2 := s.triggerRun(tl, lastOn, +1, base, th)
	if !ok1 || !ok2 {
		return model.Absent, false
	}
	start, end := s.times[first-1], s.times[last]
	var succ, orig float64
	for i := 1; i < len(g.times) && g.times[i] <= start; i++ {
		if !isNaN32(g.succ[i]) && !isNaN32(g.orig[i]) {
			succ += float64(g.succ[i])
			orig += float64(g.orig[i])
		}
	}
	threshold := th.GoodputLow
	if orig > 0 {
		threshold = RecoveryFraction * succ / orig
	}
	rec, _ = Recovery(goodputBins(g, end), end, threshold)
	return rec, rec.OK()
}

// triggerRun is the service step where the trigger was on (triggerOf, by
// the requests that finished in the step) furthest in direction dir (+1
// later, -1 earlier) from bin k of the timeline (where the bins say it
// was on): the outermost step on that overlaps bin k, then on from there
// through steps on or unknown until one is back to normal, no further
// than the neighbouring bin that way. False when no step overlapping bin
// k was on (the steps say nothing the bin did not).
func (s *serviceSteps) triggerRun(tl []model.Signals, k, dir int, base model.Value, th Thresholds) (int, bool) {
	from, to := tl[k].StartMs, tl[k].EndMs
	lo, hi := tl[max(k-1, 0)].StartMs, tl[min(k+1, len(tl)-1)].EndMs
	j := -1
	for i := 1; i < len(s.times); i++ {
		if s.times[i] > from && s.times[i-1] < to && s.state(i, base, th) == triggerOn && (j < 0 || dir > 0) {
			j = i
		}
	}
	if j < 0 {
		return 0, false
	}
	for i := j + dir; i >= 1 && i < len(s.times) && s.times[i] > lo && s.times[i-1] < hi; i += dir {
		switch s.state(i, base, th) {
		case triggerOn:
			j = i
		case triggerOff:
			return j, true
		}
	}
	return j, true
}

// state is step i's trigger (triggerOf).
func (s *serviceSteps) state(i int, base model.Value, th Thresholds) triggerState {
	secs := float64(s.times[i]-s.times[i-1]) / 1000
	received := model.Absent
	if r := s.received[i]; !isNaN32(r) && secs > 0 {
		received = model.Some(float64(r) / secs)
	}
	p50 := model.Absent
	if v := s.p50[i]; !isNaN32(v) {
		p50 = model.Some(float64(v))
	}
	return triggerOf(p50, received, base, th)
}

func isNaN32(v float32) bool { return v != v }

// goodputBins are the row's goodput steps as RecoveryBins: from the step
// that holds endMs on, consecutive steps joined until they hold
// recoveryMinOriginals originals (a last span with fewer is unknown),
// and one such span before it.
func goodputBins(g goodputSteps, endMs int64) []RecoveryBin {
	k := 1
	for k < len(g.times) && g.times[k] <= endMs {
		k++
	}
	if k >= len(g.times) {
		return nil
	}
	var out []RecoveryBin
	var succ, orig float64
	add := func(x int) {
		if !isNaN32(g.succ[x]) && !isNaN32(g.orig[x]) {
			succ += float64(g.succ[x])
			orig += float64(g.orig[x])
		}
	}
	judged := func(from, to int) RecoveryBin { // steps from..to
		b := RecoveryBin{StartMs: g.times[from-1], EndMs: g.times[to]}
		if orig >= recoveryMinOriginals {
			b.Ratio = model.Some(succ / orig)
		}
		succ, orig = 0, 0
		return b
	}
	for i := k - 1; i >= 1; i-- {
		if add(i); orig >= recoveryMinOriginals || i == 1 {
			out = append(out, judged(i, k-1))
			break
		}
	}
	from := k
	for i := k; i < len(g.times); i++ {
		if add(i); orig >= recoveryMinOriginals || i == len(g.times)-1 {
			out = append(out, judged(from, i))
			from = i + 1
		}
	}
	return out
}

// serviceBase is the dependency's lowest service time over the timeline:
// the trigger's baseline (triggers).
func serviceBase(tl []model.Signals) model.Value {
	base := model.Absent
	for i := range tl {
		base = minValue(base, tl[i].DependencyServiceTimeP50)
	}
	return base
}

// fineRecovery dates a row's recovery from the scrapes (scrapeRecovery)
// where they are known: those the store holds, or those a WholeBuilder
// gathered while the recording streamed. tl is the row's timeline and
// phases the phases it tells; the value replaces the one its bins gave,
// on the same phase.
func (b *reportBuild) fineRecovery(phases []Phase, r *row, tl []model.Signals) {
	at := -1
	for i := range phases {
		if phases[i].RecoveryS.OK() {
			at = i
			break
		}
	}
	if at < 0 {
		return
	}
	g, s, ok := b.recoverySteps(r, tl)
	if !ok {
		return
	}
	if rec, ok := scrapeRecovery(tl, g, s, b.th); ok {
		phases[at].RecoveryS = rec
	}
}

// recoverySteps are row r's goodput steps and its dependency's service
// steps: gathered by the WholeBuilder, or read from the store over the
// timeline tl.
func (b *reportBuild) recoverySteps(r *row, tl []model.Signals) (goodputSteps, serviceSteps, bool) {
	if b.wb != nil {
		sv := b.reducedServers[r.dep]
		wt := b.wb.target(r.target)
		if sv == nil || sv.reduced == nil || wt == nil {
			return goodputSteps{}, serviceSteps{}, false
		}
		g, gok := wt.steps.rowSteps(r.dep)
		s, sok := sv.reduced.steps.serverSteps()
		return g, s, gok && sok
	}
	if r.server == nil || len(tl) == 0 {
		return goodputSteps{}, serviceSteps{}, false
	}
	from, to := tl[0].StartMs, tl[len(tl)-1].EndMs
	return rowGoodputSteps(r, from, to), serverSteps(r.server, from, to), true
}
