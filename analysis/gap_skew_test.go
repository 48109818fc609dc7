package analysis

import (
	"fmt"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// stepTraffic is a request rate of low/s that steps to high/s at upAt and
// back at downAt (seconds from t0); count(t) is its exact integral, what a
// counter of those requests reads at t.
type stepTraffic struct{ low, high, upAt, downAt float64 }

func (s stepTraffic) count(t float64) float64 {
	c := s.low * t
	if t > s.upAt {
		c += (s.high - s.low) * (min(t, s.downAt) - s.upAt)
	}
	return c
}

// scrapeChain stores two hops of a chain, app -> client -> provider, each
// target scraped every `every` seconds at its own phase: app sends the
// traffic to client, and client starts factor times as many originals
// (1: nothing in between; more: a hidden retry layer).
func scrapeChain(t *testing.T, tr stepTraffic, every, appPhase, clientPhase, factor float64, n int) *model.Store {
	t.Helper()
	st := model.NewStore(model.StoreConfig{History: n + 8})
	counter := func(name, dep string, v float64) model.Family {
		return model.Family{Name: name, Type: model.Counter, Samples: []model.Sample{{Labels: model.LabelsFromPairs("dependency", dep), Value: v}}}
	}
	for i := range n {
		for _, tg := range []struct {
			name, dep string
			phase, k  float64
		}{{"app", "client", appPhase, 1}, {"client", "provider", clientPhase, factor}} {
			at := float64(i)*every + tg.phase
			c := tr.count(at) * tg.k
			snap := model.Snapshot{Target: tg.name, Time: time.UnixMilli(t0 + int64(at*1000)), Families: []model.Family{
				counter(model.MetricOriginals, tg.dep, c), counter(model.MetricAttempts, tg.dep, c),
			}}
			st.Append(&snap)
		}
	}
	return st
}

// TestGapSampleSkew: two targets scraped at different moments (Prometheus
// scrapes each target at its own offset in the interval) see a step change
// at different times. Timeline bins read both sides at the same edges,
// interpolated between each side's samples around them, so over a window
// whose edge falls between one side's samples the two counts differ only
// by the interpolation's error, no hop's doing; a real hidden layer is
// still found in the same data.
//
// The data: 5 s scrapes, app at phase 0 s and client at 1 s, so at every
// 10 s bin edge app's sample is at the edge and client's 4 s before it;
// the steps (20/s to 100/s at 118 s and back at 238 s) fall inside those
// 4 s. Read at client's sample before the edge, a 30 s window there would
// see 80/s x 4 s = 320 requests on one side only: 10.7/s, beyond the
// fixed 15 % + 0.5/s of the 20-50/s such windows carry.
func TestGapSampleSkew(t *testing.T) {
	tr := stepTraffic{low: 20, high: 100, upAt: 118, downAt: 238}
	const every, n = 5.0, 72 // 360 s
	for _, tc := range []struct {
		name   string
		factor float64
		want   string // the gap code expected, "" for none
	}{
		{"no layer between, step changes at skewed edges", 1, ""},
		{"a hidden layer doubling the calls", 2, CodeHiddenRetries},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := scrapeChain(t, tr, every, 0, 1, tc.factor, n)
			end := t0 + int64(float64(n-1)*every*1000)
			frame := BuildFrame(st, nil, FrameOptions{Window: 30 * time.Second, Bin: 10 * time.Second, Bins: 34, EndMs: end})
			th := DefaultThresholds()
			fs := EvaluateHistory(frame, []Chain{{Hops: []Hop{{"app", "client"}, {"client", "provider"}}}}, th)
			var gaps []string
			for _, f := range append(findCode(fs, CodeHiddenRetries), findCode(fs, CodeHopLoss)...) {
				skew, _ := f.Evidence.Get("sample_skew_per_s")
				gaps = append(gaps, fmt.Sprintf("%s %s..%s: %s (skew allowance %.2f/s)", f.Code,
					f.Start.Sub(msTime(t0)), f.End.Sub(msTime(t0)), f.Message, skew))
			}
			switch {
			case tc.want == "" && len(gaps) > 0:
				t.Errorf("gap findings from the sampling moments alone:\n%v", gaps)
			case tc.want != "" && (len(gaps) != 1 || findCode(fs, tc.want) == nil):
				t.Errorf("want one %s, got %v", tc.want, gaps)
			}
		})
	}

	// One window ending 2 s after the step. Each side's count at a bin
	// edge is read on the line between its samples around it, so both
	// rows cover the same 90..120 s and the sampling moments leave no
	// skew to allow for: what is left apart is the interpolation's error.
	// app is sampled on both edges: 760 over 30 s. client's samples are at
	// 86/91 s (20/s throughout: 1800 read at 90 s) and 116/121 s (2320
	// and 2660, 3 s of 100/s in between: 2592 read at 120 s): 792.
	st := scrapeChain(t, tr, every, 0, 1, 1, n)
	frame := BuildFrame(st, nil, FrameOptions{Window: 30 * time.Second, Bin: 10 * time.Second, Bins: 3, EndMs: t0 + 120_000})
	var rows []model.Signals
	edges := map[model.Key]edgeRates{}
	for k, t := range frame.Timelines {
		tl := t.Bins()
		rows = append(rows, aggregate(tl))
		edges[k] = peakRates(tl)
	}
	res := evaluateChain(Chain{Hops: []Hop{{"app", "client"}, {"client", "provider"}}}, rows, DefaultGapTolerance(), edges)
	if len(res.Gaps) != 0 {
		t.Fatalf("gaps %+v", res.Gaps)
	}
	var appRow, clientRow *model.Signals
	for i := range rows {
		switch rows[i].Target {
		case "app":
			appRow = &rows[i]
		case "client":
			clientRow = &rows[i]
		}
	}
	for _, r := range []*model.Signals{appRow, clientRow} {
		if r.SampledFromMs != t0+90_000 || r.SampledToMs != t0+120_000 {
			t.Errorf("%s covers %d..%d ms, want 90..120 s", r.Target, r.SampledFromMs-t0, r.SampledToMs-t0)
		}
	}
	checkValue(t, "app originals/s", appRow.OriginalsPerS, 760.0/30)
	checkValue(t, "client originals/s", clientRow.OriginalsPerS, 792.0/30)
	got := sampleSkew([]*model.Signals{appRow}, clientRow, func(s *model.Signals) edgeRates { return edges[s.Key()] })
	checkValue(t, "skew allowance", got, 0)
}
