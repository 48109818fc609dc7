package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/internal/simrec"
	"github.com/retrytop/retrytop/internal/testpeer"
	"github.com/retrytop/retrytop/sim"
)

// TestRulesCommand: `retrytop rules` writes rules promtool accepts, names
// an unknown dialect or one without PromQL as a usage error (exit 1) and
// a recording it cannot read as exit 2; `rules --test` on a recording of
// the baseline writes a test promtool passes.
func TestRulesCommand(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"rules", "--dialect", "nope"}, exitUsage, `unknown dialect "nope"`},
		{[]string{"rules", "--config", filepath.Join(dir, "missing.yaml")}, exitUsage, "missing.yaml"},
		{[]string{"rules", "--test", filepath.Join(dir, "missing.rtd")}, exitNoData, "missing.rtd"},
	} {
		_, _, err := execute(t, tt.args...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != tt.code || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("retrytop %s: %v, want exit %d saying %q", strings.Join(tt.args, " "), err, tt.code, tt.want)
		}
	}
	out, _, err := execute(t, "rules", "--help")
	if err != nil || !strings.Contains(out, "retrytop rules --test incident.rtd") {
		t.Errorf("rules --help: %v, no example of --test:\n%s", err, out)
	}
	promtool := testpeer.Require(t, "promtool", "prometheus")
	rules := filepath.Join(dir, "rules.yml")
	if _, _, err := execute(t, "rules", "--dialect", "envoy,native", "-o", rules); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(promtool, "check", "rules", rules).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, b)
	}
	rec := simrec.Record(t, "baseline", sim.Options{Seed: 1, Healthy: time.Minute}, time.Second)
	test := filepath.Join(dir, "rules_test.yml")
	if _, _, err := execute(t, "rules", "--dialect", "envoy,native", "--test", rec.Path, "-o", test); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(test)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "alertname: RetryAmplification") || !strings.Contains(string(b), "job: client") {
		t.Errorf("the test file expects no RetryAmplification on client:\n%.2000s", b)
	}
	if b, err := exec.Command(promtool, "test", "rules", test).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, b)
	}
}
