package analysis

import (
	"slices"
	"time"

	"github.com/retrytop/retrytop/model"
)

// Timeline computes the signals of one row over consecutive bins
// [startMs+i*bin, startMs+(i+1)*bin], oldest first; a last bin that would
// pass endMs is cut at endMs, and a remainder shorter than half a bin is
// merged into the bin before it. A bin holds every increase inside it: a
// counter's value at a bin edge is read on the line between its samples
// around the edge (resets counted as Increase counts them), and rates are
// divided by the part of the bin between the target's first and last
// scrapes (the bin's SampledFromMs and SampledToMs: its whole width inside
// the recording, less in the first and last bins; nothing is extrapolated
// beyond the samples). So rate x sampled span summed over the bins is the
// increase over the whole range, with nothing lost between bins and
// nothing counted twice, and the bins across a missed scrape or a target
// down share the increase across the gap as its mean rate. A bin the
// scrapes do not reach has absent rates. Gauges are read at the target's
// newest scrape inside each bin.
func Timeline(st *model.Store, key model.Key, bin time.Duration, startMs, endMs int64) []model.Signals {
	binMs := bin.Milliseconds()
	if binMs <= 0 || endMs <= startMs {
		return nil
	}
	return selectRow(st, key.Target, key.Dependency, startMs).timeline(binMs, startMs, endMs)
}

// timeline evaluates the row over consecutive bins.
func (r *row) timeline(binMs, startMs, endMs int64) []model.Signals {
	if binMs <= 0 || endMs <= startMs {
		return nil
	}
	return r.timelineOver(binEdges(binMs, startMs, endMs))
}

// timelineOver evaluates the row over the given bins.
func (r *row) timelineOver(edges []binEdge) []model.Signals {
	return r.timelineInto(nil, edges)
}

// timelineInto is timelineOver into dst's array when it has room.
func (r *row) timelineInto(dst []model.Signals, edges []binEdge) []model.Signals {
	out := slices.Grow(dst[:0], len(edges))[:len(edges)]
	for i, b := range edges {
		out[i] = r.eval(binWindow(r.times, b.start, b.end))
	}
	return out
}

// rateSeconds is the time a bin's rates are means over: the part of it
// the scrapes cover when known (binWindow), else its width. rate x rateSeconds is the bin's
// count of the row's own counters.
func rateSeconds(s *model.Signals) float64 {
	if v, ok := sampledSeconds(s).Get(); ok {
		return v
	}
	return float64(s.EndMs-s.StartMs) / 1000
}

// sampledSeconds is the span a bin's rates are means over, absent when
// the bin has none (the scrapes do not reach it).
func sampledSeconds(s *model.Signals) model.Value {
	if s.SampledFromMs != 0 && s.SampledToMs > s.SampledFromMs {
		return model.Some(float64(s.SampledToMs-s.SampledFromMs) / 1000)
	}
	return model.Absent
}
