package model

import (
	"slices"
	"sort"
)

// timelineHist holds a timeline's LatencyHist without its bounds: each
// class's bucket bounds once, and per bin and class the count, the sum
// and the bucket counts. A bin's histogram of 20 buckets took 320 bytes
// of Bucket and 56 of its ByClass entry, and most of a timeline's memory.
// It applies when each class has the same bounds in every bin.
type timelineHist struct {
	classes []string    // sorted
	bounds  [][]float64 // per class, shared with the timelines this one was made from
	off     []int       // per class: where its numbers start in a bin's record
	rec     int         // a bin's record: per class its count, sum and bucket counts
	has     []bool      // per bin and class: the bin has the class (nbins x classes)
	vals    []float64   // per bin: its record
}

// histSource is where the histogram of a bin being built comes from: its
// own LatencyHist, or bin i of a compact timeline.
type histSource struct {
	t *timelineHist
	i int
}

// classBounds collects the classes and bounds of the bins' histograms;
// false when a class's bounds differ between bins, or a histogram or its
// buckets are empty: the timeline then keeps each bin's as it is.
type classBounds struct {
	idx    map[string]int
	names  []string
	bounds [][]float64
}

func (c *classBounds) add(class string, nb int, bound func(k int) float64, shared []float64) bool {
	if nb == 0 {
		return false
	}
	if c.idx == nil {
		c.idx = make(map[string]int, 4)
	}
	k, ok := c.idx[class]
	if !ok {
		if shared == nil {
			shared = make([]float64, nb)
			for j := range shared {
				shared[j] = bound(j)
			}
		}
		c.idx[class] = len(c.names)
		c.names = append(c.names, class)
		c.bounds = append(c.bounds, shared)
		return true
	}
	have := c.bounds[k]
	if len(have) != nb {
		return false
	}
	if shared != nil && len(shared) > 0 && &shared[0] == &have[0] {
		return true
	}
	for j := range have {
		if have[j] != bound(j) {
			return false
		}
	}
	return true
}

// newTimelineHist holds the histograms of n bins: bin j's is bins[j]'s
// LatencyHist, or from[j]'s when from[j].t is set. nil, true when no bin
// has one; false when they cannot be held compactly.
func newTimelineHist(bins []Signals, from []histSource) (*timelineHist, bool) {
	var cb classBounds
	some := false
	for j := range bins {
		if from != nil && from[j].t != nil {
			src, i := from[j].t, from[j].i
			for k, class := range src.classes {
				if src.has[i*len(src.classes)+k] {
					b := src.bounds[k]
					if !cb.add(class, len(b), func(x int) float64 { return b[x] }, b) {
						return nil, false
					}
					some = true
				}
			}
			continue
		}
		h := bins[j].LatencyHist
		if h != nil && len(h) == 0 {
			return nil, false
		}
		for _, e := range h {
			bk := e.V.Buckets
			if !cb.add(e.Class, len(bk), func(x int) float64 { return bk[x].UpperBound }, nil) {
				return nil, false
			}
			some = true
		}
	}
	if !some {
		return nil, true
	}
	n := len(bins)
	th := &timelineHist{classes: slices.Clone(cb.names), bounds: make([][]float64, len(cb.names))}
	sort.Strings(th.classes)
	th.off = make([]int, len(th.classes))
	for k, class := range th.classes {
		th.bounds[k] = cb.bounds[cb.idx[class]]
		th.off[k] = th.rec
		th.rec += 2 + len(th.bounds[k])
	}
	nc := len(th.classes)
	th.has = make([]bool, n*nc)
	th.vals = make([]float64, n*th.rec)
	classOf := func(class string) int {
		k, _ := slices.BinarySearch(th.classes, class)
		return k
	}
	for j := range bins {
		rec := th.vals[j*th.rec : (j+1)*th.rec]
		if from != nil && from[j].t != nil {
			src, i := from[j].t, from[j].i
			for sk, class := range src.classes {
				if !src.has[i*len(src.classes)+sk] {
					continue
				}
				k := classOf(class)
				th.has[j*nc+k] = true
				w := 2 + len(th.bounds[k])
				copy(rec[th.off[k]:th.off[k]+w], src.vals[i*src.rec+src.off[sk]:][:w])
			}
			continue
		}
		for _, e := range bins[j].LatencyHist {
			k := classOf(e.Class)
			th.has[j*nc+k] = true
			r := rec[th.off[k]:]
			r[0], r[1] = e.V.Count, e.V.Sum
			for x, b := range e.V.Buckets {
				r[2+x] = b.Count
			}
		}
	}
	return th, true
}

// into is bin i's LatencyHist in dst's arrays where they have room
// (empty when it has no class).
func (th *timelineHist) into(dst ByClass[HistogramWindow], i int) ByClass[HistogramWindow] {
	nc := len(th.classes)
	out := dst[:0]
	rec := th.vals[i*th.rec : (i+1)*th.rec]
	for k, class := range th.classes {
		if !th.has[i*nc+k] {
			continue
		}
		var bk []Bucket
		if n := len(out); n < cap(out) {
			bk = out[:n+1][n].V.Buckets[:0]
		}
		b, r := th.bounds[k], rec[th.off[k]:]
		for x := range b {
			bk = append(bk, Bucket{UpperBound: b[x], Count: r[2+x]})
		}
		out = append(out, ClassValue[HistogramWindow]{Class: class, V: HistogramWindow{Buckets: bk, Count: r[0], Sum: r[1]}})
	}
	return out
}

// at is bin i's LatencyHist, made afresh (nil when it has no class).
func (th *timelineHist) at(i int) ByClass[HistogramWindow] {
	nc := len(th.classes)
	present, buckets := 0, 0
	for k := range th.classes {
		if th.has[i*nc+k] {
			present++
			buckets += len(th.bounds[k])
		}
	}
	if present == 0 {
		return nil
	}
	out := make(ByClass[HistogramWindow], 0, present)
	all := make([]Bucket, buckets)
	rec := th.vals[i*th.rec : (i+1)*th.rec]
	for k, class := range th.classes {
		if !th.has[i*nc+k] {
			continue
		}
		b := th.bounds[k]
		bk := all[:len(b):len(b)]
		all = all[len(b):]
		r := rec[th.off[k]:]
		for x := range bk {
			bk[x] = Bucket{UpperBound: b[x], Count: r[2+x]}
		}
		out = append(out, ClassValue[HistogramWindow]{Class: class, V: HistogramWindow{Buckets: bk, Count: r[0], Sum: r[1]}})
	}
	return out
}
