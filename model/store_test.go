package model

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func snap(target string, sec int64, fams ...Family) *Snapshot {
	return &Snapshot{Target: target, Time: time.Unix(sec, 0), Families: fams}
}

func counter(name string, v float64, labels ...string) Family {
	return Family{Name: name, Type: Counter, Samples: []Sample{{Labels: LabelsFromPairs(labels...), Value: v}}}
}

func points(ss []Series) [][]Point {
	out := make([][]Point, len(ss))
	for i, s := range ss {
		out[i] = s.Points
	}
	return out
}

func TestStoreHistoryIsBoundedAndOrdered(t *testing.T) {
	st := NewStore(StoreConfig{History: 3})
	for i := int64(1); i <= 5; i++ {
		st.Append(snap("a", i, counter("c", float64(i*10))))
	}
	got := st.Select("a", "c", nil)
	if len(got) != 1 {
		t.Fatalf("series = %d, want 1", len(got))
	}
	want := []Point{{3000, 30}, {4000, 40}, {5000, 50}}
	if fmt.Sprint(got[0].Points) != fmt.Sprint(want) {
		t.Errorf("points = %v, want %v", got[0].Points, want)
	}
	if ts := st.Times("a"); fmt.Sprint(ts) != "[3000 4000 5000]" {
		t.Errorf("times = %v", ts)
	}
}

func TestStoreMarksGapsAndStaleness(t *testing.T) {
	st := NewStore(StoreConfig{History: 10})
	st.Append(snap("a", 1, counter("c", 1, "dependency", "x"), counter("d", 5)))
	st.Append(snap("a", 2, counter("d", 6)))
	st.Append(snap("a", 3, counter("c", 3, "dependency", "x"), counter("d", 7)))
	st.Append(snap("a", 4, counter("d", 8)))

	c := st.Select("a", "c", nil)
	if len(c) != 1 {
		t.Fatalf("c series = %d", len(c))
	}
	if want := "[{1000 1} {3000 3}]"; fmt.Sprint(c[0].Points) != want {
		t.Errorf("gap not kept: %v, want %v", c[0].Points, want)
	}
	if !c[0].Stale {
		t.Errorf("c missing from the newest scrape must be stale")
	}
	d := st.Select("a", "d", nil)
	if d[0].Stale || len(d[0].Points) != 4 {
		t.Errorf("d = %+v, want 4 fresh points", d[0])
	}
}

func TestStoreForgetsSeriesGoneForWholeHistory(t *testing.T) {
	st := NewStore(StoreConfig{History: 2})
	st.Append(snap("a", 1, counter("gone", 1), counter("kept", 1)))
	st.Append(snap("a", 2, counter("kept", 2)))
	st.Append(snap("a", 3, counter("kept", 3)))
	if got := st.Select("a", "gone", nil); len(got) != 0 {
		t.Errorf("series absent for the whole history still retained: %+v", got)
	}
	if got := st.Stats("a").Series; got != 1 {
		t.Errorf("series = %d, want 1", got)
	}
}

func TestStoreSeriesCap(t *testing.T) {
	st := NewStore(StoreConfig{History: 4, MaxSeriesPerTarget: 2})
	f := Family{Name: "c", Type: Counter}
	for i := 0; i < 5; i++ {
		f.Samples = append(f.Samples, Sample{Labels: LabelsFromPairs("i", fmt.Sprint(i)), Value: 1})
	}
	res := st.Append(snap("a", 1, f))
	if res.Series != 2 || res.Dropped != 3 {
		t.Errorf("append = %+v, want 2 stored, 3 dropped", res)
	}
	if s := st.Stats("a"); s.Series != 2 || s.DroppedSeries != 3 {
		t.Errorf("stats = %+v", s)
	}
}

func TestStoreIgnoresOutOfOrderScrapes(t *testing.T) {
	st := NewStore(StoreConfig{History: 4})
	st.Append(snap("a", 2, counter("c", 2)))
	if res := st.Append(snap("a", 1, counter("c", 1))); res.Series != 0 {
		t.Errorf("older scrape stored: %+v", res)
	}
	if got := points(st.Select("a", "c", nil)); fmt.Sprint(got) != "[[{2000 2}]]" {
		t.Errorf("points = %v", got)
	}
}

func TestFlattenHistogramAndSummary(t *testing.T) {
	s := snap("a", 1,
		Family{Name: "h", Type: Histogram, Samples: []Sample{{
			Labels: LabelsFromPairs("dependency", "x"), Count: 3, Sum: 0.6,
			Buckets: []Bucket{{0.1, 1}, {1, 3}, {math.Inf(1), 3}},
		}}},
		Family{Name: "s", Type: Summary, Samples: []Sample{{
			Count: 2, Sum: 1, Quantiles: []QuantileValue{{0.5, 0.4}},
		}}},
	)
	var got []string
	s.Flatten(func(fs FlatSeries) { got = append(got, fs.Name+fs.Labels.String()+"="+FormatFloat(fs.Value)) })
	want := []string{
		`h_bucket{dependency="x",le="0.1"}=1`,
		`h_bucket{dependency="x",le="1"}=3`,
		`h_bucket{dependency="x",le="+Inf"}=3`,
		`h_count{dependency="x"}=3`,
		`h_sum{dependency="x"}=0.6`,
		`s{quantile="0.5"}=0.4`,
		`s_count{}=2`,
		`s_sum{}=1`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("flatten:\n got %v\nwant %v", got, want)
	}
	if n := s.SeriesCount(); n != len(want) {
		t.Errorf("SeriesCount = %d, want %d", n, len(want))
	}
}

func TestLabels(t *testing.T) {
	ls := LabelsFromMap(map[string]string{"b": "2", "a": "1\x1b[31m"})
	if got := ls.String(); got != `{a="1\x1b[31m",b="2"}` {
		t.Errorf("String = %s (control characters must be escaped)", got)
	}
	if ls.Get("b") != "2" || ls.Get("zz") != "" || !ls.Has("a") || ls.Has("zz") {
		t.Errorf("Get/Has wrong on %v", ls)
	}
	if got := ls.With("c", "3").Without("a").String(); got != `{b="2",c="3"}` {
		t.Errorf("With/Without = %s", got)
	}
	if !ls.Equal(LabelsFromPairs("a", "1\x1b[31m", "b", "2")) {
		t.Errorf("Equal false for equal sets")
	}
}

func TestValueJSON(t *testing.T) {
	tests := []struct {
		v    Value
		want string
	}{{Absent, "null"}, {Some(0), "0"}, {Some(1.5), "1.5"}}
	for _, tt := range tests {
		b, _ := tt.v.MarshalJSON()
		if string(b) != tt.want {
			t.Errorf("%+v -> %s, want %s", tt.v, b, tt.want)
		}
		var back Value
		if err := back.UnmarshalJSON(b); err != nil || back != tt.v {
			t.Errorf("round trip %s -> %+v, %v", b, back, err)
		}
	}
}

func BenchmarkStoreAppend2000(b *testing.B) {
	f := Family{Name: "envoy_cluster_upstream_rq_total", Type: Counter}
	for i := 0; i < 2000; i++ {
		f.Samples = append(f.Samples, Sample{Labels: LabelsFromPairs("envoy_cluster_name", fmt.Sprintf("svc_%d", i)), Value: float64(i)})
	}
	st := NewStore(StoreConfig{History: 900})
	s := &Snapshot{Target: "a", Families: []Family{f}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Time = time.Unix(int64(i+1), 0)
		st.Append(s)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2000, "ns/series")
}

func TestSelectSinceKeepsTheSampleBeforeTheWindow(t *testing.T) {
	st := NewStore(StoreConfig{History: 10})
	for i := int64(1); i <= 6; i++ {
		st.Append(snap("a", i, counter("c", float64(i))))
	}
	tests := []struct {
		since      int64
		wantPoints string
		wantTimes  string
	}{
		{3500, "[{3000 3} {4000 4} {5000 5} {6000 6}]", "[3000 4000 5000 6000]"},
		{3000, "[{3000 3} {4000 4} {5000 5} {6000 6}]", "[3000 4000 5000 6000]"},
		{0, "[{1000 1} {2000 2} {3000 3} {4000 4} {5000 5} {6000 6}]", "[1000 2000 3000 4000 5000 6000]"},
		{9000, "[{6000 6}]", "[6000]"},
	}
	for _, tt := range tests {
		got := st.SelectSince("a", "c", nil, tt.since)
		if len(got) != 1 || fmt.Sprint(got[0].Points) != tt.wantPoints {
			t.Errorf("SelectSince(%d) = %v, want %s", tt.since, got, tt.wantPoints)
		}
		if ts := fmt.Sprint(st.TimesSince("a", tt.since)); ts != tt.wantTimes {
			t.Errorf("TimesSince(%d) = %s, want %s", tt.since, ts, tt.wantTimes)
		}
	}
}

func TestSelectSinceReachesBackOverAGap(t *testing.T) {
	st := NewStore(StoreConfig{History: 10})
	st.Append(snap("a", 1, counter("c", 1), counter("d", 1)))
	st.Append(snap("a", 2, counter("d", 2)))
	st.Append(snap("a", 3, counter("c", 3), counter("d", 3)))
	got := st.SelectSince("a", "c", nil, 2000)
	if len(got) != 1 || fmt.Sprint(got[0].Points) != "[{1000 1} {3000 3}]" {
		t.Errorf("SelectSince over a gap = %v, want the sample before the gap too", got)
	}
}

// The store hashes series keys without building them (flatRef.appendKey);
// they must equal the keys of the built series, or a series would be stored
// under one key and found under another.
func TestFlatKeysMatchBuiltSeries(t *testing.T) {
	labels := []Labels{
		nil,
		LabelsFromPairs("a", "1"),
		LabelsFromPairs("a", "1", "z", "2"),
		LabelsFromPairs("le", "7", "zz", "x"), // an exposed le is replaced, as With does
		LabelsFromPairs("quantile", "q", "a", "b"),
		LabelsFromPairs("m", "1", "n", "2"),
	}
	var fams []Family
	for _, ls := range labels {
		fams = append(fams,
			Family{Name: "h", Type: Histogram, Samples: []Sample{{Labels: ls, Count: 3, Sum: 1.5,
				Buckets: []Bucket{{0.005, 1}, {1e-9, 1}, {2.5e10, 2}, {math.Inf(1), 3}}}}},
			Family{Name: "s", Type: Summary, Samples: []Sample{{Labels: ls, Count: 3, Sum: 1,
				Quantiles: []QuantileValue{{0.5, 1}, {0.99, math.NaN()}}}}},
			Family{Name: "c_total", Type: Counter, Samples: []Sample{{Labels: ls, Value: 4}}},
		)
	}
	snap := &Snapshot{Families: fams}
	var built []FlatSeries
	snap.Flatten(func(fs FlatSeries) {
		fs.Labels = append(Labels(nil), fs.Labels...)
		built = append(built, fs)
	})
	i := 0
	snap.eachFlat(func(r *flatRef) {
		want := built[i].Labels.AppendKey(append([]byte(built[i].Name), 0xff))
		if got := r.appendKey(nil); string(got) != string(want) {
			t.Errorf("series %d (%s%s): key %q, want %q", i, built[i].Name, built[i].Labels, got, want)
		}
		if r.value != built[i].Value && !(math.IsNaN(r.value) && math.IsNaN(built[i].Value)) {
			t.Errorf("series %d: value %v, want %v", i, r.value, built[i].Value)
		}
		i++
	})
	if i != len(built) || i != snap.SeriesCount() {
		t.Errorf("%d keyed series, %d built, SeriesCount %d", i, len(built), snap.SeriesCount())
	}
}

func BenchmarkStoreAppendHistograms(b *testing.B) {
	// 50 histograms of 12 buckets with two labels: 700 flat series, the
	// shape of a retry library's exposition.
	f := Family{Name: "retry_attempt_duration_seconds", Type: Histogram}
	for i := 0; i < 50; i++ {
		var bs []Bucket
		for j := 0; j < 11; j++ {
			bs = append(bs, Bucket{UpperBound: 0.001 * math.Pow(2, float64(j)), Count: float64(j)})
		}
		bs = append(bs, Bucket{UpperBound: math.Inf(1), Count: 11})
		f.Samples = append(f.Samples, Sample{Labels: LabelsFromPairs("dependency", fmt.Sprintf("d%d", i), "outcome", "success"), Count: 11, Sum: 3, Buckets: bs})
	}
	st := NewStore(StoreConfig{History: 900})
	s := &Snapshot{Target: "a", Families: []Family{f}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Time = time.Unix(int64(i+1), 0)
		st.Append(s)
	}
}

func TestForget(t *testing.T) {
	st := NewStore(StoreConfig{History: 10})
	for i := int64(1); i <= 3; i++ {
		st.Append(snap("a", i, counter("c", float64(i))))
		st.Append(snap("b", i, counter("c", float64(i))))
	}
	st.Forget("a")
	st.Forget("nobody") // no-op
	if got := st.Targets(); len(got) != 1 || got[0] != "b" {
		t.Fatalf("targets after Forget(a) = %v, want [b]", got)
	}
	if n := len(st.Times("a")); n != 0 {
		t.Errorf("a still has %d scrapes", n)
	}
	// A target of the same name starts afresh.
	st.Append(snap("a", 9, counter("c", 1)))
	if pts := st.Select("a", "c", nil); len(pts) != 1 || len(pts[0].Points) != 1 {
		t.Errorf("re-added a: %+v", pts)
	}
}
