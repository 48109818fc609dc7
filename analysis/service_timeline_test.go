package analysis

import (
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

func TestServiceTimeline(t *testing.T) {
	times := every(0, 1000, 11) // 10 s
	st := load(t, nil, "provider", times,
		ts{model.MetricServerReceived, nil, "0+10x5 80+30x4"},
		ts{model.MetricServiceQueueDepth, nil, "0 0 0 0 0 3 3 3 3 3 9"},
		ts{model.MetricServiceQueueOldestAge, nil, "0 0 0 0 0.2 0.4 0.6 0.8 1 1.2 1.4"},
	)
	tl := ServiceTimeline(st, "provider", 5*time.Second, 0, 10000)
	if len(tl) != 2 {
		t.Fatalf("%d bins, want 2", len(tl))
	}
	checkValue(t, "bin 0 received", tl[0].ReceivedPerS, 10)
	checkValue(t, "bin 1 received", tl[1].ReceivedPerS, 30)
	checkValue(t, "bin 0 depth", tl[0].QueueDepth, 3)
	checkValue(t, "bin 1 depth", tl[1].QueueDepth, 9)
	checkValue(t, "bin 1 oldest", tl[1].QueueOldestAge, 1.4)
	checkValue(t, "bin 0 in flight", tl[0].InFlight, absent)
	if tl[0].StartMs != 0 || tl[0].EndMs != 5000 || tl[1].StartMs != 5000 || tl[1].EndMs != 10000 {
		t.Errorf("bounds %d-%d %d-%d", tl[0].StartMs, tl[0].EndMs, tl[1].StartMs, tl[1].EndMs)
	}

	// A target without service families: bins with every signal absent.
	none := ServiceTimeline(st, "nobody", 5*time.Second, 0, 10000)
	if len(none) != 2 || none[1].ReceivedPerS.OK() || none[1].Target != "nobody" {
		t.Errorf("unknown target: %+v", none)
	}
	if ServiceTimeline(st, "provider", 0, 0, 10000) != nil || ServiceTimeline(st, "provider", time.Second, 5, 5) != nil {
		t.Error("degenerate ranges must give nil")
	}
}
