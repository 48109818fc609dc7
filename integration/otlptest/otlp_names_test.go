package otlptest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	otelmetric "go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/retrytop/retrytop/otlp"
)

// Instruments of every kind, with dotted names, units and names that
// already carry a suffix, pushed over OTLP, get the family names the
// same process's OpenTelemetry Prometheus exporter gives them.
func TestPushedNamesEqualExporters(t *testing.T) {
	ctx := context.Background()
	recv := otlp.NewReceiver(otlp.Options{})
	recvSrv := httptest.NewServer(recv)
	t.Cleanup(recvSrv.Close)
	mp, reg := pushAndPull(t, recvSrv.URL, resource.NewSchemaless(attribute.String("service.name", "names")))
	m := mp.Meter("test")
	for _, c := range []struct{ name, unit string }{
		{"retry_attempts_total", ""}, {"client.call.attempts", "{attempt}"}, {"hits", "1"},
		{"grpc.client.call.retries.total", ""}, {"net.io", "By"}, {"db.wait", "ms"}, {"work_seconds", "s"},
		{"busy_total", "s"}, {"total.requests", ""}, {"total", ""}, {"http.2xx", ""}, {"a.b-c/d", ""},
	} {
		ctr, err := m.Float64Counter(c.name, otelmetric.WithUnit(c.unit))
		if err != nil {
			t.Fatal(err)
		}
		ctr.Add(ctx, 1)
	}
	for _, c := range []struct{ name, unit string }{
		{"http.client.request.duration", "s"}, {"client.call.duration", "s"}, {"grpc.client.call.retries", "{retry}"}, {"rpc.server.duration", "ms"}, {"retry_request_duration_seconds", ""},
	} {
		h, err := m.Float64Histogram(c.name, otelmetric.WithUnit(c.unit))
		if err != nil {
			t.Fatal(err)
		}
		h.Record(ctx, 0.5)
	}
	labelled, err := m.Int64Counter("labelled")
	if err != nil {
		t.Fatal(err)
	}
	labelled.Add(ctx, 1, otelmetric.WithAttributes(attribute.Int("http.request.resend_count", 1), attribute.String("2xx", "a"),
		attribute.String("_private", "b"), attribute.String("a-b", "c"), attribute.Bool("ok", true), attribute.String("__name", "d")))
	for _, c := range []struct{ name, unit string }{{"process.cpu.utilization", "1"}, {"queue.bytes", "By"}} {
		g, err := m.Float64Gauge(c.name, otelmetric.WithUnit(c.unit))
		if err != nil {
			t.Fatal(err)
		}
		g.Record(ctx, 2)
	}
	for _, c := range []struct{ name, unit string }{{"active.calls", "{call}"}, {"pool.usage", "1"}} {
		u, err := m.Int64UpDownCounter(c.name, otelmetric.WithUnit(c.unit))
		if err != nil {
			t.Fatal(err)
		}
		u.Add(ctx, 3)
	}
	if err := mp.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var want, wantLabels []string
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "otel_") && mf.GetName() != "target_info" {
			want = append(want, mf.GetName()+" "+strings.ToLower(mf.GetType().String()))
		}
		if mf.GetName() == "labelled_total" {
			for _, l := range mf.GetMetric()[0].GetLabel() {
				if !strings.HasPrefix(l.GetName(), "otel_scope_") {
					wantLabels = append(wantLabels, l.GetName()+`="`+l.GetValue()+`"`)
				}
			}
		}
	}
	expo := httptest.NewServer(recv.Expositions())
	defer expo.Close()
	resp, err := http.Get(expo.URL + otlp.MetricsPath("names"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var got []string
	for _, line := range strings.Split(string(body), "\n") {
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok && !strings.HasPrefix(f, "target_info ") {
			got = append(got, f)
		}
	}
	for _, line := range strings.Split(string(body), "\n") {
		if l, ok := strings.CutPrefix(line, "labelled_total{"); ok {
			l, _, _ = strings.Cut(l, "} ")
			if got, want := l, strings.Join(wantLabels, ","); got != want {
				t.Errorf("pushed labels %s, the Prometheus exporter's %s", got, want)
			}
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("pushed families\n%s\nthe Prometheus exporter's\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
