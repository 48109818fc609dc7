package rules

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.yaml.in/yaml/v2"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/internal/simrec"
	"github.com/retrytop/retrytop/internal/testpeer"
	"github.com/retrytop/retrytop/sim"
)

// healthyLead is the healthy phase the recordings start with: longer than
// the rules' lookback (a window) and their first check (a window and a
// for later), so that the rates exist, and are checked quiet, before the
// trigger.
const healthyLead = 60 * time.Second

// metastableRecovery is the recovery phase of the run that stays stuck.
const metastableRecovery = 90 * time.Second

// fireWithin is how soon after the storm's start the amplification alert
// must fire.
const fireWithin = 30 * time.Second

// TestPromtoolOnScenarios: on recordings of the sim's scenarios, the real
// promtool runs the test file `rules --test` writes against the rules
// `rules` writes: the alerts fire where analysis' findings say, and not
// where they say nothing. On the storms the amplification alert fires
// within fireWithin of the slowdown; on healthy and bounded no alert at
// all is expected, and on bounded, which sheds only sheddable calls, the
// admission alert is checked to stay silent from the slowdown on; ignore-cancel with a long recovery stays
// stuck after the slowdown, and Metastable fires where METASTABLE says.
func TestPromtoolOnScenarios(t *testing.T) {
	promtool := testpeer.Require(t, "promtool", "prometheus")
	if testing.Short() {
		t.Skip("records five scenarios")
	}
	for _, c := range []struct {
		name, scenario    string
		recovered         time.Duration // 0: the scenario's
		storm, metastable bool
	}{
		{"baseline", "baseline", 0, true, false},
		{"chain", "chain", 0, true, false},
		{"ignore-cancel", "ignore-cancel", 0, true, false},
		{"healthy", "healthy", 0, false, false},
		{"bounded", "bounded", 0, false, false},
		// A recovery long enough for the backlog to outlive the slowdown
		// by more than metastable_after (docs/findings.md).
		{"ignore-cancel-stuck", "ignore-cancel", metastableRecovery, true, true},
	} {
		name := c.name
		t.Run(name, func(t *testing.T) {
			run := simrec.Record(t, c.scenario, sim.Options{Seed: 1, Healthy: healthyLead, Recovered: c.recovered}, time.Second)
			dir := t.TempDir()
			cfg := filepath.Join(dir, "retrytop.yaml")
			if err := os.WriteFile(cfg, []byte(demoConfig), 0o644); err != nil {
				t.Fatal(err)
			}
			rulesPath, testPath := filepath.Join(dir, "rules.yml"), filepath.Join(dir, "rules_test.yml")
			if err := Run(Options{Config: cfg, Out: rulesPath}); err != nil {
				t.Fatal(err)
			}
			if err := Run(Options{Config: cfg, Test: run.Path, Out: testPath}); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(promtool, "test", "rules", testPath).CombinedOutput()
			if err != nil {
				t.Fatalf("promtool test rules: %v\n%s", err, out)
			}
			b, err := os.ReadFile(testPath)
			if err != nil {
				t.Fatal(err)
			}
			var tf TestFile
			if err := yaml.Unmarshal(b, &tf); err != nil {
				t.Fatal(err)
			}
			// The slowdown starts healthyLead after the sim started; the
			// test file's times count from the recording's first scrape.
			storm := run.Start.Add(healthyLead).Sub(firstScrape(t, run.Path))
			first := time.Duration(-1)
			var quiet, metastable, admissionQuiet int
			for _, at := range tf.Tests[0].AlertTests {
				d, err := time.ParseDuration(at.EvalTime)
				if err != nil {
					t.Fatal(err)
				}
				if at.AlertName == "Metastable" {
					metastable += len(at.ExpAlerts)
				}
				for _, a := range at.ExpAlerts {
					if !c.storm {
						t.Errorf("%s at %s: %s %v expected on a run without a storm", name, at.EvalTime, at.AlertName, a.Labels)
					}
				}
				if at.AlertName == "AdmissionRejections" && len(at.ExpAlerts) == 0 && d > storm {
					admissionQuiet++
				}
				if at.AlertName == "RetryAmplification" {
					if len(at.ExpAlerts) > 0 && first < 0 {
						first = d
					}
					if len(at.ExpAlerts) == 0 {
						quiet++
					}
				}
			}
			t.Logf("%s: first RetryAmplification expected at %v, storm at %v, %d quiet checks", name, first, storm, quiet)
			if c.metastable != (metastable > 0) {
				t.Errorf("%s: %d Metastable alerts expected, want some: %v", name, metastable, c.metastable)
			}
			if c.storm {
				if first < 0 || first > storm+fireWithin {
					t.Errorf("%s: RetryAmplification first expected at %v, want by %v (storm %v + %v)", name, first, storm+fireWithin, storm, fireWithin)
				}
			}
			if quiet == 0 {
				t.Errorf("%s: no check that RetryAmplification stays quiet", name)
			}
			if name == "bounded" && admissionQuiet == 0 {
				t.Errorf("bounded: no check that AdmissionRejections stays silent from the slowdown on")
			}
		})
	}
}

func firstScrape(t *testing.T, path string) time.Time {
	t.Helper()
	rec, err := dump.OpenRecording(path, dump.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	return rec.Time(0)
}

// demoConfig declares the sim's chain.
const demoConfig = `targets:
  - {name: browser, url: "http://browser.sim/metrics"}
  - {name: app, url: "http://app.sim/metrics"}
  - {name: client, url: "http://client.sim/metrics"}
  - {name: provider, url: "http://provider.sim/metrics"}
chains:
  - name: demo
    hops: [browser, app, client]
`
