// Package retryotel exports the retry metric contract (docs/metrics.md)
// through OpenTelemetry, beside Prometheus, under the same names and
// labels, so a service that ships its metrics by OTLP shows the same
// families to retrytop.
//
// Package retry counts with prometheus/client_golang only; this package
// reads those counts at collection time and hands them to an OpenTelemetry
// SDK reader as a metric.Producer, so package retry gains no dependency
// and Do pays nothing for the second export:
//
//	reg := prometheus.NewRegistry()
//	metrics := retry.NewMetrics(reg)          // and retry.NewServerMetrics(reg)
//	reader := metric.NewPeriodicReader(otlpExporter,
//		metric.WithProducer(retryotel.NewProducer(reg)))
//	provider := metric.NewMeterProvider(metric.WithReader(reader))
//
// Counters become cumulative monotonic Sums, gauges Gauges and histograms
// explicit-bucket Histograms with the contract's bucket bounds. Names keep
// their Prometheus form (retry_attempts_total), so an OpenTelemetry
// Prometheus exporter writes them back unchanged. Only families named
// retry_* are exported; the registry's others are left to whatever
// already exports them.
package retryotel

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// ScopeName is the instrumentation scope of the exported metrics.
const ScopeName = "github.com/retrytop/retrytop/retry"

// Producer is a metric.Producer of the retry_* families a Gatherer holds.
type Producer struct {
	g     prometheus.Gatherer
	start time.Time
}

var _ metric.Producer = (*Producer)(nil)

// NewProducer returns a Producer reading g, usually the registry that
// retry.NewMetrics registered on. The cumulative series' start time is the
// Producer's creation, or a counter's own created timestamp when it has
// one.
func NewProducer(g prometheus.Gatherer) *Producer {
	return &Producer{g: g, start: time.Now()}
}

// Produce implements metric.Producer.
func (p *Producer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	mfs, err := p.g.Gather()
	if err != nil && len(mfs) == 0 {
		return nil, err
	}
	now := time.Now()
	sm := metricdata.ScopeMetrics{Scope: instrumentation.Scope{Name: ScopeName}}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "retry_") {
			continue
		}
		m := metricdata.Metrics{Name: mf.GetName(), Description: mf.GetHelp()}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			sum := metricdata.Sum[float64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true}
			for _, s := range mf.GetMetric() {
				start := p.start
				if ct := s.GetCounter().GetCreatedTimestamp(); ct != nil {
					start = ct.AsTime()
				}
				sum.DataPoints = append(sum.DataPoints, metricdata.DataPoint[float64]{
					Attributes: attrs(s), StartTime: start, Time: now, Value: s.GetCounter().GetValue(),
				})
			}
			m.Data = sum
		case dto.MetricType_GAUGE:
			var g metricdata.Gauge[float64]
			for _, s := range mf.GetMetric() {
				g.DataPoints = append(g.DataPoints, metricdata.DataPoint[float64]{
					Attributes: attrs(s), Time: now, Value: s.GetGauge().GetValue(),
				})
			}
			m.Data = g
		case dto.MetricType_HISTOGRAM:
			h := metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality}
			for _, s := range mf.GetMetric() {
				h.DataPoints = append(h.DataPoints, histogramPoint(s, p.start, now))
			}
			m.Data = h
		default:
			continue // the contract has no other types
		}
		sm.Metrics = append(sm.Metrics, m)
	}
	if len(sm.Metrics) == 0 {
		return nil, err
	}
	return []metricdata.ScopeMetrics{sm}, err
}

// histogramPoint turns Prometheus's cumulative buckets into OpenTelemetry's
// per-bucket counts; the +Inf bucket is the count above the last bound.
func histogramPoint(s *dto.Metric, start, now time.Time) metricdata.HistogramDataPoint[float64] {
	ph := s.GetHistogram()
	if ct := ph.GetCreatedTimestamp(); ct != nil {
		start = ct.AsTime()
	}
	dp := metricdata.HistogramDataPoint[float64]{
		Attributes: attrs(s), StartTime: start, Time: now,
		Count: ph.GetSampleCount(), Sum: ph.GetSampleSum(),
	}
	var below uint64
	for _, b := range ph.GetBucket() {
		if math.IsInf(b.GetUpperBound(), +1) {
			continue
		}
		dp.Bounds = append(dp.Bounds, b.GetUpperBound())
		dp.BucketCounts = append(dp.BucketCounts, b.GetCumulativeCount()-below)
		below = b.GetCumulativeCount()
	}
	dp.BucketCounts = append(dp.BucketCounts, dp.Count-below)
	return dp
}

func attrs(s *dto.Metric) attribute.Set {
	kvs := make([]attribute.KeyValue, 0, len(s.GetLabel()))
	for _, l := range s.GetLabel() {
		kvs = append(kvs, attribute.String(l.GetName(), l.GetValue()))
	}
	return attribute.NewSet(kvs...)
}
