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
}

// MetricProcessStart is the process' start time, the restart signal every
// Prometheus client library exposes.
const MetricProcessStart = "process_start_time_seconds"

// MetricTargetInfo is OpenTelemetry's resource series: its service_name,
// service_namespace and service_instance_id labels say which service a
// target is (analysis.Identities). Dialects carry it through unchanged.
const MetricTargetInfo = "target_info"

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
	// extra is the le or quantile label of a bucket or quantile series.
	extra    string
	extraVal float64
	value    float64
}

// eachFlat calls fn for every flat series, in exposition order; r is reused
// between calls.
func (s *Snapshot) eachFlat(fn func(r *flatRef)) {
	var r flatRef
	for i := range s.Families {
		f := &s.Families[i]
		for j := range f.Samples {
			sm := &f.Samples[j]
			r = flatRef{fam: f, sample: sm}
			switch f.Type {
			case Histogram:
				r.suffix, r.extra = "_bucket", "le"
				for _, b := range sm.Buckets {
					r.extraVal, r.value = b.UpperBound, b.Count
					fn(&r)
				}
			case Summary:
				r.extra = "quantile"
				for _, q := range sm.Quantiles {
					r.extraVal, r.value = q.Quantile, q.Value
					fn(&r)
				}
			default:
				r.value = sm.Value
				fn(&r)
				continue
			}
			r.extra = ""
			r.suffix, r.value = "_count", sm.Count
			fn(&r)
			r.suffix, r.value = "_sum", sm.Sum
			fn(&r)
		}
	}
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
