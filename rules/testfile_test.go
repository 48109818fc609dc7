package rules

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
)

// TestParseLine: the export's sample lines, quoted names and escapes
// included, as the series promtool reads, and bad lines as errors.
func TestParseLine(t *testing.T) {
	for _, tt := range []struct {
		line, series string
		v            float64
		ms           int64
	}{
		{`retry_originals_total{dependency="db",instance="a"} 12 1733356800.25`, `retry_originals_total{dependency="db",instance="a"}`, 12, 1733356800250},
		{`up 1 10`, `up{}`, 1, 10000},
		{`x{l="a\"b\\c\nd"} -1.5 0.001`, `x{l="a\"b\\c\nd"}`, -1.5, 1},
		{`{"acme.calls",instance="a"} 3 1`, `{__name__="acme.calls",instance="a"}`, 3, 1000},
		{`m{"odd.label"="v"} 3 1`, `m{odd.label="v"}`, 3, 1000},
	} {
		name, ls, v, ms, err := dump.ParseSampleLine(tt.line)
		if err != nil {
			t.Errorf("%s: %v", tt.line, err)
			continue
		}
		if got := seriesText(name, ls); got != tt.series || v != tt.v || ms != tt.ms {
			t.Errorf("%s: %s %v %d, want %s %v %d", tt.line, got, v, ms, tt.series, tt.v, tt.ms)
		}
	}
	for _, line := range []string{`x{l="a} 1 1`, `x{l} 1 1`, `x 1`, `x one 1`, `x 1 now`, `{} 1 1`, `x{"unterminated} 1 1`} {
		if _, _, _, _, err := dump.ParseSampleLine(line); err == nil {
			t.Errorf("%s: no error", line)
		}
	}
}

// TestExpanding: runs of a constant step are one a+dxn, gaps are _, and
// a step that promtool's repeated addition would not reproduce exactly
// is written out.
func TestExpanding(t *testing.T) {
	set := func(n int, gaps ...int) []bool {
		s := make([]bool, n)
		for i := range s {
			s[i] = true
		}
		for _, g := range gaps {
			s[g] = false
		}
		return s
	}
	for _, tt := range []struct {
		vals []float64
		set  []bool
		want string
	}{
		{[]float64{1, 2, 3, 4, 0, 0, 7}, set(7, 4, 5), "1+1x3 _x2 7"},
		{[]float64{5, 5, 5, 0, 2}, set(5, 3), "5+0x2 _ 2"},
		{[]float64{10, 7, 4, 1}, set(4), "10-3x3"},
		{[]float64{1, 2}, set(2), "1 2"},
		{[]float64{math.NaN(), math.Inf(1), math.Inf(-1)}, set(3), "NaN Inf -Inf"},
		{[]float64{0, 0.1, 0.2, 0.30000000000000004}, set(4), "0+0.1x3"},
		{[]float64{0, 0.1, 0.2, 0.3}, set(4), "0+0.1x2 0.3"},
	} {
		if got := expanding(tt.vals, tt.set); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.vals, got, tt.want)
		}
	}
}

// TestExpectTimes: a finding's alert is expected a bin and a for after
// its first bin, a chain's at its last bin, nothing during the rules'
// first window and a for, and quiet checks only away from findings.
func TestExpectTimes(t *testing.T) {
	start := time.Unix(1000, 0)
	f, err := Build(mustTranslator(t), []string{"native"}, []analysis.ChainSpec{{Name: "demo", Targets: []string{"a", "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	in := Series{Start: start, End: start.Add(300 * time.Second), Interval: time.Second}
	amp := analysis.Finding{Code: analysis.CodeRetryAmplification, Severity: analysis.SeverityCritical, Target: "a", Dependency: "b",
		Start: start.Add(100 * time.Second), End: start.Add(160 * time.Second)}
	layers := analysis.Finding{Code: analysis.CodeMultipleRetryLayers, Severity: analysis.SeverityWarning, Target: "a", Dependency: "c", Chain: "demo",
		Start: start.Add(10 * time.Second), End: start.Add(200 * time.Second)}
	tf := Expect(f, in, []analysis.Finding{amp, layers}, "rules.yml")
	got := map[string][]string{}
	for _, at := range tf.Tests[0].AlertTests {
		mark := at.EvalTime
		if len(at.ExpAlerts) > 0 {
			mark += "+" + at.ExpAlerts[0].Labels[TargetLabel] + "/" + at.ExpAlerts[0].Labels[model.LabelDependency] + at.ExpAlerts[0].Labels["chain"]
		}
		got[at.AlertName] = append(got[at.AlertName], mark)
	}
	// Quiet every 10 s from 40 s except from a bin before a finding to a
	// window after it; the finding from 100 + 10 + 10 s to its end.
	want := map[string]string{
		"RetryAmplification":   "40s 50s 1m 70s 80s 2m+a/b 130s+a/b 140s+a/b 150s+a/b 160s+a/b 200s 210s 220s 230s 4m 250s 260s 270s 280s 290s 5m",
		"MultipleRetryLayers":  "200s+a/demo 4m 250s 260s 270s 280s 290s 5m",
		"RetryBudgetExhausted": "40s 50s 1m 70s 80s 90s 100s 110s 2m 130s 140s 150s 160s 170s 3m 190s 200s 210s 220s 230s 4m 250s 260s 270s 280s 290s 5m",
	}
	for name, w := range want {
		if g := strings.Join(got[name], " "); g != w {
			t.Errorf("%s checks %q, want %q", name, g, w)
		}
	}
	if tf.EvaluationInterval != "1s" || tf.Tests[0].Interval != "1s" || tf.RuleFiles[0] != "rules.yml" {
		t.Errorf("intervals %s %s, rule files %v", tf.EvaluationInterval, tf.Tests[0].Interval, tf.RuleFiles)
	}
}

func mustTranslator(t *testing.T) *dialect.Translator {
	t.Helper()
	_, tr, err := setup(Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestInputsOfARecording: a recording scraped every 2 s, one scrape 300
// ms late and one failed, becomes input series on a 2 s grid: the late
// sample in its nearest slot, the failed scrape a gap in the series and
// 0 in up, job and instance set to the target.
func TestInputsOfARecording(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.rtd")
	w, err := dump.Create(path, false, dump.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1_700_000_000, 0)
	body := func(n int) []byte {
		return fmt.Appendf(nil, "# TYPE retry_originals_total counter\nretry_originals_total{dependency=\"db\"} %d\n", n)
	}
	for i, off := range []time.Duration{0, 2 * time.Second, 4300 * time.Millisecond, 6 * time.Second, 8 * time.Second} {
		if i == 3 {
			if err := w.AppendError("svc", start.Add(off), "connection refused"); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := w.Append("svc", start.Add(off), "text/plain; version=0.0.4", body(10*i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := dump.OpenRecording(path, dump.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	in, err := Inputs(rec)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range in.Inputs {
		got[s.Series] = s.Values
	}
	want := map[string]string{
		`up{instance="svc",job="svc"}`:                                    "1+0x2 0 1",
		`retry_originals_total{dependency="db",instance="svc",job="svc"}`: "0+10x2 _ 40",
	}
	if in.Interval != 2*time.Second || !in.Start.Equal(start) || len(got) != len(want) {
		t.Fatalf("interval %v from %v, series %v", in.Interval, in.Start, got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
}
