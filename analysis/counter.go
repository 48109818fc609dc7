package analysis

import "github.com/retrytop/retrytop/model"

// Increase returns how much a counter grew between the first and the last of
// its samples inside [startMs, endMs] (both ends included).
//
// A decrease between two consecutive samples is a counter reset (the process
// restarted): the value after the reset counts in full, as in Prometheus.
// Gaps (scrapes where the series was absent) are simply skipped, so a series
// that comes back after a restart is stitched to its last value before the
// gap. The first sample in the window is the baseline, never counted
// itself. A series that appears on a target already being scraped is
// stored with a 0 at the scrape before (model.Store, "new series start at
// zero"), so its first value counts; one present from the first scrape, or
// marked Baseline, starts from its first value (Prometheus' behaviour).
//
// There is no extrapolation to the window's edges: the result is exactly
// the sum of sample-to-sample increases. ok is false with fewer than two
// samples in the window ("not enough data"); the result is then never a
// made-up zero.
func Increase(points []model.Point, startMs, endMs int64) (float64, bool) {
	return increase(inside(points, startMs, endMs))
}

// Rate is Increase divided by the time between the first and the last
// sample inside [startMs, endMs], per second. ok is false with fewer than two
// samples in the window.
func Rate(points []model.Point, startMs, endMs int64) (float64, bool) {
	pts := inside(points, startMs, endMs)
	inc, ok := increase(pts)
	if !ok {
		return 0, false
	}
	dt := pts[len(pts)-1].T - pts[0].T
	if dt <= 0 {
		return 0, false
	}
	return inc / (float64(dt) / 1000), true
}

// increase applies Prometheus' reset rule to consecutive samples: last -
// first, plus the value before every decrease. Summing this way (rather than
// adding every delta) keeps large counters exact.
func increase(pts []model.Point) (float64, bool) {
	if len(pts) < 2 {
		return 0, false
	}
	var corr float64
	prev := pts[0].V
	for _, p := range pts[1:] {
		if p.V < prev {
			corr += prev
		}
		prev = p.V
	}
	return pts[len(pts)-1].V - pts[0].V + corr, true
}

// inside returns the samples with startMs <= T <= endMs.
func inside(points []model.Point, startMs, endMs int64) []model.Point {
	i := searchAfter(points, startMs-1)
	j := searchAfter(points, endMs)
	if i >= j {
		return nil
	}
	return points[i:j]
}

// searchAfter returns the index of the first point with T > t (len(points)
// when there is none). Points are sorted by T.
func searchAfter(points []model.Point, t int64) int {
	lo, hi := 0, len(points)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if points[m].T > t {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// timesAfter is searchAfter for a slice of scrape times.
func timesAfter(times []int64, t int64) int {
	lo, hi := 0, len(times)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if times[m] > t {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}
