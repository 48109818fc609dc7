package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/sim"
)

// TestFleetChainFromDiscovery: two replicas of every layer, found through
// a file_sd file and through a prometheus.yml's jobs, fold into one hop
// per layer and form the chain. Each source gets stacks of its own, so
// that its window falls at the start of a slowdown like the other's (two
// stacks late in a storm, under -race, answer /metrics slower than the
// scrape interval).
func TestFleetChainFromDiscovery(t *testing.T) {
	if testing.Short() {
		t.Skip("loopback integration test skipped in -short mode")
	}
	for _, source := range []string{"file_sd", "prometheus.yml"} {
		t.Run(source, func(t *testing.T) { fleetChain(t, source) })
	}
}

func fleetChain(t *testing.T, source string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sc, _ := sim.ScenarioByName("chain")
	// The slowdown covers the analyze window (6 s), so every layer
	// retries in it.
	// 20 originals/s instead of 50: two stacks of four loopback services
	// under -race are a load of their own on a busy machine, and the
	// provider (4 slots, 2 s when slow) is overloaded at 20/s too.
	opts := sim.Options{Healthy: time.Second, Slow: 8 * time.Second, Recovered: time.Second, Seed: 5, Rate: 20}
	byJob := map[string][]string{}
	for range 2 {
		stack, err := sim.Start(ctx, sc, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer stack.Close()
		for _, tg := range stack.Targets() {
			byJob[tg.Layer] = append(byJob[tg.Layer], strings.TrimSuffix(strings.TrimPrefix(tg.URL, "http://"), "/metrics"))
		}
	}
	jobs := slices.Sorted(maps.Keys(byJob))
	dir := t.TempDir()
	var args []string
	switch source {
	case "file_sd":
		var groups []string
		for _, job := range jobs {
			groups = append(groups, fmt.Sprintf(`{"targets": ["%s"], "labels": {"job": %q}}`, strings.Join(byJob[job], `", "`), job))
		}
		sd := filepath.Join(dir, "targets.json")
		writeFile(t, sd, "["+strings.Join(groups, ",\n")+"]\n")
		args = []string{"--file-sd", sd}
	case "prometheus.yml":
		prom := "scrape_configs:\n"
		for _, job := range jobs {
			prom += fmt.Sprintf("  - job_name: %s\n    static_configs: [{targets: ['%s']}]\n", job, strings.Join(byJob[job], "', '"))
			args = append(args, "--job", job)
		}
		promFile := filepath.Join(dir, "prometheus.yml")
		writeFile(t, promFile, prom)
		args = append(args, "--prometheus-config", promFile)
	}

	// 1 s scrapes: eight targets of two stacks in a storm, under -race,
	// beside other packages' tests, may take more than half a second, and
	// on a busy machine one may time out: --keep-going, since this test is
	// about how discovery folds replicas into hops, not about the gate's
	// exit on a first scrape that failed (gate_test.go).
	out, stderr, err := execute(t, append([]string{"analyze", "--format", "json", "--window", "6s", "--interval", "1s", "--keep-going", "-q"}, args...)...)
	if err != nil {
		t.Fatalf("analyze: %v\n%s", err, stderr)
	}
	var rep struct {
		Targets []struct{ Name, Service, NameSource string } `json:"targets"`
		Chains  []struct {
			Name      string
			WorstCase *float64 `json:"worst_case_amplification"`
		} `json:"chains"`
		Findings []struct{ Code, Severity string } `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Targets) != 8 {
		t.Errorf("%d targets, want 8 (2 replicas x 4 layers)", len(rep.Targets))
	}
	var names []string
	found := false
	for _, c := range rep.Chains {
		names = append(names, c.Name)
		if c.Name == "browser -> app -> client -> provider" && c.WorstCase != nil && *c.WorstCase == 27 {
			found = true
		}
	}
	if !found {
		t.Errorf("chains %q, want browser -> app -> client -> provider with worst case 27", names)
	}
	layers := false
	for _, f := range rep.Findings {
		layers = layers || f.Code == analysis.CodeMultipleRetryLayers
	}
	if !layers {
		t.Errorf("no MULTIPLE_RETRY_LAYERS in %+v", rep.Findings)
	}
}
