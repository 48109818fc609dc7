package analysis

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// TestSoakStoreAndFrames: hours of 10 targets at 1 s, replayed
// in virtual time (time is data here) through what watch runs every
// second: store.Append of each target's scrape and, every frame interval,
// BuildFrame reusing the previous frame. Series churn all along: each
// target's dependencies rotate every 10 minutes (old series go stale and
// leave the store's rings), and one target in ten is replaced by a new
// name every 20 minutes (Forget, as discovery does). Once the store's
// history is full (15 minutes), the live heap after a GC must stay flat
// within 5 % of its size at the first checkpoint, and so must the number
// of goroutines (never more than at the first checkpoint: nothing here
// starts any). Checkpoints are taken
// at one phase of the churn: between two of them the store holds 2-3
// generations of series (3.5-5.3 MiB), so comparing different phases
// would measure the churn, not a leak.
//
// Default: 65 min of virtual time, three checkpoints (about 7 s on this machine, -short skips
// it). RETRYTOP_SOAK=24h (scripts/soak.sh) runs the long version.
func TestSoakStoreAndFrames(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test skipped in -short mode")
	}
	span := 65 * time.Minute
	if v := os.Getenv("RETRYTOP_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("RETRYTOP_SOAK=%q: %v", v, err)
		}
		span = d
	}
	const (
		targets  = 10
		deps     = 4
		frameGap = 5 * time.Second // watch coalesces frames; 1 s in the UI, 5 s here for speed
		churn    = 10 * time.Minute
		replace  = 20 * time.Minute
	)
	st := model.NewStore(model.DefaultStoreConfig)
	history := time.Duration(model.DefaultStoreConfig.History) * time.Second
	start := time.Unix(1_800_000_000, 0)
	name := func(i int, gen int64) string { return fmt.Sprintf("svc-%d-g%d", i, gen) }
	counts := make([]float64, targets*deps)
	var prev *model.Frame
	var base uint64
	baseGoroutines := 0 // at the first checkpoint
	checkpoints := 0
	heapNow := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for sec := time.Duration(0); sec < span; sec += time.Second {
		now := start.Add(sec)
		epoch := int64(sec / churn)
		for i := range targets {
			gen := int64(0)
			if i == 0 {
				gen = int64(sec / replace)
				if sec > 0 && sec%replace == 0 {
					st.Forget(name(0, gen-1))
				}
			}
			var samples []model.Sample
			for d := range deps {
				counts[i*deps+d] += float64(10 + d)
				dep := fmt.Sprintf("dep-%d-e%d", d, epoch)
				samples = append(samples, model.Sample{Labels: model.LabelsFromPairs("dependency", dep, "priority", "critical"), Value: counts[i*deps+d]})
			}
			st.Append(&model.Snapshot{Target: name(i, gen), Time: now, Families: []model.Family{
				{Name: model.MetricOriginals, Type: model.Counter, Samples: samples},
				{Name: model.MetricAttempts, Type: model.Counter, Samples: samples},
			}})
		}
		if sec%frameGap == 0 {
			f := BuildFrame(st, nil, FrameOptions{EndMs: now.UnixMilli(), Align: true, Prev: prev})
			prev = &f
		}
		// Checkpoints at one phase of the churn (every 20 minutes, when
		// both cycles restart) once the history filled: the store then
		// holds the same mix of live and stale series each time.
		if sec >= history && sec%replace == 0 {
			h := heapNow()
			if base == 0 {
				// Measured here, not at the test's start: goroutines of
				// the package's earlier tests may still be ending then.
				base, baseGoroutines = h, runtime.NumGoroutine()
			}
			checkpoints++
			t.Logf("%v: live heap %.1f MiB (first %.1f MiB), %d goroutines", sec, float64(h)/(1<<20), float64(base)/(1<<20), runtime.NumGoroutine())
			if float64(h) > 1.05*float64(base) {
				t.Errorf("%v: live heap %d bytes, more than 5 %% over %d at the first checkpoint", sec, h, base)
			}
			if g := runtime.NumGoroutine(); g > baseGoroutines {
				t.Errorf("%v: %d goroutines, %d at the first checkpoint", sec, g, baseGoroutines)
			}
		}
	}
	if checkpoints < 3 {
		t.Fatalf("%d checkpoints: the span %v is too short after the %v history", checkpoints, span, history)
	}
	if n := len(st.Targets()); n != targets {
		t.Errorf("%d targets in the store, want %d (the replaced ones forgotten)", n, targets)
	}
}
