package discovery

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/config"

	"github.com/retrytop/retrytop/scrape"
)

func TestParseFileSD(t *testing.T) {
	want := []Group{
		{Targets: []string{"10.0.0.1:9100", "10.0.0.2:9100"}, Labels: map[string]string{"job": "node", "env": "prod"}},
		{Targets: []string{"envoy-1:9901"}, Labels: map[string]string{
			"__metrics_path__": "/stats/prometheus", "__scheme__": "https", "__param_usedonly": "true",
			"__retrytop_dialect__": "envoy", "instance": "edge-envoy",
		}},
	}
	tests := []struct {
		file   string
		wheres []string
		err    string // substring; "" for success
	}{
		{file: "targets.json", wheres: []string{"testdata/targets.json group 1 (line 2)", "testdata/targets.json group 2 (line 6)"}},
		{file: "targets.yaml", wheres: []string{"testdata/targets.yaml group 1", "testdata/targets.yaml group 2"}},
		{file: "bad_syntax.json", err: "testdata/bad_syntax.json: line 3: invalid character '}'"},
		{file: "bad_type.json", err: "testdata/bad_type.json: line 4: `targets` takes a list, not text"},
		{file: "bad_key.yaml", err: "testdata/bad_key.yaml: unknown key `label` at line 3; did you mean `labels`?"},
		{file: "bad_label.json", err: `testdata/bad_label.json group 1 (line 1): invalid label name ""`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			groups, err := ReadFileSD(filepath.Join("testdata", tt.file))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var wheres []string
			for i := range groups {
				wheres = append(wheres, groups[i].Where)
				groups[i].Where = ""
			}
			if !reflect.DeepEqual(groups, want) {
				t.Errorf("groups = %+v, want %+v", groups, want)
			}
			if !slices.Equal(wheres, tt.wheres) {
				t.Errorf("wheres = %q, want %q", wheres, tt.wheres)
			}
		})
	}
}

func TestParseFileSDEmptyAndNull(t *testing.T) {
	for _, c := range []struct{ name, body string }{
		{"a.json", ""}, {"a.json", "null"}, {"a.json", " [ ] "}, {"a.yaml", ""}, {"a.yaml", "[]"}, {"a", "[]"},
	} {
		groups, err := ParseFileSD(c.name, []byte(c.body))
		if err != nil || len(groups) != 0 {
			t.Errorf("%s %q: groups %v, err %v; want none, nil", c.name, c.body, groups, err)
		}
	}
	if _, err := ParseFileSD("a.json", []byte(`{"targets": []}`)); err == nil || !strings.Contains(err.Error(), "a.json: line 1: want a list of target groups") {
		t.Errorf("object instead of list: err = %v", err)
	}
	if _, err := ParseFileSD("a.json", []byte("[]\n[]")); err == nil || !strings.Contains(err.Error(), "line 2: data after") {
		t.Errorf("trailing data: err = %v", err)
	}
}

// brief is the part of a target a test compares.
type brief struct {
	Name, URL, Layer, Dialect string
	Interval, Timeout         time.Duration
}

func briefs(ts []scrape.Target) []brief {
	var out []brief
	for _, t := range ts {
		out = append(out, brief{t.Name, t.URL, t.Layer, t.Dialect, t.Interval, t.Timeout})
	}
	return out
}

func TestFileSDTargets(t *testing.T) {
	want := []brief{
		{"10.0.0.1:9100", "http://10.0.0.1:9100/metrics", "node", "", time.Second, time.Second},
		{"10.0.0.2:9100", "http://10.0.0.2:9100/metrics", "node", "", time.Second, time.Second},
		{"edge-envoy", "https://envoy-1:9901/stats/prometheus?usedonly=true", "", "envoy", time.Second, time.Second},
	}
	for _, file := range []string{"targets.json", "targets.yaml"} {
		w := NewWatcher([]*Job{FileSDJob([]string{filepath.Join("testdata", file)})}, Options{})
		set, changed := w.Refresh()
		if !changed || len(set.Errors) != 0 || len(set.Warnings) != 0 {
			t.Fatalf("%s: changed %v, errors %q, warnings %q", file, changed, set.Errors, set.Warnings)
		}
		if got := briefs(set.Targets); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: targets\n%+v\nwant\n%+v", file, got, want)
		}
		if !set.Targets[0].HTTP.FollowRedirects || !set.Targets[0].HTTP.EnableHTTP2 {
			t.Errorf("%s: HTTP settings are not Prometheus' defaults: %+v", file, set.Targets[0].HTTP)
		}
	}
}

func TestLoadPrometheus(t *testing.T) {
	path := filepath.Join("testdata", "prometheus.yml")
	jobs, err := LoadPrometheus(path, []string{"api", "blackbox", "api"})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 {
		t.Fatalf("%d jobs, want api and blackbox once each", len(jobs))
	}
	api, bb := jobs[0], jobs[1]
	if api.Name != "api" || api.Scheme != "https" || api.MetricsPath != "/internal/metrics" ||
		api.Interval != 2*time.Second || api.Timeout != 2*time.Second {
		t.Errorf("api job = %+v; want https, /internal/metrics, 2s interval, timeout capped at 2s", api)
	}
	if ba := api.HTTP.BasicAuth; ba == nil || ba.Username != "scraper" || ba.PasswordFile != "testdata/secrets/scraper" {
		t.Errorf("api basic_auth = %+v, want password_file resolved against testdata/", ba)
	}
	if api.HTTP.TLSConfig.CAFile != "testdata/ca.pem" || !api.HTTP.FollowRedirects {
		t.Errorf("api HTTP = %+v, want ca_file testdata/ca.pem and Prometheus' defaults", api.HTTP)
	}
	if len(api.Files) != 1 || api.Files[0].Refresh != 30*time.Second ||
		!slices.Equal(api.Files[0].Patterns, []string{"testdata/sd/api-*.json", "testdata/sd/*.yml"}) {
		t.Errorf("api file_sd = %+v", api.Files)
	}
	if len(api.Warnings) != 0 {
		t.Errorf("api warnings = %q, want none (honor_labels changes nothing retrytop reads)", api.Warnings)
	}
	wantWarn := []string{
		`testdata/prometheus.yml: job "blackbox": kubernetes_sd_configs not read: only static_configs and file_sd_configs are, so its targets are missing`,
		`testdata/prometheus.yml: job "blackbox": metric_relabel_configs not applied`,
		`testdata/prometheus.yml: job "blackbox": relabel_configs not applied`,
		`testdata/prometheus.yml: job "blackbox": unknown key "unknown_thing" not read`,
	}
	if len(bb.Warnings) != len(wantWarn) {
		t.Fatalf("blackbox warnings = %q", bb.Warnings)
	}
	for i, w := range wantWarn {
		if !strings.HasPrefix(bb.Warnings[i], w) {
			t.Errorf("warning %d = %q, want prefix %q", i, bb.Warnings[i], w)
		}
	}

	w := NewWatcher(jobs, Options{Interval: time.Second})
	set, _ := w.Refresh()
	want := []brief{
		{"api-0:8080", "https://api-0:8080/internal/metrics?extra=a&extra=b&format=prometheus", "api", "", 2 * time.Second, 2 * time.Second},
		{"api-1:8080", "https://api-1:8080/internal/metrics?extra=a&extra=b&format=prometheus", "api", "", 2 * time.Second, 2 * time.Second},
		{"api-2:8080", "https://api-2:8080/internal/metrics?extra=a&extra=b&format=prometheus", "api", "", 2 * time.Second, 2 * time.Second},
		{"api-3:8080", "https://api-3:8080/internal/metrics?extra=a&extra=b&format=text", "api", "", 5 * time.Second, 2 * time.Second},
		{"blackbox:9115", "http://blackbox:9115/probe?module=http_2xx", "blackbox", "", 15 * time.Second, 10 * time.Second},
	}
	if got := briefs(set.Targets); !reflect.DeepEqual(got, want) {
		t.Errorf("targets\n%+v\nwant\n%+v", got, want)
	}
	if !slices.Equal(set.Warnings, bb.Warnings) || len(set.Errors) != 0 {
		t.Errorf("set warnings %q errors %q; want the job's warnings and no error", set.Warnings, set.Errors)
	}
	if set.Targets[0].HTTP.BasicAuth == nil || set.Targets[4].HTTP.BasicAuth != nil {
		t.Error("targets do not carry their own job's HTTP settings")
	}

	// --interval given: it wins over the file and the labels, and caps
	// the timeouts.
	w = NewWatcher(jobs, Options{Interval: time.Second, OverrideInterval: true})
	set, _ = w.Refresh()
	for _, tg := range set.Targets {
		if tg.Interval != time.Second || tg.Timeout != time.Second {
			t.Errorf("%s: interval %s timeout %s, want 1s and 1s", tg.Name, tg.Interval, tg.Timeout)
		}
	}
}

func TestLoadPrometheusErrors(t *testing.T) {
	tests := []struct {
		file string
		jobs []string
		err  string
	}{
		{"prometheus.yml", []string{"nope"}, `testdata/prometheus.yml: no job "nope"; its jobs are: "api", "blackbox", "node", "only-k8s"`},
		{"prometheus.yml", nil, `testdata/prometheus.yml: no job selected; its jobs are: "api", "blackbox", "node", "only-k8s"`},
		{"prometheus.yml", []string{"only-k8s"}, `testdata/prometheus.yml: job "only-k8s": no static_configs or file_sd_configs`},
		{"prometheus_bad_duration.yml", []string{"ok"}, `testdata/prometheus_bad_duration.yml: scrape_configs[1] (job "slow"): unknown unit "x" in duration "5x"`},
		{"prometheus_bad_type.yml", []string{"ok"}, "testdata/prometheus_bad_type.yml: line 4: `a:1` is not a list"},
		{"prometheus_timeout.yml", []string{"t"}, `testdata/prometheus_timeout.yml: job "t": scrape_timeout 2s is longer than scrape_interval 1s`},
		{"missing.yml", []string{"x"}, "testdata/missing.yml: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+strings.Join(tt.jobs, ","), func(t *testing.T) {
			_, err := LoadPrometheus(filepath.Join("testdata", tt.file), tt.jobs)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.err)
			}
		})
	}
}

// TestPrometheusSecretsNotInWarnings checks that a job's inline secret
// never reaches a message.
func TestPrometheusSecretsNotInWarnings(t *testing.T) {
	jobs, err := LoadPrometheus(filepath.Join("testdata", "prometheus.yml"), []string{"node"})
	if err != nil {
		t.Fatal(err)
	}
	if a := jobs[0].HTTP.Authorization; a == nil || string(a.Credentials) != "s3cret-token" {
		t.Fatalf("node authorization = %+v", a)
	}
	set, _ := NewWatcher(jobs, Options{}).Refresh()
	if s := fmt.Sprint(set.Warnings, set.Errors); strings.Contains(s, "s3cret") {
		t.Errorf("secret in messages: %s", s)
	}
}

func TestTargetName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"10.0.0.1:9100", "10.0.0.1:9100"},
		{"  api  ", "api"},
		{"evil\x1b[31mred", "evil_x1b[31mred"},
		{`quote"back\slash`, "quote_back_slash"},
		{"tab\there", "tab here"},
		{strings.Repeat("x", 200), strings.Repeat("x", scrape.MaxNameLen-3) + "…"},
	}
	for _, tt := range tests {
		got := TargetName(tt.in)
		if got != tt.want {
			t.Errorf("TargetName(%q) = %q, want %q", tt.in, got, tt.want)
		}
		// The name must pass the scraper's own check.
		if _, err := (scrape.Target{Name: got, URL: "http://h:1/"}).Normalize(); err != nil {
			t.Errorf("TargetName(%q) = %q is refused: %v", tt.in, got, err)
		}
	}
}

func staticJob(name string, groups ...Group) *Job {
	for i := range groups {
		groups[i].Where = fmt.Sprintf("%s static_configs[%d]", name, i)
	}
	return &Job{Name: name, Scheme: "http", MetricsPath: "/metrics", HTTP: config.DefaultHTTPClientConfig, Static: groups}
}

func TestNamesAndDuplicates(t *testing.T) {
	static := []scrape.Target{
		{Name: "app", URL: "http://app:1/metrics", Interval: time.Second, Timeout: time.Second},
		{Name: "db:9", URL: "http://db:9/metrics", Interval: time.Second, Timeout: time.Second},
	}
	jobs := []*Job{
		staticJob("a",
			Group{Targets: []string{"app:1", "x:1", "x:1", "bad/addr", ""}},
			Group{Targets: []string{"y:1"}, Labels: map[string]string{"instance": "x:1"}},
			Group{Targets: []string{"z:1"}, Labels: map[string]string{"instance": "db:9"}},
			Group{Targets: []string{"i:1"}, Labels: map[string]string{"__scrape_interval__": "soon"}},
		),
		staticJob("b", Group{Targets: []string{"x:1"}, Labels: map[string]string{"__metrics_path__": "/other"}}),
		FileSDJob(nil),
	}
	jobs[2].Static = []Group{{Targets: []string{"x:1"}, Where: "f group 1"}}
	set, _ := NewWatcher(jobs, Options{Static: static}).Refresh()
	var names []string
	for _, tg := range set.Targets {
		names = append(names, tg.Name)
	}
	// app:1 has a static target's URL: left out. x:1 listed twice in a:
	// once. y:1 claims instance x:1 in the same job: skipped. z:1 as
	// db:9 collides with a static name: renamed a/db:9. b's x:1 is
	// renamed b/x:1. The file job's x:1 cannot be renamed: skipped.
	want := []string{"app", "db:9", "x:1", "a/db:9", "b/x:1"}
	if !slices.Equal(names, want) {
		t.Errorf("names = %q, want %q", names, want)
	}
	wantWarn := []string{
		`a static_configs[0]: target "bad/addr": an address is host:port`,
		`a static_configs[0]: empty target address; skipped`,
		`a static_configs[1]: target "x:1" (http://y:1/metrics) has the name of another target; skipped`,
		`a static_configs[3]: target "i:1": __scrape_interval__ "soon" is not a positive duration; skipped`,
		`f group 1: target "x:1" (http://x:1/metrics) has the name of another target; skipped`,
	}
	if len(set.Warnings) != len(wantWarn) {
		t.Fatalf("warnings = %q", set.Warnings)
	}
	for i, w := range wantWarn {
		if !strings.HasPrefix(set.Warnings[i], w) {
			t.Errorf("warning %d = %q, want prefix %q", i, set.Warnings[i], w)
		}
	}
}

func TestMaxTargets(t *testing.T) {
	var addrs []string
	for i := range 30 {
		addrs = append(addrs, fmt.Sprintf("h%d:1", i))
	}
	set, _ := NewWatcher([]*Job{staticJob("j", Group{Targets: addrs})}, Options{MaxTargets: 25}).Refresh()
	if len(set.Targets) != 25 || len(set.Warnings) != 1 || !strings.Contains(set.Warnings[0], "more than 25 discovered targets") {
		t.Errorf("%d targets, warnings %q; want 25 and one warning", len(set.Targets), set.Warnings)
	}
}

// fakeClock is a clock tests move by hand.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

// write replaces path atomically (a temporary file renamed over it), as
// tools that generate file_sd files do: a watcher running concurrently
// sees the old file or the new one, never half of it.
func write(t *testing.T, path, body string, mtime time.Time) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func names(ts []scrape.Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// TestWatcherFollowsChanges drives a Watcher through edits of a file_sd
// file and a glob, on a fake clock and with explicit modification times:
// no sleeping.
func TestWatcherFollowsChanges(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.json")
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := &fakeClock{now: t0}
	write(t, file, `[{"targets": ["a:1", "b:1"]}]`, t0)
	job := FileSDJob([]string{file, filepath.Join(dir, "more-*.yml")})
	job.Files[0].Refresh = time.Minute
	w := NewWatcher([]*Job{job}, Options{Clock: clock.Now})

	step := func(what string, wantChanged bool, wantNames []string, wantErr string) {
		t.Helper()
		set, changed := w.Refresh()
		if changed != wantChanged {
			t.Errorf("%s: changed = %v, want %v", what, changed, wantChanged)
		}
		if got := names(set.Targets); !slices.Equal(got, wantNames) {
			t.Errorf("%s: targets %q, want %q", what, got, wantNames)
		}
		gotErr := strings.Join(set.Errors, "; ")
		if (wantErr == "") != (gotErr == "") || !strings.Contains(gotErr, wantErr) {
			t.Errorf("%s: errors %q, want %q", what, gotErr, wantErr)
		}
		if !reflect.DeepEqual(w.Current(), set) {
			t.Errorf("%s: Current() differs from what Refresh returned", what)
		}
	}

	step("first read", true, []string{"a:1", "b:1"}, "")
	step("nothing changed", false, []string{"a:1", "b:1"}, "")

	// Same size, same modification time: not re-read until the refresh
	// interval has passed, then re-read and seen to differ.
	write(t, file, `[{"targets": ["a:1", "c:1"]}]`, t0)
	step("edit hidden from stat", false, []string{"a:1", "b:1"}, "")
	clock.now = t0.Add(time.Minute)
	step("refresh interval passed", true, []string{"a:1", "c:1"}, "")

	// Touched without a content change: re-read, same hash, no change.
	write(t, file, `[{"targets": ["a:1", "c:1"]}]`, t0.Add(time.Second))
	step("touched", false, []string{"a:1", "c:1"}, "")

	// Broken: the last good targets stay, the error is reported.
	write(t, file, `[{"targets": ["a:1", "d:1"]]`, t0.Add(2*time.Second))
	step("broken", true, []string{"a:1", "c:1"}, "a.json: line 1: invalid character ']'")
	step("still broken", false, []string{"a:1", "c:1"}, "a.json: line 1")

	// Fixed.
	write(t, file, `[{"targets": ["d:1"]}]`, t0.Add(3*time.Second))
	step("fixed", true, []string{"d:1"}, "")

	// Removed: an explicit file keeps its targets and says so.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	step("removed", true, []string{"d:1"}, "a.json: no such file or directory; its last good targets are kept")
	write(t, file, `[{"targets": ["d:1"]}]`, t0.Add(4*time.Second))
	step("back", true, []string{"d:1"}, "")

	// A glob: a new file joins, a removed one takes its targets along.
	more := filepath.Join(dir, "more-1.yml")
	write(t, more, "- targets: [e:1]\n", t0)
	step("glob match added", true, []string{"d:1", "e:1"}, "")
	if err := os.Remove(more); err != nil {
		t.Fatal(err)
	}
	step("glob match removed", true, []string{"d:1"}, "")
}

func TestWatcherRun(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.yaml")
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	write(t, file, "- targets: [a:1]\n", t0)
	ticks := make(chan time.Time)
	w := NewWatcher([]*Job{FileSDJob([]string{file})}, Options{Ticks: ticks})
	if _, changed := w.Refresh(); !changed {
		t.Fatal("first Refresh reported no change")
	}
	sets := make(chan Set, 4)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, func(s Set) { sets <- s })
	}()
	ticks <- t0 // nothing changed: apply is not called
	write(t, file, "- targets: [b:1]\n", t0.Add(time.Second))
	ticks <- t0
	ticks <- t0 // the third tick is taken only after the second's apply
	cancel()
	<-done
	close(sets)
	var got [][]string
	for s := range sets {
		got = append(got, names(s.Targets))
	}
	if !reflect.DeepEqual(got, [][]string{{"b:1"}}) {
		t.Errorf("applied sets = %q, want one: [b:1]", got)
	}
}
