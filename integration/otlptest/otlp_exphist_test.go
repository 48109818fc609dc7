package otlptest

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	otelmetric "go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/otlp"
)

// bucketWidth is the receiver's explicit layout for exponential
// histograms: each bucket a factor of 2^(1/4) (docs/otlp.md).
var bucketWidth = math.Exp2(0.25)

// The SDK's base-2 exponential histogram, pushed by otlpmetrichttp over
// three exports whose range grows (1-10 ms, to 100 ms, to 2 s), becomes
// explicit buckets whose count and sum equal what the same process's
// Prometheus exporter gives for the instrument, and whose quantiles are
// within one bucket width of the recorded values' own, in either
// temporality.
func TestPushedExponentialHistogram(t *testing.T) {
	for _, temp := range []metricdata.Temporality{metricdata.CumulativeTemporality, metricdata.DeltaTemporality} {
		t.Run(temp.String(), func(t *testing.T) {
			ctx := context.Background()
			recv := otlp.NewReceiver(otlp.Options{})
			recvSrv := httptest.NewServer(recv)
			t.Cleanup(recvSrv.Close)
			mp, reg := pushAndPull(t, recvSrv.URL, resource.NewSchemaless(attribute.String("service.name", "svc")),
				otlpmetrichttp.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality { return temp }),
				otlpmetrichttp.WithAggregationSelector(func(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
					if k == sdkmetric.InstrumentKindHistogram {
						return sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}
					}
					return sdkmetric.DefaultAggregationSelector(k)
				}))
			h, err := mp.Meter("test").Float64Histogram("rpc.latency", otelmetric.WithUnit("s"))
			if err != nil {
				t.Fatal(err)
			}
			var values []float64
			lo := 0.001
			for _, hi := range []float64{0.01, 0.1, 2} {
				for i := range 300 { // geometric steps from lo to hi
					v := lo * math.Pow(hi/lo, float64(i)/299)
					h.Record(ctx, v)
					values = append(values, v)
				}
				lo = hi
				if err := mp.ForceFlush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if rf := recv.Refused(); len(rf) != 0 {
				t.Fatalf("the receiver refused %+v", rf)
			}
			buckets, count, sum := pushedHistogram(t, recv, "svc", "rpc_latency_seconds")
			wantCount, wantSum := scrapedHistogram(t, reg, "rpc_latency_seconds")
			if count != float64(len(values)) || count != wantCount || math.Abs(sum-wantSum) > 1e-9*wantSum {
				t.Errorf("pushed count %v sum %v, scraped count %v sum %v (recorded %d)", count, sum, wantCount, wantSum, len(values))
			}
			slices.Sort(values)
			for _, q := range []float64{0.5, 0.9, 0.99} {
				truth := values[int(math.Ceil(q*float64(len(values))))-1]
				got, ok := analysis.HistogramQuantile(q, buckets)
				if !ok || got > truth*bucketWidth || got < truth/bucketWidth {
					t.Errorf("p%v = %v (%v), recorded %v: want within a factor of %.3f", q*100, got, ok, truth, bucketWidth)
				}
			}
		})
	}
}

// pushedHistogram reads family's buckets, count and sum from target's
// exposition at the receiver.
func pushedHistogram(t *testing.T, recv *otlp.Receiver, target, family string) (buckets []model.Bucket, count, sum float64) {
	t.Helper()
	srv := httptest.NewServer(recv.Expositions())
	defer srv.Close()
	resp, err := http.Get(srv.URL + otlp.MetricsPath(target))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		name, value, ok := strings.Cut(line, " ")
		v, err := strconv.ParseFloat(value, 64)
		if !ok || err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(name, family+`_bucket{le="`):
			le, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(name, family+`_bucket{le="`), `"}`), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			buckets = append(buckets, model.Bucket{UpperBound: le, Count: v})
		case name == family+"_count":
			count = v
		case name == family+"_sum":
			sum = v
		}
	}
	if len(buckets) == 0 {
		t.Fatalf("no %s in\n%s", family, body)
	}
	return buckets, count, sum
}

// scrapedHistogram is family's count and sum from the Prometheus
// exporter.
func scrapedHistogram(t *testing.T, reg *prometheus.Registry, family string) (count, sum float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == family && len(mf.GetMetric()) == 1 {
			h := mf.GetMetric()[0].GetHistogram()
			return float64(h.GetSampleCount()), h.GetSampleSum()
		}
	}
	t.Fatalf("no %s scraped", family)
	return 0, 0
}
