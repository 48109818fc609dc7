package otlptest

import (
	"context"
	"math"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelmetric "go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/otlp"
)

// Emitters whose instruments only an OpenTelemetry SDK of another
// language writes (Polly 8 in .NET, the AWS SDKs' smithy meters), stood in
// for by the Go SDK with their exact instrument names, units and
// attributes (Polly's TelemetryListenerImpl; aws-sdk-go-v2's
// aws/retry/metrics.go and the SDKs' observability pages): pushed over
// OTLP they read through their dialects as the same process scraped
// through the Prometheus exporter, and as the calls made.
func TestForeignEmittersPushedEqualScraped(t *testing.T) {
	const ops = 50
	for _, c := range []struct {
		name    string
		emit    func(t *testing.T, m otelmetric.Meter) // ops operations
		dialect string
		want    map[string]float64 // per 10 s
	}{
		{"polly", emitPolly, "polly", map[string]float64{"originals": ops, "attempts": 2 * ops, "retries": ops, "temporary errors": ops}},
		{"aws-sdk", emitAWS, "aws-sdk", map[string]float64{"originals": ops, "attempts": ops + ops/5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			recv := otlp.NewReceiver(otlp.Options{})
			recvSrv := httptest.NewServer(recv)
			t.Cleanup(recvSrv.Close)
			expoSrv := httptest.NewServer(recv.Expositions())
			t.Cleanup(expoSrv.Close)
			mp, reg := pushAndPull(t, recvSrv.URL, resource.NewSchemaless(attribute.String("service.name", c.name)))
			metrics := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
			t.Cleanup(metrics.Close)
			m := mp.Meter(c.name)
			r := newRig(t, mp, metrics.URL, expoSrv.URL+otlp.MetricsPath(c.name))
			c.emit(t, m) // every series exists before the first scrape
			start := r.clock.now
			r.scrapeBoth()
			c.emit(t, m)
			r.clock.now = start.Add(10 * time.Second)
			r.scrapeBoth()
			if rf := recv.Refused(); len(rf) != 0 {
				t.Fatalf("the receiver refused %+v", rf)
			}
			for _, st := range r.scraper.Statuses() {
				if st.Dialect != c.dialect {
					t.Errorf("%s read with %q, want %s", st.Name, st.Dialect, c.dialect)
				}
			}
			sig := r.signals(start)
			get := map[string]func(model.Signals) model.Value{
				"originals":        func(s model.Signals) model.Value { return s.OriginalsPerS },
				"attempts":         func(s model.Signals) model.Value { return s.AttemptsPerS },
				"retries":          func(s model.Signals) model.Value { return s.RetriesPerS },
				"temporary errors": func(s model.Signals) model.Value { return s.TemporaryErrorsPerS },
			}
			for what, want := range c.want {
				for _, way := range []string{"scraped", "pushed"} {
					if v := get[what](sig[way]); !v.OK() || math.Abs(v.V()*10-want) > 1e-9*want {
						t.Errorf("%s %s = %v over 10 s, want %.0f", way, what, v, want)
					}
				}
			}
		})
	}
}

// emitPolly records ops executions of a retry pipeline "catalog", each
// failing its first attempt (handled by the retry predicate) and
// succeeding on the second, as Polly's meter reports them.
func emitPolly(t *testing.T, m otelmetric.Meter) {
	ctx := context.Background()
	events, err := m.Int64Counter("resilience.polly.strategy.events")
	if err != nil {
		t.Fatal(err)
	}
	attempt, err := m.Float64Histogram("resilience.polly.strategy.attempt.duration", otelmetric.WithUnit("ms"))
	if err != nil {
		t.Fatal(err)
	}
	pipeline, err := m.Float64Histogram("resilience.polly.pipeline.duration", otelmetric.WithUnit("ms"))
	if err != nil {
		t.Fatal(err)
	}
	src := []attribute.KeyValue{attribute.String("pipeline.name", "catalog"), attribute.String("pipeline.instance", ""),
		attribute.String("strategy.name", "Standard-Retry"), attribute.String("operation.key", "")}
	with := func(kv ...attribute.KeyValue) otelmetric.MeasurementOption {
		return otelmetric.WithAttributes(append(append([]attribute.KeyValue{}, src...), kv...)...)
	}
	for range 50 {
		attempt.Record(ctx, 30, with(attribute.String("event.name", "ExecutionAttempt"), attribute.String("event.severity", "Warning"),
			attribute.Int("attempt.number", 0), attribute.Bool("attempt.handled", true), attribute.String("exception.type", "")))
		events.Add(ctx, 1, with(attribute.String("event.name", "OnRetry"), attribute.String("event.severity", "Warning")))
		attempt.Record(ctx, 20, with(attribute.String("event.name", "ExecutionAttempt"), attribute.String("event.severity", "Information"),
			attribute.Int("attempt.number", 1), attribute.Bool("attempt.handled", false), attribute.String("exception.type", "")))
		pipeline.Record(ctx, 80, otelmetric.WithAttributes(attribute.String("pipeline.name", "catalog"), attribute.String("pipeline.instance", ""),
			attribute.String("operation.key", ""), attribute.String("event.name", "PipelineExecuted"),
			attribute.String("event.severity", "Information"), attribute.String("exception.type", "")))
	}
}

// emitAWS records ops DynamoDB GetItem operations, one in five retried
// once, as the AWS SDK's client call metrics report them.
func emitAWS(t *testing.T, m otelmetric.Meter) {
	ctx := context.Background()
	attempts, err := m.Int64Counter("client.call.attempts", otelmetric.WithUnit("{attempt}"))
	if err != nil {
		t.Fatal(err)
	}
	duration, err := m.Float64Histogram("client.call.duration", otelmetric.WithUnit("s"))
	if err != nil {
		t.Fatal(err)
	}
	op := otelmetric.WithAttributes(attribute.String("rpc.service", "DynamoDB"), attribute.String("rpc.method", "GetItem"))
	for i := range 50 {
		attempts.Add(ctx, 1, op)
		if i%5 == 0 {
			attempts.Add(ctx, 1, op)
		}
		duration.Record(ctx, 0.02, op)
	}
}
