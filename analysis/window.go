package analysis

import (
	"math"

	"github.com/retrytop/retrytop/model"
)

// points is one flat series' samples. Every sample of a target's series
// lies on one of the target's scrape times; when a series has no gap, its
// samples are a contiguous run of those times starting at base, and a
// window finds its span by index instead of searching it.
type points struct {
	pts  []model.Point
	base int // index of pts[0] in the target's scrape times; -1: search
}

// reducedBase marks points that hold a series' per-bin results instead of
// its samples (reduced.go): pairs {bin start, 0}, {bin start, value} for
// each bin where the series had one, found by the window's start.
const reducedBase = -2

// newPoints indexes pts against the target's scrape times (nil: never).
// Points that begin with reducedMark are per-bin results (reduced.go).
func newPoints(times []int64, pts []model.Point) points {
	if len(pts) > 0 && pts[0].T == reducedMark {
		return points{pts: pts[1:], base: reducedBase}
	}
	p := points{pts: pts, base: -1}
	n := len(pts)
	if n == 0 || len(times) == 0 {
		return p
	}
	b := timesAfter(times, pts[0].T) - 1
	if b >= 0 && times[b] == pts[0].T && b+n <= len(times) && times[b+n-1] == pts[n-1].T {
		p.base = b // n distinct scrape times from b to b+n-1: no gap
	}
	return p
}

// window is one range a row is evaluated over, resolved against the
// target's scrape times.
type window struct {
	start, end int64
	// back selects a timeline bin: increases interpolated at its edges
	// over [from, to] (interp.go) instead of between the samples inside
	// [start, end].
	back bool
	// seconds is the rate denominator; rates are absent when it is 0.
	seconds float64
	// last is the target's newest scrape in [start, end], where gauges are
	// read; hasLast is false when the target has no scrape there.
	last    int64
	hasLast bool
	// first is the target's first scrape inside, where a range window's
	// increases start from; valid when hasLast.
	first int64
	// Indexes in the target's scrape times of the first scrape at or after
	// start and the first after end.
	iFrom, iEnd int
	// from and to are the part of a bin its increases are interpolated
	// over (coverage), newest the target's newest scrape: bins only.
	from, to, newest int64
}

func newWindow(times []int64, start, end int64, back bool) window {
	w := window{start: start, end: end, back: back}
	w.iFrom, w.iEnd = timesAfter(times, start-1), timesAfter(times, end)
	if w.iFrom < w.iEnd {
		w.last, w.hasLast = times[w.iEnd-1], true
		w.first = times[w.iFrom]
	}
	return w
}

// plainWindow is a window over series not indexed against scrape times
// (the exported functions' inputs): [start, end] as given.
func plainWindow(start, end int64) window {
	return window{start: start, end: end, first: start, last: end, hasLast: true}
}

// rangeWindow is a window of the samples inside [start, end]. Rates are
// divided by the time between the target's first and last scrape in it, so
// a counter's rate is its exact increase over exactly the time it took.
func rangeWindow(times []int64, start, end int64) window {
	w := newWindow(times, start, end, false)
	if w.hasLast {
		w.seconds = float64(w.last-times[w.iFrom]) / 1000
	}
	return w
}

// binWindow is a timeline bin [start, end]: a counter's increase is
// interpolated between the samples around the bin's edges (interp.go), over
// the part of the bin between the target's first and last scrapes, and its
// rates are divided by that part's length, so that rate x covered time over
// consecutive bins adds up to the increase over all of them.
func binWindow(times []int64, start, end int64) window {
	w := newWindow(times, start, end, true)
	w.from, w.to = coverage(times, start, end)
	if len(times) > 0 {
		w.newest = times[len(times)-1]
	}
	w.seconds = w.spanSeconds()
	return w
}

// spanSeconds is a bin's rate denominator: the time it covers, between
// the target's first and last scrapes (a whole bin inside the recording, a
// part of the first and the last). 0, so rates are absent, when it covers
// none.
func (w *window) spanSeconds() float64 {
	if w.to <= w.from {
		return 0
	}
	return float64(w.to-w.from) / 1000
}

// span returns the samples of one series that a range window's increase
// uses (a bin's are interpolated: window.increase), or a reduced series'
// result for the bin.
func (w *window) span(p points) []model.Point {
	if p.base == reducedBase {
		return p.reduced(w.start, w.end)
	}
	if !w.hasLast {
		return nil // no scrape in the window: no sample either
	}
	if p.base < 0 {
		// Up to the newest scrape the window knows of, so that a sample
		// appended after the scrape times were read is never used.
		return inside(p.pts, w.start, w.last)
	}
	// The number of samples at or before a time is the number of scrapes
	// at or before it, less base, within [0, len].
	n := len(p.pts)
	clamp := func(k int) int { return min(max(k-p.base, 0), n) }
	i, j := clamp(w.iFrom), clamp(w.iEnd)
	if i >= j {
		return nil
	}
	return p.pts[i:j]
}

// rate turns a summed increase into a per-second Value.
func (w *window) rate(inc float64, ok bool) model.Value {
	// A counter exported as +Inf or NaN has no increase anyone can use:
	// absent, never a NaN that findings would quote.
	if !ok || w.seconds <= 0 || math.IsNaN(inc) || math.IsInf(inc, 0) {
		return model.Absent
	}
	return model.Some(inc / w.seconds)
}

// gauge returns a gauge series' value at the window's newest scrape; a
// series absent from that scrape is stale and has no value.
func (w *window) gauge(p points) (float64, bool) {
	if p.base == reducedBase {
		if r := p.reduced(w.start, w.end); r != nil {
			return r[len(r)-1].V, true // the newest bin's
		}
		return 0, false
	}
	if !w.hasLast {
		return 0, false
	}
	var j int
	if p.base >= 0 {
		if j = w.iEnd - 1 - p.base; j >= len(p.pts) {
			j = -1
		}
	} else {
		j = searchAfter(p.pts, w.last) - 1
	}
	if j < 0 || p.pts[j].T != w.last {
		return 0, false
	}
	return p.pts[j].V, true
}

// ratio is num/den, absent when either is absent or den is 0.
func ratio(num, den model.Value) model.Value {
	if !num.OK() || !den.OK() || den.V() == 0 {
		return model.Absent
	}
	return model.Some(num.V() / den.V())
}
