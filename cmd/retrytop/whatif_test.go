package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The baseline recording of package whatif's testdata (its README says how
// it was made).
const whatifBaseline = "../../whatif/testdata/baseline.rtd"

func TestWhatifJSON(t *testing.T) {
	out, _, err := execute(t, "whatif", whatifBaseline, "--policy", "bounded,envoy:budget_percent=30", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Policies []struct {
			Policy       string   `json:"policy"`
			SuccessRatio *float64 `json:"success_ratio"`
			Timeline     []any    `json:"timeline"`
		} `json:"policies"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var names []string
	for _, p := range doc.Policies {
		names = append(names, p.Policy)
		if p.SuccessRatio == nil || len(p.Timeline) == 0 {
			t.Errorf("%s: success %v, %d timeline points", p.Policy, p.SuccessRatio, len(p.Timeline))
		}
	}
	if got := strings.Join(names, " "); got != "recorded bounded envoy:budget_percent=30" {
		t.Errorf("policies %q, want the recorded fit first, then the given ones as given", got)
	}
}

func TestWhatifText(t *testing.T) {
	out, _, err := execute(t, "whatif", whatifBaseline, "--policy", "none")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"recording (measured)", "recorded (as recorded, replayed by the model)", "none", "success per bin", "the fit"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

func TestWhatifErrors(t *testing.T) {
	garbage := filepath.Join(t.TempDir(), "garbage.rtd")
	if err := os.WriteFile(garbage, []byte("\x00\x01 not a dump\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"whatif", whatifBaseline, "--policy", "envoy,finagel"}, exitUsage, "column 7"},
		{[]string{"whatif", whatifBaseline, "--policy", "envoy:budget_percent=300"}, exitUsage, "budget_percent"},
		{[]string{"whatif", whatifBaseline, "--format", "yaml"}, exitUsage, "unknown --format"},
		{[]string{"whatif", whatifBaseline, "--bin", "500ms"}, exitUsage, "at least 1s"},
		{[]string{"whatif"}, exitUsage, "one recording"},
		{[]string{"whatif", "missing.rtd"}, exitUsage, "no such file"},
		{[]string{"whatif", garbage}, exitNoData, ""},
	} {
		_, _, err := execute(t, tc.args...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != tc.code || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("retrytop %s: %v, want exit %d saying %q", strings.Join(tc.args, " "), err, tc.code, tc.want)
		}
	}
	out, _, err := execute(t, "whatif", "--help")
	if err != nil || !strings.Contains(out, "retrytop whatif incident.rtd --policy") {
		t.Errorf("--help: %v\n%s", err, out)
	}
}
