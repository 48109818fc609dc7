package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/retrytop/retrytop/dump"
)

// A recording of an emitter only a config file's custom dialect knows is
// read with that dialect by analyze FILE --config, and the config's chains
// apply; without the config nothing of it is understood.
func TestAnalyzeRecordingWithConfigDialect(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "acme.rtd")
	w, err := dump.Create(path, false, dump.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 31 scrapes 1 s apart: 10 calls/s and 13 tries/s to billing.
	for i := 0; i <= 30; i++ {
		body := fmt.Sprintf(`# TYPE acme_calls_total counter
acme_calls_total{upstream="billing"} %d
# TYPE acme_tries_total counter
acme_tries_total{upstream="billing",status="200"} %d
acme_tries_total{upstream="billing",status="503"} %d
`, 10*i, 10*i, 3*i)
		if err := w.Append("acme", recT0.Add(time.Duration(i)*time.Second), "text/plain; version=0.0.4", []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "retrytop.yaml")
	if err := os.WriteFile(cfg, []byte(`targets:
  - name: acme
    url: http://127.0.0.1:1/metrics
    dialect: acme-client
  - name: billing
    url: http://127.0.0.1:2/metrics
chains:
  - name: checkout
    hops: [acme, billing]
dialects:
  - name: acme-client
    dependency_label: upstream
    detect: [nothing_matches_this]
    signals:
      - family: retry_originals_total
        metric: acme_calls_total
      - family: retry_attempts_total
        metric: acme_tries_total
        match: ['status="200"']
        labels: {outcome: success}
      - family: retry_attempts_total
        metric: acme_tries_total
        match: ['status=~"5.."']
        labels: {outcome: temporary_error}
`), 0o644); err != nil {
		t.Fatal(err)
	}

	var rep struct {
		Dependencies []struct {
			Target, Dependency string
			Originals          *float64 `json:"originals_per_s"`
			Attempts           *float64 `json:"attempts_per_s"`
		} `json:"dependencies"`
		Chains []struct {
			Name string `json:"name"`
		} `json:"chains"`
	}
	out, stderr, err := execute(t, "analyze", path, "--config", cfg, "--format", "json", "--window", "20s")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Dependencies) != 1 || rep.Dependencies[0].Dependency != "billing" {
		t.Fatalf("rows %+v, want acme -> billing read with the forced custom dialect", rep.Dependencies)
	}
	d := rep.Dependencies[0]
	if d.Originals == nil || math.Abs(*d.Originals-10) > 0.01 || d.Attempts == nil || math.Abs(*d.Attempts-13) > 0.01 {
		t.Errorf("originals %v attempts %v, want 10/s and 13/s", d.Originals, d.Attempts)
	}
	if len(rep.Chains) != 1 || rep.Chains[0].Name != "checkout" {
		t.Errorf("chains %+v, want the config's checkout", rep.Chains)
	}

	// Without the config: no dialect detects acme, nothing to report.
	out, _, err = execute(t, "analyze", path, "--format", "json", "--window", "20s")
	if err != nil {
		t.Fatal(err)
	}
	rep.Dependencies = nil
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Dependencies) != 0 {
		t.Errorf("without --config: rows %+v, want none", rep.Dependencies)
	}
}
