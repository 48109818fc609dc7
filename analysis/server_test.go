package analysis

import (
	"reflect"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// hiddenProxyStore is the sim's hidden-hop setup: client sends 60
// attempts/s for 50 originals to "provider", a target that says it
// received 180/s (an uninstrumented proxy in between retries), finished
// 12/s after its callers gave up, and held each request about 15 ms.
// The provider is scraped 300 ms after the client.
func hiddenProxyStore(t *testing.T) *model.Store {
	dep := []string{model.LabelDependency, "provider"}
	st := load(t, nil, "client", every(t0, 1000, 31),
		ts{model.MetricOriginals, dep, "0+50x30"},
		ts{model.MetricAttempts, append(dep, "outcome", "success"), "0+60x30"},
		ts{model.MetricOriginals, []string{model.LabelDependency, "cache"}, "0+5x30"},
	)
	svc := model.MetricServerServiceTime
	return load(t, st, "provider", every(t0+300, 1000, 31),
		ts{model.MetricServerReceived, nil, "0+180x30"},
		ts{model.MetricServerWorkAfterCancel, nil, "0+12x30"},
		// Series with a dependency label are the provider's own calls,
		// never its server side.
		ts{model.MetricServerReceived, dep, "0+1000x30"},
		ts{svc + "_bucket", []string{"le", "0.01"}, "0x30"},
		ts{svc + "_bucket", []string{"le", "0.02"}, "0+10x30"},
		ts{svc + "_bucket", []string{"le", "+Inf"}, "0+10x30"},
		ts{svc + "_sum", nil, "0+0.15x30"},
	)
}

func TestServerSideJoin(t *testing.T) {
	st := hiddenProxyStore(t)
	f := BuildFrame(st, nil, FrameOptions{Window: 10 * time.Second, Bin: 5 * time.Second, Bins: 4})
	if len(f.Rows) != 2 {
		t.Fatalf("rows = %+v", f.Rows)
	}
	end := t0 + 30300
	cache, prov := f.Rows[0], f.Rows[1]
	checkSignals(t, &prov, want{"originals": 50, "attempts": 60})
	checkValue(t, "received", prov.DependencyReceivedPerS, 180)
	checkValue(t, "work after cancel", prov.DependencyWorkAfterCancelPerS, 12)
	checkValue(t, "service p50", prov.DependencyServiceTimeP50, 0.015) // rank 5 of 10 in (0.01, 0.02]
	for _, v := range []model.Value{cache.DependencyReceivedPerS, cache.DependencyWorkAfterCancelPerS, cache.DependencyServiceTimeP50} {
		checkValue(t, "cache (not a target)", v, absent)
	}
	// The single-row functions join the same way.
	if s := SignalsFor(st, "client", "provider", end-10000, end); !reflect.DeepEqual(s, prov) {
		t.Errorf("SignalsFor = %+v\nframe row %+v", s, prov)
	}
	tl := f.Timelines[prov.Key()].Bins()
	if want := Timeline(st, prov.Key(), 5*time.Second, end-20000, end); !reflect.DeepEqual(tl, want) {
		t.Errorf("Timeline differs from the frame's")
	}
	for i := range tl {
		checkValue(t, "bin received", tl[i].DependencyReceivedPerS, 180)
		checkValue(t, "bin work after cancel", tl[i].DependencyWorkAfterCancelPerS, 12)
		checkValue(t, "bin service p50", tl[i].DependencyServiceTimeP50, 0.015)
	}

	// The frame's findings: the hidden layer, with its size, and the work
	// after cancel.
	th := DefaultThresholds()
	fs := Evaluate(f, EvaluateChains(f.Rows, nil, th.Gap), th)
	hidden := findCode(fs, CodeHiddenRetries)
	if len(hidden) != 1 || hidden[0].Severity != SeverityCritical || hidden[0].Target != "client" || hidden[0].Dependency != "provider" ||
		!hidden[0].Start.Equal(msTime(end-10000)) || !hidden[0].End.Equal(msTime(end)) {
		t.Fatalf("HIDDEN_RETRIES = %+v", hidden)
	}
	checkEvidence(t, hidden[0], want{"gap_per_s": 120, "sent_per_s": 60, "arrived_per_s": 180, "factor": 3})
	wac := findCode(fs, CodeWorkAfterCancel)
	if len(wac) != 1 {
		t.Fatalf("WORK_AFTER_CANCEL = %+v", wac)
	}
	checkEvidence(t, wac[0], want{"work_after_cancel_per_s": 12, "dependency_received_per_s": 180, "share_of_received": 12.0 / 180})
	// And over the history, every bin says the same. Gaps are compared
	// over 10 s (two bins), from the second bin on.
	th.GapWindow = 10 * time.Second
	fs = EvaluateHistory(f, nil, th)
	if h := findCode(fs, CodeHiddenRetries); len(h) != 1 {
		t.Fatalf("history = %+v", fs)
	} else {
		checkEvidence(t, h[0], want{"gap_per_s": 120, "bins": 3})
		if !h[0].Start.Equal(msTime(end-20000)) || !h[0].End.Equal(msTime(end)) {
			t.Errorf("history window %v..%v", h[0].Start, h[0].End)
		}
	}
}
