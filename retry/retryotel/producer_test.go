package retryotel

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/retrytop/retrytop/retry"
)

// traffic runs a few operations so that counters, gauges and histograms
// all hold values: successes, a retry, a permanent error and a shed one.
func traffic(t *testing.T, reg prometheus.Registerer) {
	t.Helper()
	lim := retry.NewLimiter(2, 1)
	o, err := retry.New(retry.Config{
		Dependency: "quote", Policy: retry.DefaultPolicy(), Limiter: lim,
		Budget: retry.NewBudget(retry.BudgetConfig{}), Metrics: retry.NewMetrics(reg),
		Rand: func(int64) int64 { return 0 },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 20 {
		_ = o.Do(ctx, retry.Critical, func(context.Context) error { return nil })
	}
	_ = o.Do(ctx, retry.Critical, func(context.Context) error { return errors.New("400") })
	lim.TryAcquire(retry.Sheddable)
	_ = o.Do(ctx, retry.Sheddable, func(context.Context) error { return nil })
	retry.NewServerMetrics(reg)
}

// series flattens a gathered family into label string -> values.
func series(mf *dto.MetricFamily) map[string][]float64 {
	out := map[string][]float64{}
	for _, m := range mf.GetMetric() {
		var key string
		for _, l := range m.GetLabel() {
			key += l.GetName() + "=" + l.GetValue() + ","
		}
		switch {
		case m.Counter != nil:
			out[key] = []float64{m.GetCounter().GetValue()}
		case m.Gauge != nil:
			out[key] = []float64{m.GetGauge().GetValue()}
		case m.Histogram != nil:
			v := []float64{float64(m.GetHistogram().GetSampleCount()), m.GetHistogram().GetSampleSum()}
			for _, b := range m.GetHistogram().GetBucket() {
				v = append(v, b.GetUpperBound(), float64(b.GetCumulativeCount()))
			}
			out[key] = v
		}
	}
	return out
}

// Through OpenTelemetry's own Prometheus exporter, every contract family
// comes back with its name, type, labels and values.
func TestContractRoundTripsThroughOTel(t *testing.T) {
	src := prometheus.NewRegistry()
	traffic(t, src)
	dst := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(dst), otelprom.WithProducer(NewProducer(src)),
		otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		t.Fatal(err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	defer func() { _ = provider.Shutdown(context.Background()) }()

	want, err := src.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got, err := dst.Gather()
	if err != nil {
		t.Fatal(err)
	}
	gotByName := map[string]*dto.MetricFamily{}
	for _, mf := range got {
		gotByName[mf.GetName()] = mf
	}
	if len(want) < 20 {
		t.Fatalf("only %d families in the source", len(want))
	}
	for _, w := range want {
		g := gotByName[w.GetName()]
		if g == nil {
			t.Errorf("%s missing through OTel", w.GetName())
			continue
		}
		if g.GetType() != w.GetType() {
			t.Errorf("%s: type %v through OTel, want %v", w.GetName(), g.GetType(), w.GetType())
		}
		ws, gs := series(w), series(g)
		if len(ws) != len(gs) {
			t.Errorf("%s: %d series through OTel, want %d", w.GetName(), len(gs), len(ws))
		}
		for k, v := range ws {
			if !slices.Equal(gs[k], v) {
				t.Errorf("%s{%s} = %v through OTel, want %v", w.GetName(), k, gs[k], v)
			}
		}
	}
	for name := range gotByName {
		if !slices.ContainsFunc(want, func(mf *dto.MetricFamily) bool { return mf.GetName() == name }) {
			t.Errorf("%s appeared through OTel only", name)
		}
	}
}

func TestProducerHistogramBuckets(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "retry_test_seconds", Buckets: []float64{0.1, 1}})
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "http_requests_total"})
	reg.MustRegister(h, other)
	for _, v := range []float64{0.05, 0.5, 0.7, 5} {
		h.Observe(v)
	}
	sms, err := NewProducer(reg).Produce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(sms) != 1 || len(sms[0].Metrics) != 1 || sms[0].Metrics[0].Name != "retry_test_seconds" {
		t.Fatalf("produced %+v, want only retry_test_seconds", sms)
	}
	dp := sms[0].Metrics[0].Data.(metricdata.Histogram[float64]).DataPoints[0]
	if !slices.Equal(dp.Bounds, []float64{0.1, 1}) || !slices.Equal(dp.BucketCounts, []uint64{1, 2, 1}) || dp.Count != 4 || dp.Sum != 6.25 {
		t.Errorf("point = bounds %v counts %v count %d sum %v; want [0.1 1] [1 2 1] 4 6.25", dp.Bounds, dp.BucketCounts, dp.Count, dp.Sum)
	}
	if dp.StartTime.IsZero() || dp.Time.Before(dp.StartTime) || time.Since(dp.Time) > time.Hour {
		t.Errorf("times %v .. %v", dp.StartTime, dp.Time)
	}
}
