package expo

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/internal/expotest"
)

const selTextType = "text/plain; version=0.0.4"

// TestSelectBodyParsesAlike: for every fixture and filter, the selected
// body parses with the filter exactly as the whole body does (or fails
// alike when the kept lines are malformed), selecting again changes
// nothing, and it is never larger.
func TestSelectBodyParsesAlike(t *testing.T) {
	type fixture struct {
		body []byte
		ct   string
	}
	envoy, _ := expotest.GenEnvoy(300, false)
	bodies := map[string]fixture{"generated envoy": {envoy, selTextType}}
	for _, dir := range []string{"testdata", "../dialect/testdata"} {
		for _, ext := range []string{"*.prom", "*.om"} {
			m, _ := filepath.Glob(filepath.Join(dir, ext))
			for _, f := range m {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				ct := selTextType
				if strings.HasSuffix(f, ".om") {
					ct = "application/openmetrics-text; version=1.0.0"
				}
				bodies[f] = fixture{b, ct}
			}
		}
	}
	var p ExpfmtParser
	for name, fx := range bodies {
		for fname, filter := range selectFilters {
			sel, ok := SelectBody(nil, fx.body, fx.ct, filter)
			if !ok {
				t.Errorf("%s/%s: not selected", name, fname)
				continue
			}
			if len(sel) > len(fx.body) {
				t.Errorf("%s/%s: selected %d bytes of %d", name, fname, len(sel), len(fx.body))
			}
			want, werr := p.Parse("t", fx.body, fx.ct, filter)
			got, gerr := p.Parse("t", sel, fx.ct, filter)
			if (werr == nil) != (gerr == nil) {
				t.Errorf("%s/%s: whole body error %v, selected %v", name, fname, werr, gerr)
				continue
			}
			if werr == nil {
				if d := exactDiff(want, got); d != "" {
					t.Errorf("%s/%s: selected body parses differently: %s", name, fname, d)
				}
			}
			again, _ := SelectBody(nil, sel, fx.ct, filter)
			if !bytes.Equal(again, sel) {
				t.Errorf("%s/%s: selecting the selection changed it", name, fname)
			}
		}
	}
	// The generated Envoy body under the "counter" filter keeps 1 of its
	// 28 series per cluster plus descriptors: far below half.
	sel, _ := SelectBody(nil, envoy, selTextType, selectFilters["counter"])
	if r := float64(len(sel)) / float64(len(envoy)); r > 0.1 {
		t.Errorf("counter filter kept %.2f of the Envoy body, want at most 0.1 (1 series of 28 per cluster)", r)
	}
}

// TestSelectBodyKeepsWhole: bodies the pre-filter must not touch are
// refused (ok false) and dst comes back as given.
func TestSelectBodyKeepsWhole(t *testing.T) {
	filter := selectFilters["retry"]
	for _, c := range []struct{ name, body, ct string }{
		{"web page", "<html><body>hi</body></html>\n", "text/html"},
		{"json", `{"status":"ok"}` + "\n", "application/json"},
		{"protobuf", "\x10\x0aretry_x", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"},
	} {
		dst := []byte("keep")
		out, ok := SelectBody(dst, []byte(c.body), c.ct, filter)
		if ok || string(out) != "keep" {
			t.Errorf("%s: ok %v, out %q", c.name, ok, out)
		}
	}
	if out, ok := SelectBody(nil, []byte("retry_x 1\n"), selTextType, nil); ok || out != nil {
		t.Errorf("nil filter: ok %v, out %q", ok, out)
	}
	// Appends after dst.
	out, ok := SelectBody([]byte("x"), []byte("# a comment\nretry_a 1\nother 2\n"), selTextType, filter)
	if !ok || string(out) != "xretry_a 1\n" {
		t.Errorf("appended %q, %v", out, ok)
	}
}

// TestSeriesLines counts the lines a parse may keep: all but the text
// format's comments and blanks without a filter's help, only the wanted
// families' lines (their descriptors included) with it.
func TestSeriesLines(t *testing.T) {
	body := []byte(`# HELP a_total A.
# TYPE a_total counter
a_total{x="1"} 1
a_total{x="2"} 2
# TYPE b histogram
b_bucket{le="1"} 1
b_bucket{le="+Inf"} 2
b_sum 3
b_count 2
c 7
`)
	for _, tc := range []struct {
		name   string
		filter func(string) bool
		want   int
	}{
		{"no filter: every line", nil, 10},
		{"a only", only("a_total"), 4},
		{"b only", only("b"), 5},
		{"nothing", only("zzz"), 0},
	} {
		if got := SeriesLines(body, selTextType, tc.filter); got != tc.want {
			t.Errorf("%s: %d lines, want %d", tc.name, got, tc.want)
		}
	}
}

// TestSeriesLinesHoldsNoLineTable: counting the series of a body of
// 400,000 short lines allocates by its names, not its lines (run's table
// of 12 bytes a line, 4.8 MB, too large to be pooled); a body of more names than
// maxCountedNames is counted line by line, every line a series, so the
// count never falls short of what a parse keeps.
func TestSeriesLinesHoldsNoLineTable(t *testing.T) {
	const lines = 400000
	var b strings.Builder
	b.WriteString("# TYPE a_total counter\n")
	for i := range lines {
		fmt.Fprintf(&b, "a_total{i=\"%x\"} 1\n", i)
	}
	body := []byte(b.String())
	SeriesLines(body, selTextType, only("a_total")) // warm the pool
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n := SeriesLines(body, selTextType, only("a_total"))
	runtime.ReadMemStats(&after)
	if n != lines+1 {
		t.Errorf("%d series lines, want %d", n, lines+1)
	}
	// 1 MiB: far above a few names' worth, far below one int32 a line.
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("counting allocated %d bytes, want under 1 MiB", got)
	}

	b.Reset()
	for i := range maxCountedNames + 10 {
		fmt.Fprintf(&b, "n%d 1\n", i)
	}
	b.WriteString("a_total 1\n")
	if got, want := SeriesLines([]byte(b.String()), selTextType, only("a_total")), maxCountedNames+11; got != want {
		t.Errorf("many names: %d series lines, want every line, %d", got, want)
	}
}
