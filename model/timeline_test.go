package model

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fullBin is a bin with every field set, each Value to its own number.
func fullBin(i int) Signals {
	s := Signals{Target: "app", Dependency: "db", Dialect: "envoy", AmplificationBasis: AmplificationAdmitted,
		StartMs: int64(i) * 10_000, EndMs: int64(i+1) * 10_000, SampledFromMs: int64(i)*10_000 + 300, SampledToMs: int64(i+1)*10_000 + 300,
		SettingsOff:         []string{"off"},
		NestedIn:            []Breakdown{{Key: "outer", PerS: 1}},
		AdmissionRejectedBy: []Breakdown{{Key: "shed", PerS: 2}},
		ResultsPerS:         map[string]Value{"ok": Some(3)},
		Latency:             ByClass[Quantiles]{{Class: ClassSuccess, V: Quantiles{P50: Some(0.1)}}},
		LatencyHist:         ByClass[HistogramWindow]{{Class: ClassSuccess, V: HistogramWindow{Buckets: []Bucket{{UpperBound: 1, Count: 4}}, Count: 4}}},
	}
	for k, off := range timelineValues {
		*valueAt(&s, off) = Some(float64(1000*i + k))
	}
	return s
}

func TestTimelineHoldsEveryField(t *testing.T) {
	// The test's own reach: every Value of Signals, MixedLatency's too.
	if n := reflect.TypeOf(Signals{}).NumField(); len(timelineValues) < n-14 {
		t.Fatalf("%d values of %d fields", len(timelineValues), n)
	}
	bins := []Signals{fullBin(0), fullBin(1), fullBin(2)}
	bins[1].Dialect = "native" // the strings differ in one bin
	bins[2].SettingsOff, bins[2].ResultsPerS = nil, nil
	bins[2].MixedLatency.P99 = Absent
	tl := NewTimeline(bins)
	if got := tl.Bins(); !reflect.DeepEqual(got, bins) {
		t.Fatalf("bins back:\n got %+v\nwant %+v", got, bins)
	}
	if tl.Len() != 3 || len(tl.fields) != len(timelineValues) {
		t.Errorf("Len %d, %d value columns, want 3 and %d", tl.Len(), len(tl.fields), len(timelineValues))
	}
	for i := range bins {
		if got := tl.At(i); !reflect.DeepEqual(got, bins[i]) {
			t.Errorf("At(%d) = %+v, want %+v", i, got, bins[i])
		}
		if s, e := tl.Edges(i); s != bins[i].StartMs || e != bins[i].EndMs {
			t.Errorf("Edges(%d) = %d, %d", i, s, e)
		}
	}
	if got := tl.AppendRange([]Signals{{}}, 1, 3); !reflect.DeepEqual(got, []Signals{{}, bins[1], bins[2]}) {
		t.Errorf("AppendRange(1, 3) = %+v", got)
	}
}

// A field absent from every bin takes no column, and the strings one copy.
func TestTimelineSparse(t *testing.T) {
	bins := make([]Signals, 30)
	for i := range bins {
		bins[i] = Signals{Target: "app", Dependency: "db", StartMs: int64(i), EndMs: int64(i + 1),
			OriginalsPerS: Some(float64(i)), AttemptsPerS: Some(2 * float64(i))}
	}
	bins[4].OriginalsPerS = Absent // absent in one bin: still a column
	bins[7].EffectiveSuccess = Some(0)
	tl := NewTimeline(bins)
	if len(tl.fields) != 3 || len(tl.vals) != 3*30 || tl.strsBy != nil || tl.latency != nil || tl.resultsPerS != nil {
		t.Errorf("%d value columns (%d values), strings per bin %v, latency %v: want 3 columns of 30, no more",
			len(tl.fields), len(tl.vals), tl.strsBy != nil, tl.latency != nil)
	}
	if got := tl.Bins(); !reflect.DeepEqual(got, bins) {
		t.Fatalf("bins back:\n got %+v\nwant %+v", got, bins)
	}
	if got := tl.At(4).OriginalsPerS; got.OK() {
		t.Errorf("bin 4 originals %v, want absent", got)
	}
	if got := tl.At(7).EffectiveSuccess; got != Some(0) {
		t.Errorf("bin 7 effective success %v, want a present 0", got)
	}
}

func TestTimelineEmpty(t *testing.T) {
	var nilTl *Timeline
	for name, tl := range map[string]*Timeline{"nil": nilTl, "no bins": NewTimeline(nil)} {
		if tl.Len() != 0 || tl.Bins() != nil || len(tl.AppendBins(nil)) != 0 {
			t.Errorf("%s: Len %d, Bins %v", name, tl.Len(), tl.Bins())
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("At past the end did not panic")
		}
	}()
	NewTimeline([]Signals{{}}).At(1)
}

// Frames are compared by their printing: a timeline prints its bins.
func TestTimelineString(t *testing.T) {
	bins := []Signals{{Target: "a", OriginalsPerS: Some(2)}}
	if got, want := fmt.Sprintf("%+v", map[Key]*Timeline{{}: NewTimeline(bins)}), fmt.Sprintf("%+v", map[Key][]Signals{{}: bins}); got != want {
		t.Errorf("printed %s, want %s", got, want)
	}
}

// histBin is a bin whose latency histograms are those of classes, with
// bounds and counts of its own number.
func histBin(i int, bounds []float64, classes ...string) Signals {
	s := Signals{Target: "app", Dependency: "db", StartMs: int64(i), EndMs: int64(i + 1), OriginalsPerS: Some(float64(i))}
	for c, class := range classes {
		h := HistogramWindow{Count: float64(10*i + c), Sum: float64(i) / 4}
		for k, b := range bounds {
			h.Buckets = append(h.Buckets, Bucket{UpperBound: b, Count: float64(i + c + k)})
		}
		s.LatencyHist.Set(class, h)
	}
	return s
}

func TestTimelineHistograms(t *testing.T) {
	b3 := []float64{0.1, 1, math.Inf(1)}
	for _, tc := range []struct {
		name    string
		bins    []Signals
		compact bool
	}{
		{"classes come and go", []Signals{histBin(0, b3, ClassSuccess), histBin(1, b3), histBin(2, b3, ClassFailure, ClassSuccess),
			histBin(3, b3, ClassFastFailure)}, true},
		{"bounds change", []Signals{histBin(0, b3, ClassSuccess), histBin(1, b3[:2], ClassSuccess)}, false},
		{"bounds move", []Signals{histBin(0, b3, ClassSuccess), histBin(1, []float64{0.2, 1, math.Inf(1)}, ClassSuccess)}, false},
		{"an empty histogram", []Signals{histBin(0, b3, ClassSuccess), {LatencyHist: ByClass[HistogramWindow]{}}}, false},
		{"a class without buckets", []Signals{histBin(0, nil, ClassSuccess)}, false},
		{"none", []Signals{histBin(0, b3), histBin(1, b3)}, true},
	} {
		tl := NewTimeline(tc.bins)
		if got := tl.Bins(); !reflect.DeepEqual(got, tc.bins) {
			t.Errorf("%s: bins back:\n got %+v\nwant %+v", tc.name, got, tc.bins)
		}
		if compact := tl.latencyHist == nil; compact != tc.compact {
			t.Errorf("%s: held compactly %v, want %v", tc.name, compact, tc.compact)
		}
		bare := tl.AppendRangeNoHist(nil, 0, tl.Len())
		for i := range bare {
			want := tc.bins[i]
			want.LatencyHist = nil
			if !reflect.DeepEqual(bare[i], want) {
				t.Errorf("%s: bin %d without histograms %+v, want %+v", tc.name, i, bare[i], want)
			}
		}
		// WithoutHist holds none of them, and reads every other field.
		nh := tl.WithoutHist()
		if nh.hist != nil || nh.latencyHist != nil {
			t.Errorf("%s: WithoutHist holds histograms", tc.name)
		}
		if got := nh.Bins(); !reflect.DeepEqual(got, bare) {
			t.Errorf("%s: WithoutHist's bins\n got %+v\nwant %+v", tc.name, got, bare)
		}
		if got := tl.Bins(); !reflect.DeepEqual(got, tc.bins) {
			t.Errorf("%s: the timeline lost its histograms to WithoutHist", tc.name)
		}
	}
}

// A timeline built from another's bins and new ones is the timeline of
// all of them, and shares the other's bounds.
func TestTimelineBuilder(t *testing.T) {
	b3 := []float64{0.1, 1, math.Inf(1)}
	old := []Signals{histBin(0, b3, ClassSuccess), histBin(1, b3, ClassSuccess, ClassFailure), histBin(2, b3)}
	prev := NewTimeline(old)
	for _, tc := range []struct {
		name    string
		fresh   Signals
		compact bool
	}{
		{"same bounds", histBin(3, b3, ClassFastFailure, ClassSuccess), true},
		{"other bounds", histBin(3, b3[1:], ClassSuccess), false},
	} {
		var b TimelineBuilder
		b.Add(Signals{Target: "discarded"})
		b.Reset()
		for i := 1; i < 3; i++ {
			b.AddFrom(prev, i)
		}
		b.Add(tc.fresh)
		tl := b.Timeline()
		want := []Signals{old[1], old[2], tc.fresh}
		if got := tl.Bins(); b.Len() != 3 || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %d bins:\n got %+v\nwant %+v", tc.name, b.Len(), got, want)
		}
		if compact := tl.latencyHist == nil; compact != tc.compact {
			t.Errorf("%s: held compactly %v, want %v", tc.name, compact, tc.compact)
		}
		if tc.compact && &tl.hist.bounds[slices.Index(tl.hist.classes, ClassSuccess)][0] != &prev.hist.bounds[slices.Index(prev.hist.classes, ClassSuccess)][0] {
			t.Errorf("%s: the success bounds are a copy", tc.name)
		}
	}
}

// Into reads what At reads, makes a compact timeline's histograms in the
// scratch's own arrays (no allocation once they have room) and never
// writes into a timeline's.
func TestTimelineInto(t *testing.T) {
	b3 := []float64{0.1, 1, math.Inf(1)}
	compact := NewTimeline([]Signals{histBin(0, b3, ClassSuccess, ClassFailure), histBin(1, b3), histBin(2, b3, ClassSuccess)})
	perBin := []Signals{histBin(0, b3, ClassSuccess), histBin(1, b3[:2], ClassSuccess)}
	asIs := NewTimeline(perBin) // bounds that change: held per bin
	if asIs.hist != nil || compact.hist == nil {
		t.Fatal("the fixtures are not one compact and one per-bin timeline")
	}
	latBins := []Signals{histBin(0, b3, ClassSuccess), histBin(1, b3, ClassSuccess)}
	for i := range latBins {
		latBins[i].Latency = ByClass[Quantiles]{{Class: ClassSuccess, V: Quantiles{P99: Some(float64(i) + 0.5)}}, {Class: ClassFailure}}
	}
	withLat := NewTimeline(latBins) // latency quantiles held by column
	if withLat.lat == nil {
		t.Fatal("the latency fixture is not held by column")
	}
	var sc BinScratch
	for _, step := range []struct {
		tl *Timeline
		i  int
	}{{asIs, 0}, {compact, 0}, {compact, 1}, {asIs, 1}, {compact, 2}, {compact, 0}, {withLat, 1}, {withLat, 0}} {
		if got, want := *step.tl.Into(&sc, step.i), step.tl.At(step.i); !reflect.DeepEqual(got, want) {
			t.Errorf("Into(%d) = %+v, want %+v", step.i, got, want)
		}
	}
	// perBin's slices are the timeline's: compare with bins made again.
	if got, want := asIs.Bins(), []Signals{histBin(0, b3, ClassSuccess), histBin(1, b3[:2], ClassSuccess)}; !reflect.DeepEqual(got, want) {
		t.Errorf("reading into a scratch changed a timeline's bins: %+v", got)
	}
	if n := testing.AllocsPerRun(20, func() {
		for i := range compact.Len() {
			compact.Into(&sc, i)
		}
		for i := range withLat.Len() {
			withLat.Into(&sc, i)
		}
	}); n != 0 {
		t.Errorf("%v allocations a pass once the scratch has room, want 0", n)
	}
}

// A slice or map field set only in a later bin is held, and a builder
// mixing bins of timelines held either way, or of two compact timelines
// whose bounds differ, gives back every bin as it was.
func TestTimelineLaterFieldsAndMixedSources(t *testing.T) {
	b3, moved := []float64{0.1, 1, math.Inf(1)}, []float64{0.2, 1, math.Inf(1)}
	late := []Signals{{Target: "a", StartMs: 0, EndMs: 1}, {Target: "a", StartMs: 1, EndMs: 2,
		SettingsOff: []string{"x"}, NestedIn: []Breakdown{{Key: "o"}}, AdmissionRejectedBy: []Breakdown{{Key: "r"}},
		ResultsPerS: map[string]Value{"ok": Some(1)}, Latency: ByClass[Quantiles]{{Class: ClassSuccess}}}}
	if got := NewTimeline(late).Bins(); !reflect.DeepEqual(got, late) {
		t.Errorf("fields set in the second bin only:\n got %+v\nwant %+v", got, late)
	}

	fallback := NewTimeline([]Signals{histBin(0, b3, ClassSuccess), histBin(1, b3[:2], ClassSuccess)})
	compact, other := NewTimeline([]Signals{histBin(2, b3, ClassSuccess)}), NewTimeline([]Signals{histBin(3, moved, ClassSuccess)})
	if fallback.hist != nil || compact.hist == nil || other.hist == nil {
		t.Fatal("fixtures: one timeline per bin, two compact")
	}
	for _, tc := range []struct {
		name string
		add  func(b *TimelineBuilder)
		want []Signals
	}{
		{"a per-bin timeline's bins and a fresh one", func(b *TimelineBuilder) {
			b.AddFrom(fallback, 0)
			b.AddFrom(fallback, 1)
			b.Add(histBin(4, b3, ClassSuccess))
		}, []Signals{histBin(0, b3, ClassSuccess), histBin(1, b3[:2], ClassSuccess), histBin(4, b3, ClassSuccess)}},
		{"two compact timelines of other bounds", func(b *TimelineBuilder) {
			b.AddFrom(compact, 0)
			b.AddFrom(other, 0)
		}, []Signals{histBin(2, b3, ClassSuccess), histBin(3, moved, ClassSuccess)}},
		{"a fresh bin, then a compact one of other bounds", func(b *TimelineBuilder) {
			b.Add(histBin(4, b3, ClassSuccess))
			b.AddFrom(other, 0)
		}, []Signals{histBin(4, b3, ClassSuccess), histBin(3, moved, ClassSuccess)}},
	} {
		var b TimelineBuilder
		tc.add(&b)
		if got := b.Timeline().Bins(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// A Signals field of a kind Timeline does not hold stops the program at
// init, naming it, instead of being dropped from every bin: what init
// runs, on structs with such a field.
func TestTimelineRefusesFieldsItDoesNotHold(t *testing.T) {
	type inner struct {
		A Value
		N int
	}
	for _, c := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeOf(struct {
			V     Value
			Count int
		}{}), "does not hold .Count (int)"},
		{reflect.TypeOf(struct {
			V  Value
			In inner // not only Values: not walked into
		}{}), "does not hold .In (model.inner)"},
		{reflect.TypeOf(struct {
			V   Value
			Tag string // a string Timeline holds by name only at the top
		}{}), "does not hold .Tag (string)"},
	} {
		if _, err := valueOffsets(c.typ, map[string]bool{"Target": true}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want it to say %q", c.typ, err, c.want)
		}
	}
	offs, err := valueOffsets(reflect.TypeOf(struct {
		Target string
		A, B   Value
	}{}), map[string]bool{"Target": true})
	if err != nil || len(offs) != 2 {
		t.Errorf("a handled field and two Values: %v, %v", offs, err)
	}
}

// latencyBin is a bin whose Latency has classes, only the first of them
// with quantiles.
func latencyBin(i int, classes ...string) Signals {
	s := Signals{Target: "app", Dependency: "db", StartMs: int64(i), EndMs: int64(i + 1)}
	for c, class := range classes {
		q := Quantiles{}
		if c == 0 {
			q = Quantiles{P50: Some(float64(i)), P90: Some(2 * float64(i)), P99: Some(3 * float64(i))}
		}
		s.Latency.Set(class, q)
	}
	return s
}

// Bins with the same latency classes hold the names once and a column
// per quantile some bin has: the class with quantiles in 40 bins is 3
// columns of 40 values, the three without any none.
func TestTimelineLatencyCompact(t *testing.T) {
	classes := []string{"", ClassFailure, ClassFastFailure, ClassSuccess}
	same := make([]Signals, 40)
	for i := range same {
		same[i] = latencyBin(i, classes...)
	}
	same[5].Latency[0].V.P90 = Absent // absent in one bin: still a column
	differ := []Signals{latencyBin(0, classes...), latencyBin(1, ClassSuccess), latencyBin(2)}
	for _, tc := range []struct {
		name    string
		bins    []Signals
		compact bool
		vals    int
	}{
		{"same classes", same, true, 3 * 40},
		{"classes differ", differ, false, 0},
		{"none", []Signals{latencyBin(0), latencyBin(1)}, false, 0},
	} {
		tl := NewTimeline(tc.bins)
		if compact := tl.lat != nil; compact != tc.compact {
			t.Fatalf("%s: held compactly %v, want %v", tc.name, compact, tc.compact)
		}
		if tc.compact {
			if tl.latency != nil || len(tl.lat.classes) != len(classes) || len(tl.lat.vals) != tc.vals {
				t.Errorf("%s: %d per-bin latencies, %d classes, %d values; want none, %d and %d",
					tc.name, len(tl.latency), len(tl.lat.classes), len(tl.lat.vals), len(classes), tc.vals)
			}
		}
		if got := tl.Bins(); !reflect.DeepEqual(got, tc.bins) {
			t.Errorf("%s: bins back:\n got %+v\nwant %+v", tc.name, got, tc.bins)
		}
		for i := range tc.bins {
			if got := tl.At(i); !reflect.DeepEqual(got, tc.bins[i]) {
				t.Errorf("%s: At(%d) = %+v, want %+v", tc.name, i, got, tc.bins[i])
			}
		}
		// A range's bins each have their own part of one array: one
		// changed or grown leaves the next and the timeline as they were.
		if r := tl.AppendRangeNoHist(nil, 1, tl.Len()); tc.compact {
			r[0].Latency[0].V.P50 = Some(-1)
			r[0].Latency = append(r[0].Latency, ClassValue[Quantiles]{Class: "x"})
			if !reflect.DeepEqual(r[1], tc.bins[2]) || !reflect.DeepEqual(tl.At(1), tc.bins[1]) {
				t.Errorf("%s: a bin's Latency changed another's", tc.name)
			}
		}
	}
}
