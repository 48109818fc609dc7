package analyze_test

import (
	"context"
	"maps"
	"net/url"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/sim"
)

// TestChainLinksFromBareURLs is a newcomer's run: `analyze URL URL URL
// URL` on the chain scenario, nothing named. The targets name themselves
// through target_info, the callers' dependency labels link to them, and
// the chain is the whole call path with its worst case of 27.
//
// In virtual time (a synctest bubble over the sim's in-process transport),
// so a loaded machine cannot make the chain look overloaded; the targets'
// addresses are then NAME.sim, which say nothing of their layer either.
func TestChainLinksFromBareURLs(t *testing.T) {
	synctest.Test(t, chainLinksFromBareURLs)
}

func chainLinksFromBareURLs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := startSimRunWith(ctx, "chain", sim.Options{Healthy: 2 * time.Second, Slow: 5 * time.Second, Recovered: 3 * time.Second, Seed: 3, InProcess: true}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer run.stack.Close()
	statuses := run.scrapeThrough(t, ctx, 500*time.Millisecond)
	addresses := map[string]bool{}
	for _, tg := range run.stack.Targets() {
		u, err := url.Parse(tg.URL)
		if err != nil {
			t.Fatal(err)
		}
		addresses[u.Host] = true
		addresses[u.Host+":80"] = true
	}
	for _, s := range statuses {
		if !addresses[s.Name] {
			t.Fatalf("target %q: want a bare address name, one of %v", s.Name, slices.Sorted(maps.Keys(addresses)))
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
	if !found.WorstCaseAmplification.OK() || found.WorstCaseAmplification.V() != 27 {
		t.Errorf("worst case %v, want 27", found.WorstCaseAmplification)
	}
	if _, ok := codes(rep.Findings, analysis.SeverityWarning)[analysis.CodeMultipleRetryLayers]; !ok {
		t.Errorf("no MULTIPLE_RETRY_LAYERS; findings: %s", listCodes(rep.Findings))
	}
	// The provider's own view joins too: on the chain and on the row that
	// calls it, though the row names it "provider" and its target is an
	// address.
	if found.Provider == nil || !found.Provider.ArrivedPerS.OK() {
		t.Errorf("chain provider %+v, want what arrived at the provider", found.Provider)
	}
	joined := false
	for _, d := range rep.Dependencies {
		joined = joined || (d.Dependency == "provider" && d.DependencyReceivedPerS.OK())
	}
	if !joined {
		t.Error("no row calling the provider carries the provider's received rate")
	}
	for _, l := range rep.Links {
		if l.Dependency != "provider" && l.How != analysis.LinkName {
			t.Errorf("link %+v, want linked by name", l)
		}
	}
}
