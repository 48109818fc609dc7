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
// at different times, and over a window whose edge falls between their
// samples the sender's count and the receiver's differ by the traffic of
// that skew. That difference is no hop's doing: the gap rules allow the
// highest rate near the edges times the skew, over the window. A real
// hidden layer is still found in the same data.
//
// The bound written down: 5 s scrapes, app at phase 0 s and client at
// 1 s, so at every 10 s bin edge app's sample is at the edge and client's
// 4 s before it; the steps (20/s to 100/s at 118 s and back at 238 s) fall
// inside those 4 s, so a 30 s GapWindow starting or ending there sees
// 80/s x 4 s = 320 requests on one side only: 10.7/s over 30 s, beyond the
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

	// The allowance itself, on one window ending 2 s after the step: app
	// sampled at 120 s has the 2 s of 100/s, client sampled at 116 s none.
	st := scrapeChain(t, tr, every, 0, 1, 1, n)
	frame := BuildFrame(st, nil, FrameOptions{Window: 30 * time.Second, Bin: 10 * time.Second, Bins: 3, EndMs: t0 + 120_000})
	var rows []model.Signals
	edges := map[model.Key]edgeRates{}
	for k, tl := range frame.Timelines {
		rows = append(rows, aggregate(tl))
		edges[k] = peakRates(tl)
	}
	res := evaluateChain(Chain{Hops: []Hop{{"app", "client"}, {"client", "provider"}}}, rows, DefaultGapTolerance(), edges)
	if len(res.Gaps) != 0 {
		t.Fatalf("gaps %+v", res.Gaps)
	}
	// Sent 25.3/s (760 over 90..120 s), arrived 20/s (600 over 86..116
	// s): 5.3/s apart, over the fixed 4.3/s. Allowed besides: the highest
	// rate near the edges, app's bin 110-120 s (8 s at 20/s and 2 s at
	// 100/s: 36/s), times the 4 s between the two samples at each edge
	// (8 s), over the 30 s: 9.6/s.
	app := edges[model.Key{Target: "app", Dependency: "client"}]
	client := edges[model.Key{Target: "client", Dependency: "provider"}]
	var appRow, clientRow *model.Signals
	for i := range rows {
		switch rows[i].Target {
		case "app":
			appRow = &rows[i]
		case "client":
			clientRow = &rows[i]
		}
	}
	if appRow.SampledFromMs != t0+90_000 || appRow.SampledToMs != t0+120_000 ||
		clientRow.SampledFromMs != t0+86_000 || clientRow.SampledToMs != t0+116_000 {
		t.Errorf("sample times app %d..%d client %d..%d, want 90..120 s and 86..116 s",
			appRow.SampledFromMs-t0, appRow.SampledToMs-t0, clientRow.SampledFromMs-t0, clientRow.SampledToMs-t0)
	}
	got := sampleSkew([]*model.Signals{appRow}, clientRow, func(s *model.Signals) edgeRates { return edges[s.Key()] })
	want := max(app.sent, client.arrived) * 8 / 30
	if app.sent != 36 || !got.OK || got.V != want {
		t.Errorf("skew allowance %v (peak sent %v), want %v (36/s x 8 s / 30 s = 9.6/s)", got, app.sent, want)
	}
}
