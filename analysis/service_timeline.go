package analysis

import (
	"time"

	"github.com/retrytop/retrytop/model"
)

// ServiceTimeline computes the service-side signals of target over
// consecutive bins, oldest first, with the bin rules of Timeline (shared
// edges, a short remainder merged into the bin before it; gauges read at the
// target's newest scrape inside each bin). A target exporting no service
// family gets bins holding only its name and bounds, every signal Absent.
//
// It returns nil when bin is shorter than a millisecond or endMs <= startMs.
func ServiceTimeline(st *model.Store, target string, bin time.Duration, startMs, endMs int64) []model.ServiceSignals {
	binMs := bin.Milliseconds()
	if binMs <= 0 || endMs <= startMs {
		return nil
	}
	times := st.TimesSince(target, startMs)
	sv := selectService(st, target, times, startMs)
	edges := binEdges(binMs, startMs, endMs)
	out := make([]model.ServiceSignals, len(edges))
	for i, b := range edges {
		if sv == nil {
			out[i] = model.ServiceSignals{Target: target, StartMs: b.start, EndMs: b.end}
		} else {
			out[i] = sv.eval(binWindow(times, b.start, b.end))
		}
	}
	return out
}
