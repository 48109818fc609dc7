package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// TestWholeBuilderEqualsBuildReport: the report WholeBuilder makes from a
// store of a few dozen scrapes, reducing bins while the scrapes arrive,
// is byte for byte BuildReport's on a store of every scrape, over series
// that the bounded store cannot hold whole: a gap longer than its history
// (the increase across it starts from the sample before), a result that
// appears late (its key is in the early bins' results), a row that ends
// early (its bins go on, empty), a counter reset, gauges, a histogram and
// a dependency's server-side series.
func TestWholeBuilderEqualsBuildReport(t *testing.T) {
	const n = 200
	svcTimes, dbTimes := every(1000, 1000, n), every(1300, 1000, n)
	dep := func(d string, more ...string) []string { return append([]string{model.LabelDependency, d}, more...) }
	svc := snapshots(t, "svc", svcTimes,
		ts{model.MetricOriginals, dep("db"), "0+5x99 3+5x99"}, // reset at 100
		ts{model.MetricAttempts, dep("db", model.LabelOutcome, "success"), "0+6x80 _x60 486+6x57"},
		ts{model.MetricResults, dep("db", model.LabelResult, "success"), "_x100 0+4x98"},
		ts{model.MetricAttempts, dep("cache"), "0+1x50"},
		ts{model.MetricActiveCalls, dep("db"), "3x80 _x20 7x97"},
		ts{model.MetricRequestDuration + "_bucket", dep("db", model.LabelResultClass, "success", "le", "0.1"), "0+2x199"},
		ts{model.MetricRequestDuration + "_bucket", dep("db", model.LabelResultClass, "success", "le", "+Inf"), "0+5x199"},
		ts{model.MetricRequestDuration + "_sum", dep("db", model.LabelResultClass, "success"), "0+0.25x199"},
	)
	db := snapshots(t, "db", dbTimes, ts{model.MetricServerReceived, nil, "0+6x120 _x79"})
	opts := ReportOptions{Bin: time.Second, Window: 5 * time.Second}
	hist := WholeHistory([][]int64{svcTimes, dbTimes}, opts)
	if hist >= 60 {
		t.Fatalf("history %d scrapes holds the 60-scrape gap: the test would not see the bounded store", hist)
	}
	full := model.NewStore(model.StoreConfig{History: n + 1, MaxSeries: 1000})
	bounded := model.NewStore(model.StoreConfig{History: hist, MaxSeries: 1000, KeepSeries: true})
	wb := NewWholeBuilder(bounded, opts)
	for i := range n {
		for _, s := range []*model.Snapshot{&svc[i], &db[i]} {
			full.Append(s)
			bounded.Append(s)
			wb.Observe(s.Time, true)
		}
		wb.Observe(time.UnixMilli(dbTimes[i]+100), false) // a failed scrape: no effect
	}
	targets := []model.TargetStatus{{Name: "db", Up: true}, {Name: "svc", Up: true}}
	rep, err := wb.Report(targets)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Dependencies) != 2 || len(rep.Dependencies[0].Timeline) < n-2 {
		t.Fatalf("%d rows, %d bins: nothing to compare", len(rep.Dependencies), len(rep.Dependencies[0].Timeline))
	}
	sameReport(t, rep, BuildReport(full, targets, opts))
}

// sameReport fails t unless got and want marshal to the same JSON, showing
// where they first differ.
func sameReport(t *testing.T, got, want Report) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(g, w) {
		return
	}
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			lo := max(i-300, 0)
			t.Fatalf("reports differ at byte %d:\n got ...%s\nwant ...%s", i, g[lo:min(i+200, len(g))], w[lo:min(i+200, len(w))])
		}
	}
	t.Fatalf("reports differ in length: %d and %d bytes", len(g), len(w))
}

// TestWholeBuilderSizedByRecordingEnd: given the recording's end, every
// series' per-bin results are allocated once, for exactly the bins the
// report has, and the report is still BuildReport's.
func TestWholeBuilderSizedByRecordingEnd(t *testing.T) {
	const n = 200
	opts := ReportOptions{Bin: time.Second, Window: 5 * time.Second}
	full, wb, _ := wholeSvc(t, n, &opts, func(i int, wb *WholeBuilder) {
		if i != n/2 {
			return
		}
		// Halfway, a few batches are reduced: the results already have
		// room for every bin.
		if wb.done < wholeBatch || wb.bins < n-2 {
			t.Fatalf("halfway: %d bins reduced, %d expected", wb.done, wb.bins)
		}
		for _, ws := range wb.targets["svc"].series {
			if cap(ws.vals) != wb.bins {
				t.Errorf("halfway: room for %d bins, want %d", cap(ws.vals), wb.bins)
			}
		}
	})
	targets := []model.TargetStatus{{Name: "svc", Up: true}}
	rep, err := wb.Report(targets)
	if err != nil {
		t.Fatal(err)
	}
	bins := len(rep.Dependencies[0].Timeline)
	// 200 scrapes 1 s apart from 1 s to 200 s: bins of 1 s on the grid
	// from the first, the last merged or cut (binEdges).
	if bins < n-2 || bins > n {
		t.Fatalf("%d bins, want %d +0/-2", bins, n)
	}
	if wb.bins != bins {
		t.Errorf("the builder expected %d bins, the report has %d", wb.bins, bins)
	}
	series := 0
	for _, ws := range wb.targets["svc"].series {
		series++
		if len(ws.vals) != bins || cap(ws.vals) != bins {
			t.Errorf("per-bin results: len %d cap %d, want %d", len(ws.vals), cap(ws.vals), bins)
		}
		if len(ws.ok) != (bins+63)/64 {
			t.Errorf("%d words of flags for %d bins", len(ws.ok), bins)
		}
	}
	if series != 2 {
		t.Errorf("%d series reduced, want 2", series)
	}
	sameReport(t, rep, BuildReport(full, targets, opts))
}

// TestRowBinsIntoTheirArray: a row's bins, from the store or reduced,
// are made in the array given when it has room (a report's goroutine
// reuses one for each row it evaluates), and are those made afresh.
func TestRowBinsIntoTheirArray(t *testing.T) {
	const n = 120
	opts := ReportOptions{Bin: 5 * time.Second, Window: 30 * time.Second}
	full, wb, times := wholeSvc(t, n, &opts, nil)
	if !wb.finish(wb.startMs, times[n-1]) {
		t.Fatal("the builder did not finish")
	}
	edges := wb.edges
	if len(edges) < n/5-1 {
		t.Fatalf("%d bins: nothing to compare", len(edges))
	}
	stored := selectTarget(full, "svc", full.Times("svc"), nil, 0).rows()["db"]
	reduced := wb.rows("svc")["db"]
	if stored == nil || reduced == nil {
		t.Fatal("no row db")
	}
	for name, made := range map[string]func([]model.Signals) []model.Signals{
		"stored":  func(dst []model.Signals) []model.Signals { return stored.timelineInto(dst, edges) },
		"reduced": func(dst []model.Signals) []model.Signals { return wb.timeline(dst, reduced) },
	} {
		want := made(nil)
		buf := make([]model.Signals, 3, len(edges)) // a previous row's, shorter
		got := made(buf)
		if len(got) != len(edges) || &got[0] != &buf[:1][0] {
			t.Errorf("%s: %d bins in a new array, want %d in the one given", name, len(got), len(edges))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: bins in the array given differ from those made afresh", name)
		}
	}
}

// wholeSvc stores n scrapes 1 s apart of target svc, a counter and a
// gauge toward db, in a store of every scrape (full) and in a bounded one
// a WholeBuilder reduces, calling each (when not nil) after every scrape.
// opts gets the recording's end.
func wholeSvc(t *testing.T, n int, opts *ReportOptions, each func(i int, wb *WholeBuilder)) (full *model.Store, wb *WholeBuilder, times []int64) {
	t.Helper()
	times = every(1000, 1000, n)
	svc := snapshots(t, "svc", times,
		ts{model.MetricOriginals, []string{model.LabelDependency, "db"}, fmt.Sprintf("0+5x%d", n-1)},
		ts{model.MetricActiveCalls, []string{model.LabelDependency, "db"}, fmt.Sprintf("3x%d", n-1)},
	)
	opts.RecordingEnd = time.UnixMilli(times[n-1])
	full = model.NewStore(model.StoreConfig{History: n + 1, MaxSeries: 1000})
	bounded := model.NewStore(model.StoreConfig{History: WholeHistory([][]int64{times}, *opts), MaxSeries: 1000, KeepSeries: true})
	wb = NewWholeBuilder(bounded, *opts)
	for i := range svc {
		full.Append(&svc[i])
		bounded.Append(&svc[i])
		wb.Observe(svc[i].Time, true)
		if each != nil {
			each(i, wb)
		}
	}
	return full, wb, times
}
