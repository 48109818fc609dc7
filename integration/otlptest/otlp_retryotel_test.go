package otlptest

import (
	"context"
	"errors"
	"math"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/otlp"
	"github.com/retrytop/retrytop/retry"
	"github.com/retrytop/retrytop/retry/retryotel"
)

// retry's own OpenTelemetry bridge (retryotel), pushed over OTLP by
// otlpmetrichttp, reads as the same registry scraped: originals,
// attempts, retries and temporary errors equal, each operation failing
// its first attempt.
func TestRetryotelPushedEqualsScraped(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	o, err := retry.New(retry.Config{Dependency: "quote", Policy: retry.DefaultPolicy(), Metrics: retry.NewMetrics(reg),
		Classify: func(error) retry.Class { return retry.Temporary }, Rand: func(int64) int64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	op := func() {
		tries := 0
		_ = o.Do(ctx, retry.Critical, func(context.Context) error {
			if tries++; tries == 1 {
				return errors.New("unavailable")
			}
			return nil
		})
	}
	recv := otlp.NewReceiver(otlp.Options{})
	recvSrv := httptest.NewServer(recv)
	t.Cleanup(recvSrv.Close)
	expoSrv := httptest.NewServer(recv.Expositions())
	t.Cleanup(expoSrv.Close)
	push, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(recvSrv.URL+"/v1/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(resource.NewSchemaless(attribute.String("service.name", "quotes"))),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(push, sdkmetric.WithProducer(retryotel.NewProducer(reg)), sdkmetric.WithInterval(time.Hour))))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	metrics := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(metrics.Close)

	r := newRig(t, mp, metrics.URL, expoSrv.URL+otlp.MetricsPath("quotes"))
	op() // every series exists before the first scrape
	start := r.clock.now
	r.scrapeBoth()
	const ops = 50
	for range ops {
		op()
	}
	r.clock.now = start.Add(10 * time.Second)
	r.scrapeBoth()
	if rf := recv.Refused(); len(rf) != 0 {
		t.Fatalf("the receiver refused %+v", rf)
	}
	sig := r.signals(start)
	for _, c := range []struct {
		what string
		get  func(model.Signals) model.Value
		want float64
	}{
		{"originals", func(s model.Signals) model.Value { return s.OriginalsPerS }, ops},
		{"attempts", func(s model.Signals) model.Value { return s.AttemptsPerS }, 2 * ops},
		{"retries", func(s model.Signals) model.Value { return s.RetriesPerS }, ops},
		{"temporary errors", func(s model.Signals) model.Value { return s.TemporaryErrorsPerS }, ops},
	} {
		for _, name := range []string{"scraped", "pushed"} {
			if v := c.get(sig[name]); !v.OK() || math.Abs(v.V()*10-c.want) > 1e-9*c.want {
				t.Errorf("%s %s = %v over 10 s, want %.0f", name, c.what, v, c.want)
			}
		}
	}
}
