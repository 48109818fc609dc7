package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAnalyzePrometheus runs analyze --prometheus against a fake API:
// 10 originals and 25 attempts per 1m range give amplification 2.5.
func TestAnalyzePrometheus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.FormValue("query")
		var v, labels string
		switch {
		case strings.Contains(q, "increase(retry_originals_total{"):
			v, labels = "10", `"priority":"critical"`
		case strings.Contains(q, "increase(retry_attempts_total{"):
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
	defer srv.Close()

	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs([]string{"analyze", "--prometheus", srv.URL, "--selector", `{namespace="shop"}`, "--window", "2s", "--interval", "500ms", "--format", "json", "-q"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	var rep struct {
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
	if d.Target != "app" || d.Dependency != "db" || d.OriginalsPerS == nil || fmt.Sprintf("%.4f", *d.OriginalsPerS) != "0.1667" ||
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
