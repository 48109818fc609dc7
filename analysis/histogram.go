package analysis

import (
	"math"
	"slices"
	"strings"

	"github.com/retrytop/retrytop/model"
)

// HistogramIncrease returns the increase of a classic histogram over
// [startMs, endMs]: what histogram_quantile(q, sum by (le)
// (increase(name_bucket[w]))) would see, without extrapolation.
//
// series are the flat series of one histogram: name_bucket series (told
// apart by their le label) and optionally name_count and name_sum. Each
// series' increase is computed on its own with Increase (resets and gaps
// included), and series of several label sets are added up by le, like
// sum by (le). A bucket series with fewer than two samples in the window is
// left out. Count is the _count increase when a _count series is given,
// else the +Inf bucket's; Sum is the _sum increase (0 without one).
//
// Buckets is empty when no bucket series has enough data in the window;
// its quantiles are then absent.
func HistogramIncrease(series []model.Series, startMs, endMs int64) model.HistogramWindow {
	parts := histParts(series, nil)
	h, _ := parts.increase(plainWindow(startMs, endMs))
	return h
}

// MergeHistograms adds histogram windows together: buckets with an equal
// upper bound are summed, as PromQL's sum by (le) does, and so are Count
// and Sum. A bound missing from one input simply contributes nothing there.
func MergeHistograms(hs ...model.HistogramWindow) model.HistogramWindow {
	var out model.HistogramWindow
	n := 0
	for _, h := range hs {
		n += len(h.Buckets)
		out.Count += h.Count
		out.Sum += h.Sum
	}
	if n == 0 {
		return out
	}
	all := make([]model.Bucket, 0, n)
	for _, h := range hs {
		all = append(all, h.Buckets...)
	}
	slices.SortStableFunc(all, byBound)
	out.Buckets = coalesce(all)
	return out
}

// partKind says which component of a histogram a flat series is.
type partKind uint8

const (
	partBucket partKind = iota
	partCount
	partSum
)

// histPart is one flat series of a histogram, its le parsed once.
type histPart struct {
	kind   partKind
	le     float64
	points points
}

// parts are the flat series of one histogram (possibly several label sets),
// buckets first and sorted by le, so equal bounds are neighbours.
type parts []histPart

// histParts classifies flat series by their name's suffix and le label,
// indexing their samples against times (nil: none). Bucket series whose le
// does not parse are ignored.
func histParts(series []model.Series, times []int64) parts {
	ps := make(parts, 0, len(series))
	for _, s := range series {
		switch {
		case s.Labels.Has("le"):
			le, err := model.ParseFloat(s.Labels.Get("le"))
			if err != nil || math.IsNaN(le) {
				continue
			}
			ps = append(ps, histPart{kind: partBucket, le: le, points: newPoints(times, s.Points)})
		case strings.HasSuffix(s.Name, "_count"):
			ps = append(ps, histPart{kind: partCount, points: newPoints(times, s.Points)})
		case strings.HasSuffix(s.Name, "_sum"):
			ps = append(ps, histPart{kind: partSum, points: newPoints(times, s.Points)})
		}
	}
	ps.sort()
	return ps
}

func (ps parts) sort() {
	slices.SortStableFunc(ps, func(a, b histPart) int {
		if a.kind != b.kind {
			return int(a.kind) - int(b.kind)
		}
		return byBound(model.Bucket{UpperBound: a.le}, model.Bucket{UpperBound: b.le})
	})
}

// increase computes the window's histogram. ok is true when at least one
// bucket series had enough data.
func (ps parts) increase(w window) (model.HistogramWindow, bool) {
	var (
		h        model.HistogramWindow
		hasCount bool
		n        int
	)
	// Parts are sorted by kind and bound (parts.sort): the buckets are the
	// distinct bounds, however many series share each.
	for i := range ps {
		if ps[i].kind == partBucket && (n == 0 || ps[i-1].kind != partBucket || ps[i-1].le != ps[i].le) {
			n++
		}
	}
	for i := range ps {
		p := &ps[i]
		inc, ok := w.increase(p.points)
		if !ok {
			continue
		}
		switch p.kind {
		case partBucket:
			if h.Buckets == nil {
				h.Buckets = make([]model.Bucket, 0, n)
			}
			if k := len(h.Buckets); k > 0 && h.Buckets[k-1].UpperBound == p.le {
				h.Buckets[k-1].Count += inc
			} else {
				h.Buckets = append(h.Buckets, model.Bucket{UpperBound: p.le, Count: inc})
			}
		case partCount:
			h.Count += inc
			hasCount = true
		case partSum:
			h.Sum += inc
		}
	}
	if len(h.Buckets) == 0 {
		return h, false
	}
	if last := h.Buckets[len(h.Buckets)-1]; !hasCount && math.IsInf(last.UpperBound, +1) {
		h.Count = last.Count
	}
	return h, true
}
