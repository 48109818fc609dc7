package otlp

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// pb builds protobuf messages for tests: each call appends one field.
type pb []byte

func (b pb) msg(num protowire.Number, m pb) pb {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), m)
}

func (b pb) str(num protowire.Number, s string) pb {
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
}

func (b pb) varint(num protowire.Number, v uint64) pb {
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

func (b pb) fixed(num protowire.Number, v uint64) pb {
	return protowire.AppendFixed64(protowire.AppendTag(b, num, protowire.Fixed64Type), v)
}

func (b pb) packed(num protowire.Number, vs ...uint64) pb {
	var raw []byte
	for _, v := range vs {
		raw = protowire.AppendFixed64(raw, v)
	}
	return b.msg(num, raw)
}

// kv is a KeyValue with a string value.
func kv(k, v string) pb { return pb{}.str(1, k).msg(2, pb{}.str(1, v)) }

// resourceMetrics is a ResourceMetrics of service with metrics in one
// scope.
func resourceMetrics(service string, metrics ...pb) pb {
	scope := pb{}.msg(1, pb{}.str(1, "test"))
	for _, m := range metrics {
		scope = scope.msg(2, m)
	}
	return pb{}.msg(1, pb{}.msg(1, kv("service.name", service)).msg(1, kv("service.instance.id", "a"))).msg(2, scope)
}

// protoExport is export's delta content in the protobuf encoding: a
// monotonic int sum with two points, a non-monotonic one (a gauge) and
// an explicit histogram.
func protoExport(success, failed int64, hist [3]uint64, sum float64) []byte {
	point := func(outcome string, v int64) pb {
		return pb{}.msg(7, kv("dependency", "payments")).msg(7, kv("outcome", outcome)).
			fixed(2, 1000).fixed(3, 2000).fixed(6, uint64(v))
	}
	attempts := pb{}.str(1, "retry.attempts").str(3, "{attempt}").
		msg(7, pb{}.msg(1, point("success", success)).msg(1, point("timeout", failed)).varint(2, 1).varint(3, 1))
	active := pb{}.str(1, "retry.active_calls").
		msg(7, pb{}.msg(1, pb{}.msg(7, kv("dependency", "payments")).fixed(3, 2000).fixed(4, math.Float64bits(7))).varint(2, 2))
	hp := pb{}.fixed(2, 1000).fixed(3, 2000).fixed(4, hist[0]+hist[1]+hist[2]).fixed(5, math.Float64bits(sum)).
		packed(6, hist[0], hist[1], hist[2]).packed(7, math.Float64bits(0.1), math.Float64bits(1))
	duration := pb{}.str(1, "http.client.request.duration").str(3, "s").msg(9, pb{}.msg(1, hp).varint(2, 1))
	return pb{}.msg(1, resourceMetrics("checkout", attempts, active, duration))
}

// The protobuf encoding of the JSON test export ends in the same
// exposition.
func TestProtoMatchesJSON(t *testing.T) {
	r := NewReceiver(Options{})
	srv := httptest.NewServer(r)
	defer srv.Close()
	for _, body := range [][]byte{protoExport(100, 10, [3]uint64{5, 2, 1}, 8.5), protoExport(30, 2, [3]uint64{1, 1, 0}, 2.5)} {
		if code, msg := post(t, srv.URL, "application/x-protobuf", "gzip", gz(body)); code != http.StatusOK {
			t.Fatalf("export: %d %q", code, msg)
		}
	}
	if got := read(t, r, "checkout@a"); got != wantExposition {
		t.Errorf("exposition\n%s\nwant\n%s", got, wantExposition)
	}
}

// seriesExport is one resource with n series of a monotonic sum, each
// at 1.
func seriesExport(service string, n int) []byte {
	data := pb{}
	for i := range n {
		data = data.msg(1, pb{}.msg(7, kv("i", fmt.Sprint(i))).fixed(3, 2000).fixed(4, math.Float64bits(1)))
	}
	return pb{}.msg(1, resourceMetrics(service, pb{}.str(1, "flood").msg(7, data.varint(2, 2).varint(3, 1))))
}

// serve is one request from sender straight into the receiver.
func serve(r *Receiver, sender, ct string, body []byte) (int, string) {
	req := httptest.NewRequest(http.MethodPost, "/v1/metrics", bytes.NewReader(body))
	req.RemoteAddr = sender + ":40000"
	req.Header.Set("Content-Type", ct)
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// One sender pushing a million series and another creating resources
// without end are refused once past their own limits and counted, while
// a good sender's numbers stay exact and it can still add a resource.
func TestFloodingSendersRefused(t *testing.T) {
	r := NewReceiver(Options{})
	good := func(success, failed int, hist [3]int) {
		t.Helper()
		if code, msg := serve(r, "10.0.0.5", "application/json", []byte(export(1, success, failed, hist))); code != http.StatusOK {
			t.Fatalf("good sender: %d %s", code, msg)
		}
	}
	good(100, 10, [3]int{5, 2, 1})
	accepted := 0
	for i := range 50 { // 50 x 20,000: a million series
		code, msg := serve(r, "10.0.0.66", "application/x-protobuf", seriesExport(fmt.Sprintf("bot%d", i), 20000))
		switch {
		case code == http.StatusOK:
			accepted++
		case code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "100000 series per sender"):
			t.Fatalf("flood %d: %d %q", i, code, msg)
		}
	}
	for i := range 120 {
		if code, msg := serve(r, "10.0.0.77", "application/x-protobuf", seriesExport(fmt.Sprintf("many%d", i), 1)); code != http.StatusOK && !strings.Contains(msg, "100 resources per sender") {
			t.Fatalf("resource %d: %d %q", i, code, msg)
		}
	}
	good(30, 2, [3]int{1, 1, 0})
	if code, msg := serve(r, "10.0.0.5", "application/x-protobuf", seriesExport("late", 3)); code != http.StatusOK {
		t.Fatalf("good sender's new resource: %d %s", code, msg)
	}
	if accepted != 5 {
		t.Errorf("%d flooding exports accepted, want 5 (100,000 series)", accepted)
	}
	want := []Refusal{
		{Sender: "10.0.0.66", Count: 45, Last: "resource \"bot49@a\": over a limit of 100000 series per sender"},
		{Sender: "10.0.0.77", Count: 20, Last: "resource \"many119@a\": over a limit of 100 resources per sender"},
	}
	if got := r.Refused(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("refused %+v\nwant %+v", got, want)
	}
	if got := read(t, r, "checkout@a"); got != wantExposition {
		t.Errorf("good sender's exposition\n%s\nwant\n%s", got, wantExposition)
	}
	if got := len(r.State().Targets()); got != 1+5+100+1 {
		t.Errorf("%d targets, want 107", got)
	}
}

// A histogram whose bucket counts do not add up to its count, or whose
// bounds are not ascending, is malformed: 400 with the reason.
func TestInconsistentHistogramRefused(t *testing.T) {
	r := NewReceiver(Options{})
	for _, tc := range []struct {
		body, reason string
	}{
		{`"count":"5","bucketCounts":["1","1","1"],"explicitBounds":[0.1,1]`, "add up to 3, count is 5"},
		{`"count":"3","bucketCounts":["1","1","1"],"explicitBounds":[1,0.1]`, "want finite and ascending"},
		{`"count":"3","bucketCounts":["1","1","1"],"explicitBounds":["NaN",1]`, "want finite and ascending"},
	} {
		body := `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"h","histogram":{"aggregationTemporality":2,"dataPoints":[{` + tc.body + `}]}}]}]}]}`
		if code, msg := serve(r, "10.0.0.9", "application/json", []byte(body)); code != http.StatusBadRequest || !strings.Contains(msg, tc.reason) {
			t.Errorf("%s: %d %q, want 400 with %q", tc.body, code, msg, tc.reason)
		}
	}
}
