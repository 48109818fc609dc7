package promapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// backendAPI answers the build info and status pages as the named
// backend does, and range queries with one point a step from start to the
// end sent, recording the form of every query.
type backendAPI struct {
	backend string // "prometheus", "victoriametrics", "" (a server without either page)
	mu      sync.Mutex
	forms   []map[string]string
}

func (f *backendAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/api/v1/status/buildinfo" && f.backend == "prometheus":
		fmt.Fprint(w, `{"status":"success","data":{"version":"2.53.0","revision":"1f56e8492c31a558ccea833027db4bd7f8b6d0e9","branch":"HEAD","goVersion":"go1.22.4"}}`)
	case r.URL.Path == "/api/v1/status/buildinfo" && f.backend == "victoriametrics":
		fmt.Fprint(w, `{"status":"success","data":{}}`)
	case r.URL.Path == "/api/v1/status/top_queries" && f.backend == "victoriametrics":
		fmt.Fprint(w, `{"topN":"1","maxLifetime":"10m0s","lastQueriesCount":20000,"topByCount":[],"topByAvgDuration":[],"topBySumDuration":[]}`)
	case r.URL.Path == "/metrics" && f.backend == "victoriametrics":
		fmt.Fprint(w, "vm_app_uptime_seconds 12\nvm_app_version{version=\"victoria-metrics-20220801-tags-v1.79.5-0-gabc\", short_version=\"v1.79.5\"} 1\n")
	case r.URL.Path == "/api/v1/query" || r.URL.Path == "/api/v1/query_range":
		_ = r.ParseForm()
		form := map[string]string{"path": r.URL.Path}
		for k := range r.Form {
			form[k] = r.Form.Get(k)
		}
		f.mu.Lock()
		f.forms = append(f.forms, form)
		f.mu.Unlock()
		if r.URL.Path == "/api/v1/query" {
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
			return
		}
		start, _ := strconv.ParseFloat(form["start"], 64)
		end, _ := strconv.ParseFloat(form["end"], 64)
		step, _ := strconv.ParseFloat(form["step"], 64)
		var pts []string
		for t := start; t <= end+1e-9; t += step {
			pts = append(pts, fmt.Sprintf(`[%.3f,"1"]`, t))
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"job":"app"},"values":[%s]}]}}`, strings.Join(pts, ","))
	default:
		http.NotFound(w, r)
	}
}

func (f *backendAPI) lastForm() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.forms[len(f.forms)-1]
}

// TestDetectBackend: the build info names Prometheus with its version;
// an empty one with VictoriaMetrics' status page is VictoriaMetrics, its
// version from vm_app_version; a server with neither is unknown. The
// Source names it in the server's status.
func TestDetectBackend(t *testing.T) {
	for _, c := range []struct{ backend, want string }{
		{"prometheus", "prometheus 2.53.0"},
		{"victoriametrics", "victoriametrics 1.79.5"},
		{"", "unknown"},
	} {
		srv := httptest.NewServer(&backendAPI{backend: c.backend})
		cl, err := NewClient(ClientConfig{URL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		b, err := cl.DetectBackend(t.Context())
		if err != nil || b.String() != c.want {
			t.Errorf("%q: backend %q (%v), want %q", c.backend, b, err, c.want)
		}
		src, err := New(Options{Client: ClientConfig{URL: srv.URL}, Step: time.Second, Backfill: -1})
		if err != nil {
			t.Fatal(err)
		}
		if st := src.Refresh(t.Context()); st[0].Backend != c.want || src.Backend() != c.want {
			t.Errorf("%q: server status backend %q, Backend() %q, want %q", c.backend, st[0].Backend, src.Backend(), c.want)
		}
		srv.Close()
	}
}

// TestDetectBackendSilentServer: a server that does not answer the build
// info is given up for the refresh, its queries unsent, and asked again
// at the next.
func TestDetectBackendSilentServer(t *testing.T) {
	srv := httptest.NewServer(&backendAPI{backend: "prometheus"})
	url := srv.URL
	srv.Close() // connections refused
	src, err := New(Options{Client: ClientConfig{URL: url}, Step: time.Second, Backfill: -1})
	if err != nil {
		t.Fatal(err)
	}
	st := src.Refresh(t.Context())
	if st[0].Up || !strings.Contains(st[0].LastError, "given up") || st[0].Backend != "" {
		t.Errorf("server %+v, want down, given up, no backend", st[0])
	}
}

// TestVictoriaMetricsQueries: on VictoriaMetrics every query carries
// nocache=1, and a range ending near now is sent ending past now plus a
// step and a minute on the same grid, its points after the end asked for
// dropped; a range ending long ago is sent as is. On Prometheus neither.
func TestVictoriaMetricsQueries(t *testing.T) {
	const step = time.Second
	for _, backend := range []string{"victoriametrics", "prometheus"} {
		fake := &backendAPI{backend: backend}
		srv := httptest.NewServer(fake)
		cl, err := NewClient(ClientConfig{URL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.DetectBackend(t.Context()); err != nil {
			t.Fatal(err)
		}
		vm := backend == "victoriametrics"
		now := time.Now()
		end := now.Add(-3 * time.Second).Truncate(time.Millisecond)
		res, err := cl.QueryRange(t.Context(), "x", end.Add(-9*step), end, step)
		if err != nil {
			t.Fatal(err)
		}
		f := fake.lastForm()
		sent, _ := strconv.ParseFloat(f["end"], 64)
		sentEnd := time.UnixMilli(int64(sent * 1000))
		if got := f["nocache"] == "1"; got != vm {
			t.Errorf("%s: range query nocache %q", backend, f["nocache"])
		}
		if vm {
			if !sentEnd.After(now.Add(step+vmClockMargin)) || sentEnd.Sub(end)%step != 0 {
				t.Errorf("%s: range ending %v sent ending %v: want past now+%v on the grid", backend, end, sentEnd, step+vmClockMargin)
			}
		} else if !sentEnd.Equal(end) {
			t.Errorf("%s: range sent ending %v, want %v", backend, sentEnd, end)
		}
		if len(res.Series) != 1 || len(res.Series[0].Points) != 10 || res.Series[0].Points[9].T != end.UnixMilli() {
			t.Errorf("%s: %+v: want the 10 points up to the end asked for", backend, res.Series)
		}
		old := now.Add(-time.Hour).Truncate(time.Millisecond)
		if _, err := cl.QueryRange(t.Context(), "x", old.Add(-9*step), old, step); err != nil {
			t.Fatal(err)
		}
		if f := fake.lastForm(); f["end"] != formatTime(old) {
			t.Errorf("%s: range ending an hour ago sent ending %s, want %s", backend, f["end"], formatTime(old))
		}
		if _, err := cl.Query(t.Context(), "x", end); err != nil {
			t.Fatal(err)
		}
		if got := fake.lastForm()["nocache"] == "1"; got != vm {
			t.Errorf("%s: instant query nocache %q", backend, fake.lastForm()["nocache"])
		}
		srv.Close()
	}
}
