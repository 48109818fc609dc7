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
			if bins[i].Ratio.OK {
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
	for n < len(bins) && !bins[n].Ratio.OK {
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
	after := bins[n].Ratio.V
	// mean = f*before + (1-f)*after: f of the bin was still failing.
	f := 1.0
	if after > before {
		f = min(max((after-b.Ratio.V)/(after-before), 0), 1)
	}
	return float64(b.StartMs-endMs) + f*float64(b.EndMs-b.StartMs)
}

// RecoveryFraction of the success ratio before the trigger counts as
// recovered: the sim's ground truth and whatif use the same 95 %.
const RecoveryFraction = 0.95

// rowRecovery is Recovery of a row's timeline from the end of the
// trigger's last bin (lastOn; firstOn its first): the ratio is goodput
// over offered load per bin (successes over originals, where the row has
// traffic: busy), the threshold RecoveryFraction of that ratio over the
// bins before the trigger (th.GoodputLow when none has traffic).
func rowRecovery(tl []model.Signals, firstOn, lastOn int, th Thresholds) model.Value {
	bins := make([]RecoveryBin, len(tl))
	var succ, orig float64
	for i := range tl {
		s := &tl[i]
		bins[i] = RecoveryBin{StartMs: s.StartMs, EndMs: s.EndMs}
		if !busy(s, th) {
			continue
		}
		bins[i].Ratio = ratio(s.SuccessesPerS, s.OriginalsPerS)
		if i < firstOn && bins[i].Ratio.OK {
			w := rateSeconds(s)
			succ += s.SuccessesPerS.V * w
			orig += s.OriginalsPerS.V * w
		}
	}
	threshold := th.GoodputLow
	if orig > 0 {
		threshold = RecoveryFraction * succ / orig
	}
	rec, _ := Recovery(bins, tl[lastOn].EndMs, threshold)
	return rec
}

// fineRecovery dates a row's recovery from its scrapes rather than its
// bins, where the store holds them from the report's start (a streamed
// recording longer than the store's window keeps its bin-dated
// recovery): the phases of the row at one bin per scrape interval find the
// trigger's end and goodput's return each to a scrape, so a trigger that
// ends inside a report bin no longer counts from that bin's edge. The
// value replaces the one the report's bins gave, on the same phase.
func (b *reportBuild) fineRecovery(dr *DependencyReport, r *row) {
	at := -1
	for i := range dr.Phases {
		if dr.Phases[i].RecoveryS.OK {
			at = i
			break
		}
	}
	if at < 0 || len(b.grid) == 0 || len(r.times) < 3 {
		return
	}
	step := medianStep(r.times)
	if binMs := b.grid[len(b.grid)/2].end - b.grid[len(b.grid)/2].start; step <= 0 || 2*step > binMs {
		return // the bins are about a scrape already
	}
	if r.times[0] > b.grid[0].start+step {
		return // the store no longer holds the report's start
	}
	fine := r.timeline(step, b.grid[0].start, b.grid[len(b.grid)-1].end)
	for _, p := range Phases(fine, b.th) {
		if p.RecoveryS.OK {
			dr.Phases[at].RecoveryS = p.RecoveryS
			return
		}
	}
}

// medianStep is the median interval between consecutive times.
func medianStep(times []int64) int64 {
	d := make([]int64, 0, len(times)-1)
	for i := 1; i < len(times); i++ {
		d = append(d, times[i]-times[i-1])
	}
	slices.Sort(d)
	return d[len(d)/2]
}
