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
	for i := range s.Families {
		f := &s.Families[i]
		for j := range f.Samples {
			sm := &f.Samples[j]
			switch f.Type {
			case Histogram:
				for _, b := range sm.Buckets {
					fn(FlatSeries{Name: f.Name + "_bucket", Labels: sm.Labels.With("le", FormatFloat(b.UpperBound)), Type: f.Type, Value: b.Count})
				}
				fn(FlatSeries{Name: f.Name + "_count", Labels: sm.Labels, Type: f.Type, Value: sm.Count})
				fn(FlatSeries{Name: f.Name + "_sum", Labels: sm.Labels, Type: f.Type, Value: sm.Sum})
			case Summary:
				for _, q := range sm.Quantiles {
					fn(FlatSeries{Name: f.Name, Labels: sm.Labels.With("quantile", FormatFloat(q.Quantile)), Type: f.Type, Value: q.Value})
				}
				fn(FlatSeries{Name: f.Name + "_count", Labels: sm.Labels, Type: f.Type, Value: sm.Count})
				fn(FlatSeries{Name: f.Name + "_sum", Labels: sm.Labels, Type: f.Type, Value: sm.Sum})
			default:
				fn(FlatSeries{Name: f.Name, Labels: sm.Labels, Type: f.Type, Value: sm.Value})
			}
		}
	}
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
