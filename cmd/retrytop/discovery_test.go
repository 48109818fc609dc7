package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDiscoveryUsageErrors: bad discovery flags and files are usage
// errors (exit 1) naming the flag or the file, on every command that
// scrapes, before anything runs.
func TestDiscoveryUsageErrors(t *testing.T) {
	dir := t.TempDir()
	prom := filepath.Join(dir, "prometheus.yml")
	writeFile(t, prom, "scrape_configs:\n  - job_name: api\n    static_configs: [{targets: ['127.0.0.1:1']}]\n  - job_name: web\n    static_configs: [{targets: ['127.0.0.1:2']}]\n")
	bad := filepath.Join(dir, "bad.json")
	writeFile(t, bad, "[\n  {\"targets\": [\"a:1\"]},\n  {\"targets\": [\"b:1\"],}\n]\n")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"job without config", []string{"--job", "api"}, "--job needs --prometheus-config FILE"},
		{"config without job", []string{"--prometheus-config", prom}, `--prometheus-config needs --job NAME: ` + prom + `: no job selected; its jobs are: "api", "web"`},
		{"unknown job", []string{"--prometheus-config", prom, "--job", "db"}, prom + `: no job "db"; its jobs are: "api", "web"`},
		{"missing config", []string{"--prometheus-config", filepath.Join(dir, "nope.yml"), "--job", "api"}, "nope.yml: no such file or directory"},
		{"missing file_sd", []string{"--file-sd", filepath.Join(dir, "nope.json")}, "nope.json: no such file or directory"},
		{"bad file_sd", []string{"--file-sd", bad}, "bad.json: line 3: invalid character '}'"},
	}
	for _, verb := range []string{"watch", "analyze", "record"} {
		for _, tt := range tests {
			t.Run(verb+"/"+tt.name, func(t *testing.T) {
				args := append([]string{verb}, tt.args...)
				if verb == "record" {
					args = append(args, "-o", filepath.Join(t.TempDir(), "x.rtd"))
				}
				_, _, err := execute(t, args...)
				var ee *exitError
				if !errors.As(err, &ee) || ee.code != exitUsage {
					t.Fatalf("err = %v, want a usage error (exit %d)", err, exitUsage)
				}
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("err = %q, want it to contain %q", err, tt.want)
				}
			})
		}
	}
}

// reportTargets runs analyze and returns the targets of its JSON report.
func reportTargets(t *testing.T, args ...string) ([]struct {
	Name  string `json:"name"`
	URL   string `json:"url"`
	Layer string `json:"layer"`
	Up    bool   `json:"up"`
}, string) {
	t.Helper()
	out, stderr, err := execute(t, append([]string{"analyze", "--format", "json", "--window", "300ms", "--interval", "100ms", "-q"}, args...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var rep struct {
		Targets []struct {
			Name  string `json:"name"`
			URL   string `json:"url"`
			Layer string `json:"layer"`
			Up    bool   `json:"up"`
		} `json:"targets"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return rep.Targets, stderr
}

// TestAnalyzeFileSDWithPositionalTargets mixes a positional target with a
// file_sd file's: each is scraped once under its own name, the file's
// named by instance label or address, its meta labels applied.
func TestAnalyzeFileSDWithPositionalTargets(t *testing.T) {
	var mu sync.Mutex
	paths := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths[r.URL.RequestURI()]++
		mu.Unlock()
		fmt.Fprint(w, contractExposition(1))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	sd := filepath.Join(t.TempDir(), "targets.json")
	writeFile(t, sd, fmt.Sprintf(`[
  {"targets": [%q], "labels": {"job": "app"}},
  {"targets": [%q], "labels": {"instance": "edge", "__metrics_path__": "/stats", "__param_format": "text"}}
]`, host, host))
	targets, _ := reportTargets(t, "main="+srv.URL+"/main", "--file-sd", sd)
	type tgt struct{ name, url, layer string }
	var got []tgt
	for _, tg := range targets {
		if !tg.Up {
			t.Errorf("target %+v is down", tg)
		}
		got = append(got, tgt{tg.Name, tg.URL, tg.Layer})
	}
	want := []tgt{
		{"main", srv.URL + "/main", ""},
		{host, srv.URL + "/metrics", "app"},
		{"edge", srv.URL + "/stats?format=text", ""},
	}
	if !slices.Equal(got, want) {
		t.Errorf("targets = %+v, want %+v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range []string{"/main", "/metrics", "/stats?format=text"} {
		if paths[p] < 2 {
			t.Errorf("%s requested %d times, want at least 2 (window start and end)", p, paths[p])
		}
	}
}

// TestDiscoveryPrometheusConfigJob takes a job's targets from a
// prometheus.yml: its scheme, metrics_path, params and basic_auth (password
// from a file relative to the config) reach the request; warnings about
// what is not read go to stderr.
func TestDiscoveryPrometheusConfigJob(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s:%s %v", r.URL.RequestURI(), user, pass, ok))
		mu.Unlock()
		if !ok || user != "scraper" || pass != "pa55word" {
			http.Error(w, "auth", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, contractExposition(1))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "password"), "pa55word")
	writeFile(t, filepath.Join(dir, "sd.yml"), fmt.Sprintf("- targets: [%q]\n  labels: {instance: from-file}\n", host))
	prom := filepath.Join(dir, "prometheus.yml")
	writeFile(t, prom, fmt.Sprintf(`global:
  scrape_interval: 15s
scrape_configs:
  - job_name: other
    static_configs: [{targets: ['127.0.0.1:1']}]
  - job_name: api
    metrics_path: /internal/metrics
    params: {module: [retry]}
    basic_auth:
      username: scraper
      password_file: password
    static_configs:
      - targets: [%q]
    file_sd_configs:
      - files: [sd.yml]
    relabel_configs:
      - target_label: team
        replacement: x
`, host))
	targets, stderr := reportTargets(t, "--prometheus-config", prom, "--job", "api")
	if len(targets) != 2 || targets[0].Name != host || targets[1].Name != "from-file" {
		t.Fatalf("targets = %+v, want %s and from-file", targets, host)
	}
	for _, tg := range targets {
		if !tg.Up || tg.Layer != "api" || tg.URL != srv.URL+"/internal/metrics?module=retry" {
			t.Errorf("target %+v: want up, layer api, the job's path and params", tg)
		}
	}
	mu.Lock()
	if len(seen) < 4 || seen[0] != "/internal/metrics?module=retry scraper:pa55word true" {
		t.Errorf("requests = %q", seen)
	}
	mu.Unlock()
	if !strings.Contains(stderr, `retrytop: warning: `+prom+`: job "api": relabel_configs not applied`) {
		t.Errorf("stderr lacks the relabel_configs warning:\n%s", stderr)
	}
	if strings.Contains(stderr, "pa55word") {
		t.Errorf("password on stderr:\n%s", stderr)
	}
}

// TestDiscoveryIntervalAndBadge resolves a prometheus.yml job with and
// without --interval: the job's scrape_interval applies unless the flag
// is given. The dashboard badge names the first problem (the file by its
// base name, cut to fit the header) and counts the rest, before the
// recorder's badge.
func TestDiscoveryIntervalAndBadge(t *testing.T) {
	dir := t.TempDir()
	prom := filepath.Join(dir, "prometheus.yml")
	writeFile(t, prom, `scrape_configs:
  - job_name: api
    scrape_interval: 15s
    static_configs: [{targets: ['127.0.0.1:1']}]
    relabel_configs: [{target_label: a, replacement: b}]
    consul_sd_configs: [{server: 'localhost:8500'}]
`)
	for _, tt := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 15 * time.Second},
		{[]string{"--interval", "2s"}, 2 * time.Second},
	} {
		var f sourceFlags
		var interval time.Duration
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		f.register(cmd)
		cmd.Flags().DurationVar(&interval, "interval", time.Second, "")
		cmd.SetErr(&strings.Builder{})
		if err := cmd.ParseFlags(append([]string{"--prometheus-config", prom, "--job", "api"}, tt.args...)); err != nil {
			t.Fatal(err)
		}
		src, err := f.resolve(nil, interval)
		if err != nil {
			t.Fatal(err)
		}
		if len(src.Targets) != 1 || src.Targets[0].Interval != tt.want {
			t.Errorf("%v: targets %+v, want one at %s", tt.args, src.Targets, tt.want)
		}
		badge := src.Status(func() string { return "● REC" })()
		if !strings.HasPrefix(badge, `discovery: prometheus.yml: job "api": consul_sd_configs not read`) ||
			!strings.HasSuffix(badge, "… (+1 more) ● REC") || len(badge) > 120 {
			t.Errorf("badge = %q", badge)
		}
	}
}

// TestRecordFollowsFileSD records from a file_sd file that gains a target
// while recording: the new target's scrapes land in the dump.
func TestRecordFollowsFileSD(t *testing.T) {
	old := discoveryPoll
	discoveryPoll = 20 * time.Millisecond
	defer func() { discoveryPoll = old }()

	var mu sync.Mutex
	hits := map[string]int{}
	firstHit, secondHits := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		n := hits[r.URL.Path]
		mu.Unlock()
		switch {
		case r.URL.Path == "/one" && n == 1:
			close(firstHit)
		case r.URL.Path == "/two" && n == 4: // so three have completed: one target's scrapes never overlap
			close(secondHits)
		}
		fmt.Fprint(w, contractExposition(n))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	sd := filepath.Join(dir, "targets.json")
	group := func(name string) string {
		return fmt.Sprintf(`{"targets": [%q], "labels": {"instance": %q, "__metrics_path__": "/%s"}}`, host, name, name)
	}
	writeFile(t, sd, "["+group("one")+"]")
	out := filepath.Join(dir, "rec.rtd")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		select {
		case <-firstHit:
		case <-ctx.Done():
			return
		}
		// Written to a temporary file and renamed, as tools do, so the
		// watcher never sees half a file.
		tmp := sd + ".tmp"
		writeFile(t, tmp, "["+group("one")+","+group("two")+"]")
		if err := os.Rename(tmp, sd); err != nil {
			t.Error(err)
		}
		select {
		case <-secondHits:
			cancel()
		case <-ctx.Done():
		}
	}()
	cmd := newRootCmd()
	var stderr strings.Builder
	cmd.SetErr(&stderr)
	cmd.SetOut(&strings.Builder{})
	cmd.SetArgs([]string{"record", "--file-sd", sd, "-o", out, "--interval", "20ms", "--duration", "20s", "-q"})
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if ctx.Err() == nil {
		t.Fatalf("record ended before the new target was requested 4 times:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "retrytop: discovery: 2 target(s)") {
		t.Errorf("stderr lacks the new target set:\n%s", stderr.String())
	}
	frames := map[string]int{}
	for _, f := range readFrames(t, out) {
		// Every scrape recorded counts, answered or not: at a 20 ms
		// interval (and timeout) a busy machine fails some, and what is
		// tested is that record follows the file, not the scrapes.
		frames[f.Target]++
	}
	if frames["one"] < 1 || frames["two"] < 3 {
		t.Errorf("frames per target = %v, want one >= 1 and two >= 3", frames)
	}
}

// retrytop with only source flags and no verb is watch too: it reads the
// file (here a missing one, a usage error naming it) instead of printing
// help.
func TestRootWithOnlySourceFlagsIsWatch(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.json")
	out, _, err := execute(t, "--file-sd", missing)
	if err == nil || !strings.Contains(err.Error(), "nope.json") {
		t.Fatalf("err = %v, want an error naming the file", err)
	}
	if strings.Contains(out, "Usage:") {
		t.Errorf("printed help instead of running watch:\n%s", out)
	}
}
