package main

import (
	"encoding/json"
	"errors"
	"fmt"
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
		{[]string{"whatif", "missing.rtd"}, exitNoData, "no such file"},
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

// envoySnapshots is a curl-loop recording (docs/dump-format.md,
// "Concatenated snapshots") of one Envoy cluster, written here: four
// scrapes 10 s apart, 100 upstream requests and 10 retries a second, 30
// requests active and none pending throughout.
func envoySnapshots(t *testing.T) string {
	var b strings.Builder
	for i := range 4 {
		fmt.Fprintf(&b, "# SCRAPE %d edge\n", 1741057960000+int64(i)*10000)
		for _, s := range []struct {
			name, typ string
			v         int
		}{
			{"envoy_cluster_upstream_rq_total", "counter", 1000 * i},
			{"envoy_cluster_upstream_rq_completed", "counter", 1 + 900*i},
			{"envoy_cluster_upstream_rq_retry", "counter", 100 * i},
			{"envoy_cluster_upstream_rq_active", "gauge", 30},
			{"envoy_cluster_upstream_rq_pending_active", "gauge", 0},
		} {
			fmt.Fprintf(&b, "# TYPE %s %s\n%s{envoy_cluster_name=\"api\"} %d\n", s.name, s.typ, s.name, s.v)
		}
	}
	p := filepath.Join(t.TempDir(), "edge.prom")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// analyze FILE of an Envoy recording rebuilds its retry budget (docs/whatif.md)
// with Envoy's model: allowance max(floor(20 % of 30 active +
// 0 pending), 3) = 6, retries 10 % of the 30 attempts in flight = 3, so 3
// of 6 left, not draining (the same every bin): JSON fates.budget and the
// text's list.
func TestAnalyzeEnvoyBudget(t *testing.T) {
	p := envoySnapshots(t)
	out, _, err := execute(t, "analyze", p, "--window", "20s", "--bin", "10s", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Dependencies []struct {
			Target, Dependency string
			Fates              struct {
				Budget *struct {
					Model             string   `json:"model"`
					Reconstructed     bool     `json:"reconstructed"`
					Balance           *float64 `json:"balance"`
					Capacity          *float64 `json:"capacity"`
					TimeToExhaustionS *float64 `json:"time_to_exhaustion_s"`
				} `json:"budget"`
			} `json:"fates"`
		} `json:"dependencies"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Dependencies) != 1 || doc.Dependencies[0].Fates.Budget == nil {
		t.Fatalf("want one dependency with a budget:\n%s", out)
	}
	b := doc.Dependencies[0].Fates.Budget
	if b.Model != "envoy" || !b.Reconstructed || b.Balance == nil || *b.Balance != 3 || b.Capacity == nil || *b.Capacity != 6 || b.TimeToExhaustionS != nil {
		t.Errorf("budget %+v (balance %v, capacity %v, tte %v), want envoy, reconstructed, 3 of 6, tte null", b, b.Balance, b.Capacity, b.TimeToExhaustionS)
	}
	out, _, err = execute(t, "analyze", p, "--window", "20s", "--bin", "10s")
	if err != nil {
		t.Fatal(err)
	}
	if want := "edge -> api: 3 of 6 retries, retries stop at 0, drain 0/s, not draining (envoy model, reconstructed)"; !strings.Contains(out, want) {
		t.Errorf("text lacks %q:\n%s", want, out)
	}
}
