package model

import (
	"fmt"
	"reflect"
	"slices"
	"unsafe"
)

// Timeline is a row's bins, oldest first, held by field rather than by
// bin: a field absent from every bin costs nothing. A bin's Signals is
// some 650 bytes of which a dialect fills a fifth (an Envoy row has no
// admission, breaker or hedge counts), and a view keeps a timeline for
// every row. At rebuilds a bin; a Timeline is not changed once made.
//
// The nil *Timeline is the empty one.
type Timeline struct {
	n int
	// fields are the Value fields some bin has (indexes into
	// timelineValues), and vals their values, field after field:
	// vals[k*n+i] is fields[k] of bin i.
	fields []uint8
	vals   []Value
	// times are each bin's StartMs, EndMs, SampledFromMs and SampledToMs.
	times []int64
	// strs are the string fields (timelineStrings) when every bin has the
	// same, else strsBy has them per bin.
	strs   [numTimelineStrings]string
	strsBy [][numTimelineStrings]string
	// The remaining fields, per bin; nil when no bin has one.
	settingsOff         [][]string
	nestedIn            [][]Breakdown
	admissionRejectedBy [][]Breakdown
	resultsPerS         []map[string]Value
	// Latency: lat when every bin has the same classes, else latency
	// per bin.
	lat     *timelineLatency
	latency []ByClass[Quantiles]
	// LatencyHist: hist when each class keeps its bounds in every bin,
	// else latencyHist per bin.
	hist        *timelineHist
	latencyHist []ByClass[HistogramWindow]
}

const numTimelineStrings = 4

// timelineStrings are Signals' string fields, in Timeline.strs' order.
func timelineStrings(s *Signals) [numTimelineStrings]*string {
	return [...]*string{&s.Target, &s.Dependency, &s.Dialect, &s.AmplificationBasis}
}

// timelineValues are the offsets in Signals of its Value fields,
// MixedLatency's included; found once by reflection, so that a field
// added to Signals is held without a change here. Every other field must
// be one Timeline holds by name: init panics otherwise.
var timelineValues = func() []uintptr {
	offs, err := valueOffsets(reflect.TypeOf(Signals{}), map[string]bool{
		"Target": true, "Dependency": true, "Dialect": true, "AmplificationBasis": true,
		"StartMs": true, "EndMs": true, "SampledFromMs": true, "SampledToMs": true,
		"SettingsOff": true, "NestedIn": true, "AdmissionRejectedBy": true, "ResultsPerS": true,
		"Latency": true, "LatencyHist": true,
	})
	if err != nil {
		panic(err)
	}
	return offs
}()

// valueOffsets are the offsets in t of its Value fields and of those of
// its struct fields made only of Values; a field of another kind must be
// one of handled's (t's own fields only), else it is an error naming it.
func valueOffsets(t reflect.Type, handled map[string]bool) ([]uintptr, error) {
	valueType := reflect.TypeOf(Value{})
	var offs []uintptr
	var walk func(t reflect.Type, base uintptr, top bool) error
	walk = func(t reflect.Type, base uintptr, top bool) error {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			switch {
			case f.Type == valueType:
				offs = append(offs, base+f.Offset)
			case f.Type.Kind() == reflect.Struct && allValues(f.Type, valueType):
				if err := walk(f.Type, base+f.Offset, false); err != nil {
					return err
				}
			case top && handled[f.Name]:
			default:
				return fmt.Errorf("model: Timeline does not hold %s.%s (%s)", t.Name(), f.Name, f.Type)
			}
		}
		return nil
	}
	if err := walk(t, 0, true); err != nil {
		return nil, err
	}
	if len(offs) > 255 {
		return nil, fmt.Errorf("model: Timeline numbers %s's values in a byte, not %d", t.Name(), len(offs))
	}
	return offs, nil
}

func allValues(t, valueType reflect.Type) bool {
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Type != valueType {
			return false
		}
	}
	return t.NumField() > 0
}

func valueAt(s *Signals, off uintptr) *Value {
	return (*Value)(unsafe.Add(unsafe.Pointer(s), off))
}

// NewTimeline holds bins. It keeps what their slices and maps point to,
// not the bins themselves.
func NewTimeline(bins []Signals) *Timeline {
	return newTimeline(bins, nil)
}

// TimelineBuilder makes a Timeline of bins made afresh and of bins of
// other timelines (a frame reusing its previous frame's final bins): a
// bin taken from a timeline is not made again, its histograms are copied
// as they are held. Reset makes it ready for the next timeline.
type TimelineBuilder struct {
	bins  []Signals
	from  []histSource
	taken bool // some bin came from a compact timeline
}

// Reset empties the builder.
func (b *TimelineBuilder) Reset() {
	clear(b.bins) // the bins' slices and maps: the builder does not keep them
	b.bins, b.from, b.taken = b.bins[:0], b.from[:0], false
}

// Add appends a bin.
func (b *TimelineBuilder) Add(s Signals) {
	b.bins = append(b.bins, s)
	b.from = append(b.from, histSource{})
}

// AddFrom appends bin i of t.
func (b *TimelineBuilder) AddFrom(t *Timeline, i int) {
	b.bins = append(b.bins, Signals{})
	t.into(&b.bins[len(b.bins)-1], i, t.hist == nil)
	src := histSource{}
	if t.hist != nil {
		src, b.taken = histSource{t: t.hist, i: i}, true
	}
	b.from = append(b.from, src)
}

// Len is the number of bins added since Reset.
func (b *TimelineBuilder) Len() int { return len(b.bins) }

// Timeline holds the bins added since Reset.
func (b *TimelineBuilder) Timeline() *Timeline {
	if !b.taken {
		return newTimeline(b.bins, nil)
	}
	return newTimeline(b.bins, b.from)
}

// newTimeline holds bins; from[j], when set, holds bin j's histograms
// (bins[j].LatencyHist is then nil).
func newTimeline(bins []Signals, from []histSource) *Timeline {
	n := len(bins)
	t := &Timeline{n: n}
	if n == 0 {
		return t
	}
	for k, off := range timelineValues {
		for i := range bins {
			if valueAt(&bins[i], off).bits != 0 {
				t.fields = append(t.fields, uint8(k))
				break
			}
		}
	}
	t.vals = make([]Value, len(t.fields)*n)
	for k, f := range t.fields {
		off, col := timelineValues[f], t.vals[k*n:(k+1)*n]
		for i := range bins {
			col[i] = *valueAt(&bins[i], off)
		}
	}
	t.times = make([]int64, 4*n)
	for i := range bins {
		b := &bins[i]
		t.times[4*i], t.times[4*i+1], t.times[4*i+2], t.times[4*i+3] = b.StartMs, b.EndMs, b.SampledFromMs, b.SampledToMs
	}
	for j, p := range timelineStrings(&bins[0]) {
		t.strs[j] = *p
	}
	for i := 1; i < n && t.strsBy == nil; i++ {
		for j, p := range timelineStrings(&bins[i]) {
			if *p != t.strs[j] {
				t.strsBy = make([][numTimelineStrings]string, n)
				break
			}
		}
	}
	if t.strsBy != nil {
		for i := range bins {
			for j, p := range timelineStrings(&bins[i]) {
				t.strsBy[i][j] = *p
			}
		}
	}
	t.settingsOff = column(bins, func(s *Signals) []string { return s.SettingsOff })
	t.nestedIn = column(bins, func(s *Signals) []Breakdown { return s.NestedIn })
	t.admissionRejectedBy = column(bins, func(s *Signals) []Breakdown { return s.AdmissionRejectedBy })
	if t.lat = newTimelineLatency(bins); t.lat == nil {
		t.latency = column(bins, func(s *Signals) ByClass[Quantiles] { return s.Latency })
	}
	for i := range bins {
		if bins[i].ResultsPerS != nil {
			t.resultsPerS = make([]map[string]Value, n)
			for i := range bins {
				t.resultsPerS[i] = bins[i].ResultsPerS
			}
			break
		}
	}
	hist, ok := newTimelineHist(bins, from)
	if ok {
		t.hist = hist
		return t
	}
	// Bounds that change between bins: each bin's histograms as they are.
	if from != nil {
		for j := range from {
			if from[j].t != nil {
				bins[j].LatencyHist = from[j].t.at(from[j].i)
			}
		}
	}
	t.latencyHist = column(bins, func(s *Signals) ByClass[HistogramWindow] { return s.LatencyHist })
	return t
}

// column is field of every bin, nil when no bin's is non-nil.
func column[S ~[]E, E any](bins []Signals, field func(*Signals) S) []S {
	for i := range bins {
		if field(&bins[i]) != nil {
			out := make([]S, len(bins))
			for i := range bins {
				out[i] = field(&bins[i])
			}
			return out
		}
	}
	return nil
}

// String prints the bins, as fmt prints a []Signals.
func (t *Timeline) String() string {
	return fmt.Sprintf("%+v", t.Bins())
}

// Len is the number of bins.
func (t *Timeline) Len() int {
	if t == nil {
		return 0
	}
	return t.n
}

// Edges are bin i's StartMs and EndMs.
func (t *Timeline) Edges(i int) (start, end int64) {
	return t.times[4*i], t.times[4*i+1]
}

// At is bin i.
func (t *Timeline) At(i int) Signals {
	var s Signals
	t.into(&s, i, true)
	return s
}

// BinScratch is a bin read by Timeline.Into, whose histograms are made
// in arrays it keeps from one read to the next.
type BinScratch struct {
	s    Signals
	hist ByClass[HistogramWindow] // arrays of its own, never a timeline's
	lat  ByClass[Quantiles]       // its Latency, when the timeline holds them by column
}

// Into reads bin i into sc and returns it: valid until sc's next Into,
// not to be kept or changed.
func (t *Timeline) Into(sc *BinScratch, i int) *Signals {
	sc.s = Signals{}
	t.intoExceptLatency(&sc.s, i, t.hist == nil)
	if t.lat != nil {
		sc.lat = slices.Grow(sc.lat[:0], len(t.lat.classes))[:len(t.lat.classes)]
		sc.s.Latency = t.lat.into(sc.lat, i, t.n)
	}
	if t.hist != nil {
		sc.hist = t.hist.into(sc.hist, i)
		if len(sc.hist) > 0 {
			sc.s.LatencyHist = sc.hist
		}
	}
	return &sc.s
}

// WithoutHist is the timeline without its bins' LatencyHist, sharing
// the rest: for a reader of the other fields that keeps it after the
// histograms are no longer read (they were most of a timeline's memory).
func (t *Timeline) WithoutHist() *Timeline {
	if t == nil {
		return nil
	}
	c := *t
	c.hist, c.latencyHist = nil, nil
	return &c
}

// AtNoHist is bin i without its LatencyHist (AppendRangeNoHist).
func (t *Timeline) AtNoHist(i int) Signals {
	var s Signals
	t.into(&s, i, false)
	return s
}

// into sets s to bin i; its LatencyHist only when hist is set.
func (t *Timeline) into(s *Signals, i int, hist bool) {
	t.intoExceptLatency(s, i, hist)
	if t.lat != nil {
		s.Latency = t.lat.into(make(ByClass[Quantiles], len(t.lat.classes)), i, t.n)
	}
}

// intoExceptLatency is into but for a Latency held compactly (lat).
func (t *Timeline) intoExceptLatency(s *Signals, i int, hist bool) {
	if i < 0 || i >= t.Len() {
		panic(fmt.Sprintf("model: bin %d of a timeline of %d", i, t.Len()))
	}
	n := t.n
	for k, f := range t.fields {
		*valueAt(s, timelineValues[f]) = t.vals[k*n+i]
	}
	s.StartMs, s.EndMs, s.SampledFromMs, s.SampledToMs = t.times[4*i], t.times[4*i+1], t.times[4*i+2], t.times[4*i+3]
	strs := &t.strs
	if t.strsBy != nil {
		strs = &t.strsBy[i]
	}
	for j, p := range timelineStrings(s) {
		*p = strs[j]
	}
	if t.settingsOff != nil {
		s.SettingsOff = t.settingsOff[i]
	}
	if t.nestedIn != nil {
		s.NestedIn = t.nestedIn[i]
	}
	if t.admissionRejectedBy != nil {
		s.AdmissionRejectedBy = t.admissionRejectedBy[i]
	}
	if t.resultsPerS != nil {
		s.ResultsPerS = t.resultsPerS[i]
	}
	if t.latency != nil {
		s.Latency = t.latency[i]
	}
	if !hist {
		return
	}
	if t.latencyHist != nil {
		s.LatencyHist = t.latencyHist[i]
	}
	if t.hist != nil {
		s.LatencyHist = t.hist.at(i)
	}
}

// Bins are the bins, made afresh. Their slices and maps are the
// timeline's: not to be changed.
func (t *Timeline) Bins() []Signals {
	if t.Len() == 0 {
		return nil
	}
	return t.AppendBins(make([]Signals, 0, t.n))
}

// AppendBins appends the bins to dst.
func (t *Timeline) AppendBins(dst []Signals) []Signals {
	return t.AppendRange(dst, 0, t.Len())
}

// AppendRange appends bins [from, to) to dst.
func (t *Timeline) AppendRange(dst []Signals, from, to int) []Signals {
	return t.appendRange(dst, from, to, true)
}

// AppendRangeNoHist appends bins [from, to) to dst without their
// LatencyHist, which a timeline holds compactly and makes afresh for
// each bin asked: for readers of the other fields.
func (t *Timeline) AppendRangeNoHist(dst []Signals, from, to int) []Signals {
	return t.appendRange(dst, from, to, false)
}

func (t *Timeline) appendRange(dst []Signals, from, to int, hist bool) []Signals {
	if to <= from {
		return dst
	}
	dst = slices.Grow(dst, to-from)
	// The bins' Latency in one array, each its own part of it.
	var lat ByClass[Quantiles]
	nc := 0
	if t.lat != nil {
		nc = len(t.lat.classes)
		lat = make(ByClass[Quantiles], (to-from)*nc)
	}
	for i := from; i < to; i++ {
		dst = append(dst, Signals{})
		s := &dst[len(dst)-1]
		t.intoExceptLatency(s, i, hist)
		if t.lat != nil {
			k := (i - from) * nc
			s.Latency = t.lat.into(lat[k:k+nc:k+nc], i, t.n)
		}
	}
	return dst
}

// timelineLatency holds the bins' Latency when every bin has the same
// classes in the same order: the class names once, and per quantile of
// a class some bin has (its bits not zero) a column of values. A bin's
// Latency took a ByClass of its own, 160 bytes for four classes, most
// of whose quantiles are absent in every bin.
type timelineLatency struct {
	classes []string
	fields  []uint16 // class*3 + quantile (P50, P90, P99)
	vals    []Value  // vals[k*n+i] is fields[k] of bin i
}

// newTimelineLatency holds the bins' Latency; nil when a bin has none
// or its classes differ from the first bin's.
func newTimelineLatency(bins []Signals) *timelineLatency {
	first := bins[0].Latency
	if len(first) == 0 {
		return nil
	}
	for i := range bins {
		l := bins[i].Latency
		if len(l) != len(first) {
			return nil
		}
		for c := range l {
			if l[c].Class != first[c].Class {
				return nil
			}
		}
	}
	tl := &timelineLatency{classes: make([]string, len(first))}
	for c := range first {
		tl.classes[c] = first[c].Class
	}
	for f := range 3 * len(first) {
		for i := range bins {
			if quantile(&bins[i].Latency[f/3].V, f%3).bits != 0 {
				tl.fields = append(tl.fields, uint16(f))
				break
			}
		}
	}
	n := len(bins)
	tl.vals = make([]Value, len(tl.fields)*n)
	for k, f := range tl.fields {
		col := tl.vals[k*n : (k+1)*n]
		for i := range bins {
			col[i] = *quantile(&bins[i].Latency[f/3].V, int(f%3))
		}
	}
	return tl
}

func quantile(q *Quantiles, k int) *Value {
	switch k {
	case 0:
		return &q.P50
	case 1:
		return &q.P90
	}
	return &q.P99
}

// into sets dst (one entry per class) to bin i's Latency of a timeline
// of n bins.
func (tl *timelineLatency) into(dst ByClass[Quantiles], i, n int) ByClass[Quantiles] {
	for c, class := range tl.classes {
		dst[c] = ClassValue[Quantiles]{Class: class}
	}
	for k, f := range tl.fields {
		*quantile(&dst[f/3].V, int(f%3)) = tl.vals[k*n+i]
	}
	return dst
}
