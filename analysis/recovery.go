package analysis

import "github.com/retrytop/retrytop/model"

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

// recoveryBins is a row timeline's effective success as a goodput series:
// absent where the bin had too little traffic (busy).
func recoveryBins(tl []model.Signals, th Thresholds) []RecoveryBin {
	out := make([]RecoveryBin, len(tl))
	for i := range tl {
		out[i] = RecoveryBin{StartMs: tl[i].StartMs, EndMs: tl[i].EndMs}
		if busy(&tl[i], th) {
			out[i].Ratio = tl[i].EffectiveSuccess
		}
	}
	return out
}
