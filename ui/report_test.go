package ui

import (
	"bytes"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

func reportFixture() analysis.Report {
	row := analysis.DependencyReport{
		Signals: model.Signals{
			Target: "app", Dependency: "db\x1b[2J|x",
			OriginalsPerS: model.Some(50), AttemptsPerS: model.Some(71.2), Amplification: model.Some(1.424),
			ProviderErrorsPerS: model.Some(0), TimeoutsPerS: model.Some(20.1),
			ActiveCalls: model.Some(21),
		},
		LatencyP99: map[string]model.Value{model.ClassSuccess: model.Some(0.95)},
	}
	return analysis.Report{
		WindowSeconds: 30, StartUnix: 1000, EndUnix: 1060,
		Targets:      []model.TargetStatus{{Name: "app", URL: "http://127.0.0.1:9/metrics", Up: true, Scrapes: 61, Series: 40}},
		Dependencies: []analysis.DependencyReport{row},
	}
}

func TestWriteReportFormats(t *testing.T) {
	tests := []struct {
		format string
		want   []string
		never  []string
	}{
		{"text", []string{"window 30s", "app up http://127.0.0.1:9/metrics", "50.0", "71.2", "1.42x", "20.1", "21/-", "950ms"}, []string{"\x1b"}},
		{"markdown", []string{"## retrytop analyze", "| TARGET | DEPENDENCY |", `db\|x`, "| 1.42x |"}, []string{"\x1b"}},
		{"json", []string{`"amplification": 1.424`, `"budget_denied_per_s": null`, `"latency_p99_s"`}, nil},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := WriteReport(&b, reportFixture(), tt.format); err != nil {
			t.Fatalf("%s: %v", tt.format, err)
		}
		out := b.String()
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s output lacks %q:\n%s", tt.format, w, out)
			}
		}
		for _, n := range tt.never {
			if strings.Contains(out, n) {
				t.Errorf("%s output contains %q:\n%q", tt.format, n, out)
			}
		}
	}
	if err := WriteReport(&bytes.Buffer{}, reportFixture(), "xml"); err == nil || !strings.Contains(err.Error(), "xml") {
		t.Errorf("unknown format error = %v", err)
	}
}

func TestWriteReportAbsentIsDashNotZero(t *testing.T) {
	var b bytes.Buffer
	if err := WriteReport(&b, reportFixture(), "text"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	var row string
	for _, l := range lines {
		if strings.Contains(l, "app") && strings.Contains(l, "1.42x") {
			row = l
		}
	}
	fields := strings.Fields(row)
	// BUDGET-DENIED/s and ADMISSION-REJ/s are absent in the fixture, provider errors a real 0.
	idx := func(head string) int {
		for i, c := range reportColumns {
			if c.head == head {
				return i
			}
		}
		t.Fatalf("no column %s", head)
		return -1
	}
	if got := fields[idx("BUDGET-DENIED/s")]; got != "-" {
		t.Errorf("budget denied = %q, want -", got)
	}
	if got := fields[idx("PROVIDER-ERR/s")]; got != "0" {
		t.Errorf("provider errors = %q, want 0", got)
	}
}
