package analysis

import (
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// TestBuildFrameReusesFinalBins replays three targets scrape by scrape
// (out of step with each other, one falling silent, a dependency appearing
// late) and after every scrape builds the frame twice: from scratch, and
// reusing the previous frame's final bins. Both must be identical, and the
// reuse must actually happen.
func TestBuildFrameReusesFinalBins(t *testing.T) {
	type scrape struct {
		at   int64 // when the scrape is appended
		snap model.Snapshot
	}
	var all []scrape
	// Scrapes are stamped when they start and appended when they end, so
	// a slow target's scrape lands after others stamped later: delayMs.
	add := func(target string, delayMs int64, times []int64, series ...ts) {
		for i, s := range snapshots(t, target, times, series...) {
			all = append(all, scrape{times[i] + delayMs, s})
		}
	}
	const n = 90 // scrapes per target, 1 s apart
	dep := func(d string, extra ...string) []string { return append([]string{"dependency", d}, extra...) }
	add("app", 0, every(t0, 1000, n),
		ts{model.MetricOriginals, dep("provider"), "0+5x89"},
		ts{model.MetricAttempts, dep("provider", "outcome", "success"), "0+4x89"},
		ts{model.MetricAttempts, dep("provider", "outcome", "timeout"), "0+3x89"},
		ts{model.MetricActiveCalls, dep("provider"), "1+1x89"},
		// A dependency that shows up a minute in.
		ts{model.MetricOriginals, dep("late"), "_x59 0+2x29"},
	)
	add("provider", 700, every(t0+400, 1000, n),
		ts{model.MetricServerReceived, nil, "0+7x89"},
		ts{model.MetricServerWorkAfterCancel, nil, "0+1x89"},
	)
	// client falls silent after 50 scrapes: its bins past that never
	// become final, so they are evaluated every time.
	add("client", 500, every(t0+700, 1000, 50),
		ts{model.MetricOriginals, dep("app"), "0+5x49"},
		ts{model.MetricAttempts, dep("app", "outcome", "success"), "0+5x49"},
	)
	sort.SliceStable(all, func(i, j int) bool { return all[i].at < all[j].at })

	st := model.NewStore(model.StoreConfig{History: 120})
	opts := FrameOptions{Window: 10 * time.Second, Bin: 5 * time.Second, Bins: 8, Align: true}
	var prev *model.Frame
	reused := 0
	for i, sc := range all {
		st.Append(&sc.snap)
		fresh := BuildFrame(st, nil, opts)
		withPrev := opts
		withPrev.Prev = prev
		got := BuildFrame(st, nil, withPrev)
		if !reflect.DeepEqual(got.Rows, fresh.Rows) {
			t.Fatalf("scrape %d (%s appended at %d): rows differ with reuse", i, sc.snap.Target, sc.at)
		}
		if !reflect.DeepEqual(got.Timelines, fresh.Timelines) {
			for k, tl := range fresh.Timelines {
				if !reflect.DeepEqual(got.Timelines[k], tl) {
					t.Fatalf("scrape %d (%s appended at %d): timeline %v differs with reuse:\n got %+v\nwant %+v", i, sc.snap.Target, sc.at, k, got.Timelines[k].Bins(), tl.Bins())
				}
			}
			t.Fatalf("scrape %d: timelines differ in keys", i)
		}
		if prev != nil {
			for k, tl := range got.Timelines {
				for _, b := range tl.Bins() {
					if _, ok := (&prevBins{frame: prev}).index(k, binEdge{b.StartMs, b.EndMs}); ok {
						reused++
					}
				}
			}
		}
		prev = &got
	}
	// Aligned bins on every row, 5 s wide, rebuilt each scrape: most bins
	// of most frames come from the frame before.
	if reused < len(all)*3 {
		t.Errorf("only %d bins reused over %d frames", reused, len(all))
	}
	last := prev.Timelines[model.Key{Target: "app", Dependency: "provider"}].Bins()
	if len(last) != 8 || last[len(last)-1].EndMs != prev.Time.UnixMilli() || last[0].StartMs%5000 != 0 {
		t.Errorf("aligned timeline: %d bins, %d..%d", len(last), last[0].StartMs, last[len(last)-1].EndMs)
	}
	// The silent client's rows are final only up to its last scrape.
	if got, want := prev.FinalMs[model.Key{Target: "client", Dependency: "app"}], t0+700+49*1000; got != want {
		t.Errorf("client final at %d, want %d", got, want)
	}
}

func TestTimelineStart(t *testing.T) {
	const bin = 10 * time.Second
	for _, tt := range []struct {
		end   int64
		align bool
		want  int64
	}{
		{123_456, false, 123_456 - 30_000},
		{120_000, true, 90_000},  // on an edge: three whole bins
		{126_000, true, 100_000}, // newest bin 120-126 s
		{124_000, true, 90_000},  // 4 s is under half a bin: newest bin 110-124 s
		{125_000, true, 100_000}, // exactly half a bin stays its own bin
	} {
		start := TimelineStart(tt.end, bin, 3, tt.align)
		if start != tt.want {
			t.Errorf("TimelineStart(%d, align %v) = %d, want %d", tt.end, tt.align, start, tt.want)
		}
		if n := len(binEdges(bin.Milliseconds(), start, tt.end)); n != 3 {
			t.Errorf("end %d align %v: %d bins, want 3", tt.end, tt.align, n)
		}
	}
}

func TestFloorTo(t *testing.T) {
	for _, tt := range []struct{ t, step, want int64 }{
		{10, 5, 10}, {12, 5, 10}, {0, 5, 0}, {-1, 5, -5}, {-5, 5, -5}, {-6, 5, -10},
	} {
		if got := floorTo(tt.t, tt.step); got != tt.want {
			t.Errorf("floorTo(%d, %d) = %d, want %d", tt.t, tt.step, got, tt.want)
		}
	}
}

// BenchmarkBuildFrameReuse is BenchmarkBuildFrame as a live view runs it:
// aligned bins, built on the frame before (here the same moment, so every
// bin but the newest is final and reused).
func BenchmarkBuildFrameReuse(b *testing.B) {
	st := benchStore()
	opts := FrameOptions{Window: 30 * time.Second, Bin: 10 * time.Second, Bins: 30, Align: true}
	prev := BuildFrame(st, nil, opts)
	opts.Prev = &prev
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		f := BuildFrame(st, nil, opts)
		if len(f.Rows) != 50 {
			b.Fatalf("%d rows", len(f.Rows))
		}
	}
}
