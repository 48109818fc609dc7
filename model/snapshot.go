package model

import (
	"math"
	"strconv"
	"time"
)

// MetricType is the type a family declares in its exposition.
type MetricType int

const (
	Untyped MetricType = iota
	Counter
	Gauge
	Histogram
	Summary
)

func (t MetricType) String() string {
	switch t {
	case Counter:
		return "counter"
	case Gauge:
		return "gauge"
	case Histogram:
		return "histogram"
	case Summary:
		return "summary"
	}
	return "untyped"
}

// Bucket is one cumulative bucket of a classic histogram.
type Bucket struct {
	UpperBound float64 // +Inf for the last bucket
	Count      float64 // cumulative: observations <= UpperBound
}

// QuantileValue is one precomputed quantile of a summary.
type QuantileValue struct {
	Quantile, Value float64
}

// Sample is one series of a family at one scrape. Which fields are used
// depends on the family's type: Value for counter, gauge and untyped;
// Count, Sum and Buckets for histograms; Count, Sum and Quantiles for summaries.
type Sample struct {
	Labels    Labels
	Value     float64
	Count     float64
	Sum       float64
	Buckets   []Bucket        // sorted by UpperBound, cumulative
	Quantiles []QuantileValue // sorted by Quantile
	// TimestampMs is the exposition's own timestamp when it carried one
	// (0 when absent); the scrape time is Snapshot.Time.
	TimestampMs int64
	// CreatedMs is the series' created timestamp (OpenMetrics _created,
	// protobuf created_timestamp) of a counter, histogram or summary, Unix
	// milliseconds; 0 when not exposed. The store uses it to tell a series
	// that started at 0 since the previous scrape.
	CreatedMs int64
	// Baseline marks a series whose first value may hold counts from
	// before the previous scrape (a dialect's difference of counters,
	// first derived when one side appeared beside an older other): the
	// store does not read it as an increase from 0.
	Baseline bool
}

// Family is all samples of one metric name.
type Family struct {
	Name    string
	Help    string
	Type    MetricType
	Samples []Sample
}

// Snapshot is one scrape of one target: what the target exposed at Time.
type Snapshot struct {
	Target   string // the target's name (unique within a session)
	Time     time.Time
	Families []Family
	// ProcessStart is the target's process_start_time_seconds (Unix
	// seconds) when a translator carried it over from the raw exposition;
	// 0 when unknown, and the store then looks for that family in
	// Families. A change between two scrapes is a restart.
	ProcessStart float64
	// Baseline marks a snapshot whose series new to the store must not be
	// read as increases from 0: a dialect began reading families the target
	// already exposed, so its first values hold history of unknown length.
	Baseline bool
	// SetAside lists the dialects the translator set aside on the target,
	// each with the reason ("traefik: mine reads the same families
	// (...)"): a custom mapping replaces a built-in dialect that reads the
	// same families. Nil when none was.
	SetAside []string
}

// MetricProcessStart is the process' start time, the restart signal every
// Prometheus client library exposes.
const MetricProcessStart = "process_start_time_seconds"

// MetricTargetInfo is OpenTelemetry's resource series: its service_name,
// service_namespace and service_instance_id labels say which service a
// target is (analysis.Identities). Dialects carry it through unchanged.
const MetricTargetInfo = "target_info"

// ResourceJob is the job of an OpenTelemetry resource of service, in
// namespace when it has one: namespace/service, "unknown_service" without
// a service name, as the SDKs default it.
func ResourceJob(namespace, service string) string {
	if service == "" {
		service = "unknown_service"
	}
	if namespace != "" {
		return namespace + "/" + service
	}
	return service
}

// ResourceTarget is the target a resource pushed over OTLP becomes: its
// job, then @instance when it has one. analysis.Identities knows a target
// so named as named by its target_info, not by the user.
func ResourceTarget(namespace, service, instance string) string {
	job := ResourceJob(namespace, service)
	if instance != "" {
		return job + "@" + instance
	}
	return job
}

// ProcessStartOf returns the snapshot's process start time: ProcessStart,
// else the first valid sample of process_start_time_seconds; 0 when none.
func (s *Snapshot) ProcessStartOf() float64 {
	if s.ProcessStart > 0 {
		return s.ProcessStart
	}
	for i := range s.Families {
		f := &s.Families[i]
		if f.Name != MetricProcessStart || len(f.Samples) == 0 {
			continue
		}
		if v := f.Samples[0].Value; v > 0 && !math.IsInf(v, 0) {
			return v
		}
	}
	return 0
}

// SeriesCount is the number of flat series the snapshot expands into
// (a histogram with n buckets counts n+2: buckets, _count, _sum).
func (s *Snapshot) SeriesCount() int {
	n := 0
	for i := range s.Families {
		f := &s.Families[i]
		for j := range f.Samples {
			switch f.Type {
			case Histogram:
				n += len(f.Samples[j].Buckets) + 2
			case Summary:
				n += len(f.Samples[j].Quantiles) + 2
			default:
				n++
			}
		}
	}
	return n
}

// FlatSeries is one float series of a snapshot in Prometheus' classic form:
// histograms become name_bucket{le=...}, name_count and name_sum.
type FlatSeries struct {
	Name   string
	Labels Labels
	Type   MetricType // the family's type
	Value  float64
}

// Flatten calls fn for every flat series of the snapshot, in exposition order.
// Label slices passed to fn are freshly built only for histogram and summary
// components; callers must not retain them across calls without copying.
func (s *Snapshot) Flatten(fn func(FlatSeries)) {
	s.eachFlat(func(r *flatRef) { fn(r.series()) })
}

// flatRef is one flat series of a snapshot described without building it:
// the store hashes its key from these parts and builds the FlatSeries (names
// and labels, which allocate) only for a series it has not seen before.
type flatRef struct {
	fam    *Family
	sample *Sample
	suffix string // "", "_bucket", "_count" or "_sum"
	sfx    uint8  // suffix as a number: 0, 1, 2, 3
	// extra is the le or quantile label of a bucket or quantile series.
	extra    string
	extraVal float64
	value    float64
}

// eachFlat calls fn for every flat series, in exposition order; r is reused
// between calls.
func (s *Snapshot) eachFlat(fn func(r *flatRef)) {
	it := flatIter{fams: s.Families}
	for it.next() {
		fn(&it.r)
	}
}

// flatIter walks a snapshot's flat series in exposition order, r holding
// the current one: a loop over it keeps its state in locals, where a
// callback per series (eachFlat) is a call through a closure.
// storeIter (store_iter.go) walks the same series for Append's loop: a
// change to the order here is one there (TestStoreIterEqualsFlatIter).
type flatIter struct {
	fams []Family
	i, j int // family, sample
	k    int // the sample's next component: bucket or quantile, then _count, _sum
	r    flatRef
}

// next moves to the next flat series, false after the last.
func (it *flatIter) next() bool {
	for it.i < len(it.fams) {
		f := &it.fams[it.i]
		if it.j >= len(f.Samples) {
			it.i, it.j, it.k = it.i+1, 0, 0
			continue
		}
		sm := &f.Samples[it.j]
		k := it.k
		var n int        // buckets or quantiles before _count
		var last float64 // the last one's bound: _count and _sum keep it as extraVal, as they always have
		switch f.Type {
		case Histogram:
			if n = len(sm.Buckets); k < n {
				b := sm.Buckets[k]
				it.r = flatRef{fam: f, sample: sm, suffix: "_bucket", sfx: 1, extra: "le", extraVal: b.UpperBound, value: b.Count}
				it.k++
				return true
			}
			if n > 0 {
				last = sm.Buckets[n-1].UpperBound
			}
		case Summary:
			if n = len(sm.Quantiles); k < n {
				q := sm.Quantiles[k]
				it.r = flatRef{fam: f, sample: sm, extra: "quantile", extraVal: q.Quantile, value: q.Value}
				it.k++
				return true
			}
			if n > 0 {
				last = sm.Quantiles[n-1].Quantile
			}
		default:
			it.r = flatRef{fam: f, sample: sm, value: sm.Value}
			it.j, it.k = it.j+1, 0
			return true
		}
		if k == n {
			it.r = flatRef{fam: f, sample: sm, suffix: "_count", sfx: 2, extraVal: last, value: sm.Count}
			it.k++
			return true
		}
		it.r = flatRef{fam: f, sample: sm, suffix: "_sum", sfx: 3, extraVal: last, value: sm.Sum}
		it.j, it.k = it.j+1, 0
		return true
	}
	return false
}

// series builds the flat series r describes.
func (r *flatRef) series() FlatSeries {
	ls := r.sample.Labels
	if r.extra != "" {
		ls = ls.With(r.extra, FormatFloat(r.extraVal))
	}
	return FlatSeries{Name: r.fam.Name + r.suffix, Labels: ls, Type: r.fam.Type, Value: r.value}
}

// appendKey appends the series' store key, byte for byte what
// FlatSeries.Name + 0xff + Labels.AppendKey gives for r.series(), without
// allocating.
func (r *flatRef) appendKey(buf []byte) []byte {
	buf = append(buf, r.fam.Name...)
	buf = append(buf, r.suffix...)
	buf = append(buf, 0xff)
	if r.extra == "" {
		return r.sample.Labels.AppendKey(buf)
	}
	done := false
	for _, l := range r.sample.Labels {
		if !done && l.Name >= r.extra {
			buf = appendFloatLabel(buf, r.extra, r.extraVal)
			done = true
			if l.Name == r.extra {
				continue // With replaces a label of the same name
			}
		}
		buf = append(buf, l.Name...)
		buf = append(buf, 0)
		buf = append(buf, l.Value...)
		buf = append(buf, 0)
	}
	if !done {
		buf = appendFloatLabel(buf, r.extra, r.extraVal)
	}
	return buf
}

func appendFloatLabel(buf []byte, name string, v float64) []byte {
	buf = append(buf, name...)
	buf = append(buf, 0)
	buf = AppendFloat(buf, v)
	return append(buf, 0)
}

// FormatFloat renders a float the way Prometheus renders le and quantile
// label values ("+Inf", "0.005", "1").
func FormatFloat(v float64) string {
	switch {
	case math.IsInf(v, +1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// AppendFloat appends FormatFloat(v) to dst.
func AppendFloat(dst []byte, v float64) []byte {
	switch {
	case math.IsInf(v, +1):
		return append(dst, "+Inf"...)
	case math.IsInf(v, -1):
		return append(dst, "-Inf"...)
	case math.IsNaN(v):
		return append(dst, "NaN"...)
	}
	return strconv.AppendFloat(dst, v, 'g', -1, 64)
}

// ParseFloat is the inverse of FormatFloat.
func ParseFloat(s string) (float64, error) {
	switch s {
	case "+Inf", "Inf", "+inf", "inf":
		return math.Inf(+1), nil
	case "-Inf", "-inf":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(s, 64)
}
