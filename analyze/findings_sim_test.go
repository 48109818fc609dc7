package analyze_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/sim"
)

// runScenarioReport runs one scenario with short phases in virtual time
// (a synctest bubble over the sim's in-process transport: the same on a
// loaded machine as on an idle one), scrapes every target every 500 ms
// through the scraper the way watch and analyze do, and returns the
// report over the whole run.
func runScenarioReport(t *testing.T, name string, opts sim.Options, th *analysis.Thresholds) (rep analysis.Report) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		// Virtual: the whole schedule is 10 s; a minute is ample.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		run := startInProcess(t, ctx, name, opts)
		defer run.stack.Close()
		statuses := run.scrapeThrough(t, ctx, 500*time.Millisecond)
		for _, s := range statuses {
			if !s.Up {
				t.Fatalf("%s: target %s down: %s", name, s.Name, s.LastError)
			}
		}
		rep = analysis.BuildReport(run.scraper.Store(), statuses, analysis.ReportOptions{Window: 5 * time.Second, Bin: 2 * time.Second, Thresholds: th})
	})
	return rep
}

func codes(fs []analysis.Finding, min analysis.Severity) map[string]analysis.Finding {
	out := map[string]analysis.Finding{}
	for _, f := range fs {
		if f.Severity >= min {
			if _, dup := out[f.Code]; !dup {
				out[f.Code] = f
			}
		}
	}
	return out
}

// TestFindingsOnTheSimScenarios checks the findings each scenario must
// (and must not) produce, on the real services in virtual time.
func TestFindingsOnTheSimScenarios(t *testing.T) {
	phases := sim.Options{Healthy: 2 * time.Second, Slow: 5 * time.Second, Recovered: 3 * time.Second, Seed: 3}
	hidden := phases
	hidden.HiddenHop = true
	type run struct {
		name, scenario string
		opts           sim.Options
		check          func(t *testing.T, rep analysis.Report)
	}
	runs := []run{
		{"baseline", "baseline", phases, func(t *testing.T, rep analysis.Report) {
			if _, ok := codes(rep.Findings, analysis.SeverityWarning)[analysis.CodeRetryAmplification]; !ok {
				t.Errorf("baseline: no RETRY_AMPLIFICATION during the slowdown; findings: %s", listCodes(rep.Findings))
			}
		}},
		{"bounded", "bounded", phases, func(t *testing.T, rep analysis.Report) {
			all := codes(rep.Findings, analysis.SeverityInfo)
			if _, ok := all[analysis.CodeAdmissionShedding]; !ok {
				t.Errorf("bounded: no ADMISSION_SHEDDING; findings: %s", listCodes(rep.Findings))
			}
			if f, ok := all[analysis.CodeRetryAmplification]; ok {
				t.Errorf("bounded: RETRY_AMPLIFICATION fired: %s", f.Message)
			}
		}},
		{"chain", "chain", phases, func(t *testing.T, rep analysis.Report) {
			if _, ok := codes(rep.Findings, analysis.SeverityWarning)[analysis.CodeMultipleRetryLayers]; !ok {
				t.Errorf("chain: no MULTIPLE_RETRY_LAYERS; findings: %s", listCodes(rep.Findings))
			}
			worst := false
			for _, c := range rep.Chains {
				if c.WorstCaseAmplification.OK() && c.WorstCaseAmplification.V() == 27 {
					worst = true
				}
			}
			if !worst {
				t.Errorf("chain: no chain with a worst case of 27: %+v", rep.Chains)
			}
		}},
		{"ignore-cancel", "ignore-cancel", phases, func(t *testing.T, rep analysis.Report) {
			if _, ok := codes(rep.Findings, analysis.SeverityInfo)[analysis.CodeWorkAfterCancel]; !ok {
				t.Errorf("ignore-cancel: no WORK_AFTER_CANCEL; findings: %s", listCodes(rep.Findings))
			}
		}},
		{"hidden hop", "baseline", hidden, func(t *testing.T, rep analysis.Report) {
			f, ok := codes(rep.Findings, analysis.SeverityInfo)[analysis.CodeHiddenRetries]
			if !ok {
				t.Errorf("hidden hop: no HIDDEN_RETRIES; findings: %s", listCodes(rep.Findings))
				return
			}
			if v, ok := f.Evidence.Get("factor"); ok && v <= 1.05 {
				t.Errorf("hidden hop: factor %v, want more arriving than sent", v)
			}
		}},
	}
	// The gap rules compare hops over GapWindow (30 s by default) so that
	// one scrape interval at a bin's edge is small; these runs are 10 s
	// long and scraped every 500 ms, so 4 s is as careful.
	th := analysis.DefaultThresholds()
	th.GapWindow = 4 * time.Second
	short := &th
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel() // each bubble has its own virtual clock
			r.check(t, runScenarioReport(t, r.scenario, r.opts, short))
		})
	}

	// The control: protection must not reject normal traffic.
	t.Run("healthy", func(t *testing.T) {
		t.Parallel()
		rep := runScenarioReport(t, "healthy", phases, short)
		if bad := codes(rep.Findings, analysis.SeverityWarning); len(bad) > 0 {
			t.Errorf("healthy: warning or critical findings: %s", listCodes(rep.Findings))
		}
	})
}

func listCodes(fs []analysis.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "\n  %s %s %s/%s: %s", f.Severity, f.Code, f.Target, f.Dependency, f.Message)
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}
