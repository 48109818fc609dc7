package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/record"
	"github.com/retrytop/retrytop/scrape"
	"github.com/retrytop/retrytop/sources"
)

// irrelevantFamilies is what a Go service exposes beside the retry
// contract and no dialect reads: runtime gauges, a GC summary and an
// application's own cache counters, n%5 of them changing per scrape.
func irrelevantFamilies(n int) string {
	var b strings.Builder
	b.WriteString("# HELP go_goroutines Number of goroutines that currently exist.\n# TYPE go_goroutines gauge\n")
	fmt.Fprintf(&b, "go_goroutines %d\n", 40+n%5)
	b.WriteString("# TYPE go_gc_duration_seconds summary\n")
	for _, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		fmt.Fprintf(&b, "go_gc_duration_seconds{quantile=%q} %g\n", q, 1e-5*float64(1+n%3))
	}
	fmt.Fprintf(&b, "go_gc_duration_seconds_sum %g\ngo_gc_duration_seconds_count %d\n", 0.001*float64(n), n)
	b.WriteString("# TYPE cache_lookups_total counter\n")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "cache_lookups_total{cache=\"shard-%02d\",result=\"hit\"} %d\n", i, 100*n+i)
		fmt.Fprintf(&b, "cache_lookups_total{cache=\"shard-%02d\",result=\"miss\"} %d\n", i, 3*n+i)
	}
	return b.String()
}

// TestOnlyRelevantAnalyzesAlike writes the same 150 scrapes of two
// targets twice, whole and through record --only-relevant's selection:
// "app" (the retry contract plus families no dialect reads) and "legacy"
// (only those). The selected recording must analyze to the same JSON, hold
// exactly the contract's lines for app and legacy's whole bodies (with one
// warning naming dialect draft), and be smaller.
func TestOnlyRelevantAnalyzesAlike(t *testing.T) {
	filter := dialect.Auto().Filter
	for _, n := range []string{"go_goroutines", "go_gc_duration_seconds", "cache_lookups_total"} {
		if filter(n) {
			t.Fatalf("fixture: a dialect reads %s; pick a family none reads", n)
		}
	}
	const scrapes = 150
	const ct = "text/plain; version=0.0.4"
	dir := t.TempDir()
	whole, selected := filepath.Join(dir, "whole.rtd"), filepath.Join(dir, "selected.rtd")
	ww, err := dump.Create(whole, false, dump.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sw, err := dump.Create(selected, false, dump.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	rel := record.NewRelevant(&sources.Sources{
		Targets:   []scrape.Target{{Name: "app", URL: "http://u:secret@app:9102/metrics"}, {Name: "legacy", URL: "http://legacy:9100/metrics"}},
		Translate: dialect.Auto(),
	}, func(msg string) { warnings = append(warnings, msg) })
	hook := rel.Hook(sw.Hook(func(err error) { t.Error(err) }))
	var contractBytes, legacyBytes, wholeBytes int64
	for i := 0; i < scrapes; i++ {
		at := recT0.Add(time.Duration(i) * time.Second)
		app := contractExposition(i) + irrelevantFamilies(i)
		legacy := irrelevantFamilies(i)
		contractBytes += int64(len(contractExposition(i)))
		legacyBytes += int64(len(legacy))
		wholeBytes += int64(len(app) + len(legacy))
		for _, tb := range []struct{ name, body string }{{"app", app}, {"legacy", legacy}} {
			if err := ww.Append(tb.name, at, ct, []byte(tb.body)); err != nil {
				t.Fatal(err)
			}
			hook(tb.name, at, []byte(tb.body), ct, nil)
		}
	}
	// A failed scrape passes through.
	if err := ww.AppendError("app", recT0.Add(scrapes*time.Second), "connection refused"); err != nil {
		t.Fatal(err)
	}
	hook("app", recT0.Add(scrapes*time.Second), nil, "", fmt.Errorf("connection refused"))
	wstats, sstats := ww.Stats(), sw.Stats()
	if err := ww.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	// Smaller: app loses the families no dialect reads, legacy is kept
	// whole. Body bytes are exact (written = the contract's lines plus
	// legacy's bodies, checked below); the dump's delta frames compress
	// the families differently, so its bytes are only required to shrink
	// for app and to stay for legacy.
	if len(wstats.Targets) != 2 || len(sstats.Targets) != 2 {
		t.Fatalf("targets %+v, %+v", wstats.Targets, sstats.Targets)
	}
	for i := range wstats.Targets {
		w, s := wstats.Targets[i], sstats.Targets[i]
		t.Logf("%s: dump bytes %d -> %d (%.3f)", w.Target, w.Bytes, s.Bytes, float64(s.Bytes)/float64(w.Bytes))
		if (w.Target == "app" && s.Bytes >= w.Bytes) || (w.Target == "legacy" && s.Bytes != w.Bytes) {
			t.Errorf("%s: %d dump bytes selected, %d whole", w.Target, s.Bytes, w.Bytes)
		}
	}
	// The fixture's ratio: app's irrelevant families are 0.45 of what
	// both targets serve; exactly those bytes must be gone.
	if sstats.BodyBytes != contractBytes+legacyBytes || wstats.BodyBytes != wholeBytes {
		t.Errorf("body bytes %d of %d, want %d of %d (the contract's lines and legacy whole)", sstats.BodyBytes, wstats.BodyBytes, contractBytes+legacyBytes, wholeBytes)
	}
	t.Logf("body bytes %.3f of the whole recording's", float64(sstats.BodyBytes)/float64(wstats.BodyBytes))

	// What was written: app's contract lines exactly, legacy whole.
	r, err := dump.Open(selected)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Len() != 2*scrapes+1 {
		t.Fatalf("%d frames, want %d", r.Len(), 2*scrapes+1)
	}
	for i := 0; i < 2*scrapes; i++ {
		f, err := r.Frame(i)
		if err != nil {
			t.Fatal(err)
		}
		want := irrelevantFamilies(i / 2)
		if f.Target == "app" {
			want = contractExposition(i / 2)
		}
		if string(f.Body) != want {
			t.Fatalf("frame %d (%s):\n%s\nwant\n%s", i, f.Target, f.Body, want)
		}
	}
	if f, err := r.Frame(2 * scrapes); err != nil || f.Err == "" {
		t.Errorf("last frame %+v, %v: want the failed scrape", f, err)
	}
	served, written := rel.Bytes()
	if got, want := written, contractBytes+legacyBytes; got != want {
		t.Errorf("written %d body bytes, want %d", got, want)
	}
	if got := served; got != wholeBytes {
		t.Errorf("served %d body bytes, want %d", got, wholeBytes)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `"legacy"`) || !strings.Contains(warnings[0], "dialect draft http://legacy:9100/metrics") ||
		!strings.Contains(warnings[0], "cache_lookups_total") {
		t.Errorf("warnings %q: want one for legacy, naming its families and dialect draft", warnings)
	}

	// Same analysis, whole and selected.
	var outs [2]string
	for k, path := range []string{whole, selected} {
		out, stderr, err := execute(t, "analyze", path, "--format", "json", "--window", "30s", "--bin", "10s")
		if err != nil {
			t.Fatalf("%s: %v\n%s", path, err, stderr)
		}
		outs[k] = strings.ReplaceAll(out, path, "FILE")
	}
	if outs[0] != outs[1] {
		t.Errorf("analyze differs:\nwhole:    %s\nselected: %s", outs[0], outs[1])
	}
	if !strings.Contains(outs[0], `"amplification"`) {
		t.Fatalf("analysis has no amplification: %s", outs[0])
	}
}

// TestRecordOnlyRelevant runs record --only-relevant on two loopback
// targets and reads the dump back: app's frames hold no family a dialect
// does not read, legacy's are whole, and the warning and the summary line
// are printed.
func TestRecordOnlyRelevant(t *testing.T) {
	var mu sync.Mutex
	n := 0
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		fmt.Fprint(w, contractExposition(i)+irrelevantFamilies(i))
	}))
	defer app.Close()
	legacy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, irrelevantFamilies(1))
	}))
	defer legacy.Close()
	path := filepath.Join(t.TempDir(), "rec.rtd")
	_, stderr, err := execute(t, "record", "--only-relevant", "app="+app.URL, "legacy="+legacy.URL, "-o", path, "--interval", "100ms", "--duration", "1s", "-q")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{`no dialect reads "legacy"`, "dialect draft " + legacy.URL, "--only-relevant: wrote"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if c := strings.Count(stderr, "no dialect reads"); c != 1 {
		t.Errorf("%d warnings, want 1:\n%s", c, stderr)
	}
	var apps, legacies int
	for i, f := range readFrames(t, path) {
		switch {
		case f.Err != "":
		case f.Target == "app":
			apps++
			if strings.Contains(string(f.Body), "cache_lookups_total") || !strings.Contains(string(f.Body), "retry_originals_total") {
				t.Fatalf("app frame %d not selected:\n%s", i, f.Body)
			}
		case f.Target == "legacy":
			legacies++
			if string(f.Body) != irrelevantFamilies(1) {
				t.Fatalf("legacy frame %d not whole:\n%s", i, f.Body)
			}
		}
	}
	if apps < 3 || legacies < 3 {
		t.Fatalf("%d app and %d legacy frames", apps, legacies)
	}
}

func TestRecordOnlyRelevantPrometheusRefused(t *testing.T) {
	_, _, err := execute(t, "record", "--only-relevant", "--prometheus", "http://127.0.0.1:1", "-o", filepath.Join(t.TempDir(), "x.rtd"))
	if err == nil || !strings.Contains(err.Error(), "--only-relevant") {
		t.Fatalf("err %v, want a usage error naming --only-relevant", err)
	}
}
