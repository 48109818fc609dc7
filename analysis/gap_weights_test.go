package analysis

import (
	"math"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// TestGapSpanFromTheBin: the gap window counts bins of the frame's width,
// not of a report's first bin, which runs from the first scrape to the
// grid's first edge and may be half a bin.
func TestGapSpanFromTheBin(t *testing.T) {
	th := DefaultThresholds()
	th.GapWindow = 30 * time.Second
	key := model.Key{Target: "app", Dependency: "db"}
	bins := func(widths ...int64) map[model.Key]*model.Timeline {
		var tl []model.Signals
		at := int64(1_000_000)
		for _, w := range widths {
			tl = append(tl, model.Signals{Target: key.Target, Dependency: key.Dependency, StartMs: at, EndMs: at + w})
			at += w
		}
		return map[model.Key]*model.Timeline{key: model.NewTimeline(tl)}
	}
	for _, tc := range []struct {
		name string
		bin  time.Duration
		tls  map[model.Key]*model.Timeline
		want int
	}{
		{"the frame's bin", 10 * time.Second, bins(5_000, 10_000, 10_000), 3},
		{"no bin: the wider of the first two", 0, bins(5_000, 10_000, 10_000), 3},
		{"no bin, whole first bin", 0, bins(10_000, 10_000), 3},
		{"no bin, one short bin", 0, bins(6_000), 5},
		{"a window shorter than a bin", time.Minute, bins(60_000), 1},
		{"nothing", 0, map[model.Key]*model.Timeline{key: nil}, 1},
	} {
		if got := gapSpan(tc.bin, tc.tls, []model.Key{key}, th); got != tc.want {
			t.Errorf("%s: gapSpan = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestAggregateOverSampledSpans: two 2 s bins sampled over 1.5 s and 3 s
// (a 1.5 s scrape interval does not divide the bin) across a step in the
// traffic. The aggregate is the counter's increase over the span from the
// first bin's look-back scrape to the last bin's last scrape, over that
// span: (10 x 1.5 + 40 x 3) / 4.5 = 30/s; weighted by the bins' widths it
// read (10 x 2 + 40 x 2) / 4 = 25/s, no count's mean.
func TestAggregateOverSampledSpans(t *testing.T) {
	// Scrapes at 1, 1501 and 4501 ms (0 would read as an unknown time).
	bins := []model.Signals{
		{Target: "app", Dependency: "db", StartMs: 0, EndMs: 2000, SampledFromMs: 1, SampledToMs: 1501,
			OriginalsPerS: model.Some(10), AttemptsPerS: model.Some(10)},
		{Target: "app", Dependency: "db", StartMs: 2000, EndMs: 4000, SampledFromMs: 1501, SampledToMs: 4501,
			OriginalsPerS: model.Some(40), AttemptsPerS: model.Some(80)},
	}
	a := aggregate(bins)
	span := float64(a.SampledToMs-a.SampledFromMs) / 1000
	for _, c := range []struct {
		name string
		got  model.Value
		want float64 // increase over the sampled span / the span
	}{
		{"originals", a.OriginalsPerS, (10*1.5 + 40*3) / span},
		{"attempts", a.AttemptsPerS, (10*1.5 + 80*3) / span},
	} {
		v, ok := c.got.Get()
		if !ok || math.Abs(v-c.want) > 1e-9 {
			t.Errorf("%s: %v, want %.4f/s", c.name, c.got, c.want)
		}
	}
	if v, _ := a.OriginalsPerS.Get(); math.Abs(v-30) > 1e-9 {
		t.Errorf("originals %.4f/s, want 30", v)
	}
}
