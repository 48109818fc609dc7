package analysis

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

func TestReportGridEdges(t *testing.T) {
	const bin = 2000
	for _, tc := range []struct {
		name       string
		start, end int64
		want       []binEdge
	}{
		{"start on an edge: whole bins", 10_000, 16_000, []binEdge{{10_000, 12_000}, {12_000, 14_000}, {14_000, 16_000}}},
		{"partial first bin", 10_700, 16_000, []binEdge{{10_700, 12_000}, {12_000, 14_000}, {14_000, 16_000}}},
		{"first bin exactly half a bin", 11_000, 14_000, []binEdge{{11_000, 12_000}, {12_000, 14_000}}},
		{"first sliver merged into the next", 11_300, 16_000, []binEdge{{11_300, 14_000}, {14_000, 16_000}}},
		{"last bin cut at the end", 10_700, 15_000, []binEdge{{10_700, 12_000}, {12_000, 14_000}, {14_000, 15_000}}},
		{"last sliver merged into the bin before", 10_700, 14_400, []binEdge{{10_700, 12_000}, {12_000, 14_400}}},
		{"shorter than the first bin and a half: one bin", 11_300, 14_900, []binEdge{{11_300, 14_900}}},
		{"shorter than the first bin", 10_700, 11_500, []binEdge{{10_700, 11_500}}},
		{"before 1970", -3_300, 1_000, []binEdge{{-3_300, -2_000}, {-2_000, 0}, {0, 1_000}}},
		{"empty", 10_000, 10_000, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newReportGrid(bin, tc.start)
			got := g.edges(tc.end)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("edges(%d, %d) = %v, want %v", tc.start, tc.end, got, tc.want)
			}
			// The open-ended layout WholeBuilder reduces while loading
			// agrees with the final one on every bin that ends at least
			// half a bin before the end (Observe's rule).
			for k := range g.endingBy(tc.end - bin/2 - 1) {
				if k >= len(got) || g.bin(k) != got[k] {
					t.Errorf("open-ended bin %d = %v, final layout %v", k, g.bin(k), got)
				}
			}
		})
	}
}

// TestReportBinsAlignedAcrossReaders reads one counter through two
// readers that scrape it at different phases (as analyze scraping and
// analyze --prometheus do) across a step in its rate. Their reports' bins
// share every edge after the first, and a bin's rates differ only by
// where each reader's scrapes fall: at most the rate's step times the
// readers' phase difference over the bin's sampled span.
func TestReportBinsAlignedAcrossReaders(t *testing.T) {
	const (
		stepAt   = 130_000 // ms: the rate goes from 10/s to 30/s
		before   = 10.0
		after    = 30.0
		interval = 1000 // ms between scrapes, both readers
		n        = 60
	)
	value := func(ms int64) float64 {
		if ms <= stepAt {
			return before * float64(ms-100_000) / 1000
		}
		return before*float64(stepAt-100_000)/1000 + after*float64(ms-stepAt)/1000
	}
	read := func(firstMs int64) Report {
		times := every(firstMs, interval, n)
		vals := make([]string, n)
		for i, at := range times {
			vals[i] = fmt.Sprint(value(at))
		}
		snaps := snapshots(t, "app", times, ts{model.MetricOriginals, []string{model.LabelDependency, "db"}, strings.Join(vals, " ")})
		st := model.NewStore(model.StoreConfig{History: n + 1, MaxSeries: 100})
		for i := range snaps {
			st.Append(&snaps[i])
		}
		return BuildReport(st, []model.TargetStatus{{Name: "app", Up: true}}, ReportOptions{Bin: 2 * time.Second, Window: 10 * time.Second})
	}
	// First scrapes 0.3 s and 1.0 s after an edge: 0.7 s apart, the phase
	// two readers of one target were once seen to have.
	a, b := read(100_300), read(101_000)
	ta, tb := a.Dependencies[0].Timeline, b.Dependencies[0].Timeline
	if len(ta) < 20 || len(tb) < 20 {
		t.Fatalf("%d and %d bins", len(ta), len(tb))
	}
	// Each report's first bin runs from its reader's first scrape to the
	// first edge (a's 100.3 to 102, b's 101 to 102): compare from there.
	byStart := map[float64]BinReport{}
	for _, x := range tb[1:] {
		byStart[x.StartUnix] = x
	}
	const phase = 0.7 // s: the readers' scrape times differ by this
	shared := 0
	for i, x := range ta {
		if i > 0 && math.Mod(x.StartUnix, 2) != 0 {
			t.Errorf("bin %d starts at %.3f: not on a multiple of the bin", i, x.StartUnix)
		}
		y, ok := byStart[x.StartUnix]
		if i == 0 || !ok || x.EndUnix != y.EndUnix {
			continue
		}
		shared++
		ra, _ := x.OriginalsPerS.Get()
		rb, _ := y.OriginalsPerS.Get()
		sa, _ := x.SampledSeconds.Get()
		// Bound: the two spans are shifted by the phase, so their
		// increases differ by at most (after-before) x phase.
		if bound := (after - before) * phase / sa; math.Abs(ra-rb) > bound+1e-9 {
			t.Errorf("bin %.1f: %.3f and %.3f/s differ by more than %.3f", x.StartUnix, ra, rb, bound)
		}
		if x.EndUnix*1000 <= stepAt-interval && (ra != before || rb != before) {
			t.Errorf("bin %.1f before the step: %.3f and %.3f/s, want %v", x.StartUnix, ra, rb, before)
		}
		if x.StartUnix*1000 >= stepAt+interval && (ra != after || rb != after) {
			t.Errorf("bin %.1f after the step: %.3f and %.3f/s, want %v", x.StartUnix, ra, rb, after)
		}
	}
	if shared < len(ta)-2 {
		t.Errorf("%d of %d bins share their edges", shared, len(ta))
	}
	// Each report still adds up: rate x sampled span over its bins is the
	// counter's increase from the reader's first scrape to its last.
	for _, r := range []struct {
		rep   Report
		first int64
	}{{a, 100_300}, {b, 101_000}} {
		sum := 0.0
		for _, x := range r.rep.Dependencies[0].Timeline {
			v, _ := x.OriginalsPerS.Get()
			s, _ := x.SampledSeconds.Get()
			sum += v * s
		}
		if want := value(r.first+(n-1)*interval) - value(r.first); math.Abs(sum-want) > 1e-6 {
			t.Errorf("first scrape %d: bins add up to %.6f, want %.6f", r.first, sum, want)
		}
	}
}

// TestWholeBuilderAlignedBins: the reduced path lays its bins out as
// BuildReport does when the recording does not start on an edge (a first
// bin shorter than the others, or one merged into the next).
func TestWholeBuilderAlignedBins(t *testing.T) {
	for _, first := range []int64{100_300, 101_300, 101_000} {
		t.Run(fmt.Sprint(first), func(t *testing.T) {
			const n = 150
			times := every(first, 1000, n)
			snaps := snapshots(t, "svc", times,
				ts{model.MetricOriginals, []string{model.LabelDependency, "db"}, "0+5x149"},
				ts{model.MetricActiveCalls, []string{model.LabelDependency, "db"}, "3x79 7x69"})
			opts := ReportOptions{Bin: 2 * time.Second, Window: 5 * time.Second}
			hist := WholeHistory([][]int64{times}, opts)
			full := model.NewStore(model.StoreConfig{History: n + 1, MaxSeries: 100})
			bounded := model.NewStore(model.StoreConfig{History: hist, MaxSeries: 100, KeepSeries: true})
			wb := NewWholeBuilder(bounded, opts)
			for i := range snaps {
				full.Append(&snaps[i])
				bounded.Append(&snaps[i])
				wb.Observe(snaps[i].Time, true)
			}
			targets := []model.TargetStatus{{Name: "svc", Up: true}}
			rep, err := wb.Report(targets)
			if err != nil {
				t.Fatal(err)
			}
			sameReport(t, rep, BuildReport(full, targets, opts))
			tl := rep.Dependencies[0].Timeline
			if tl[0].StartUnix != float64(first)/1000 || math.Mod(tl[1].StartUnix, 2) != 0 {
				t.Errorf("bins start at %.3f, %.3f", tl[0].StartUnix, tl[1].StartUnix)
			}
		})
	}
}
