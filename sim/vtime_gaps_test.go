package sim

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// TestVirtualGapsFollowTruth runs chains in virtual time, scraped through
// retrytop's scrape path, and holds the gap rules (HOP_LOSS,
// HIDDEN_RETRIES) to the sim's ground truth: a hop's gap finding appears
// exactly when the truth says its dependency received a number of
// requests other than the attempts the hop started (a hidden layer in
// between); in a storm (three times the arrival rate against the same
// provider, in-flight work growing at every hop) nothing is lost, so
// nothing may fire.
func TestVirtualGapsFollowTruth(t *testing.T) {
	storm := func(o Options) Options {
		o.Healthy, o.Slow, o.Recovered = 2*time.Second, 5*time.Second, 3*time.Second
		return o
	}
	for _, c := range []struct {
		name, scenario  string
		opts            Options
		every, bin, gap time.Duration
	}{
		{"chain", "chain", Options{Seed: 7}, time.Second, time.Second, 30 * time.Second},
		{"chain storm", "chain", storm(Options{Seed: 3, Rate: 4 * DefaultRate}), 250 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond},
		{"chain storm, 1 s bins", "chain", storm(Options{Seed: 4, Rate: 4 * DefaultRate}), 500 * time.Millisecond, time.Second, time.Second},
		{"ignore-cancel storm", "ignore-cancel", storm(Options{Seed: 4, Rate: 4 * DefaultRate}), 250 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond},
		{"hidden hop", "baseline", Options{Seed: 3, HiddenHop: true}, 500 * time.Millisecond, 2 * time.Second, 4 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each bubble has its own virtual clock
			synctest.Test(t, func(t *testing.T) {
				sc, _ := ScenarioByName(c.scenario)
				run := runVirtual(t, sc, c.opts, c.every)
				var sts []model.TargetStatus
				for _, tg := range run.s.Targets() {
					sts = append(sts, model.TargetStatus{Name: tg.Name, Up: true})
				}
				th := analysis.DefaultThresholds()
				th.GapWindow = c.gap
				rep := analysis.BuildReport(run.store, sts, analysis.ReportOptions{Window: 5 * time.Second, Bin: c.bin, Thresholds: &th})
				fired := map[model.Key]analysis.Finding{}
				for _, f := range rep.Findings {
					if f.Code == analysis.CodeHopLoss || f.Code == analysis.CodeHiddenRetries {
						fired[model.Key{Target: f.Target, Dependency: f.Dependency}] = f
					}
				}
				// The truth over the whole run: what each visible hop's
				// dependency received against the attempts it started.
				end := run.edges[len(run.edges)-1]
				received := map[string]int64{NameProvider: end.ProviderReceived}
				for _, h := range end.Hops {
					if !h.Hidden {
						received[h.Name] = h.Originals
					}
				}
				for _, h := range end.Hops {
					r, ok := received[h.Dependency]
					if h.Hidden || !ok {
						continue
					}
					k := model.Key{Target: h.Name, Dependency: h.Dependency}
					f, got := fired[k]
					switch {
					case r == h.AttemptsStarted && got:
						t.Errorf("%s: %s: truth: %d attempts started, %d received; %s", k, f.Code, h.AttemptsStarted, r, f.Message)
					case r > h.AttemptsStarted && (!got || f.Code != analysis.CodeHiddenRetries):
						t.Errorf("%s: truth: %d attempts started, %d received (hidden retries); found %q", k, h.AttemptsStarted, r, f.Code)
					case r < h.AttemptsStarted && (!got || f.Code != analysis.CodeHopLoss):
						t.Errorf("%s: truth: %d attempts started, %d received (lost); found %q", k, h.AttemptsStarted, r, f.Code)
					}
					if got {
						t.Logf("%s: %s %v", k, f.Message, f.Evidence)
					}
				}
				if c.opts.HiddenHop && len(fired) == 0 {
					t.Error("hidden hop: no gap finding")
				}
			})
		})
	}
}
