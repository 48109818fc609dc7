package whatif

import (
	"math"
	"strconv"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// Summary is what the report prints for one run, or for the recording
// itself: every figure computed by the same definitions from per-bin
// series, so the model's and the recording's are comparable. A figure that
// cannot be known is nil (JSON null, "-" on screen).
type Summary struct {
	// SuccessRatio is successful originals over originals that ended.
	SuccessRatio *float64 `json:"success_ratio"`
	// GoodputPerS is successful originals per second over the run.
	GoodputPerS *float64 `json:"goodput_per_s"`
	// PeakAmplification is the highest per-bin ratio of the provider
	// caller's attempts (counted when they end) to user originals (counted
	// when they start), over bins with at least MinBinOriginals originals;
	// MeanAmplification the same ratio over the whole run.
	PeakAmplification *float64 `json:"peak_amplification"`
	MeanAmplification *float64 `json:"mean_amplification"`
	// PeakProviderLoad is the highest per-bin reading of the provider's
	// executing plus queued requests over its slots (1 = every slot busy,
	// nothing queued).
	PeakProviderLoad *float64 `json:"peak_provider_load"`
	// RecoveryS is the seconds from the trigger's end until every later
	// bin's success ratio reaches RecoveryFraction of the pre-trigger
	// ratio, read inside the bin where it came back (analysis.Recovery; 0:
	// back at once); nil without a trigger or when it never recovered.
	RecoveryS *float64 `json:"recovery_s"`
	// Metastable: the trigger ended and success never came back by the end
	// of the run.
	Metastable bool `json:"metastable"`
	// Timeline is per bin.
	Timeline []Point `json:"timeline"`
}

// Point is one bin of a timeline.
type Point struct {
	TS            float64  `json:"t_s"`
	OfferedPerS   float64  `json:"offered_per_s"`
	GoodputPerS   float64  `json:"goodput_per_s"`
	SuccessRatio  *float64 `json:"success_ratio"`
	Amplification *float64 `json:"amplification"`
	ProviderLoad  *float64 `json:"provider_load"`
}

// Thresholds of the summary.
const (
	// RecoveryFraction of the pre-trigger success ratio counts as recovered
	// (the sim's Recovery and analysis' phases use the same 95 %).
	RecoveryFraction = analysis.RecoveryFraction
	// MinBinOriginals keeps a bin with a handful of originals (the edges
	// of a recording) out of the peak amplification.
	MinBinOriginals = 5
)

func ptr(v float64) *float64 { return &v }

// Series is the per-bin input of Summarize; a value that is unknown in a
// bin is NaN.
type Series struct {
	Bin                       time.Duration
	Offered, Ended, Succeeded []float64
	Attempts                  []float64
	// Failed and TimedOut are the provider caller's attempts that did not
	// succeed, and those of them that timed out (recordings only).
	Failed, TimedOut []float64
	Held             []float64 // executing + queued at the bin's end
	Slots            float64
	Trigger          Span
	// TriggerEnd is when the trigger ended (0: at bin Trigger.End's start).
	TriggerEnd time.Duration
}

// FromResult turns a model run into Series.
func FromResult(m Model, r Result) Series {
	s := Series{Bin: m.Bin, Slots: float64(m.Provider.Slots), Trigger: m.Trigger, TriggerEnd: m.TriggerEnd}
	for _, b := range r.Bins {
		s.Offered = append(s.Offered, float64(b.Offered))
		s.Ended = append(s.Ended, float64(b.Ended))
		s.Succeeded = append(s.Succeeded, float64(b.Succeeded))
		s.Attempts = append(s.Attempts, float64(b.Attempts))
		s.Held = append(s.Held, float64(b.Held))
	}
	return s
}

func at(xs []float64, i int) float64 {
	if i < len(xs) {
		return xs[i]
	}
	return math.NaN()
}

// Summarize computes a Summary from per-bin series.
func Summarize(s Series) Summary {
	var out Summary
	w := s.Bin.Seconds()
	var off, offAmp, ended, succ, att float64
	peakAmp, peakLoad := math.NaN(), math.NaN()
	ratios := make([]float64, len(s.Offered))
	for i := range s.Offered {
		o, en, sc, a, h := at(s.Offered, i), at(s.Ended, i), at(s.Succeeded, i), at(s.Attempts, i), at(s.Held, i)
		p := Point{TS: float64(i) * w}
		if !math.IsNaN(o) {
			off += o
			p.OfferedPerS = o / w
		}
		if !math.IsNaN(sc) {
			succ += sc
			p.GoodputPerS = sc / w
		}
		ratios[i] = math.NaN()
		if !math.IsNaN(en) && en > 0 && !math.IsNaN(sc) {
			ended += en
			ratios[i] = min(sc/en, 1)
			p.SuccessRatio = ptr(ratios[i])
		}
		if !math.IsNaN(a) && !math.IsNaN(o) {
			// Both sides of the ratio from the same bins: a bin whose
			// attempts are unknown leaves its originals out too.
			att += a
			offAmp += o
			if o >= MinBinOriginals {
				r := a / o
				p.Amplification = ptr(r)
				if math.IsNaN(peakAmp) || r > peakAmp {
					peakAmp = r
				}
			}
		}
		if !math.IsNaN(h) && s.Slots > 0 {
			l := h / s.Slots
			p.ProviderLoad = ptr(l)
			if math.IsNaN(peakLoad) || l > peakLoad {
				peakLoad = l
			}
		}
		out.Timeline = append(out.Timeline, p)
	}
	if ended > 0 {
		out.SuccessRatio = ptr(succ / ended)
	}
	if n := len(s.Offered); n > 0 && w > 0 {
		out.GoodputPerS = ptr(succ / (float64(n) * w))
	}
	if offAmp > 0 {
		out.MeanAmplification = ptr(att / offAmp)
	}
	if !math.IsNaN(peakAmp) {
		out.PeakAmplification = ptr(peakAmp)
	}
	if !math.IsNaN(peakLoad) {
		out.PeakProviderLoad = ptr(peakLoad)
	}
	end := s.TriggerEnd
	if end <= 0 {
		end = time.Duration(s.Trigger.End) * s.Bin
	}
	out.RecoveryS, out.Metastable = recovery(ratios, s.Trigger, end.Seconds(), w)
	return out
}

// recovery is analysis.Recovery of the per-bin success ratios from the
// trigger's end (at endS seconds), with RecoveryFraction of the
// pre-trigger ratio as the threshold: the seconds from the end until
// success was back for good, read inside the bin where it came back (so
// the end's phase in its bin does not show as recovery time: an end 0.2 s
// before a bin edge and success back in the next bin read 0). Metastable
// when the run ends still below.
func recovery(ratios []float64, tr Span, endS, w float64) (*float64, bool) {
	if tr.End <= tr.Start || tr.End > len(ratios) {
		return nil, false
	}
	var sum float64
	n := 0
	for i := 0; i < tr.Start; i++ {
		if !math.IsNaN(ratios[i]) {
			sum += ratios[i]
			n++
		}
	}
	if n == 0 {
		return nil, false
	}
	binMs := int64(math.Round(w * 1000))
	bins := make([]analysis.RecoveryBin, len(ratios))
	for i, r := range ratios {
		bins[i] = analysis.RecoveryBin{StartMs: int64(i) * binMs, EndMs: int64(i+1) * binMs}
		if !math.IsNaN(r) {
			bins[i].Ratio = model.Some(r)
		}
	}
	// Never before the trigger's last bin: an end given inside an
	// earlier bin is that bin's.
	endMs := max(int64(math.Round(endS*1000)), int64(tr.Start+1)*binMs)
	rec, stuck := analysis.Recovery(bins, endMs, RecoveryFraction*sum/float64(n))
	if v, ok := rec.Get(); ok {
		return ptr(v), false
	}
	return nil, stuck
}

func fmtF(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
