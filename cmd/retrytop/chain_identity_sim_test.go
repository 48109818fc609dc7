package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/sim"
)

// TestChainLinksFromBareURLs is issue 15's newcomer: `analyze URL URL URL
// URL` on the chain scenario, nothing named. The targets name themselves
// through target_info, the callers' dependency labels link to them, and
// the chain is the whole call path with its worst case of 27.
func TestChainLinksFromBareURLs(t *testing.T) {
	if testing.Short() {
		t.Skip("loopback integration test skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := startSimRunWith(ctx, "chain", sim.Options{Healthy: 2 * time.Second, Slow: 5 * time.Second, Recovered: 3 * time.Second, Seed: 3}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer run.stack.Close()
	run.scraper.ScrapeOnce(ctx)
	if err := run.scrapeUntilDone(ctx, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	statuses := run.scraper.ScrapeOnce(ctx)
	for _, s := range statuses {
		if !strings.HasPrefix(s.Name, "127.0.0.1:") {
			t.Fatalf("target %q: want a bare address name", s.Name)
		}
	}
	th := analysis.DefaultThresholds()
	th.GapWindow = 4 * time.Second // as TestFindingsOnTheSimScenarios: 10 s runs scraped every 500 ms
	rep := analysis.BuildReport(run.scraper.Store(), statuses, analysis.ReportOptions{Window: 5 * time.Second, Bin: 2 * time.Second, Thresholds: &th})

	services := map[string]string{}
	for _, s := range rep.Targets {
		services[s.Service] = s.NameSource
	}
	for _, want := range []string{"browser", "app", "client", "provider"} {
		if services[want] != analysis.NameTargetInfo {
			t.Errorf("service %q named by %q, want target_info; targets %+v", want, services[want], rep.Targets)
		}
	}
	var found *analysis.ChainResult
	for i := range rep.Chains {
		if rep.Chains[i].Name == "browser -> app -> client -> provider" {
			found = &rep.Chains[i]
		}
	}
	if found == nil {
		var names []string
		for _, c := range rep.Chains {
			names = append(names, c.Name)
		}
		t.Fatalf("chains %q, want browser -> app -> client -> provider; links %+v", names, rep.Links)
	}
	if !found.WorstCaseAmplification.OK || found.WorstCaseAmplification.V != 27 {
		t.Errorf("worst case %v, want 27", found.WorstCaseAmplification)
	}
	if _, ok := codes(rep.Findings, analysis.SeverityWarning)[analysis.CodeMultipleRetryLayers]; !ok {
		t.Errorf("no MULTIPLE_RETRY_LAYERS; findings: %s", listCodes(rep.Findings))
	}
	for _, l := range rep.Links {
		if l.Dependency != "provider" && l.How != analysis.LinkName {
			t.Errorf("link %+v, want linked by name", l)
		}
	}
}
