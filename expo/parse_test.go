package expo

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/internal/expotest"
	"github.com/retrytop/retrytop/model"
)

const (
	ctText = expotest.CTText
	ctOM   = "application/openmetrics-text; version=1.0.0; charset=utf-8"
)

var inf = math.Inf(+1)

func ls(pairs ...string) model.Labels { return model.LabelsFromPairs(pairs...) }

// bks builds buckets from upper bound, count pairs.
func bks(pairs ...float64) []model.Bucket {
	var out []model.Bucket
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, model.Bucket{UpperBound: pairs[i], Count: pairs[i+1]})
	}
	return out
}

// qvs builds summary quantiles from quantile, value pairs.
func qvs(pairs ...float64) []model.QuantileValue {
	var out []model.QuantileValue
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, model.QuantileValue{Quantile: pairs[i], Value: pairs[i+1]})
	}
	return out
}

func readFixture(t testing.TB, name string) []byte { t.Helper(); return expotest.Fixture(t, name) }

func TestExpfmtParserFixtures(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		file, contentType string
		want              []model.Family
	}{
		{"text_good.prom", ctText, []model.Family{
			{Name: "retry_active_calls", Help: "Calls in flight.", Type: model.Gauge, Samples: []model.Sample{
				{Labels: ls("dependency", "db"), Value: 3},
			}},
			{Name: "retry_originals_total", Help: "Calls made by the application.", Type: model.Counter, Samples: []model.Sample{
				{Labels: ls("dependency", "db"), Value: 100},
				{Labels: ls("dependency", "cache", "priority", "high"), Value: 50, TimestampMs: 1700000000000},
			}},
			{Name: "retry_pool_wait_seconds", Type: model.Summary, Samples: []model.Sample{
				{Labels: ls("dependency", "db"), Count: 300, Sum: 1.5, Quantiles: qvs(0.5, 0.01, 0.99, 0.2)},
			}},
			{Name: "retry_request_duration_seconds", Type: model.Histogram, Samples: []model.Sample{
				{Labels: ls("dependency", "db", "result_class", "success"), Count: 10, Sum: 2.5,
					Buckets: bks(0.1, 5, 0.5, 8, inf, 10)},
			}},
			{Name: "some_untyped_metric", Type: model.Untyped, Samples: []model.Sample{{Value: 42}}},
		}},
		// Buckets out of order are sorted; a missing +Inf bucket is the
		// count; a missing count is the +Inf bucket.
		{"histogram.prom", ctText, []model.Family{
			{Name: "retry_backoff_seconds", Help: "Backoff before a retry.", Type: model.Histogram, Samples: []model.Sample{
				{Labels: ls("dependency", "db"), Count: 6, Sum: 3.25,
					Buckets: bks(0.25, 1, 0.5, 2, 1, 4, inf, 6)},
				{Labels: ls("dependency", "cache"), Count: 3, Sum: 0.75,
					Buckets: bks(0.25, 1, inf, 3)},
			}},
		}},
		// Quantiles are sorted; a missing count or sum is NaN (absent).
		{"summary.prom", ctText, []model.Family{
			{Name: "retry_pool_wait_seconds", Type: model.Summary, Samples: []model.Sample{
				{Labels: ls("dependency", "db"), Count: 1000, Sum: 12.5,
					Quantiles: qvs(0.5, 0.01, 0.9, 0.05, 0.99, 0.2)},
				{Labels: ls("dependency", "cache"), Count: nan, Sum: nan,
					Quantiles: qvs(0.5, 0.001)},
			}},
		}},
		// OpenMetrics: counters gain _total, _created is the sample's
		// creation time, exemplars are dropped, timestamps are seconds.
		{"openmetrics.om", ctOM, []model.Family{
			{Name: "legacy_thing", Type: model.Untyped, Samples: []model.Sample{{Value: 1}}},
			{Name: "retry_attempts_total", Help: "Attempts sent to the dependency.", Type: model.Counter, Samples: []model.Sample{
				{Labels: ls("dependency", "db"), Value: 120, CreatedMs: 1700000000123},
			}},
			{Name: "retry_backoff_seconds", Type: model.Histogram, Samples: []model.Sample{
				{Labels: ls("dependency", "db"), Count: 9, Sum: 4.5,
					Buckets: bks(0.1, 3, 1, 7, inf, 9)},
			}},
			{Name: "retry_budget_balance", Type: model.Gauge, Samples: []model.Sample{
				{Labels: ls("dependency", "db"), Value: 7.5, TimestampMs: 1700000000250},
			}},
		}},
		// UTF-8 metric and label names, escapes in label values.
		{"utf8.prom", ctText, []model.Family{
			{Name: "my.dotted.metric", Help: "A metric with dots in its name.", Type: model.Counter, Samples: []model.Sample{
				{Labels: ls("service.name", "api"), Value: 5},
				{Labels: ls("service.name", "web"), Value: 6},
			}},
			{Name: "plain_gauge", Type: model.Gauge, Samples: []model.Sample{
				{Labels: ls("msg", "line1\nline2 \"q\" back\\slash", "path", "/ünïcödé"), Value: 1},
			}},
		}},
		// An unknown or missing content type is read as text.
		{"summary.prom", "", nil},
		{"summary.prom", "text/html", nil},
	}
	for _, tc := range tests {
		t.Run(tc.file+"/"+tc.contentType, func(t *testing.T) {
			got, err := ExpfmtParser{}.Parse("fixture", readFixture(t, tc.file), tc.contentType, nil)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if tc.want == nil {
				if len(got) == 0 {
					t.Fatal("no families")
				}
				return
			}
			if d := diffFamilies(tc.want, got); d != "" {
				t.Errorf("families differ:\n%s", d)
			}
		})
	}
}

func TestExpfmtParserErrorsNameTargetAndLine(t *testing.T) {
	tests := []struct {
		file, contentType string
		filter            func(string) bool
		want              string
	}{
		{"malformed.prom", ctText, nil, `target "fixture": line 5: expected float as value, got "abc"`},
		// With a filter the line is still the line as served.
		{"malformed.prom", ctText, only("retry_attempts_total"), `target "fixture": line 5: expected float as value, got "abc"`},
		{"malformed_label.prom", ctText, nil, `target "fixture": line 3: label value "cache} 2" contains unescaped new-line`},
		{"missing_eof.om", ctOM, nil, `target "fixture": line 3: data does not end with # EOF`},
		{"missing_eof.om", ctOM, only("nothing_selected"), `target "fixture": line 3: data does not end with # EOF`},
		{"openmetrics.om", ctText, nil, `target "fixture": line 7: `}, // the exemplar
		{"text_good.prom", "text/html", nil, ""},                      // parses: the fallback is text
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			_, err := ExpfmtParser{}.Parse("fixture", readFixture(t, tc.file), tc.contentType, tc.filter)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse succeeded, want error %q", tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error\n got %q\nwant prefix %q", err, tc.want)
			}
		})
	}
}

func TestExpfmtParserGarbage(t *testing.T) {
	for _, body := range []string{
		"\x00\x01\x02\xff\xfe binary",
		"<!DOCTYPE html><html><body>login</body></html>\n",
		"metric\x1b[31m 1\n",
		"metric{a=\"\xff\"} 1\n",
		strings.Repeat("{", 10000),
	} {
		_, err := ExpfmtParser{}.Parse("junk", []byte(body), ctText, nil)
		if err == nil {
			t.Errorf("Parse(%q) succeeded", body)
			continue
		}
		if !strings.HasPrefix(err.Error(), `target "junk": line 1: `) {
			t.Errorf("Parse(%q) error %q does not name target and line", body, err)
		}
	}
}

func TestExpfmtParserOpenMetricsCaps(t *testing.T) {
	body, series := expotest.GenEnvoy(2000, true)
	_, err := ExpfmtParser{}.Parse("om", body, ctOM, nil)
	if err == nil || !strings.HasPrefix(err.Error(), `target "om": OpenMetrics body of`) || !strings.Contains(err.Error(), "8 KiB") {
		t.Fatalf("error = %v, want the OpenMetrics body cap", err)
	}
	// The cap applies after filtering, so a selective dialect still works.
	fams, err := ExpfmtParser{}.Parse("om", body, ctOM, only("envoy_cluster_upstream_rq_retry_total"))
	if err != nil {
		t.Fatalf("filtered OpenMetrics: %v", err)
	}
	if len(fams) != 1 || len(fams[0].Samples) != series/expotest.EnvoySeriesPerCluster {
		t.Fatalf("got %d families", len(fams))
	}
	// A long line is refused, naming the line as served.
	long := "# TYPE a gauge\n# TYPE b gauge\nb 1\na{l=\"" + strings.Repeat("x", 300) + "\"} 1\n# EOF\n"
	for _, filter := range []func(string) bool{nil, only("a")} {
		_, err = ExpfmtParser{}.Parse("om", []byte(long), ctOM, filter)
		if err == nil || !strings.HasPrefix(err.Error(), `target "om": line 4: OpenMetrics line of 309 bytes exceeds 256`) {
			t.Errorf("error = %v, want the line cap at line 4", err)
		}
	}
	// Negative caps disable them.
	if _, err := (ExpfmtParser{MaxOpenMetricsBytes: -1, MaxOpenMetricsLineBytes: -1}).Parse("om", []byte(long), ctOM, nil); err != nil {
		t.Errorf("uncapped: %v", err)
	}
}

func TestExpfmtParserHelpSanitised(t *testing.T) {
	body := "# HELP evil Help with \x1b]0;title\x07 and \u202e bidi.\n# TYPE evil gauge\nevil 1\n"
	fams, err := ExpfmtParser{}.Parse("t", []byte(body), ctText, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := fams[0].Help; strings.ContainsAny(h, "\x1b\x07\u202e") {
		t.Errorf("help not sanitised: %q", h)
	}
}

// only returns a filter that selects exactly the named families.
var only = expotest.Only

// TestParserFilterDifferential runs the same bytes through the parser with
// and without a filter: the filtered parse must equal the unfiltered one
// restricted to the selected families. The same check will compare a
// faster parser with ExpfmtParser.
func TestParserFilterDifferential(t *testing.T) {
	envoy, _ := expotest.GenEnvoy(600, false)
	envoyOM, _ := expotest.GenEnvoy(28, true)
	bodies := []struct {
		name, contentType string
		body              []byte
	}{
		{"text_good", ctText, readFixture(t, "text_good.prom")},
		{"histogram", ctText, readFixture(t, "histogram.prom")},
		{"summary", ctText, readFixture(t, "summary.prom")},
		{"openmetrics", ctOM, readFixture(t, "openmetrics.om")},
		{"utf8", ctText, readFixture(t, "utf8.prom")},
		{"envoy", ctText, envoy},
		{"envoy_om", ctOM, envoyOM},
	}
	filters := map[string]func(string) bool{
		"none":       func(string) bool { return false },
		"all":        func(string) bool { return true },
		"retry":      func(n string) bool { return strings.HasPrefix(n, "retry_") },
		"histograms": only("retry_request_duration_seconds", "retry_backoff_seconds", "envoy_cluster_upstream_rq_time"),
		"counters":   only("retry_originals_total", "retry_attempts_total", "envoy_cluster_upstream_rq_total", "envoy_cluster_upstream_rq_retry_total", "my.dotted.metric"),
		"gauges":     only("retry_active_calls", "retry_budget_balance", "plain_gauge", "envoy_cluster_membership_healthy"),
		"summary":    only("retry_pool_wait_seconds", "legacy_thing"),
		"odd":        func(n string) bool { return len(n)%2 == 1 },
	}
	for _, b := range bodies {
		full, err := ExpfmtParser{}.Parse("d", b.body, b.contentType, nil)
		if err != nil {
			t.Fatalf("%s: %v", b.name, err)
		}
		for fname, filter := range filters {
			got, err := ExpfmtParser{}.Parse("d", b.body, b.contentType, filter)
			if err != nil {
				t.Errorf("%s/%s: %v", b.name, fname, err)
				continue
			}
			if d := diffFamilies(selectFamilies(full, filter), got); d != "" {
				t.Errorf("%s/%s: filtered parse differs from selection of full parse:\n%s", b.name, fname, d)
			}
		}
	}
}

// FuzzExpfmtParser checks that no input panics, and that whenever the
// unfiltered parse succeeds the filtered parse selects the same families.
func FuzzExpfmtParser(f *testing.F) {
	for _, name := range []string{"text_good.prom", "histogram.prom", "summary.prom", "utf8.prom", "malformed.prom"} {
		f.Add(readFixture(f, name), false)
	}
	f.Add(readFixture(f, "openmetrics.om"), true)
	f.Fuzz(func(t *testing.T, body []byte, om bool) {
		ct := ctText
		if om {
			ct = ctOM
			if len(body) > 2048 {
				return // expfmt's OpenMetrics parser is too slow to fuzz big inputs
			}
		}
		filter := func(n string) bool { return strings.HasPrefix(n, "retry_") || strings.Contains(n, ".") }
		full, err := ExpfmtParser{}.Parse("fuzz", body, ct, nil)
		got, ferr := ExpfmtParser{}.Parse("fuzz", body, ct, filter)
		if err != nil {
			if !strings.HasPrefix(err.Error(), `target "fuzz": `) {
				t.Fatalf("error does not name the target: %v", err)
			}
			return
		}
		if ferr != nil {
			t.Fatalf("unfiltered parse succeeded, filtered failed: %v", ferr)
		}
		if d := diffFamilies(selectFamilies(full, filter), got); d != "" {
			t.Fatalf("filtered parse differs:\n%s", d)
		}
	})
}

func selectFamilies(fams []model.Family, filter func(string) bool) []model.Family {
	var out []model.Family
	for _, f := range fams {
		if filter(f.Name) {
			out = append(out, f)
		}
	}
	return out
}

// diffFamilies describes the first differences between two family lists,
// "" when equal. NaN equals NaN.
func diffFamilies(want, got []model.Family) string {
	var b strings.Builder
	if len(want) != len(got) {
		fmt.Fprintf(&b, "%d families, want %d: got %v, want %v\n", len(got), len(want), familyNames(got), familyNames(want))
		return b.String()
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.Name != g.Name || w.Type != g.Type || w.Help != g.Help {
			fmt.Fprintf(&b, "family %d: got %q %s help %q, want %q %s help %q\n", i, g.Name, g.Type, g.Help, w.Name, w.Type, w.Help)
			continue
		}
		if len(w.Samples) != len(g.Samples) {
			fmt.Fprintf(&b, "%s: %d samples, want %d\n", w.Name, len(g.Samples), len(w.Samples))
			continue
		}
		for j := range w.Samples {
			if d := diffSample(w.Samples[j], g.Samples[j]); d != "" {
				fmt.Fprintf(&b, "%s sample %d: %s\n", w.Name, j, d)
			}
		}
	}
	return b.String()
}

func familyNames(fams []model.Family) []string {
	out := make([]string, len(fams))
	for i, f := range fams {
		out[i] = f.Name
	}
	return out
}

func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

func diffSample(w, g model.Sample) string {
	if !w.Labels.Equal(g.Labels) {
		return fmt.Sprintf("labels %s, want %s", g.Labels, w.Labels)
	}
	if w.CreatedMs != g.CreatedMs {
		return fmt.Sprintf("%s created %d, want %d", w.Labels, g.CreatedMs, w.CreatedMs)
	}
	if !sameFloat(w.Value, g.Value) || !sameFloat(w.Count, g.Count) || !sameFloat(w.Sum, g.Sum) || w.TimestampMs != g.TimestampMs {
		return fmt.Sprintf("%s value/count/sum/ts %v/%v/%v/%d, want %v/%v/%v/%d", w.Labels,
			g.Value, g.Count, g.Sum, g.TimestampMs, w.Value, w.Count, w.Sum, w.TimestampMs)
	}
	if len(w.Buckets) != len(g.Buckets) {
		return fmt.Sprintf("%s buckets %v, want %v", w.Labels, g.Buckets, w.Buckets)
	}
	for i := range w.Buckets {
		if !sameFloat(w.Buckets[i].UpperBound, g.Buckets[i].UpperBound) || !sameFloat(w.Buckets[i].Count, g.Buckets[i].Count) {
			return fmt.Sprintf("%s buckets %v, want %v", w.Labels, g.Buckets, w.Buckets)
		}
	}
	if len(w.Quantiles) != len(g.Quantiles) {
		return fmt.Sprintf("%s quantiles %v, want %v", w.Labels, g.Quantiles, w.Quantiles)
	}
	for i := range w.Quantiles {
		if !sameFloat(w.Quantiles[i].Quantile, g.Quantiles[i].Quantile) || !sameFloat(w.Quantiles[i].Value, g.Quantiles[i].Value) {
			return fmt.Sprintf("%s quantiles %v, want %v", w.Labels, g.Quantiles, w.Quantiles)
		}
	}
	return ""
}
