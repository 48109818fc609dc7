package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/internal/testpeer"
	"github.com/retrytop/retrytop/model"
)

// fakePrometheus answers the native queries for job app -> db: 10
// originals and 25 attempts per evaluation step, so amplification 2.5;
// every query must carry the selector {namespace="shop"}.
func fakePrometheus(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.FormValue("query")
		var v, labels string
		switch {
		case strings.Contains(q, "(retry_originals_total{"):
			v, labels = "10", `"priority":"critical"`
		case strings.Contains(q, "(retry_attempts_total{"):
			v, labels = "25", `"outcome":"success"`
		}
		if !strings.Contains(q, `{namespace="shop"}`) {
			http.Error(w, "selector missing", http.StatusBadRequest)
			return
		}
		var times []string
		if r.URL.Path == "/api/v1/query_range" {
			var start, end, step float64
			fmt.Sscan(r.FormValue("start"), &start)
			fmt.Sscan(r.FormValue("end"), &end)
			fmt.Sscan(r.FormValue("step"), &step)
			for t := start; t <= end+1e-9; t += step {
				times = append(times, fmt.Sprintf("[%.3f,%q]", t, v))
			}
		}
		typ, res := "vector", ""
		if v != "" {
			metric := `{"job":"app","dependency":"db",` + labels + `}`
			if r.URL.Path == "/api/v1/query_range" {
				typ, res = "matrix", fmt.Sprintf(`{"metric":%s,"values":[%s]}`, metric, strings.Join(times, ","))
			} else {
				res = fmt.Sprintf(`{"metric":%s,"value":[%s,%q]}`, metric, r.FormValue("time"), v)
			}
		} else if r.URL.Path == "/api/v1/query_range" {
			typ = "matrix"
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":%q,"result":[%s]}}`, typ, res)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestAnalyzePrometheus runs analyze --prometheus against a fake API:
// 10 originals and 25 attempts per 500 ms step give 20 originals/s and
// amplification 2.5, over the window ending at --end, read at once.
func TestAnalyzePrometheus(t *testing.T) {
	srv := fakePrometheus(t)

	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs([]string{"analyze", "--prometheus", srv.URL, "--selector", `{namespace="shop"}`, "--window", "2s", "--interval", "500ms",
		"--end", "2026-12-01T14:05:00Z", "--format", "json", "-q"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	var rep struct {
		StartUnix    float64 `json:"start_unix"`
		EndUnix      float64 `json:"end_unix"`
		Targets      []struct{ Name string }
		Dependencies []struct {
			Target        string
			Dependency    string
			OriginalsPerS *float64 `json:"originals_per_s"`
			Amplification *float64
		}
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Targets) != 2 || rep.Targets[0].Name != "prometheus" || rep.Targets[1].Name != "app" {
		t.Errorf("targets %+v", rep.Targets)
	}
	if len(rep.Dependencies) != 1 {
		t.Fatalf("rows %s", out.String())
	}
	d := rep.Dependencies[0]
	// The fake has no up series: samples at the evaluation times, the
	// window's 2 s ending at --end.
	if end := time.Date(2026, 12, 1, 14, 5, 0, 0, time.UTC); rep.EndUnix != float64(end.Unix()) || rep.StartUnix != float64(end.Unix()-2) {
		t.Errorf("report spans %.3f..%.3f, want the window ending %v", rep.StartUnix, rep.EndUnix, end)
	}
	if d.Target != "app" || d.Dependency != "db" || d.OriginalsPerS == nil || fmt.Sprintf("%.4f", *d.OriginalsPerS) != "20.0000" ||
		d.Amplification == nil || fmt.Sprintf("%.2f", *d.Amplification) != "2.50" {
		t.Errorf("row %+v", d)
	}

	cmd = newRootCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs([]string{"analyze", "--prometheus", srv.URL, "app=http://127.0.0.1:1/metrics"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "no TARGET arguments") {
		t.Errorf("TARGET with --prometheus: %v", err)
	}
}

// TestAnalyzePrometheusDialectFlag: --prometheus-dialect picks the
// dialects whose PromQL is sent, custom mappings of --config included; an
// unknown one is a usage error naming it.
func TestAnalyzePrometheusDialectFlag(t *testing.T) {
	var mu sync.Mutex
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.FormValue("query"))
		mu.Unlock()
		typ := "vector"
		if r.URL.Path == "/api/v1/query_range" {
			typ = "matrix"
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":%q,"result":[]}}`, typ)
	}))
	defer srv.Close()
	cfg := filepath.Join(t.TempDir(), "retrytop.yaml")
	if err := os.WriteFile(cfg, []byte("dialects:\n  - name: acme\n    dependency_label: upstream\n    signals:\n      - family: retry_originals_total\n        metric: acme_calls_total\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	analyze := func(args ...string) error {
		cmd := newRootCmd()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(append([]string{"analyze", "--prometheus", srv.URL, "--window", "1s", "--interval", "1s", "-q"}, args...))
		return cmd.Execute()
	}
	// No series: exit 2, after the queries of envoy and acme only.
	err := analyze("--prometheus-dialect", "envoy,acme", "--config", cfg)
	if err == nil || !strings.Contains(err.Error(), "no target found") {
		t.Fatalf("analyze: %v", err)
	}
	mu.Lock()
	var envoy, acme, native int
	for _, q := range queries {
		if strings.Contains(q, "envoy_cluster_upstream_rq_completed") {
			envoy++
		}
		if strings.Contains(q, "(acme_calls_total{") {
			acme++
		}
		if strings.Contains(q, "(retry_originals_total") {
			native++
		}
	}
	mu.Unlock()
	if envoy == 0 || acme == 0 || native != 0 {
		t.Errorf("queries: %d envoy, %d acme, %d native", envoy, acme, native)
	}
	err = analyze("--prometheus-dialect", "nginx")
	var ce *exitError
	// The list grows with every dialect: it must name them, starting with
	// the first detected and ending with native.
	if err == nil || !strings.Contains(err.Error(), `unknown dialect "nginx" (known: istio, envoy, `) || !strings.Contains(err.Error(), `, native)`) ||
		!errors.As(err, &ce) || ce.code != exitUsage {
		t.Errorf("unknown dialect: %v", err)
	}
}

// TestAnalyzePrometheusBackfilled runs analyze --prometheus on a real
// Prometheus holding two minutes of backfilled samples (see
// internal/testpeer.BackfilledPrometheus) whose counts are known: app
// calls db at 10 originals and 25 attempts a second (restarting at 90 s,
// its counters from 0 again) and cache at 5 and 5. The last minute's
// report gives exactly those rates, amplification 2.5 and 1, and the
// findings that follow from them.
func TestAnalyzePrometheusBackfilled(t *testing.T) {
	// A bound on a hang, not on a number: nothing below is timed.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const start, seconds, restart = 1767225600, 120, 90
	series := []struct {
		labels    string
		perSecond int
	}{
		{`retry_originals_total{dependency="db",priority="critical"`, 10},
		{`retry_attempts_total{dependency="db",outcome="success"`, 10},
		{`retry_attempts_total{dependency="db",outcome="temporary_error"`, 15},
		{`retry_originals_total{dependency="cache",priority="critical"`, 5},
		{`retry_attempts_total{dependency="cache",outcome="success"`, 5},
	}
	var om strings.Builder
	for s := range seconds {
		// Counted since the process started (500 s before the first
		// sample), or since the restart.
		since := s + 500
		if s > restart {
			since = s - restart
		}
		fmt.Fprintf(&om, "up{job=\"app\",instance=\"a:1\"} 1 %d\n", start+s)
		for _, c := range series {
			fmt.Fprintf(&om, "%s,job=\"app\",instance=\"a:1\"} %d %d\n", c.labels, c.perSecond*since, start+s)
		}
	}
	om.WriteString("# EOF\n")
	base := testpeer.BackfilledPrometheus(t, ctx, om.String())

	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs([]string{"analyze", "--prometheus", base, "--window", "60s", "--interval", "1s",
		"--end", strconv.Itoa(start + seconds - 1), "--format", "json", "-q"})
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatalf("analyze --prometheus: %v\n%s", err, errb.String())
	}
	var rep analysis.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.StartUnix != start+seconds-61 || rep.EndUnix != start+seconds-1 {
		t.Errorf("report spans %.3f..%.3f, want the last 60 s", rep.StartUnix-start, rep.EndUnix-start)
	}
	want := map[string][3]float64{"db": {10, 25, 2.5}, "cache": {5, 5, 1}}
	for _, d := range rep.Dependencies {
		w, ok := want[d.Dependency]
		delete(want, d.Dependency)
		// Whole counts over whole seconds: exact up to a division's
		// rounding.
		exact := func(v model.Value, x float64) bool { return v.OK() && math.Abs(v.V()-x) <= 1e-9*x }
		if d.Target != "app" || !ok || !exact(d.OriginalsPerS, w[0]) || !exact(d.AttemptsPerS, w[1]) || !exact(d.Amplification, w[2]) {
			t.Errorf("row %s -> %s: %v originals/s, %v attempts/s, amplification %v; want %v", d.Target, d.Dependency,
				d.OriginalsPerS, d.AttemptsPerS, d.Amplification, w)
		}
	}
	if len(want) > 0 {
		t.Errorf("rows missing: %v", want)
	}
	var codes []string
	for _, f := range rep.Findings {
		codes = append(codes, f.Code+" "+f.Target+" -> "+f.Dependency)
	}
	sort.Strings(codes)
	// 2.5 attempts per original is above the amplification threshold
	// (1.2); 1 is not, and nothing else is wrong.
	if !slices.Equal(codes, []string{"RETRY_AMPLIFICATION app -> db"}) {
		t.Errorf("findings %q, want RETRY_AMPLIFICATION app -> db alone", codes)
	}
}
