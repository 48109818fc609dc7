package expo

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/internal/expotest"
	"github.com/retrytop/retrytop/model"
)

// expfmtOnly parses a text body the slow way: expfmt and convertFamilies,
// what Parse did before the fast path.
func expfmtOnly(body []byte, filter func(string) bool) ([]model.Family, error) {
	fams, err := parseText(body)
	if err != nil {
		return nil, err
	}
	return convertFamilies(fams, filter), nil
}

// exactDiff compares families bit for bit (any NaN equals any NaN, but -0
// is not 0), treating empty and nil slices alike.
func exactDiff(want, got []model.Family) string {
	same := func(a, b float64) bool {
		return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
	}
	if len(want) != len(got) {
		return fmt.Sprintf("%d families %v, want %d %v", len(got), familyNames(got), len(want), familyNames(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.Name != g.Name || w.Type != g.Type || w.Help != g.Help || len(w.Samples) != len(g.Samples) {
			return fmt.Sprintf("family %d: got %q %s help %q with %d samples, want %q %s help %q with %d",
				i, g.Name, g.Type, g.Help, len(g.Samples), w.Name, w.Type, w.Help, len(w.Samples))
		}
		for j := range w.Samples {
			ws, gs := w.Samples[j], g.Samples[j]
			ok := ws.Labels.Equal(gs.Labels) && same(ws.Value, gs.Value) && same(ws.Count, gs.Count) &&
				same(ws.Sum, gs.Sum) && ws.TimestampMs == gs.TimestampMs &&
				len(ws.Buckets) == len(gs.Buckets) && len(ws.Quantiles) == len(gs.Quantiles)
			for k := 0; ok && k < len(ws.Buckets); k++ {
				ok = same(ws.Buckets[k].UpperBound, gs.Buckets[k].UpperBound) && same(ws.Buckets[k].Count, gs.Buckets[k].Count)
			}
			for k := 0; ok && k < len(ws.Quantiles); k++ {
				ok = same(ws.Quantiles[k].Quantile, gs.Quantiles[k].Quantile) && same(ws.Quantiles[k].Value, gs.Quantiles[k].Value)
			}
			if !ok {
				return fmt.Sprintf("%s sample %d: got %+v, want %+v", w.Name, j, gs, ws)
			}
		}
	}
	return ""
}

// checkFastText requires the fast path to agree with expfmt on body: equal
// families when it accepts the body, and every body expfmt rejects left to
// expfmt (so the error and its line come from expfmt).
func checkFastText(t *testing.T, name string, body []byte, filter func(string) bool) (accepted bool) {
	t.Helper()
	want, err := expfmtOnly(body, filter)
	got, ok := fastText(body, filter)
	switch {
	case err != nil && ok:
		t.Errorf("%s: the fast path accepted a body expfmt rejects (%v): %d families", name, err, len(got))
	case err == nil && ok:
		if d := exactDiff(want, got); d != "" {
			t.Errorf("%s: fast path differs from expfmt: %s", name, d)
		}
	}
	return ok
}

func TestFastTextMatchesExpfmt(t *testing.T) {
	var files []string
	for _, dir := range []string{"testdata", "../dialect/testdata"} {
		m, _ := filepath.Glob(filepath.Join(dir, "*.prom"))
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("only %d fixtures found", len(files))
	}
	filters := map[string]func(string) bool{
		"all":   nil,
		"retry": func(n string) bool { return strings.HasPrefix(n, "retry_") || strings.HasPrefix(n, "envoy_") },
	}
	accepted := 0
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for fname, filter := range filters {
			if checkFastText(t, f+"/"+fname, body, filter) {
				accepted++
			}
		}
	}
	envoy, _ := expotest.GenEnvoy(600, false)
	if !checkFastText(t, "generated envoy", envoy, nil) {
		t.Error("the fast path gave up on the generated Envoy exposition")
	}
	// Most fixtures are the plain text format: the fast path must take
	// them, or it is not a fast path.
	if accepted < len(files) {
		t.Errorf("fast path accepted %d of %d fixture parses", accepted, 2*len(files))
	}
}

// TestFastTextEdgeCases walks expfmt's grammar at its corners. Each body
// must either be accepted with expfmt's result or left to expfmt; want says
// which the fast path is expected to do.
func TestFastTextEdgeCases(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		accept bool
	}{
		{"empty", "", true},
		{"blank lines and leading blanks", "\n  \n\t a 1\n", true},
		{"trailing blanks without newline", "a 1\n  \t", true},
		{"no final newline", "a 1", false},
		{"comment without newline", "a 1\n# hi", false},
		{"plain comments", "# hello world\n#\n#HELP\n# TYPE\na 1\n", true},
		{"help then type then samples", "# HELP a Some \\\\ help \\n here \\\"q\\\"\n# TYPE a counter\na 1\na{x=\"y\"} 2\n", true},
		{"help with bad escape", "# HELP a bad \\t\na 1\n", false},
		{"second help", "# HELP a one\n# HELP a two\na 1\n", false},
		{"second type", "# TYPE a counter\n# TYPE a gauge\na 1\n", false},
		{"type after samples", "a 1\n# TYPE a counter\n", false},
		{"type in capitals", "# TYPE a COUNTER\na 1\n", true},
		{"type mixed case", "# TYPE a Counter\na 1\n", false},
		{"type with trailing blank", "# TYPE a counter \na 1\n", false},
		{"gauge histogram", "# TYPE a gaugehistogram\na_bucket{le=\"1\"} 1\n", false},
		{"help name only", "# HELP a\n# HELP a   \na 1\n", true},
		{"help for histogram component", "# TYPE h histogram\n# HELP h_count hc\nh_count 1\n", true},
		{"histogram", "# TYPE h histogram\nh_bucket{le=\"0.1\",a=\"x\"} 1\nh_bucket{a=\"x\",le=\"+Inf\"} 3\nh_count{a=\"x\"} 3\nh_sum{a=\"x\"} 0.5\n", true},
		{"histogram lines out of order", "# TYPE h histogram\nh_sum 2\nh_bucket{le=\"+Inf\"} 4\nh_bucket{le=\"1\"} 2\nh_count 4\n", true},
		{"histogram without inf", "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_count 4\n", true},
		{"histogram without count", "# TYPE h histogram\nh_bucket{le=\"1\"} 2\n", true},
		{"histogram base name bucket", "# TYPE h histogram\nh{le=\"1\"} 2\n", true},
		{"histogram bucket without le", "# TYPE h histogram\nh_bucket 2\n", true},
		{"histogram le NaN", "# TYPE h histogram\nh_bucket{le=\"NaN\"} 2\nh_count 2\n", true},
		{"histogram bad le", "# TYPE h histogram\nh_bucket{le=\"x\"} 2\n", false},
		{"histogram hex le", "# TYPE h histogram\nh_bucket{le=\"0x1p3\"} 2\n", false},
		{"histogram negative count", "# TYPE h histogram\nh_count -1\n", false},
		{"histogram negative bucket", "# TYPE h histogram\nh_bucket{le=\"1\"} -1\n", false},
		{"histogram float counts", "# TYPE h histogram\nh_bucket{le=\"1\"} 1.5\nh_count 2.5\n", true},
		{"histogram negative zero", "# TYPE h histogram\nh_bucket{le=\"1\"} -0\nh_count -0\nh_sum -0\n", true},
		{"histogram two le", "# TYPE h histogram\nh_bucket{le=\"1\",le=\"2\"} 1\n", true},
		{"histogram le on count", "# TYPE h histogram\nh_count{le=\"1\"} 1\n", true},
		{"histogram timestamps", "# TYPE h histogram\nh_bucket{le=\"1\"} 1 100\nh_count 1\nh_sum 1 200\n", true},
		{"summary", "# TYPE s summary\ns{quantile=\"0.5\"} 1\ns{quantile=\"0.99\"} 2\ns_count 7.9\ns_sum 3\n", true},
		{"summary without quantile", "# TYPE s summary\ns 1\n", true},
		{"summary bad quantile", "# TYPE s summary\ns{quantile=\"a\"} 1\n", false},
		{"summary bucket is its own family", "# TYPE s summary\ns_bucket{le=\"1\"} 1\n", true},
		{"counter le is a label", "# TYPE c counter\nc{le=\"1\"} 1\n", true},
		{"duplicate labels", "a{x=\"1\",x=\"2\"} 1\n", false},
		{"reserved name label", "a{__name__=\"b\"} 1\n", false},
		{"other double underscore label", "a{__x=\"b\"} 1\n", true},
		{"label escapes", "a{x=\"q\\\"\\\\\\n\",y=\"plain\"} 1\n", true},
		{"many escaped labels", "a{x=\"\\\\1\",y=\"\\\\2\",z=\"\\\\3\",w=\"\\n4\"} 1\n", true},
		{"label bad escape", "a{x=\"\\t\"} 1\n", false},
		{"label value invalid utf8", "a{x=\"\xff\"} 1\n", false},
		{"label value utf8", "a{x=\"héllo ✓\"} 1\n", true},
		{"blanks everywhere", "a { x = \"1\" , y=\"2\" , } 1\n", true},
		{"trailing comma", "a{x=\"1\",} 1\n", true},
		{"empty braces", "a{} 1\n", true},
		{"brace then value", "a{x=\"1\"}1\n", true},
		{"leading brace", "{a=\"1\"} 1\n", false},
		{"quoted name", "{\"my.metric\"} 1\n", false},
		{"quote in name", "a\"b\" 1\n", false},
		{"comma label", "a{,} 1\n", false},
		{"unterminated labels", "a{x=\"1\" 1\n", false},
		{"name then dash", "a-1 5\n", false},
		{"name alone", "a\n", false},
		{"empty value", "a{} \n", false},
		{"timestamp", "a 1 1700000000000\n", true},
		{"negative timestamp", "a 1 -5\n", true},
		{"trailing blank after value", "a 1 \n", false},
		{"trailing blank after timestamp", "a 1 5 \n", false},
		{"two timestamps", "a 1 5 6\n", false},
		{"float timestamp", "a 1 5.5\n", false},
		{"special values", "a +Inf\nb -Inf\nc NaN\nd Inf\ne nan\nf -0\ng 1e308\nh 0.1\ni +5\nj 123456789012345678901\n", true},
		{"hex value", "a 0x10\n", false},
		{"underscore value", "a 1_000\n", false},
		{"carriage return", "a 1\r\n", false},
		{"duplicate series", "a 1\na 2\n", true},
		{"interleaved families", "a 1\nb 2\na{x=\"1\"} 3\n", true},
		{"colon names", "a:b:c 1\n", true},
		{"tab separated", "a\t1\t5\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkFastText(t, tt.name, []byte(tt.body), nil); got != tt.accept {
				_, err := expfmtOnly([]byte(tt.body), nil)
				t.Errorf("fast path accepted=%v, want %v (expfmt error: %v)", got, tt.accept, err)
			}
		})
	}
}

// FuzzFastText: whatever the bytes, the fast path never panics, never
// accepts what expfmt rejects, and when it accepts, agrees with expfmt.
func FuzzFastText(f *testing.F) {
	for _, name := range []string{"text_good.prom", "histogram.prom", "summary.prom", "utf8.prom", "malformed.prom", "malformed_label.prom"} {
		f.Add(readFixture(f, name))
	}
	f.Add([]byte("# TYPE h histogram\nh_bucket{le=\"1\",a=\"x\\\"\"} 1 5\nh_count{a=\"x\\\"\"} 1\n# TYPE s summary\ns{quantile=\"0.5\"} 1\ns_sum 2\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkFastText(t, "fuzz", body, nil)
	})
}

func BenchmarkParseText(b *testing.B) {
	body, _ := expotest.GenEnvoy(600, false)
	for _, p := range []struct {
		name  string
		parse func() error
	}{
		{"expfmt", func() error { _, err := expfmtOnly(body, nil); return err }},
		{"fast", func() error {
			if _, ok := fastText(body, nil); !ok {
				return fmt.Errorf("fast path refused the body")
			}
			return nil
		}},
	} {
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := p.parse(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// formatOf caches expfmt's reading of a content type; a second call must
// answer what the first did.
func TestFormatOf(t *testing.T) {
	tests := []struct {
		ct   string
		kind formatKind
	}{
		{"text/plain; version=0.0.4; charset=utf-8", formatText},
		{"application/openmetrics-text; version=1.0.0; charset=utf-8", formatOpenMetrics},
		{"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited", formatProto},
		{"", formatText},
		{"no/such; thing", formatText},
	}
	for _, tt := range tests {
		for round := 0; round < 2; round++ {
			if _, kind := formatOf(tt.ct); kind != tt.kind {
				t.Errorf("round %d: formatOf(%q) kind %d, want %d", round, tt.ct, kind, tt.kind)
			}
		}
	}
}

// TestHistogramCountAbsentOrZero: a histogram without a _count reads
// its +Inf bucket as the count on both paths, fractional buckets too
// (expfmt turns that absent count into 0: unmakeCounts takes it back);
// a _count given is read as given, 0 included, whatever the buckets.
func TestHistogramCountAbsentOrZero(t *testing.T) {
	for _, c := range []struct {
		name, body string
		count, inf float64
	}{
		{"fractional bucket, no _count", "# TYPE h histogram\nh_bucket{le=\"0\"} .01\n", 0.01, 0.01},
		{"fractional buckets of two series, no _count", "# TYPE h histogram\nh_bucket{a=\"x\",le=\"1\"} .5\nh_bucket{a=\"y\",le=\"1\"} 2.5\n", 0.5, 0.5},
		{"integer bucket, no _count", "# TYPE h histogram\nh_bucket{le=\"0\"} 2\n", 2, 2},
		{"_count 0 under a bucket", "# TYPE h histogram\nh_bucket{le=\"1\"} 3\nh_bucket{le=\"+Inf\"} 3\nh_count 0\n", 0, 3},
		{"_count 0 under a fractional bucket", "# TYPE h histogram\nh_bucket{le=\"1\"} .5\n  h_count 0\n", 0, 0},
		{"_count 0 over buckets of 0", "# TYPE h histogram\nh_bucket{le=\"1\"} 0\nh_count 0\n", 0, 0},
	} {
		want, err := expfmtOnly([]byte(c.body), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, ok := fastText([]byte(c.body), nil)
		if !ok {
			t.Fatalf("%s: the fast path refused it", c.name)
		}
		for path, fams := range map[string][]model.Family{"expfmt": want, "fast": got} {
			s := fams[0].Samples[0]
			if inf := s.Buckets[len(s.Buckets)-1]; s.Count != c.count || !math.IsInf(inf.UpperBound, 1) || inf.Count != c.inf {
				t.Errorf("%s, %s: count %v, last bucket %+v; want count %v, +Inf %v", c.name, path, s.Count, inf, c.count, c.inf)
			}
		}
	}
}

// TestHasLine: a series' sample line at a line's start, after blanks,
// or its name quoted; not a longer name, nor one inside a line.
func TestHasLine(t *testing.T) {
	for body, want := range map[string]bool{
		"h_count 1\n":                    true,
		"x 1\nh_count{a=\"b\"} 1\n":      true,
		"x 1\n\t h_count 1":              true,
		"x 1\nh_count":                   true,
		"{\"h_count\",a=\"b\"} 1\n":      true,
		"h_count_total 1\nx_h_count 1\n": false,
		"x{a=\"h_count\"} 1\n":           true, // quoted: kept as given (a zero stays)
		"x{a=\"y h_count z\"} 1\n":       false,
	} {
		if got := hasLine([]byte(body), "h_count"); got != want {
			t.Errorf("%q: %v, want %v", body, got, want)
		}
	}
}
