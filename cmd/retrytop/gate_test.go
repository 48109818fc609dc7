package main

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A CI gate that cannot be fooled: analyze --fail-on must fail
// when what it was pointed at could not be read, and an unreadable target
// fails at once, not after the whole window.
func TestAnalyzeGate(t *testing.T) {
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("retry_originals_total{dependency=\"pay\",priority=\"critical\"} 1\nretry_attempts_total{dependency=\"pay\",outcome=\"success\"} 1\n"))
	}))
	defer good.Close()
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html><body>login</body></html>"))
	}))
	defer html.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("go_goroutines 12\nprocess_cpu_seconds_total 3\n"))
	}))
	defer other.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/metrics"
	_ = ln.Close() // a free port nobody listens on

	tests := []struct {
		name     string
		args     []string
		wantCode int
		// wantFindings are codes the JSON report must hold (exit 0 or 3).
		wantFindings []string
		wantErr      string
	}{
		{name: "refused on the first scrape", args: []string{good.URL, refused}, wantCode: exitNoData, wantErr: "1 of 2 target(s) could not be read on the first scrape"},
		{name: "a web page", args: []string{good.URL, html.URL}, wantCode: exitNoData, wantErr: "not a Prometheus exposition"},
		{name: "keep going: the down target is a finding", args: []string{good.URL, refused, "--keep-going", "--fail-on", "warning"},
			wantCode: exitFinding, wantFindings: []string{"TARGET_DOWN"}},
		{name: "no retry signals", args: []string{good.URL, other.URL, "--fail-on", "warning"},
			wantCode: exitFinding, wantFindings: []string{"NO_RETRY_SIGNALS"}},
		{name: "all good", args: []string{good.URL, "--fail-on", "warning"}, wantCode: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A 10 min window: the first-scrape failures must not wait for
			// it (the bound below is a fifth of it, far above any scrape).
			args := append([]string{"analyze", "--format", "json", "--interval", "100ms", "-q", "--window"}, "10m")
			if tt.wantCode == 0 || len(tt.wantFindings) > 0 {
				args[len(args)-1] = "400ms"
			}
			began := time.Now()
			out, stderr, err := execute(t, append(args, tt.args...)...)
			code := 0
			var ee *exitError
			if errors.As(err, &ee) {
				code = ee.code
			} else if err != nil {
				t.Fatalf("err = %v", err)
			}
			if code != tt.wantCode {
				t.Fatalf("exit %d (%v), want %d\nstderr: %s\nout: %s", code, err, tt.wantCode, stderr, out)
			}
			if tt.wantErr != "" && !strings.Contains(err.Error()+stderr, tt.wantErr) {
				t.Errorf("error %v / stderr %q, want %q", err, stderr, tt.wantErr)
			}
			if tt.wantCode == exitNoData && time.Since(began) > 2*time.Minute {
				t.Errorf("took %v: the first scrape's failure waited for the window", time.Since(began))
			}
			if len(tt.wantFindings) == 0 {
				return
			}
			var rep struct {
				Findings []struct{ Code string } `json:"findings"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			for _, want := range tt.wantFindings {
				found := false
				for _, f := range rep.Findings {
					found = found || f.Code == want
				}
				if !found {
					t.Errorf("findings %+v lack %s", rep.Findings, want)
				}
			}
		})
	}
}
