package analysis

import (
	"math"
	"sort"

	"github.com/retrytop/retrytop/model"
)

// A timeline bin holds every increase inside it. A counter's value between
// two of its samples is taken to move linearly from one to the other (after
// a reset, from 0 to the value after it, as increase counts it), so the
// increase a bin holds is, over every pair of consecutive samples, the
// pair's increase times the share of the pair's time inside the bin. Bins
// share their edges, so the bins of a range add up to the increase between
// the samples they cover, the partial first and last bins included. There
// is no extrapolation: before a series' first sample and after its last
// one it does not move.

// segmentShare is the part of the increase from prev to cur that falls in
// [a, b]; ok is false when the pair's time does not overlap [a, b]. The
// whole-recording reduction (WholeBuilder) and the bins of a store use it
// alike, so both add the same terms in the same order.
func segmentShare(prev, cur model.Point, a, b int64) (float64, bool) {
	lo, hi := max(prev.T, a), min(cur.T, b)
	if hi <= lo || cur.T <= prev.T {
		return 0, false
	}
	d := cur.V - prev.V
	if d < 0 {
		d = cur.V // a reset: the value after it counts in full
	}
	if hi-lo == cur.T-prev.T {
		return d, true
	}
	return d * (float64(hi-lo) / float64(cur.T-prev.T)), true
}

// spread is a series' interpolated increase over [a, b]: the shares of its
// consecutive sample pairs, oldest first. ok is false when no pair
// overlaps [a, b].
func spread(pts []model.Point, a, b int64) (float64, bool) {
	if b <= a {
		return 0, false
	}
	var sum float64
	ok := false
	for k := max(searchAfter(pts, a), 1); k < len(pts) && pts[k-1].T < b; k++ {
		if v, in := segmentShare(pts[k-1], pts[k], a, b); in {
			sum += v
			ok = true
		}
	}
	return sum, ok
}

// increase is a series' increase over the window: for a range window the
// increase between its samples inside, for a bin the interpolated increase
// over the time the bin covers (from, to).
func (w *window) increase(p points) (float64, bool) {
	if !w.back || p.base == reducedBase {
		return increase(w.span(p))
	}
	if w.to <= w.from {
		return 0, false
	}
	// Up to the newest scrape the window knows of, so that a sample
	// appended after the scrape times were read is never used (usually
	// none was: no search then).
	pts := p.pts
	if n := len(pts); n > 0 && pts[n-1].T > w.newest {
		pts = pts[:searchAfter(pts, w.newest)]
	}
	return spread(pts, w.from, w.to)
}

// coverage is the part of [start, end] between the first and the last of
// the target's scrapes (from == to when none of it is).
func coverage(times []int64, start, end int64) (from, to int64) {
	if len(times) == 0 {
		return 0, 0
	}
	from, to = max(start, times[0]), min(end, times[len(times)-1])
	if to < from {
		return 0, 0
	}
	return from, to
}

// distribute adds the shares of pts's sample pairs after acc.cur and up to
// upTo into the bins edges (all the bins known so far, whose values acc
// holds), then moves acc.cur on. A pair that runs past upTo is taken up
// again by the next call from upTo on, so every bin receives the shares
// spread gives it, in the same order.
func (acc *wholeSeries) distribute(pts []model.Point, edges []binEdge, upTo int64) {
	if !acc.started {
		acc.cur, acc.started = math.MinInt64, true
	}
	i := -1 // the first bin ending after the last pair's lo, found from the last
	for k := 1; k < len(pts); k++ {
		prev, cur := pts[k-1], pts[k]
		if cur.T <= acc.cur || cur.T <= prev.T {
			continue
		}
		lo, hi := max(prev.T, acc.cur), min(cur.T, upTo)
		if hi <= lo {
			continue
		}
		if i < 0 || (i > 0 && edges[i-1].end > lo) { // the first pair, or times out of order
			i = sort.Search(len(edges), func(m int) bool { return edges[m].end > lo })
		}
		for i < len(edges) && edges[i].end <= lo {
			i++
		}
		for i := i; i < len(edges) && edges[i].start < hi; i++ {
			if v, in := segmentShare(prev, cur, max(edges[i].start, lo), min(edges[i].end, hi)); in {
				acc.set(i, acc.vals[i]+v, true)
			}
		}
	}
	if n := len(pts); n > 0 {
		acc.cur = max(acc.cur, min(pts[n-1].T, upTo))
	}
}
