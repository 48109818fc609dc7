package rules

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/internal/testpeer"
)

// TestCheckRulesEveryDialect: the real promtool accepts the rules of every
// dialect with PromQL, each alone and all together.
func TestCheckRulesEveryDialect(t *testing.T) {
	promtool := testpeer.Require(t, "promtool", "prometheus")
	names := Names(dialect.Auto())
	if len(names) < 10 {
		t.Fatalf("only %d dialects with PromQL: %v", len(names), names)
	}
	sets := [][]string{names}
	for _, n := range names {
		sets = append(sets, []string{n})
	}
	dir := t.TempDir()
	for _, set := range sets {
		b, err := Generate(Options{Dialects: set})
		if err != nil {
			t.Fatalf("%v: %v", set, err)
		}
		p := filepath.Join(dir, strings.Join(set, "+")+".yml")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(promtool, "check", "rules", p).CombinedOutput()
		if err != nil {
			t.Errorf("promtool check rules %v: %v\n%s", set, err, out)
		}
	}
}

// The admission alert fires when calls not marked sheddable are refused
// (critical ones, or an emitter's without priorities) and stays silent
// while only sheddable calls are: promtool on the native rules, 2
// rejections a second against min_events_per_s 0.1.
func TestAdmissionAlertSparesSheddable(t *testing.T) {
	promtool := testpeer.Require(t, "promtool", "prometheus")
	dir := t.TempDir()
	_, b := nativeRules(t, dir)
	var f File
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	var ann []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "AdmissionRejections" {
				for _, k := range slices.Sorted(maps.Keys(r.Annotations)) {
					ann = append(ann, k+": "+strconv.Quote(r.Annotations[k]))
				}
			}
		}
	}
	if len(ann) == 0 {
		t.Fatal("no AdmissionRejections alert in the native rules")
	}
	series := func(job, priority string) string {
		return `      - series: 'retry_originals_total{job="` + job + `",instance="a:1",dependency="db",priority="` + priority + `"}'
        values: '0+10x20'
      - series: 'retry_admission_rejected_total{job="` + job + `",instance="a:1",dependency="db",priority="` + priority + `",reason="concurrency"}'
        values: '0+20x20'
      - series: 'up{job="` + job + `",instance="a:1"}'
        values: '1x20'
`
	}
	test := `rule_files: [rules.yml]
evaluation_interval: 10s
tests:
  - interval: 10s
    input_series:
` + series("shedder", "sheddable") + series("refuser", "critical") + `    alert_rule_test:
      - eval_time: 2m
        alertname: AdmissionRejections
        exp_alerts:
          - exp_labels: {job: refuser, dependency: db, severity: info, code: ADMISSION_SHEDDING}
            exp_annotations: {` + strings.Join(ann, ", ") + `}
`
	path := filepath.Join(dir, "admission_test.yml")
	if err := os.WriteFile(path, []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// nativeRules writes the native dialect's rules to dir/rules.yml and
// returns the path and the bytes.
func nativeRules(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	b, err := Generate(Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b
}
