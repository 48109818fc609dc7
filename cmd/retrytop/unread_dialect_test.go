package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
)

// acmeFixture is an in-house client no built-in dialect reads.
const acmeFixture = "../../dialect/testdata/custom_acme.prom"

type unreadReport struct {
	Targets []struct {
		Name     string   `json:"name"`
		Dialects []string `json:"dialects"`
	} `json:"targets"`
	Findings []struct {
		Code    string `json:"code"`
		Target  string `json:"target"`
		Message string `json:"message"`
	} `json:"findings"`
}

// noRetrySignals returns the NO_RETRY_SIGNALS finding's message for
// target in analyze's JSON, failing when there is none.
func noRetrySignals(t *testing.T, out, target string) string {
	t.Helper()
	var rep unreadReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, f := range rep.Findings {
		if f.Code == "NO_RETRY_SIGNALS" && f.Target == target {
			return f.Message
		}
	}
	t.Fatalf("no NO_RETRY_SIGNALS finding for %s: %+v", target, rep.Findings)
	return ""
}

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if err != nil {
		return -1
	}
	return 0
}

// Live: a target no dialect reads is a NO_RETRY_SIGNALS finding worded by
// Translator.Unread (its own families, quoted, and the draft command
// line with its URL), and --fail-on warning exits 3 on it.
func TestAnalyzeUnreadLive(t *testing.T) {
	body, err := os.ReadFile(acmeFixture)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	url := srv.URL + "/metrics"
	// 400 ms at 100 ms: at least the two scrapes Unread needs (the first
	// finds no dialect, the next is parsed whole once).
	out, stderr, err := execute(t, "analyze", "acme="+url, "--window", "400ms", "--interval", "100ms", "-q", "--format", "json", "--fail-on", "warning")
	if exitCode(err) != exitFinding {
		t.Fatalf("exit %d (%v), want %d\n%s", exitCode(err), err, exitFinding, stderr)
	}
	msg := noRetrySignals(t, out, "acme")
	for _, want := range []string{`no dialect reads "acme"`, `families such as "acme_call_latency_ms", "acme_calls_total", "acme_tries_total"`, `'retrytop dialect draft "` + url + `"'`} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q\nwant %q", msg, want)
		}
	}
	// The text report prints it too.
	out, _, _ = execute(t, "analyze", "acme="+url, "--window", "400ms", "--interval", "100ms", "-q")
	if !strings.Contains(out, `no dialect reads "acme" (families such as "acme_call_latency_ms"`) || !strings.Contains(out, " series; no dialect reads it)") {
		t.Errorf("text report:\n%s", out)
	}
}

// writeAcmeDump records 11 scrapes of the acme fixture.
func writeAcmeDump(t *testing.T, path string) {
	t.Helper()
	body, err := os.ReadFile(acmeFixture)
	if err != nil {
		t.Fatal(err)
	}
	w, err := dump.Create(path, false, dump.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= 10; i++ {
		if err := w.Append("acme", recT0.Add(time.Duration(i)*time.Second), "text/plain; version=0.0.4", body); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// Recordings: a dump's target no dialect reads, and an import whose every
// family no dialect reads (it said "no readable scrape", exit 2), are
// NO_RETRY_SIGNALS worded by Unread, pointing to draft on the target's
// URL (a recording keeps none); a file with no scrape at all still says
// "no readable scrape".
func TestAnalyzeUnreadRecording(t *testing.T) {
	dir := t.TempDir()
	rtd := filepath.Join(dir, "acme.rtd")
	writeAcmeDump(t, rtd)
	// OpenMetrics with timestamps, instance "acme".
	var om strings.Builder
	om.WriteString("# TYPE acme_calls counter\n")
	for i := 0; i <= 10; i++ {
		fmt.Fprintf(&om, "acme_calls_total{instance=\"acme\",upstream=\"billing\"} %d %d\n", 10*i, recT0.Add(time.Duration(i)*time.Second).Unix())
	}
	om.WriteString("# EOF\n")
	imp := filepath.Join(dir, "acme.om")
	if err := os.WriteFile(imp, []byte(om.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, families string }{
		{rtd, `families such as "acme_call_latency_ms", "acme_calls_total", "acme_tries_total"`},
		{imp, `families such as "acme_calls_total"`},
	} {
		out, stderr, err := execute(t, "analyze", tc.file, "--format", "json", "--window", "5s", "--fail-on", "warning")
		if exitCode(err) != exitFinding {
			t.Errorf("%s: exit %d (%v), want %d\n%s", tc.file, exitCode(err), err, exitFinding, stderr)
			continue
		}
		msg := noRetrySignals(t, out, "acme")
		for _, want := range []string{`no dialect reads "acme"`, tc.families, "'retrytop dialect draft URL' on its /metrics URL"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: message %q\nwant %q", tc.file, msg, want)
			}
		}
	}
	empty := filepath.Join(dir, "empty.om")
	if err := os.WriteFile(empty, []byte("# TYPE x counter\n# EOF\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := execute(t, "analyze", empty, "--format", "json")
	if exitCode(err) != exitNoData || !strings.Contains(fmt.Sprint(err), "no readable scrape") {
		t.Errorf("a file with no scrape: exit %d %v, want %d and no readable scrape", exitCode(err), err, exitNoData)
	}
}
