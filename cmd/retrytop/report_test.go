package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/internal/simrec"
	"github.com/retrytop/retrytop/internal/testpeer"
	"github.com/retrytop/retrytop/sim"
)

// recordScenario runs a sim scenario to the end of its schedule in
// virtual time (a synctest bubble over the sim's in-process transport, as
// docs/testing.md describes) and records every target's /metrics body
// every 500 ms of virtual time into a dump, as `retrytop record` would.
// Virtual time makes the run the same on a loaded machine: a scrape
// happens when every goroutine of the bubble is blocked.
func recordScenario(t *testing.T, name string, opts sim.Options) string {
	t.Helper()
	return recordScenarioEvery(t, name, opts, 500*time.Millisecond)
}

// recordScenarioEvery is recordScenario with a body recorded every `every`
// of virtual time (simrec.Record).
func recordScenarioEvery(t *testing.T, name string, opts sim.Options, every time.Duration) string {
	t.Helper()
	return simrec.Record(t, name, opts, every).Path
}

// pointer resolves a JSON pointer (RFC 6901) in a decoded document.
func pointer(doc any, p string) (any, error) {
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[tok]
			if !ok {
				return nil, fmt.Errorf("%s: no key %q", p, tok)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil, fmt.Errorf("%s: no index %q", p, tok)
			}
			cur = v[i]
		default:
			return nil, fmt.Errorf("%s: %q below a leaf", p, tok)
		}
	}
	return cur, nil
}

var numAttr = regexp.MustCompile(`data-json="([^"]*)" data-v="([^"]*)"`)

// checkNumbers ties every number of the page (data-json, data-v) to the
// value at that path of `analyze --format json`: the same float, or null
// for "-". It returns how many it checked.
func checkNumbers(t *testing.T, page string, doc any) int {
	t.Helper()
	n := 0
	for _, m := range numAttr.FindAllStringSubmatch(page, -1) {
		path, v := html.UnescapeString(m[1]), m[2]
		if path == "" {
			if v != "null" {
				t.Errorf("a number without a JSON path has a value %s", v)
			}
			continue
		}
		want, err := pointer(doc, path)
		if err != nil {
			t.Errorf("page number %s=%s: %v", path, v, err)
			continue
		}
		n++
		switch w := want.(type) {
		case nil:
			if v != "null" {
				t.Errorf("%s: page %s, JSON null", path, v)
			}
		case float64:
			got, err := strconv.ParseFloat(v, 64)
			if err != nil || got != w {
				t.Errorf("%s: page %s, JSON %v", path, v, w)
			}
		case string: // "+Inf", "-Inf", "NaN"
			if v != w {
				t.Errorf("%s: page %s, JSON %q", path, v, w)
			}
		default:
			t.Errorf("%s: page %s, JSON %T %v", path, v, want, want)
		}
	}
	return n
}

// chartKeys are the timeline keys the page charts per hop.
var chartKeys = []string{"originals_per_s", "attempts_per_s", "successes_per_s", "rescued_per_s", "budget_denied_per_s",
	"admission_rejected_per_s", "provider_errors_per_s", "timeouts_per_s", "active_calls", "concurrency_limit", "queue_depth",
	"pool_wait_p50_s", "pool_wait_p99_s", "pool_wait_mean_s", "latency/success/p50", "latency/success/p99",
	"latency/fast_failure/p99", "latency/failure/p99", "mixed_latency/p99"}

// checkPoints: every chart has a dot for every bin whose value the JSON
// has (a finite number), and none for a null one.
func checkPoints(t *testing.T, page string, doc any) int {
	t.Helper()
	dots := map[string]bool{}
	for _, m := range regexp.MustCompile(`<circle [^>]*data-json="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		dots[html.UnescapeString(m[1])] = true
	}
	deps, _ := pointer(doc, "/dependencies")
	total := 0
	for i, d := range deps.([]any) {
		bins := d.(map[string]any)["timeline"].([]any)
		for _, key := range chartKeys {
			for j := range bins {
				p := fmt.Sprintf("/dependencies/%d/timeline/%d/%s", i, j, key)
				v, err := pointer(doc, p)
				_, finite := v.(float64)
				if err != nil {
					finite = false // a class the row has no latency for
				}
				if finite != dots[p] {
					t.Errorf("%s: JSON %v (err %v), dot on the page %v", p, v, err, dots[p])
				}
				if finite {
					total++
				}
			}
		}
	}
	return total
}

// checkLost recomputes the headline's goodput lost from the JSON: over
// the lead row's unhealthy phases, (originals/s - goodput/s) x seconds.
func checkLost(t *testing.T, page string, doc any) {
	t.Helper()
	m := regexp.MustCompile(`data-derived="goodput_lost" data-lead="([^"]*)" data-v="([^"]*)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no goodput lost on the page")
	}
	row, err := pointer(doc, m[1])
	if err != nil {
		t.Fatal(err)
	}
	sum, known := 0.0, false
	for _, p := range row.(map[string]any)["phases"].([]any) {
		ph := p.(map[string]any)
		switch ph["kind"] {
		case "degraded", "overloaded", "recovering":
		default:
			continue
		}
		start, _ := time.Parse(time.RFC3339Nano, ph["start"].(string))
		end, _ := time.Parse(time.RFC3339Nano, ph["end"].(string))
		o, ok1 := ph["originals_per_s"].(float64)
		g, ok2 := ph["goodput_per_s"].(float64)
		if !ok1 || !ok2 {
			sum, known = 0, false
			break
		}
		sum += (o - g) * end.Sub(start).Seconds()
		known = true
	}
	want := "null"
	if known {
		want = strconv.FormatFloat(sum, 'g', -1, 64)
	}
	if m[2] != want {
		t.Errorf("goodput lost %s on the page, %s from the JSON's phases of %s", m[2], want, m[1])
	}
}

// scenarioReport is what each scenario's page must say.
type scenarioReport struct {
	scenario string
	incident bool
	codes    []string // findings the page must show
}

// TestReportOnTheSimScenarios records each scenario on loopback, writes
// its report (HTML and markdown) and checks the page against
// `analyze --format json` on the same recording: every number, every
// chart dot, the goodput lost; the healthy control shows no incident.
func TestReportOnTheSimScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("loopback integration test skipped in -short mode")
	}
	phases := sim.Options{Healthy: 2 * time.Second, Slow: 5 * time.Second, Recovered: 3 * time.Second, Seed: 3}
	for _, sc := range []scenarioReport{
		{"baseline", true, []string{"RETRY_AMPLIFICATION"}},
		{"bounded", true, []string{"CAPACITY_SHORTFALL"}},
		{"chain", true, []string{"MULTIPLE_RETRY_LAYERS"}},
		{"ignore-cancel", true, []string{"WORK_AFTER_CANCEL"}},
		{"healthy", false, nil},
	} {
		t.Run(sc.scenario, func(t *testing.T) {
			rec := recordScenario(t, sc.scenario, phases)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			out := filepath.Join(t.TempDir(), "incident.html")
			flags := []string{"--window", "5s", "--bin", "2s"}
			if _, stderr, err := execute(t, append([]string{"report", rec, "-o", out}, flags...)...); err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			jsonOut, stderr, err := execute(t, append([]string{"analyze", rec, "--format", "json"}, flags...)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			var doc any
			if err := json.Unmarshal([]byte(jsonOut), &doc); err != nil {
				t.Fatal(err)
			}
			body, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			page := string(body)
			checkReportPage(t, page, doc, sc)
			if sc.scenario == "baseline" {
				browserCheck(t, ctx, out, doc, sc, true)
				checkWhatifSection(t, rec, flags)
			}
			if sc.scenario == "healthy" {
				browserCheck(t, ctx, out, doc, sc, false)
			}

			md, stderr, err := execute(t, append([]string{"report", rec, "--format", "markdown"}, flags...)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			wantMD := "**No incident**"
			if sc.incident {
				wantMD = "**Incident**"
			}
			if !strings.Contains(md, wantMD) || !regexp.MustCompile(`(?m)^attempts/s +[▁▂▃▄▅▆▇█ ]+  max `).MatchString(md) {
				t.Errorf("markdown lacks %q or an attempts sparkline:\n%s", wantMD, md)
			}
			for _, c := range sc.codes {
				if !strings.Contains(md, " "+strings.ReplaceAll(c, "_", `\_`)+",") {
					t.Errorf("markdown lacks finding %s", c)
				}
			}
			if !strings.Contains(md, "retrytop report --bin=2s --format=markdown --window=5s "+rec) {
				t.Errorf("markdown lacks the command that reproduces it:\n%s", md[max(0, len(md)-400):])
			}
		})
	}
}

// checkReportPage checks a page (as written, or as the browser's DOM)
// against the JSON and what the scenario must show.
func checkReportPage(t *testing.T, page string, doc any, sc scenarioReport) {
	t.Helper()
	verdict := regexp.MustCompile(`id="verdict">([^<]*)`).FindStringSubmatch(page)
	switch {
	case verdict == nil:
		t.Errorf("no verdict on the page")
	case sc.incident != strings.HasPrefix(verdict[1], "Incident"):
		t.Errorf("verdict %q, want incident=%v", verdict[1], sc.incident)
	}
	if !sc.incident && (strings.Contains(page, `class="finding sev-warning"`) || strings.Contains(page, `class="finding sev-critical"`)) {
		t.Errorf("the healthy control shows a warning or critical finding")
	}
	for _, c := range sc.codes {
		if !strings.Contains(page, "<code>"+c+"</code>") {
			t.Errorf("page lacks finding %s", c)
		}
	}
	if n := checkNumbers(t, page, doc); n < 50 {
		t.Errorf("only %d numbers tied to the JSON", n)
	}
	if n := checkPoints(t, page, doc); n < 20 {
		t.Errorf("only %d chart dots", n)
	}
	checkLost(t, page, doc)
	// The page is one file: nothing to fetch, nothing to run.
	for _, bad := range []string{"<script", "src=", "<link", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
}

// chromiumOwn are the hosts Chromium itself calls (time, component
// updates, accounts) even with background networking off; any other URL
// in the net log is a request of the page.
var chromiumOwn = map[string]bool{"clients2.google.com": true, "update.googleapis.com": true, "accounts.google.com": true, "google.com": true, "www.google.com": true}

// openInChromium loads file in headless Chromium with every name
// resolving nowhere, and returns its DOM, the console messages it logged
// and the http(s) URLs of its net log outside chromiumOwn.
func openInChromium(t *testing.T, ctx context.Context, file string) (dom string, console, urls []string) {
	t.Helper()
	netlog := filepath.Join(t.TempDir(), "net.json")
	dom, stderr := testpeer.RunChromium(t, ctx, "--enable-logging=stderr", "--v=0", "--log-net-log="+netlog,
		"--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9", "--dump-dom", "file://"+file)
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, ":CONSOLE") {
			console = append(console, line)
		}
	}
	raw, err := os.ReadFile(netlog)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range regexp.MustCompile(`https?://([a-zA-Z0-9.-]+)[^"\\ ]*`).FindAllStringSubmatch(string(raw), -1) {
		if !chromiumOwn[u[1]] {
			urls = append(urls, u[0])
		}
	}
	return dom, console, urls
}

// browserCheck opens the report the way a person would: headless
// Chromium from file:// with the network unreachable. The DOM must hold
// the same numbers and dots as the file, no console message and no
// request; with shots, it takes screenshots at a laptop's and a phone's
// size (RETRYTOP_REPORT_SHOTS=DIR keeps them there to look at).
func browserCheck(t *testing.T, ctx context.Context, file string, doc any, sc scenarioReport, shots bool) {
	t.Helper()
	testpeer.Chromium(t)
	dom, console, urls := openInChromium(t, ctx, file)
	if len(console) > 0 {
		t.Errorf("console messages:\n%s", strings.Join(console, "\n"))
	}
	if len(urls) > 0 {
		t.Errorf("the page made requests: %v", urls)
	}
	checkReportPage(t, dom, doc, sc)
	if !shots {
		return
	}
	keep := os.Getenv("RETRYTOP_REPORT_SHOTS")
	for _, size := range []struct{ w, h int }{{1280, 800}, {390, 844}} {
		shot := filepath.Join(t.TempDir(), fmt.Sprintf("%s-%dx%d.png", sc.scenario, size.w, size.h))
		testpeer.RunChromium(t, ctx, "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars", "--force-device-scale-factor=1",
			fmt.Sprintf("--window-size=%d,%d", size.w, size.h), "--screenshot="+shot, "file://"+file)
		f, err := os.Open(shot)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width != size.w || cfg.Height != size.h {
			t.Errorf("screenshot %s: %v, %dx%d", shot, err, cfg.Width, cfg.Height)
		}
		if keep != "" {
			if b, err := os.ReadFile(shot); err == nil {
				_ = os.WriteFile(filepath.Join(keep, filepath.Base(shot)), b, 0o644)
			}
		}
	}
}

// TestBrowserCheckCatchesErrorsAndRequests is the control of browserCheck:
// a page with a script error and an image from the network must show up
// as a console message and a request.
func TestBrowserCheckCatchesErrorsAndRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	testpeer.Chromium(t)
	page := filepath.Join(t.TempDir(), "bad.html")
	if err := os.WriteFile(page, []byte(`<!doctype html><title>bad</title><script>undefinedFn()</script><img src="http://example.invalid/x.png">`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, console, urls := openInChromium(t, ctx, page)
	if len(console) == 0 || !strings.Contains(strings.Join(console, "\n"), "undefinedFn") {
		t.Errorf("script error not caught: %v", console)
	}
	if len(urls) == 0 || !strings.Contains(strings.Join(urls, " "), "example.invalid") {
		t.Errorf("request not caught: %v", urls)
	}
}

// hostileExposition is contractExposition with a dependency label a
// hostile target could export: markup, quotes, an ampersand, bidi
// controls.
const hostileDep = `<script>alert(1)</script>"'&amp;` + "\u202eevil\u2066"

func hostileExposition(n int) string {
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(hostileDep)
	return strings.ReplaceAll(contractExposition(n), `dependency="provider"`, `dependency="`+esc+`"`)
}

// TestReportEscapesHostileLabels: a label value full of markup and bidi
// controls is text on the page (HTML and markdown), never markup, and a
// hostile target name likewise; the browser finds no script element.
func TestReportEscapesHostileLabels(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hostile.rtd")
	w, err := dump.Create(path, false, dump.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	target := `evil"><img src=x onerror=alert(1)>`
	for i := 0; i < 150; i++ {
		if err := w.Append(target, recT0.Add(time.Duration(i)*time.Second), "text/plain; version=0.0.4", []byte(hostileExposition(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "hostile.html")
	if _, stderr, err := execute(t, "report", path, "-o", out); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	body, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(body)
	for _, bad := range []string{"<script", "<img", "\u202e", "\u2066", "onerror=alert(1)>"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q raw", bad)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;amp;") || !strings.Contains(page, `\u202eevil\u2066`) {
		t.Errorf("the hostile label is not shown escaped")
	}
	md, _, err := execute(t, "report", path, "--format", "markdown")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md, "<script") || strings.Contains(md, "<img") || strings.Contains(md, "\u202e") {
		t.Errorf("markdown carries the markup or the bidi control raw")
	}
	jsonOut, _, err := execute(t, "analyze", path, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal([]byte(jsonOut), &doc); err != nil {
		t.Fatal(err)
	}
	if n := checkNumbers(t, page, doc); n < 20 {
		t.Errorf("only %d numbers tied to the JSON", n)
	}
	if testing.Short() {
		return
	}
	testpeer.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dom, console, urls := openInChromium(t, ctx, out)
	if strings.Contains(dom, "<script") || strings.Contains(dom, "<img") || len(console) > 0 || len(urls) > 0 {
		t.Errorf("the browser parsed the label as markup, logged %v or requested %v", console, urls)
	}
	if !strings.Contains(dom, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the DOM does not show the label as text")
	}
}

// TestAnalyzeFormatHTML: analyze --format html writes the same page, with
// analyze's command line to reproduce it.
func TestAnalyzeFormatHTML(t *testing.T) {
	path := writeTestDump(t, 150, "app", "client")
	out, stderr, err := execute(t, "analyze", path, "--format", "html", "--window", "30s")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.HasPrefix(out, "<!doctype html>") || !strings.Contains(out, "retrytop analyze --format=html --window=30s "+path) {
		t.Errorf("analyze --format html: %.300s ... %s", out, out[max(0, len(out)-600):])
	}
	if _, _, err := execute(t, "report", path, "--format", "pdf"); err == nil || !strings.Contains(err.Error(), "want html or markdown") {
		t.Errorf("report --format pdf: %v", err)
	}
}

// TestCommandLineHidesCredentials: the reproduce line and the source never
// carry a URL's user:password (the page is for sharing).
func TestCommandLineHidesCredentials(t *testing.T) {
	for in, want := range map[string]string{
		"app=http://u:secret@h:9/metrics":    "app=http://h:9/metrics",
		"http://u:secret@h:9/metrics":        "http://h:9/metrics",
		"a=http://u:p@h:1/m,b=http://h2:2/m": "a=http://h:1/m,b=http://h2:2/m",
		"incident.rtd":                       "incident.rtd",
		"app=http://h:9/metrics?x=a@b":       "app=http://h:9/metrics?x=a@b",
	} {
		if got := stripUserinfo(in); got != want {
			t.Errorf("stripUserinfo(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"plain.rtd": "plain.rtd", "a b": "'a b'", "it's": `'it'\''s'`, "": "''", `{job="x"}`: `'{job="x"}'`} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReportLiveTargets: report on a live target scrapes it over --window
// as analyze does, writes the page even when --fail-on exits 3, and
// names the source and the command without the URL's password.
func TestReportLiveTargets(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n += 30 // each scrape moves the exposition 30 s on: through the incident of scrapes 60-120
		body := contractExposition(n)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	target := "app=" + strings.Replace(srv.URL, "http://", "http://user:s3cret@", 1) + "/metrics"
	out := filepath.Join(t.TempDir(), "live.html")
	_, stderr, err := execute(t, "report", target, "--window", "2s", "--interval", "200ms", "-q", "--fail-on", "info", "-o", out)
	var ee *exitError
	if err != nil && !(errors.As(err, &ee) && ee.code == exitFinding) {
		t.Fatalf("%v\n%s", err, stderr)
	}
	body, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(body)
	for _, want := range []string{"live scrape of app=" + srv.URL + "/metrics", "--window=2s", "<bdi>app</bdi> → <bdi>provider</bdi>"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "s3cret") {
		t.Errorf("the page carries the password")
	}
	if !strings.Contains(stderr, "wrote "+out) {
		t.Errorf("stderr does not say where the page went: %q", stderr)
	}
}

// checkWhatifSection: report --whatif adds the what-if table and fate
// ledger whose every number is `retrytop whatif --format json`'s on the
// same recording.
func checkWhatifSection(t *testing.T, rec string, flags []string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "whatif.html")
	if _, stderr, err := execute(t, append([]string{"report", rec, "--whatif", "recorded,bounded", "-o", out}, flags...)...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	body, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	js, stderr, err := execute(t, "whatif", rec, "--policy", "recorded,bounded", "--format", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var doc any
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range regexp.MustCompile(`data-whatif="([^"]*)" data-v="([^"]*)"`).FindAllStringSubmatch(string(body), -1) {
		path := html.UnescapeString(m[1])
		want, err := pointer(doc, path)
		if err != nil {
			t.Errorf("page's what-if number %s: %v", path, err)
			continue
		}
		n++
		if want == nil {
			if m[2] != "null" {
				t.Errorf("%s: page %s, whatif null", path, m[2])
			}
			continue
		}
		if got, err := strconv.ParseFloat(m[2], 64); err != nil || got != want {
			t.Errorf("%s: page %s, whatif %v", path, m[2], want)
		}
	}
	// Three runs (the recording, recorded, bounded) of six figures each,
	// and at least the successes of each policy's ledger.
	if n < 3*6+2 {
		t.Errorf("only %d what-if numbers on the page", n)
	}
	if _, _, err := execute(t, "report", rec, rec, "--whatif", "bounded"); err == nil || !strings.Contains(err.Error(), "exactly one recording") {
		t.Errorf("--whatif with two recordings: %v", err)
	}
}
