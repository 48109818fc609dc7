package otlp

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// export is an OTLP/JSON export of one resource (checkout, instance a)
// with a monotonic sum of attempts by outcome, a gauge and an explicit
// histogram, in temporality temp (1 delta, 2 cumulative).
func export(temp int, success, failed int, hist [3]int) string {
	return fmt.Sprintf(`{"resourceMetrics":[{"resource":{"attributes":[
	  {"key":"service.name","value":{"stringValue":"checkout"}},
	  {"key":"service.instance.id","value":{"stringValue":"a"}}]},
	 "scopeMetrics":[{"scope":{"name":"retry"},"metrics":[
	  {"name":"retry.attempts","unit":"{attempt}","sum":{"aggregationTemporality":%d,"isMonotonic":true,"dataPoints":[
	    {"attributes":[{"key":"dependency","value":{"stringValue":"payments"}},{"key":"outcome","value":{"stringValue":"success"}}],"startTimeUnixNano":"1000","timeUnixNano":"2000","asInt":"%d"},
	    {"attributes":[{"key":"dependency","value":{"stringValue":"payments"}},{"key":"outcome","value":{"stringValue":"timeout"}}],"startTimeUnixNano":"1000","timeUnixNano":"2000","asInt":"%d"}]}},
	  {"name":"retry.active_calls","sum":{"aggregationTemporality":2,"isMonotonic":false,"dataPoints":[
	    {"attributes":[{"key":"dependency","value":{"stringValue":"payments"}}],"timeUnixNano":"2000","asInt":"7"}]}},
	  {"name":"http.client.request.duration","unit":"s","histogram":{"aggregationTemporality":%d,"dataPoints":[
	    {"startTimeUnixNano":"1000","timeUnixNano":"2000","count":"%d","sum":%d.5,"bucketCounts":["%d","%d","%d"],"explicitBounds":[0.1,1]}]}}
	 ]}]}]}`, temp, success, failed, temp, hist[0]+hist[1]+hist[2], hist[0]+hist[1]+hist[2], hist[0], hist[1], hist[2])
}

func post(t *testing.T, url, ct, enc string, body []byte, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v1/metrics", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	if enc != "" {
		req.Header.Set("Content-Encoding", enc)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// read is a resource's exposition as the scraper gets it (Expositions).
func read(t *testing.T, r *Receiver, target string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	r.Expositions().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, MetricsPath(target), nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", MetricsPath(target), rec.Code, rec.Body)
	}
	return rec.Body.String()
}

const wantExposition = `# TYPE target_info gauge
target_info{service_instance_id="a",service_name="checkout"} 1
# TYPE http_client_request_duration_seconds histogram
http_client_request_duration_seconds_bucket{le="0.1"} 6
http_client_request_duration_seconds_bucket{le="1"} 9
http_client_request_duration_seconds_bucket{le="+Inf"} 10
http_client_request_duration_seconds_sum 11
http_client_request_duration_seconds_count 10
# TYPE retry_active_calls gauge
retry_active_calls{dependency="payments"} 7
# TYPE retry_attempts_total counter
retry_attempts_total{dependency="payments",outcome="success"} 130
retry_attempts_total{dependency="payments",outcome="timeout"} 12
`

// Two exports in either temporality end in the same exposition: the
// cumulative one's newest values, the deltas added up.
func TestDeltaAndCumulativeAgree(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first string
		then  string
	}{
		{"cumulative", export(2, 100, 10, [3]int{5, 2, 1}), export(2, 130, 12, [3]int{6, 3, 1})},
		{"delta", export(1, 100, 10, [3]int{5, 2, 1}), export(1, 30, 2, [3]int{1, 1, 0})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReceiver(Options{})
			srv := httptest.NewServer(r)
			defer srv.Close()
			for _, body := range []string{tc.first, tc.then} {
				if code, msg := post(t, srv.URL, "application/json", "", []byte(body)); code != http.StatusOK || msg != "{}" {
					t.Fatalf("export: %d %q", code, msg)
				}
			}
			if got := r.State().Targets(); len(got) != 1 || got[0] != "checkout@a" {
				t.Fatalf("targets %v", got)
			}
			got := read(t, r, "checkout@a")
			// Sums: 8.5 + 2.5 (delta) or the newest 10.5 (cumulative).
			want := wantExposition
			if tc.name == "cumulative" {
				want = strings.Replace(want, "_sum 11\n", "_sum 10.5\n", 1)
			}
			if got != want {
				t.Errorf("exposition\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// A restarted process's cumulative counter starts again from its new
// start time: what the run before counted is carried, so the exposition
// goes on from there and the increase across the restart is exact.
func TestCumulativeRestartIsAReset(t *testing.T) {
	r := NewReceiver(Options{})
	srv := httptest.NewServer(r)
	defer srv.Close()
	post(t, srv.URL, "application/json", "", []byte(export(2, 100, 10, [3]int{1, 0, 0})))
	restarted := strings.ReplaceAll(export(2, 3, 0, [3]int{1, 0, 0}), `"startTimeUnixNano":"1000","timeUnixNano":"2000"`, `"startTimeUnixNano":"5000","timeUnixNano":"6000"`)
	post(t, srv.URL, "application/json", "", []byte(restarted))
	if got := read(t, r, "checkout@a"); !strings.Contains(got, `retry_attempts_total{dependency="payments",outcome="success"} 103`+"\n") ||
		!strings.Contains(got, `retry_attempts_total{dependency="payments",outcome="timeout"} 10`+"\n") ||
		!strings.Contains(got, "http_client_request_duration_seconds_count 2\n") {
		t.Errorf("after the restart:\n%s", got)
	}
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

// Hostile senders are refused with their reason and counted, each under
// its own status, while a good sender's numbers stay exact.
func TestHostileSendersRefused(t *testing.T) {
	r := NewReceiver(Options{MaxBodyBytes: 64 << 10, MaxDecodedBytes: 1 << 20, MaxPoints: 1000, Token: "s3cret"})
	srv := httptest.NewServer(r)
	defer srv.Close()
	auth := []string{"Authorization", "Bearer s3cret"}
	good := []byte(export(1, 100, 10, [3]int{5, 2, 1}))
	if code, msg := post(t, srv.URL, "application/json", "", good, auth...); code != http.StatusOK {
		t.Fatalf("good export: %d %s", code, msg)
	}
	manyPoints := `{"resourceMetrics":[{"resource":{},"scopeMetrics":[{"metrics":[{"name":"x","gauge":{"dataPoints":[` +
		strings.Repeat(`{"asInt":"1"},`, 1000) + `{"asInt":"1"}]}}]}]}]}`
	for _, tc := range []struct {
		name, ct, enc string
		body          []byte
		hdr           []string
		code          int
		reason        string
	}{
		{"no token", "application/json", "", good, nil, http.StatusUnauthorized, "bearer token"},
		{"wrong token", "application/json", "", good, []string{"Authorization", "Bearer nope"}, http.StatusUnauthorized, "bearer token"},
		{"oversized", "application/json", "", bytes.Repeat([]byte(" "), 65<<10), auth, http.StatusRequestEntityTooLarge, "body over 65536 bytes"},
		{"gzip bomb", "application/json", "gzip", gz(bytes.Repeat([]byte(" "), 8<<20)), auth, http.StatusRequestEntityTooLarge, "once decompressed"},
		{"too many points", "application/json", "", []byte(manyPoints), auth, http.StatusRequestEntityTooLarge, "too many points"},
		{"malformed JSON", "application/json", "", []byte(`{"resourceMetrics":[{`), auth, http.StatusBadRequest, "malformed export"},
		{"malformed protobuf", "application/x-protobuf", "", []byte{0x0a, 0xff, 0xff}, auth, http.StatusBadRequest, "malformed export"},
		{"not gzip", "application/x-protobuf", "gzip", []byte("plain"), auth, http.StatusBadRequest, "gzip"},
		{"text", "text/plain", "", good, auth, http.StatusUnsupportedMediaType, "content type"},
	} {
		code, msg := post(t, srv.URL, tc.ct, tc.enc, tc.body, tc.hdr...)
		if code != tc.code || !strings.Contains(msg, tc.reason) {
			t.Errorf("%s: %d %q, want %d with %q", tc.name, code, msg, tc.code, tc.reason)
		}
	}
	ref := r.Refused()
	if len(ref) != 1 || ref[0].Sender != "127.0.0.1" || ref[0].Count != 9 {
		t.Errorf("refused %+v, want 9 from 127.0.0.1", ref)
	}
	// The good sender's numbers, untouched by the others.
	if got := read(t, r, "checkout@a"); !strings.Contains(got, `retry_attempts_total{dependency="payments",outcome="success"} 100`+"\n") {
		t.Errorf("good sender's exposition:\n%s", got)
	}
	// The push port serves no exposition: a sender cannot read another's.
	resp, err := http.Get(srv.URL + MetricsPath("checkout@a"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET of an exposition on the push port: %d, want 404", resp.StatusCode)
	}
}

// The series limit refuses the whole export that would pass it: nothing
// of it is kept.
func TestSeriesLimitRefusesWhole(t *testing.T) {
	st := NewState(Limits{SeriesPerResource: 4})
	ex, err := DecodeJSON([]byte(export(2, 1, 1, [3]int{1, 1, 1})), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(ex, "sender"); err == nil || !strings.Contains(err.Error(), "over a limit of 4 series per resource") {
		t.Fatalf("apply: %v", err)
	}
	if len(st.Targets()) != 0 {
		t.Errorf("targets %v after a refused export", st.Targets())
	}
}

// Names as the OpenTelemetry Prometheus exporter gives them.
func TestPromName(t *testing.T) {
	for _, tc := range []struct {
		m    Metric
		want string
	}{
		{Metric{Name: "grpc.client.attempt.duration", Unit: "s", Kind: KindHistogram}, "grpc_client_attempt_duration_seconds"},
		{Metric{Name: "grpc.client.call.retries", Unit: "{retry}", Kind: KindHistogram}, "grpc_client_call_retries"},
		{Metric{Name: "http.client.request.duration", Unit: "s", Kind: KindExpHistogram}, "http_client_request_duration_seconds"},
		{Metric{Name: "client.call.attempts", Unit: "{attempt}", Kind: KindSum, Monotonic: true}, "client_call_attempts_total"},
		{Metric{Name: "resilience.polly.strategy.events", Unit: "{event}", Kind: KindSum, Monotonic: true}, "resilience_polly_strategy_events_total"},
		{Metric{Name: "process.cpu.utilization", Unit: "1", Kind: KindGauge}, "process_cpu_utilization_ratio"},
		{Metric{Name: "rpc.server.duration", Unit: "ms", Kind: KindHistogram}, "rpc_server_duration_milliseconds"},
		{Metric{Name: "queue.size", Kind: KindSum}, "queue_size"},
		{Metric{Name: "retry_attempts_total", Kind: KindSum, Monotonic: true}, "retry_attempts_total"},
		{Metric{Name: "total.busy_total", Unit: "s", Kind: KindSum, Monotonic: true}, "busy_seconds_total"},
		{Metric{Name: "total", Kind: KindSum, Monotonic: true}, "total"},
		{Metric{Name: "total", Unit: "s", Kind: KindSum, Monotonic: true}, "seconds_total"},
		{Metric{Name: "total.count", Kind: KindGauge}, "total_count"},
		{Metric{Name: "2xx..responses-", Kind: KindGauge}, "_2xx_responses"},
		{Metric{Name: "net.io", Unit: "By/s", Kind: KindGauge}, "net_io_bytes_per_second"},
	} {
		if got, _ := promName(&tc.m); got != tc.want {
			t.Errorf("%s (%s): %s, want %s", tc.m.Name, tc.m.Unit, got, tc.want)
		}
	}
}

// Attribute keys become label names as the exporter writes them.
func TestLabelName(t *testing.T) {
	for k, want := range map[string]string{"http.request.resend_count": "http_request_resend_count", "2xx": "key_2xx",
		"_private": "_private", "__name__": "_name_", "a:b": "a_b", "": "key"} {
		if got := labelName(k); got != want {
			t.Errorf("%q: %q, want %q", k, got, want)
		}
	}
}

// An exponential histogram becomes explicit buckets at scale 2 over a
// fixed layout (2^-16 s to 2^8 s): a coarser scale's bucket lands in the
// explicit bucket holding its upper bound, a finer scale's neighbours
// merge, values outside go to the first bucket or +Inf, the zero bucket
// to the first.
func TestExponentialToExplicit(t *testing.T) {
	for _, tc := range []struct {
		name          string
		unit          string
		scale, offset int32
		counts        []uint64
		zero          uint64
		want          map[int]uint64 // explicit bucket index: count
	}{
		// (0.25, 0.5], (0.5, 1], (1, 2] at scale 0: le 2^-1 is bucket 60.
		{"coarser", "s", 0, -2, []uint64{1, 2, 3}, 1, map[int]uint64{0: 1, 60: 1, 64: 2, 68: 3}},
		// indexes 0..7 at scale 5 are index 0 at scale 2, (1, 2^(1/4)].
		{"finer", "s", 5, 0, []uint64{1, 1, 1, 1, 1, 1, 1, 1, 1}, 0, map[int]uint64{65: 8, 66: 1}},
		{"outside", "s", 0, -30, []uint64{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}, 0, map[int]uint64{0: 1, 97: 2}},
		// ms: the same layout 10 octaves up, 1 ms = 2^0 is bucket 24.
		{"ms", "ms", 0, -1, []uint64{4}, 0, map[int]uint64{24: 4}},
	} {
		p := Point{Scale: tc.scale, Offset: tc.offset, ExpCounts: tc.counts, Count: tc.zero}
		for _, c := range tc.counts {
			p.Count += c
		}
		if err := checkExp(&p); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		p.toExplicit(tc.unit)
		low := math.Exp2(-16)
		if tc.unit == "ms" {
			low = math.Exp2(-6)
		}
		if len(p.Bounds) != 97 || len(p.Counts) != 98 || p.Bounds[0] != low || p.Bounds[96] != low*math.Exp2(24) {
			t.Fatalf("%s: %d bounds %v..%v, %d counts", tc.name, len(p.Bounds), p.Bounds[0], p.Bounds[len(p.Bounds)-1], len(p.Counts))
		}
		for i, c := range p.Counts {
			if c != tc.want[i] {
				t.Errorf("%s: bucket %d (le %v) holds %d, want %d", tc.name, i, append(p.Bounds, math.Inf(1))[i], c, tc.want[i])
			}
		}
	}
}

// An exponential histogram whose range grows from push to push keeps
// one layout: the second push applies and the counts add up.
func TestExponentialLayoutStable(t *testing.T) {
	st := NewState(Limits{})
	for _, body := range []string{
		`{"count":"2","scale":3,"positive":{"offset":-3,"bucketCounts":["1","1"]}}`,
		`{"count":"5","scale":3,"positive":{"offset":-20,"bucketCounts":["1","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","0","4"]}}`,
	} {
		ex, err := DecodeJSON([]byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[
		  {"name":"d","unit":"s","exponentialHistogram":{"aggregationTemporality":1,"dataPoints":[`+body+`]}}]}]}]}`), 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Apply(ex, "a"); err != nil {
			t.Fatalf("apply: %v", err)
		}
	}
	got, _ := st.Exposition("unknown_service")
	if !strings.Contains(string(got), "d_seconds_count 7\n") || !strings.Contains(string(got), `d_seconds_bucket{le="+Inf"} 7`+"\n") {
		t.Errorf("exposition:\n%s", got)
	}
}

// An export refused by a limit partway through leaves the series it had
// already added to as they were.
func TestRefusedExportChangesNothing(t *testing.T) {
	st := NewState(Limits{SeriesPerResource: 8}) // the export's 8: 2 counters, a gauge, 3 buckets with _sum and _count
	first, err := DecodeJSON([]byte(export(1, 100, 10, [3]int{5, 2, 1})), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(first, "a"); err != nil {
		t.Fatal(err)
	}
	before, _ := st.Exposition("checkout@a")
	then, err := DecodeJSON([]byte(export(1, 30, 2, [3]int{1, 1, 0})), 0)
	if err != nil {
		t.Fatal(err)
	}
	m := &then.Resources[0].Metrics[0]
	m.Points = append(m.Points, Point{Attrs: []Attr{{Key: "outcome", Value: "other"}}, Value: 1})
	if _, err := st.Apply(then, "a"); !errors.Is(err, ErrLimit) {
		t.Fatalf("apply: %v, want the series limit", err)
	}
	if after, _ := st.Exposition("checkout@a"); string(after) != string(before) {
		t.Errorf("after a refused export\n%s\nwant\n%s", after, before)
	}
}

// A resource that stops exporting answers 503 once StaleAfter has passed
// since its last export, so its target shows down; the next export
// brings it back.
func TestStaleResourceAnswers503(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	r := NewReceiver(Options{StaleAfter: time.Minute, Now: func() time.Time { return now }})
	push := func() {
		if code, msg := serve(r, "10.0.0.5", "application/json", []byte(export(1, 1, 0, [3]int{1, 0, 0}))); code != http.StatusOK {
			t.Fatalf("export: %d %s", code, msg)
		}
	}
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		r.Expositions().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, MetricsPath("checkout@a"), nil))
		return rec.Code, rec.Body.String()
	}
	push()
	now = now.Add(time.Minute)
	if code, _ := get(); code != http.StatusOK {
		t.Errorf("a minute after the export: %d, want 200", code)
	}
	now = now.Add(time.Second)
	if code, msg := get(); code != http.StatusServiceUnavailable || !strings.Contains(msg, "no export from this resource for 1m1s") {
		t.Errorf("past StaleAfter: %d %q, want 503", code, msg)
	}
	push()
	if code, _ := get(); code != http.StatusOK {
		t.Errorf("after a new export: %d, want 200", code)
	}
}
