package ui

import (
	"time"

	"github.com/retrytop/retrytop/model"
)

// DefaultRanges are the time ranges z and Z step the charts through; 0 is
// all the data held.
var DefaultRanges = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, 0}

// niceSteps are the bin widths and axis label steps: each a whole
// number of seconds that divides the next larger clock unit, so bins and
// labels fall on even wall-clock times.
var niceSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// niceStep is the smallest nice step at least d (and a multiple of unit
// when unit > 0); the largest one when d is larger still.
func niceStep(d, unit time.Duration) time.Duration {
	for _, s := range niceSteps {
		if s >= d && (unit <= 0 || s%unit == 0) {
			return s
		}
	}
	if unit > 0 {
		return max(d, unit) // a bin no nice step is a multiple of
	}
	return niceSteps[len(niceSteps)-1]
}

// rangeLabel names a chart range: 5m, or "all".
func rangeLabel(r time.Duration) string {
	if r <= 0 {
		return "all"
	}
	return windowLabel(r)
}

// chartBins picks the timeline's bins for a frame ending at endMs (0: the
// newest data): the charts span the data the store holds, up to rng (0:
// all of it), in about want bins of a nice width, never narrower than two
// scrape intervals (a bin needs two scrapes for a rate). held is the span
// shown.
func chartBins(st *model.Store, endMs int64, rng time.Duration, want int) (bin time.Duration, bins int, held time.Duration) {
	var oldest, newest, interval int64
	for _, t := range st.Targets() {
		s := st.Stats(t)
		if s.Scrapes == 0 {
			continue
		}
		if oldest == 0 || s.OldestMs < oldest {
			oldest = s.OldestMs
		}
		newest = max(newest, s.NewestMs)
		if s.Scrapes > 1 {
			iv := (s.NewestMs - s.OldestMs) / int64(s.Scrapes-1)
			if interval == 0 || iv < interval {
				interval = iv
			}
		}
	}
	if endMs == 0 {
		endMs = newest
	}
	held = time.Duration(max(endMs-oldest, 0)) * time.Millisecond
	if newest == 0 {
		held = 0
	}
	if rng > 0 && held > rng {
		held = rng
	}
	want = max(want, 1)
	floor := max(2*time.Duration(interval)*time.Millisecond, time.Second)
	bin = niceStep(max(held/time.Duration(want), floor), 0)
	bins = max(int((held+bin-1)/bin), 1)
	if rng > 0 {
		// The range caps the bins: a fleet scraped every minute still
		// shows its last 5 minutes, in the bins that fit.
		bins = min(bins, max(int(rng/bin), 1))
	}
	return bin, bins, held
}

// axisStep is the time between two labels of a time axis: the nice step
// whose labels (lw wide, two apart) fit bins bins drawn over spanW
// columns.
func axisStep(bin time.Duration, bins, spanW, lw int) time.Duration {
	perCol := bin * time.Duration(bins) / time.Duration(max(spanW, 1))
	return niceStep(perCol*time.Duration(lw+2), 0)
}
