package promapi

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// fakeAPI answers like Prometheus: originals increase by 2 per 1 s step
// (2/s) for app->db, the gauge is 3, attempts fail with an execution
// error, retries are too slow, and rescued is NaN.
//
// The slow query (retries) of a refresh is answered last, once every
// other query of that refresh has been answered, with the error
// Prometheus gives when a query outlives its timeout parameter: it fails
// whatever the machine's load, and a Source that held the other queries
// back until it answered would never return: fakeAPI.refresh bounds it
// and fails the test. The client's own timeout plays no part
// (TestClientQueryTimeout tests it).
type fakeAPI struct {
	mu      sync.Mutex
	queries []string
	// perRefresh is how many queries a refresh sends (the Source's
	// queries and its clock query), set before the first: were it
	// written out, a query added to the contract would leave the slow
	// one waiting for ever instead of failing the count below.
	perRefresh int
	// others counts the answers to every query but the slow one, slows
	// the slow query's requests; changed is closed (and replaced) when
	// others grows.
	others, slows int
	changed       chan struct{}
}

// expect sets how many queries each of src's refreshes sends.
func (f *fakeAPI) expect(src *Source) {
	f.mu.Lock()
	defer f.mu.Unlock()
	src.mu.Lock()
	defer src.mu.Unlock()
	f.perRefresh = len(src.queries) + 1
}

// perQueryAllowance is what a refresh against the fake may take per query
// it sends: the fake answers in microseconds, and the slowest answer seen
// under -race at load 10 on 2 cores took over 300 ms; a refresh sending
// its queries one at a time at over three times that is still inside.
const perQueryAllowance = time.Second

// refresh is src.Refresh under a deadline of perQueryAllowance for each
// query a refresh sends. A Source that sends its queries one at a time
// waits on the slow one, which the fake answers only after all the
// others: that would hang until go test's -timeout, and fails here
// within a minute, saying so. No clock decides a query's fate: the
// deadline ends only a refresh stuck for good.
func (f *fakeAPI) refresh(t *testing.T, src *Source) []model.TargetStatus {
	t.Helper()
	f.mu.Lock()
	n, slows := f.perRefresh, f.slows
	f.mu.Unlock()
	limit := time.Duration(n) * perQueryAllowance
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	st := src.Refresh(ctx)
	if ctx.Err() != nil {
		f.mu.Lock()
		defer f.mu.Unlock()
		t.Fatalf("a refresh did not return within %v (%v for each of its %d queries): the slow query was asked %d times, and %d other queries were answered while it waited for the %d of every refresh; does the Source send its queries one at a time?",
			limit, perQueryAllowance, n, f.slows-slows, f.others, f.slows*(f.perRefresh-1))
	}
	return st
}

// fakeQueriesPerRefresh is what the Source asks the fake per refresh:
// the 65 signal queries of the native contract and the clock query (each
// target's newest scrape time).
const fakeQueriesPerRefresh = 66

// noTimeout is the client's timeout where the server answers every query:
// never reached.
const noTimeout = time.Hour

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.Contains(r.URL.Path, "/api/v1/status/") {
		http.NotFound(w, r) // no build info: a backend of unknown name
		return
	}
	q := r.FormValue("query")
	slow := strings.Contains(q, "((retry_retries_total{")
	f.mu.Lock()
	f.queries = append(f.queries, r.Method+" "+r.URL.Path+" "+q)
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	f.mu.Unlock()
	if slow {
		f.mu.Lock()
		f.slows++
		want := f.slows * (f.perRefresh - 1)
		f.mu.Unlock()
		for {
			f.mu.Lock()
			done, changed := f.others >= want, f.changed
			f.mu.Unlock()
			if done {
				break
			}
			select {
			case <-changed:
			case <-r.Context().Done():
				return
			}
		}
		http.Error(w, `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`, http.StatusServiceUnavailable)
		return
	}
	defer func() {
		f.mu.Lock()
		f.others++
		close(f.changed)
		f.changed = make(chan struct{})
		f.mu.Unlock()
	}()
	if r.Method != http.MethodPost {
		http.Error(w, "want POST", http.StatusBadRequest)
		return
	}
	var times []float64
	switch r.URL.Path {
	case "/prefix/api/v1/query":
		t, _ := strconv.ParseFloat(r.FormValue("time"), 64)
		times = []float64{t}
	case "/prefix/api/v1/query_range":
		start, _ := strconv.ParseFloat(r.FormValue("start"), 64)
		end, _ := strconv.ParseFloat(r.FormValue("end"), 64)
		step, _ := strconv.ParseFloat(r.FormValue("step"), 64)
		for t := start; t <= end+1e-9; t += step {
			times = append(times, t)
		}
	default:
		http.NotFound(w, r)
		return
	}
	series := func(metric, value string) string {
		var pts []string
		for _, t := range times {
			pts = append(pts, fmt.Sprintf("[%.3f,%q]", t, value))
		}
		if r.URL.Path == "/prefix/api/v1/query" {
			return fmt.Sprintf(`{"metric":%s,"value":%s}`, metric, pts[0])
		}
		return fmt.Sprintf(`{"metric":%s,"values":[%s]}`, metric, strings.Join(pts, ","))
	}
	typ := "vector"
	if r.URL.Path == "/prefix/api/v1/query_range" {
		typ = "matrix"
	}
	var result []string
	switch {
	case strings.Contains(q, "((retry_originals_total{"):
		result = append(result, series(`{"job":"app","dependency":"db","priority":"critical"}`, "2"))
		result = append(result, series(`{"job":"web","dependency":"app","priority":"critical"}`, "1"))
	case strings.Contains(q, "(retry_active_calls{"):
		result = append(result, series(`{"job":"app","dependency":"db"}`, "3"))
	case strings.Contains(q, "((retry_rescued_total{"):
		result = append(result, series(`{"job":"app","dependency":"db"}`, "NaN"))
	case strings.Contains(q, "((retry_attempts_total{"):
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprint(w, `{"status":"error","errorType":"execution","error":"too many samples"}`)
		return
	}
	fmt.Fprintf(w, `{"status":"success","data":{"resultType":%q,"result":[%s]}}`, typ, strings.Join(result, ","))
}

func TestSourceIntegratesIncreases(t *testing.T) {
	// The fake answers every query, the slow one last with a timeout
	// error (fakeAPI): no client timeout is reached, so none can decide
	// which queries fail (under -race at load 10 a fast answer once took
	// over a 300 ms one: "3 of 65 queries failed").
	fake := &fakeAPI{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	now := time.Unix(1700000100, 0)
	var clockMu sync.Mutex
	src, err := New(Options{
		Delay:    -1,
		Client:   ClientConfig{URL: srv.URL + "/prefix/", Timeout: noTimeout},
		Selector: `{env="prod"}`,
		Step:     time.Second,
		Backfill: 3 * time.Second,
		Clock: func() time.Time {
			clockMu.Lock()
			defer clockMu.Unlock()
			return now
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	fake.expect(src)
	st := fake.refresh(t, src)
	clockMu.Lock()
	now = now.Add(time.Second)
	clockMu.Unlock()
	st = fake.refresh(t, src)
	select {
	case <-src.Updates():
	default:
		t.Error("no update after a refresh")
	}

	// Statuses: the server first, up with two failed queries named, then
	// the targets in name order.
	if len(st) != 3 || st[0].Name != "prometheus" || st[1].Name != "app" || st[2].Name != "web" {
		t.Fatalf("statuses %+v", st)
	}
	if !st[0].Up || !strings.Contains(st[0].LastError, fmt.Sprintf("2 of %d queries failed", fakeQueriesPerRefresh-1)) ||
		!strings.Contains(st[0].LastError, "retry_attempts_total") || !strings.Contains(st[0].LastError, "execution: too many samples") {
		t.Errorf("server status %+v", st[0])
	}
	if !st[1].Up || st[1].Scrapes != 2 || st[1].Series != 2 || st[1].URL != srv.URL+"/prefix/" {
		t.Errorf("app status %+v", st[1])
	}

	store := src.Store()
	// Backfill at -3s..0s (baseline, +2, +2, +2), then the instant query.
	origs := store.Select("app", model.MetricOriginals, nil)
	if len(origs) != 1 || !origs[0].Labels.Equal(model.LabelsFromPairs("dependency", "db", "priority", "critical")) {
		t.Fatalf("originals %+v", origs)
	}
	var vals []float64
	for _, p := range origs[0].Points {
		vals = append(vals, p.V)
	}
	if fmt.Sprint(vals) != "[0 2 4 6 8]" {
		t.Errorf("synthetic counter %v, want [0 2 4 6 8]", vals)
	}
	// No up series: stored at the evaluation times.
	if got := store.Times("app"); len(got) != 5 || got[0] != 1700000097000 || got[4] != 1700000101000 {
		t.Errorf("times %v", got)
	}
	act := store.Select("app", model.MetricActiveCalls, nil)
	if len(act) != 1 || len(act[0].Points) != 5 || act[0].Points[4].V != 3 {
		t.Errorf("active calls %+v", act)
	}
	// Failed, slow and NaN families leave no samples.
	for _, name := range []string{model.MetricAttempts, model.MetricRetries, model.MetricRescued} {
		if got := store.Select("app", name, nil); len(got) != 0 {
			t.Errorf("%s: %+v", name, got)
		}
	}
	// analysis' rate over the store is the server's rate: 4 per 2 s.
	sig := analysis.SignalsFor(store, "app", "db", 1700000097000, 1700000101000)
	if v, ok := sig.OriginalsPerS.Get(); !ok || math.Abs(v-2) > 1e-9 {
		t.Errorf("originals/s %v", sig.OriginalsPerS)
	}
	if v, ok := sig.ActiveCalls.Get(); !ok || v != 3 {
		t.Errorf("active calls %v", sig.ActiveCalls)
	}
	if sig.AttemptsPerS.OK() {
		t.Errorf("attempts present though their query failed: %v", sig.AttemptsPerS)
	}

	fake.mu.Lock()
	defer fake.mu.Unlock()
	ranges, instants := 0, 0
	for _, q := range fake.queries {
		switch {
		case strings.HasPrefix(q, "POST /prefix/api/v1/query_range "):
			ranges++
		case strings.HasPrefix(q, "POST /prefix/api/v1/query "):
			instants++
		}
		if !strings.Contains(q, `{env="prod"}`) {
			t.Errorf("selector not merged: %s", q)
		}
	}
	// 65 signal queries and the clock query (each target's newest scrape
	// time) per refresh.
	if ranges != fakeQueriesPerRefresh || instants != fakeQueriesPerRefresh {
		t.Errorf("%d range and %d instant queries, want %d each", ranges, instants, fakeQueriesPerRefresh)
	}
	if fake.slows != 2 {
		t.Errorf("the slow query was asked %d times, want once per refresh", fake.slows)
	}
}

// TestClientQueryTimeout: a query the server never answers fails after
// the client's timeout, saying so. The server answers only when the test
// ends, so the query cannot succeed whatever the timeout and the load.
func TestClientQueryTimeout(t *testing.T) {
	ended := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-ended:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(ended)
	c, err := NewClient(ClientConfig{URL: srv.URL, Timeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Query(context.Background(), "up", time.Unix(1700000100, 0))
	if err == nil || !strings.Contains(err.Error(), "query timed out after 1ms") {
		t.Errorf("query the server never answers: %v, want timed out after 1ms", err)
	}
}

func TestSourceServerDown(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, "upstream connect error\x1b[2J")
	}))
	defer srv.Close()
	src, err := New(Options{Client: ClientConfig{URL: "http://user:hunter2@" + strings.TrimPrefix(srv.URL, "http://")}, Backfill: -1})
	if err != nil {
		t.Fatal(err)
	}
	st := src.Refresh(context.Background())
	if len(st) != 1 || st[0].Up || st[0].Failures != 1 || !strings.Contains(st[0].LastError, "HTTP 503: upstream connect error\\x1b[2J") {
		t.Fatalf("statuses %+v", st)
	}
	if strings.Contains(st[0].URL, "hunter2") || strings.Contains(st[0].LastError, "hunter2") {
		t.Errorf("password shown: %+v", st[0])
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Client: ClientConfig{URL: "ftp://x"}},
		{Client: ClientConfig{URL: "http://x"}, Selector: `{job="a"`},
		{Client: ClientConfig{URL: "http://x"}, By: []string{"a-b"}},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v): no error", o)
		}
	}
}

// With --by job,instance every instance is a target whose layer is its
// job, so the dashboard can fold a job's replicas; with one label there
// is no layer.
func TestSourceLayerFromFirstByLabel(t *testing.T) {
	for _, tt := range []struct {
		by        []string
		name      string
		wantLayer string
	}{
		{[]string{"job", "instance"}, "checkout/10.0.0.1:8080", "checkout"},
		{[]string{"job"}, "checkout", ""},
	} {
		src, err := New(Options{Client: ClientConfig{URL: "http://127.0.0.1:1"}, By: tt.by})
		if err != nil {
			t.Fatal(err)
		}
		src.setStatuses(time.Unix(1700000000, 0), time.Millisecond, 1, 1, "", nil, map[string]int{tt.name: 3}, nil)
		var got *model.TargetStatus
		for _, s := range src.Statuses() {
			if s.Name == tt.name {
				got = &s
			}
		}
		if got == nil || got.Layer != tt.wantLayer {
			t.Errorf("by %v: status %+v, want layer %q", tt.by, got, tt.wantLayer)
		}
	}
}

// TestSourceTargetStaleAtTheEnd: a backfill in which one target has
// series at every step but the last (its newest scrape failed, so the
// last evaluation finds its series stale) lists that target all the
// same, down, read up to its last step with series; a target with series
// at the last step is up. Before, the first refresh listed only the
// targets of its last step: analyze --prometheus --by job,instance had
// rows and chains of a replica its targets did not name.
func TestSourceTargetStaleAtTheEnd(t *testing.T) {
	end := time.Unix(1700000100, 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.FormValue("query")
		var res []string
		if r.URL.Path == "/api/v1/query_range" && strings.Contains(q, "((retry_originals_total") {
			start, _ := strconv.ParseFloat(r.FormValue("start"), 64)
			stop, _ := strconv.ParseFloat(r.FormValue("end"), 64)
			var app, gone []string
			for ts := start; ts <= stop+1e-9; ts++ {
				app = append(app, fmt.Sprintf("[%.3f,\"2\"]", ts))
				if ts < stop {
					gone = append(gone, fmt.Sprintf("[%.3f,\"2\"]", ts))
				}
			}
			res = append(res,
				`{"metric":{"job":"app","dependency":"db","priority":"critical"},"values":[`+strings.Join(app, ",")+`]}`,
				`{"metric":{"job":"gone","dependency":"db","priority":"critical"},"values":[`+strings.Join(gone, ",")+`]}`)
		}
		typ := "vector"
		if r.URL.Path == "/api/v1/query_range" {
			typ = "matrix"
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":%q,"result":[%s]}}`, typ, strings.Join(res, ","))
	}))
	defer srv.Close()
	src, err := New(Options{Delay: -1, Client: ClientConfig{URL: srv.URL}, Step: time.Second, Backfill: 4 * time.Second,
		Clock: func() time.Time { return end }})
	if err != nil {
		t.Fatal(err)
	}
	st := src.Refresh(context.Background())
	got := map[string]model.TargetStatus{}
	for _, s := range st[1:] {
		got[s.Name] = s
	}
	if a := got["app"]; len(got) != 2 || !a.Up || !a.LastSuccess.Equal(end) {
		t.Fatalf("statuses %+v: want app up at %v and gone", st, end)
	}
	if g := got["gone"]; g.Up || !g.LastSuccess.Equal(end.Add(-time.Second)) || g.LastError != "no series in the latest query results" {
		t.Errorf("gone: %+v, want down, last read at %v", g, end.Add(-time.Second))
	}
	// Its data is in the store up to that step.
	if times := src.Store().Times("gone"); len(times) == 0 || times[len(times)-1] != end.Add(-time.Second).UnixMilli() {
		t.Errorf("gone's stored times %v", times)
	}
}
