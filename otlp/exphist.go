package otlp

import (
	"math"
	"strings"
)

// expScale is the scale exponential histograms are kept at: each
// explicit bucket is a factor of 2^(1/4) (19 %) wide, which bounds the
// error of a quantile read from it to that factor at worst.
const expScale = 2

// expOctaves is the range of the explicit layout, in octaves (powers of
// two) of seconds: 2^-16 s (15 µs) to 2^8 s (256 s). A value below falls
// in the first bucket, one above in +Inf.
const expLowOctave, expHighOctave = -16, 8

// unitOctaves is how many octaves above a second a unit's 1 is not: the
// layout of a histogram in ms is the one in seconds shifted by 10 octaves
// (1024, taken for 1000: the bounds stay powers of two). A unit not
// listed (a count, bytes) gets the layout around 1 shifted by 8 octaves:
// 2^-8 to 2^16.
var unitOctaves = map[string]int{"s": 0, "ms": 10, "us": 20, "ns": 30}

// expLayout is the index range [lo, hi) at expScale an exponential
// histogram in unit becomes, the same for every point of an instrument,
// so its le series never change.
func expLayout(unit string) (lo, hi int) {
	if i := strings.IndexByte(unit, '{'); i >= 0 {
		unit = unit[:i]
	}
	shift, ok := unitOctaves[unit]
	if !ok {
		shift = 8
	}
	per := 1 << expScale
	return (expLowOctave + shift) * per, (expHighOctave + shift) * per
}

// toExplicit turns an exponential histogram point (Scale, Offset,
// ExpCounts: bucket i holds (base^i, base^(i+1)], base = 2^(2^-scale))
// into explicit buckets at expScale over expLayout(unit). A finer scale
// merges neighbours exactly; a coarser one (below expScale) puts a
// bucket's count in the explicit bucket holding its upper bound. The
// zero bucket and negative values go into the first bucket.
func (p *Point) toExplicit(unit string) {
	lo, hi := expLayout(unit)
	n := hi - lo
	p.Bounds = make([]float64, n+1)
	for k := range p.Bounds {
		p.Bounds[k] = math.Exp2(float64(lo+k) / (1 << expScale))
	}
	p.Counts = make([]uint64, n+2)
	var pos uint64
	for i, c := range p.ExpCounts {
		idx := int64(p.Offset) + int64(i)
		var j int64
		if d := int64(p.Scale) - expScale; d >= 0 {
			j = idx >> d // floor, negative indexes too
		} else {
			j = (idx+1)<<(-d) - 1
		}
		switch {
		case j < int64(lo):
			p.Counts[0] += c
		case j >= int64(hi):
			p.Counts[n+1] += c
		default:
			p.Counts[j-int64(lo)+1] += c
		}
		pos += c
	}
	p.Counts[0] += p.Count - pos // zero and negative: checked not to underflow
	p.ExpCounts = nil
}
