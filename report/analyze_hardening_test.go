package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// Hidden characters leave JSON as escapes, and
// a 20 kB label value does not make a text report 20 kB wide.
func TestReportHardening(t *testing.T) {
	long := strings.Repeat("x", 20000)
	hostile := "pay\u009b[2J\u202egnp.exe\u200b"
	rep := analysis.Report{
		Targets: []model.TargetStatus{{Name: "app", Up: true}},
		Dependencies: []analysis.DependencyReport{
			{Signals: model.Signals{Target: "app", Dependency: long, OriginalsPerS: model.Some(1)}},
			{Signals: model.Signals{Target: "app", Dependency: hostile, OriginalsPerS: model.Some(1)}},
		},
	}
	var js bytes.Buffer
	if err := WriteAnalysis(&js, rep, "json", 0); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{"\u009b", "\u202e", "\u200b"} {
		if strings.Contains(js.String(), raw) {
			t.Errorf("JSON carries raw %U", []rune(raw)[0])
		}
	}
	for _, esc := range []string{`\u009b`, `\u202e`, `\u200b`} {
		if !strings.Contains(js.String(), esc) {
			t.Errorf("JSON lacks the escape %s", esc)
		}
	}
	var back struct {
		Dependencies []struct{ Dependency string } `json:"dependencies"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Dependencies) != 2 ||
		back.Dependencies[0].Dependency != long || back.Dependencies[1].Dependency != hostile {
		t.Errorf("JSON does not keep the values whole: %v", err)
	}
	for _, format := range []string{"text", "markdown"} {
		var b bytes.Buffer
		if err := WriteAnalysis(&b, rep, format, 0); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(b.String(), "\n") {
			if len(line) > 400 {
				t.Errorf("%s: a %d-byte line: %.80q...", format, len(line), line)
			}
		}
		if !strings.Contains(b.String(), strings.Repeat("x", maxWordCols-1)+"...") {
			t.Errorf("%s: the long value is not cut with ...", format)
		}
	}
}

func TestCutLong(t *testing.T) {
	tests := []struct{ in, want string }{
		{"short", "short"},
		{strings.Repeat("a", 70), strings.Repeat("a", 63) + "..."},
		{"a sentence with " + strings.Repeat("b", 70) + " inside it", "a sentence with " + strings.Repeat("b", 63) + "... inside it"},
	}
	for _, tt := range tests {
		if got := cutLong(tt.in); got != tt.want {
			t.Errorf("cutLong(%.20q...) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
