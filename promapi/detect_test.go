package promapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
)

// noql is a dialect without PromQL, registered for this package's tests
// only: what a future dialect without queries looks like to the Source.
type noql struct{}

func (noql) Name() string       { return "noql" }
func (noql) Families() []string { return []string{"noql_requests_total"} }
func (noql) Detect(fams []model.Family) bool {
	return slices.ContainsFunc(fams, func(f model.Family) bool { return f.Name == "noql_requests_total" })
}
func (noql) Translate(snap *model.Snapshot) *model.Snapshot { return snap }

func init() { dialect.Register("noql", func() dialect.Dialect { return noql{} }) }

// fakeServer answers instant queries: the detection query with the metric
// names of names (job -> names), any other query with the vector its
// answer function gives ("" for an empty one).
type fakeServer struct {
	mu      sync.Mutex
	names   map[string][]string
	answer  func(q string, t float64) string
	queries []string
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q, ts := r.FormValue("query"), r.FormValue("time")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	var res []string
	if strings.HasPrefix(q, "count by (__name__, job) ({__name__=~") {
		for job, ns := range f.names {
			for _, n := range ns {
				res = append(res, fmt.Sprintf(`{"metric":{"__name__":%q,"job":%q},"value":[%s,"1"]}`, n, job, ts))
			}
		}
	} else if f.answer != nil {
		var t float64
		fmt.Sscan(ts, &t)
		if a := f.answer(q, t); a != "" {
			res = append(res, a)
		}
	}
	fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, strings.Join(res, ","))
}

func (f *fakeServer) count(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, q := range f.queries {
		if strings.HasPrefix(q, prefix) {
			n++
		}
	}
	return n
}

// TestSourceDetectsDialects: with Dialects ["auto"] the Source asks the
// server which families it holds per target, queries the dialects found
// (and only those), looks again every DetectEvery and adds new ones; a
// dialect without PromQL is reported by name while the others are read.
func TestSourceDetectsDialects(t *testing.T) {
	fake := &fakeServer{names: map[string][]string{
		"edge": {"envoy_cluster_upstream_rq_total", "envoy_cluster_upstream_rq_completed", "envoy_cluster_upstream_rq_time_bucket"},
		"app":  {"retry_originals_total", "retry_request_duration_seconds_count"},
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	now := time.Unix(1700000000, 0)
	src, err := New(Options{Delay: -1, Client: ClientConfig{URL: srv.URL}, Dialects: []string{DialectAuto}, Backfill: -1,
		Step: time.Second, DetectEvery: time.Minute, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if qs := src.Queries(); len(qs) != 0 {
		t.Errorf("%d queries before detection", len(qs))
	}
	st := src.Refresh(context.Background())
	if got := src.Dialects(); !slices.Equal(got, []string{"envoy", "native"}) {
		t.Errorf("detected %v", got)
	}
	if st[0].Dialect != "prometheus-api:envoy+native" || !st[0].Up || st[0].LastError != "" {
		t.Errorf("server status %+v", st[0])
	}
	var orig Query
	for _, q := range src.Queries() {
		if q.Name == model.MetricOriginals {
			orig = q
		}
		if strings.Contains(q.PromQL, "linkerd") || strings.Contains(q.PromQL, "haproxy") {
			t.Errorf("a dialect not detected is queried: %s", q.PromQL)
		}
	}
	if !slices.Equal(orig.Dialects, []string{"envoy", "native"}) || !strings.Contains(orig.PromQL, "envoy_cluster_upstream_rq_completed") ||
		!strings.Contains(orig.PromQL, "(retry_originals_total - (last_over_time(retry_originals_total[1m] offset 1s) <= retry_originals_total)") {
		t.Errorf("originals query %+v", orig)
	}
	nq := len(src.Queries())
	if got := fake.count("sum by ") + fake.count("max by "); got != nq {
		t.Errorf("%d queries sent, want %d", got, nq)
	}

	// Not again before DetectEvery; then a new dialect is added, and one
	// without PromQL is named.
	fake.mu.Lock()
	fake.names["mesh"] = []string{"outbound_http_route_request_statuses_total"}
	fake.names["legacy"] = []string{"noql_requests_total"}
	fake.mu.Unlock()
	now = now.Add(30 * time.Second)
	src.Refresh(context.Background())
	if fake.count("count by (__name__") != 1 || len(src.Dialects()) != 2 {
		t.Errorf("detected again before DetectEvery: %d detections, %v", fake.count("count by (__name__"), src.Dialects())
	}
	now = now.Add(30 * time.Second)
	st = src.Refresh(context.Background())
	if got := src.Dialects(); !slices.Equal(got, []string{"envoy", "linkerd", "native", "noql"}) {
		t.Errorf("detected %v", got)
	}
	want := "dialect noql found but has no PromQL queries: its families are not read (scrape those targets instead)"
	if st[0].Dialect != "prometheus-api:envoy+linkerd+native" || !st[0].Up || st[0].LastError != want {
		t.Errorf("server status %+v", st[0])
	}
	// The error stays until the dialect is gone from the answer... which
	// detection never forgets: it stays.
	now = now.Add(time.Second)
	if st = src.Refresh(context.Background()); st[0].LastError != want {
		t.Errorf("error not kept: %q", st[0].LastError)
	}

	// Named explicitly, a dialect without PromQL is an error at once.
	_, err = New(Options{Delay: -1, Client: ClientConfig{URL: srv.URL}, Dialects: []string{"envoy", "noql"}})
	if err == nil || err.Error() != "promapi: dialect noql has no PromQL queries: it can only be read by scraping its targets" {
		t.Errorf("New with noql: %v", err)
	}
	_, err = New(Options{Delay: -1, Client: ClientConfig{URL: srv.URL}, Dialects: []string{"auto", "envoy"}})
	if err == nil || !strings.Contains(err.Error(), `dialect "auto" detects every dialect: give it alone`) {
		t.Errorf("New with auto,envoy: %v", err)
	}
	_, err = New(Options{Delay: -1, Client: ClientConfig{URL: srv.URL}, Dialects: []string{"nginx"}})
	// The list grows with every dialect: it must name them all, the
	// test's own last.
	if err == nil || !strings.Contains(err.Error(), `unknown dialect "nginx" (known: istio, envoy, `) || !strings.Contains(err.Error(), `, native, noql)`) {
		t.Errorf("New with nginx: %v", err)
	}
}

// TestSourceNothingDetected: a server without any dialect's families is
// up, says so, and has no targets.
func TestSourceNothingDetected(t *testing.T) {
	srv := httptest.NewServer(&fakeServer{names: map[string][]string{"node": {"node_cpu_seconds_total"}}})
	defer srv.Close()
	src, err := New(Options{Delay: -1, Client: ClientConfig{URL: srv.URL}, Dialects: []string{DialectAuto}, Backfill: -1})
	if err != nil {
		t.Fatal(err)
	}
	st := src.Refresh(context.Background())
	if len(st) != 1 || !st[0].Up || !strings.HasPrefix(st[0].LastError, "no family of a known dialect matches the selector") {
		t.Errorf("statuses %+v", st)
	}
}

// TestSourceDetectsServiceShapes: a target that only holds service shapes
// (promhttp, OpenTelemetry), which scraping stores as they are, is read
// with native's queries, which read those families as they are; a target
// with nothing of ours still detects nothing.
func TestSourceDetectsServiceShapes(t *testing.T) {
	fake := &fakeServer{names: map[string][]string{
		"web":  {"http_requests_total", "http_request_duration_seconds_bucket", "go_goroutines"},
		"node": {"node_cpu_seconds_total"},
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	src, err := New(Options{Delay: -1, Client: ClientConfig{URL: srv.URL}, Dialects: []string{DialectAuto}, Backfill: -1})
	if err != nil {
		t.Fatal(err)
	}
	st := src.Refresh(context.Background())
	if got := src.Dialects(); !slices.Equal(got, []string{"native"}) {
		t.Errorf("detected %v", got)
	}
	if st[0].Dialect != "prometheus-api:native" || !st[0].Up || st[0].LastError != "" {
		t.Errorf("server status %+v", st[0])
	}
	if fake.count("sum by (job, dependency, code) ("+dialect.CounterExpr("http_requests_total", time.Second)+")") != 1 ||
		fake.count("sum by (job, dependency) (http_server_active_requests)") != 1 {
		t.Errorf("service families not queried: %d queries", len(src.Queries()))
	}
	for _, names := range [][]string{{"node_cpu_seconds_total"}, {"http_server_active_requestsx"}} {
		if holdsServiceFamily(names) {
			t.Errorf("%v holds a service family", names)
		}
	}
	for _, names := range [][]string{{"http_server_request_duration_seconds_count"}, {"sim_provider_queue_depth"}} {
		if !holdsServiceFamily(names) {
			t.Errorf("%v holds no service family", names)
		}
	}
}

// TestSourceNewSeriesAndBuckets: a series that appears after an
// evaluation without it is integrated from 0 at that evaluation (its
// first step counts, as a counter created at 0 would), one present from
// the first evaluation is a bare baseline; bucket bounds are scaled into
// seconds and formatted as the store formats them, and the series of a
// split query keep their le scale apart.
func TestSourceNewSeriesAndBuckets(t *testing.T) {
	const t0 = 1700000000.0
	fake := &fakeServer{answer: func(q string, ts float64) string {
		switch {
		case strings.Contains(q, "(retry_originals_total"):
			// 3 per 1 s step: 3/s from the start.
			return fmt.Sprintf(`{"metric":{"job":"app","dependency":"db"},"value":[%.3f,"3"]}`, ts)
		case strings.Contains(q, "(retry_retries_total") && ts > t0:
			// 3/s, from the second evaluation on.
			return fmt.Sprintf(`{"metric":{"job":"app","dependency":"db"},"value":[%.3f,"3"]}`, ts)
		case strings.Contains(q, "(envoy_cluster_upstream_rq_time_bucket"):
			return fmt.Sprintf(`{"metric":{"job":"edge","dependency":"pay","le":"25"},"value":[%.3f,"2"]},{"metric":{"job":"edge","dependency":"pay","le":"+Inf"},"value":[%.3f,"4"]}`, ts, ts)
		case strings.Contains(q, "(hikaricp_connection_acquired_nanos_bucket"):
			return fmt.Sprintf(`{"metric":{"job":"edge","dependency":"db","le":"5e+06"},"value":[%.3f,"1"]}`, ts)
		}
		return ""
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	now := time.Unix(int64(t0), 0)
	src, err := New(Options{Delay: -1, Client: ClientConfig{URL: srv.URL}, Dialects: []string{"native", "envoy", "pools"}, Backfill: -1,
		Step: time.Second, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		src.Refresh(context.Background())
		now = now.Add(time.Second)
	}
	st := src.Store()
	values := func(target, name string, match func(model.Labels) bool) string {
		var out []string
		for _, s := range st.Select(target, name, match) {
			var vs []string
			for _, p := range s.Points {
				vs = append(vs, fmt.Sprint(p.V))
			}
			out = append(out, s.Labels.String()+" "+strings.Join(vs, " "))
		}
		return strings.Join(out, "; ")
	}
	// Originals: baseline, +3, +3. Retries: absent at t0, then their
	// first increase counts (3), as a counter created at 0 counts its
	// first events; the store gives the series new to a target already
	// read a 0 at the scrape before (model.Store's new series rule).
	if got := values("app", model.MetricOriginals, nil); got != `{dependency="db"} 0 3 6` {
		t.Errorf("originals: %s", got)
	}
	if got := values("app", model.MetricRetries, nil); got != `{dependency="db"} 0 3 6` {
		t.Errorf("retries: %s", got)
	}
	// Envoy's milliseconds as seconds, kept apart from native's seconds
	// query of the same series by le_scale; HikariCP's nanoseconds too.
	if got := values("edge", model.MetricRequestDuration+"_bucket", nil); got != `{dependency="pay",le="+Inf",le_scale="0.001"} 0 4 8; {dependency="pay",le="0.025",le_scale="0.001"} 0 2 4` {
		t.Errorf("request duration buckets: %s", got)
	}
	if got := values("edge", model.MetricPoolWait+"_bucket", nil); got != `{dependency="db",le="0.005",le_scale="1e-09"} 0 1 2` {
		t.Errorf("pool wait buckets: %s", got)
	}
}
