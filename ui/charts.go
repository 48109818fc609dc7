package ui

import (
	"math"

	"github.com/retrytop/retrytop/model"
)

// Chart renderers are plain functions of values, sizes and glyphs that
// write into a lineWriter: no lipgloss, no measuring, no allocation beyond
// the finished lines.

// maxValue is the largest present value (0 when none).
func maxValue(vals []model.Value) float64 {
	m := 0.0
	for _, v := range vals {
		if v.OK() && v.V() > m && !math.IsInf(v.V(), 1) {
			m = v.V()
		}
	}
	return m
}

// level maps v in (0, max] to a sparkline level 0..7; any positive value
// gets at least the lowest level so that "a little" never reads as zero.
func level(v, maxV float64) int {
	if maxV <= 0 {
		return 0
	}
	i := int(math.Ceil(v/maxV*8)) - 1
	return min(max(i, 0), 7)
}

// spark writes one cell group of cols columns per value: an absent value
// is a gap, zero the zero glyph (dim), anything else a level in sp.
func (l *lineWriter) spark(vals []model.Value, maxV float64, cols int, g *glyphs, sp, dim span) {
	for _, v := range vals {
		for c := 0; c < cols; c++ {
			switch {
			case !v.OK() || math.IsNaN(v.V()):
				l.glyph(g.gap, span{})
			case v.V() <= 0:
				l.glyph(g.zero, dim)
			default:
				l.glyph(g.levels[level(v.V(), maxV)], sp)
			}
		}
	}
}

// binsNoHist are a timeline's bins for the charts and sections, which
// read a bin's values and quantiles, never its histograms (those of the
// row's window are the row's own): a timeline makes histograms afresh
// for each bin read with them.
func binsNoHist(tl *model.Timeline) []model.Signals {
	return tl.AppendRangeNoHist(nil, 0, tl.Len())
}

// seriesOf extracts one signal of every bin (caller or service) into dst.
func seriesOf[T any](dst []model.Value, tl []T, f func(*T) model.Value) []model.Value {
	dst = dst[:0]
	for i := range tl {
		dst = append(dst, f(&tl[i]))
	}
	return dst
}

// twoSeries draws originals (solid, in front) and attempts (shaded, behind)
// as columns of height rows, cols columns per bin, after a gutter that
// carries the scale (written by scale). The shaded part above the solid
// one is the retries. att may be nil: one series of solid columns. sc is
// scratch for the values in chart steps, computed once, not once a row.
func twoSeries(dst []line, l *lineWriter, sc *[3][]float64, orig, att []model.Value, height, cols, gutter int, scale func([]byte, float64) []byte, g *glyphs, st *styles) []line {
	maxV := max(maxValue(orig), maxValue(att))
	steps := float64(height * g.sub)
	// o and a as scaled (-1 absent, 0 zero), a also in whole cells (the
	// shade fills cells).
	os, as, ac := sc[0][:0], sc[1][:0], sc[2][:0]
	for i := range orig {
		o, a := scaled(orig[i], maxV, steps), -1.0
		if i < len(att) {
			a = scaled(att[i], maxV, steps)
		}
		os = append(os, o)
		as = append(as, a)
		ac = append(ac, math.Round(a/float64(g.sub)))
	}
	sc[0], sc[1], sc[2] = os, as, ac
	for r := height - 1; r >= 0; r-- {
		switch {
		case r == height-1:
			l.num = scale(l.num[:0], maxV)
			l.cellBytes(l.num, gutter-1, true, st.dim)
			l.pad(1)
		case r == 0:
			l.cell("0", gutter-1, true, st.dim)
			l.pad(1)
		default:
			l.pad(gutter)
		}
		lo := r * g.sub
		for i := range os {
			o, a := os[i], as[i]
			glyph, sp := g.gap, span{}
			k := int(math.Round(o)) - lo
			if r == 0 && o > 0 && k <= 0 {
				k = 1 // a little is never drawn as nothing
			}
			switch {
			case k >= g.sub:
				glyph, sp = g.fill[g.sub], st.originals
			case k > 0:
				glyph, sp = g.fill[k], st.originals
			case a > 0 && ac[i] > float64(r):
				glyph, sp = g.above, st.attempts
			case r == 0 && (o == 0 || a == 0):
				glyph, sp = g.zero, st.dim
			}
			for c := 0; c < cols; c++ {
				l.glyph(glyph, sp)
			}
		}
		dst = append(dst, l.line())
	}
	return dst
}

// perSecond is twoSeries' scale for rates: 289/s.
func perSecond(dst []byte, v float64) []byte { return append(appendNum(dst, v), "/s"...) }

// scaled maps a value to chart steps: -1 when absent, 0 when zero.
func scaled(v model.Value, maxV, steps float64) float64 {
	if !v.OK() || math.IsNaN(v.V()) {
		return -1
	}
	if maxV <= 0 || v.V() <= 0 {
		return 0
	}
	return math.Min(v.V()/maxV, 1) * steps
}

// gauge writes a bar of width cells filled to v/limit.
func (l *lineWriter) gauge(v, limit float64, width int, g *glyphs, sp, dim span) {
	n := 0
	if limit > 0 {
		n = int(math.Round(v / limit * float64(width)))
		if v > 0 && n == 0 {
			n = 1
		}
		n = min(max(n, 0), width)
	}
	l.repeat(g.bar, n, sp)
	l.repeat(g.barEmpty, width-n, dim)
}
