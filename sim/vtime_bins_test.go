package sim

import (
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// TestVirtualBinsAgreeWithTruth is the per-bin property test: every
// scenario runs its full schedule (healthy, slow, recovered) in virtual
// time, every target is scraped each virtual second through retrytop's
// scrape path, and retrytop's one-second timeline (analysis.Timeline, as
// the dashboard and analyze bin it) is held at EVERY bin against the sim's
// counters read at the same two edges.
//
// The bound. A scrape and the counters of one edge are read at one
// quiescent virtual instant (runVirtual), and the sim counts each quantity
// at the moment the metric contract counts it (Counters), so the only
// difference the bin width, the scrape interval or the deadline could
// make (an operation or attempt counted on one side of an edge by one and
// on the other by the other) cannot happen: the derived bound is 0, and
// relTol only allows for float rounding, far inside the 3 % goal. maxRel
// in the log shows what was actually seen.
//
// End-to-end amplification <= worst case is checked at every bin too, in
// a subtest of its own: analysis computes it from quantities counted at
// different moments (see knownEndToEndDefect), so it fails at the
// slowdown's onset. While knownEndToEndDefect is set the subtest skips,
// naming the bins; once analysis is fixed it passes, and the constant is
// to be cleared so that any bin over the worst case fails.
func TestVirtualBinsAgreeWithTruth(t *testing.T) {
	for _, sc := range Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel() // each bubble has its own virtual clock
			var e2e []string
			synctest.Test(t, func(t *testing.T) {
				run := runVirtual(t, sc, Options{Seed: 7}, time.Second)
				// 1 s bins, and the wider bins a dashboard shows (its
				// default is 10 s), each made of whole scrape intervals.
				for _, k := range []int{1, 2, 5, 10} {
					e2e = append(e2e, checkBins(t, run, k)...)
				}
			})
			t.Run("end-to-end within worst case", func(t *testing.T) {
				switch {
				case len(e2e) == 0:
					return
				case knownEndToEndDefect:
					t.Skipf("known analysis defect: end-to-end divides the last hop's attempts, counted when they end, by the first hop's admitted originals, counted when those end up to a deadline later; %d bins exceed the worst case: %v", len(e2e), e2e)
				}
				for _, v := range e2e {
					t.Error(v)
				}
			})
		})
	}
}

// knownEndToEndDefect: analysis.EvaluateChain's EndToEndAmplification is
// not counted at one moment (see TestVirtualBinsAgreeWithTruth). Set it to
// false once analysis computes it so that it cannot exceed the worst case.
const knownEndToEndDefect = false

// relTol is the derived bound, 0, plus float rounding of the rates and
// ratios (counts are integers well below 2^53); zero must read zero.
const relTol = 1e-9

// checkBins checks every bin of run and returns the bins whose end-to-end
// amplification exceeds the worst case, described.
func checkBins(t *testing.T, run *virtualRun, k int) (e2eOver []string) {
	t.Helper()
	if len(run.edges)-1 < 40 {
		t.Fatalf("%d scrape intervals, want the whole schedule", len(run.edges)-1)
	}
	// Bins of k scrape intervals; a remainder after the last whole bin is
	// left out (Timeline would merge it into the bin before).
	n := (len(run.edges) - 1) / k
	bin := time.Duration(k) * run.every
	edge := func(j int) Counters { return run.edges[j*k] }
	endMs := run.startMs + int64(n)*bin.Milliseconds()
	first := run.edges[0]
	var chain analysis.Chain
	timelines := map[string][]model.Signals{}
	for _, h := range first.Hops {
		if h.Hidden {
			continue
		}
		key := model.Key{Target: h.Name, Dependency: h.Dependency}
		tl := analysis.Timeline(run.store, key, bin, run.startMs, endMs)
		if len(tl) != n {
			t.Fatalf("%s: timeline of %d bins, want %d", key, len(tl), n)
		}
		timelines[h.Name] = tl
		chain.Hops = append(chain.Hops, analysis.Hop{Target: h.Name, Dependency: h.Dependency})
	}
	sameAcrossPaths(t, run, timelines, bin, n, endMs)
	maxRel := 0.0
	bad := 0
	fail := func(format string, args ...any) {
		t.Helper()
		if bad++; bad <= 40 {
			t.Errorf(format, args...)
		}
	}
	for j := range n {
		truth := edge(j + 1).Rates(edge(j))
		at := func() string { return truth.Start.String() + ".." + truth.End.String() }
		rows := make([]model.Signals, 0, len(chain.Hops))
		for _, h := range truth.Hops {
			if h.Hidden {
				continue
			}
			s := timelines[h.Name][j]
			rows = append(rows, s)
			cmp := func(what string, got model.Value, want float64) {
				t.Helper()
				if !got.OK() {
					fail("bin %s %s: %s absent, truth %.3f/s", at(), h.Name, what, want)
					return
				}
				d := math.Abs(got.V() - want)
				if want == 0 {
					if d > 1e-9 {
						fail("bin %s %s: %s %.3f/s, truth 0", at(), h.Name, what, got.V())
					}
					return
				}
				rel := d / want
				maxRel = max(maxRel, rel)
				if rel > relTol {
					fail("bin %s %s: %s %.3f/s, truth %.3f/s (%.1f %%)", at(), h.Name, what, got.V(), want, 100*rel)
				}
			}
			cmp("originals", s.OriginalsPerS, h.OriginalsPerS)
			cmp("attempts", s.AttemptsPerS, h.AttemptsPerS)
			cmp("successes", s.SuccessesPerS, h.SuccessesPerS)
			cmp("completed", s.CompletedPerS, h.CompletedPerS)
			cmp("retries", s.RetriesPerS, h.RetriesPerS)
			cmp("timeouts", s.TimeoutsPerS, h.TimeoutsPerS)
			hopPolicy := run.s.hops[indexOf(truth.Hops, h.Name)].policy
			if hopPolicy.Limit > 0 || s.AdmissionRejectedPerS.OK() {
				cmp("admission rejections", s.AdmissionRejectedPerS, h.AdmissionRejectedPerS)
			}
			if hopPolicy.Budget != nil || s.BudgetDeniedPerS.OK() {
				cmp("budget denied", s.BudgetDeniedPerS, h.BudgetDeniedPerS)
			}

			// AMP >= 1 on a hop without admission rejections: every
			// admitted original that ended made at least one attempt.
			if a, ok := s.Amplification.Get(); ok && h.AdmissionRejectedPerS == 0 && a < 1-1e-9 {
				fail("bin %s %s: AMP %.3f < 1 (basis %s; truth: %.1f operation attempts/s over %.1f admitted/s)",
					at(), h.Name, a, s.AmplificationBasis, h.OperationAttemptsPerS, h.AdmittedPerS)
			}
			if h.AdmittedPerS > 0 {
				cmp("amplification", s.Amplification, h.OperationAttemptsPerS/h.AdmittedPerS)
			}
			// EFF% and ATT% are their counts' ratios, within [0, 1].
			if e, ok := s.EffectiveSuccess.Get(); ok {
				if e < 0 || e > 1 || math.Abs(e*s.CompletedPerS.V()-s.SuccessesPerS.V()) > 1e-6 {
					fail("bin %s %s: EFF %.4f, successes %.3f/s of %.3f/s completed", at(), h.Name, e, s.SuccessesPerS.V(), s.CompletedPerS.V())
				}
			} else if h.CompletedPerS > 0 {
				fail("bin %s %s: EFF absent with %.1f completed/s", at(), h.Name, h.CompletedPerS)
			}
			if a, ok := s.AttemptSuccess.Get(); ok {
				if a < 0 || a > 1 {
					fail("bin %s %s: ATT %.4f outside [0, 1]", at(), h.Name, a)
				}
				if h.AttemptsPerS > 0 {
					cmp("attempt success ratio", s.AttemptSuccess, h.AttemptSuccessesPerS/h.AttemptsPerS)
				}
				// Without operations that ended before any attempt, EFF >=
				// ATT: each such operation's last attempt ends at the
				// moment it does, inside the same bin, so the bin's
				// attempts are at least its completed operations, and the
				// successful operations are exactly the successful
				// attempts.
				if e, ok := s.EffectiveSuccess.Get(); ok && h.CompletedPerS == h.AdmittedPerS && e < a-1e-9 {
					fail("bin %s %s: EFF %.4f below ATT %.4f with every ended operation admitted", at(), h.Name, e, a)
				}
			}
		}
		cr := analysis.EvaluateChain(chain, rows)
		e2e, eok := cr.EndToEndAmplification.Get()
		worst, wok := cr.WorstCaseAmplification.Get()
		if eok && wok && e2e > worst+1e-9 {
			msg := fmt.Sprintf("bin %s: end-to-end %.3f > worst case %.0f (%s attempts %.1f/s over %s admitted %.1f/s; per-hop AMP",
				at(), e2e, worst, rows[len(rows)-1].Target, rows[len(rows)-1].AttemptsPerS.V(), rows[0].Target, rows[0].AdmittedPerS.V())
			for _, h := range cr.Hops {
				msg += fmt.Sprintf(" %s %.3f", h.Target, h.Amplification.V())
			}
			e2eOver = append(e2eOver, msg+fmt.Sprintf(", product %.3f)", cr.ProductAmplification.V()))
		}
		if p, ok := cr.ProductAmplification.Get(); ok && wok && p > worst+1e-9 {
			fail("bin %s: product of the hops' amplification %.3f above worst case %.3f", at(), p, worst)
		}
	}
	if bad > 40 {
		t.Errorf("... %d failures in all", bad)
	}
	t.Logf("%d bins of %v; sent %d; max relative difference from the truth %.2g", n, bin, edge(n).Sent, maxRel)
	return e2eOver
}

func indexOf(hops []HopBin, name string) int {
	for i, h := range hops {
		if h.Name == name {
			return i
		}
	}
	return -1
}

// sameAcrossPaths holds the dashboard's frame (analysis.BuildFrame, one
// 1 s bin per virtual second) and analyze's window (analysis.SignalsFor
// over one bin) to the timeline the property test checks: one definition,
// whichever path reads the bins.
func sameAcrossPaths(t *testing.T, run *virtualRun, timelines map[string][]model.Signals, bin time.Duration, n int, endMs int64) {
	t.Helper()
	f := analysis.BuildFrame(run.store, nil, analysis.FrameOptions{Window: bin, Bin: bin, Bins: n, EndMs: endMs})
	fields := func(s model.Signals) []model.Value {
		return []model.Value{s.OriginalsPerS, s.AttemptsPerS, s.CompletedPerS, s.SuccessesPerS, s.RetriesPerS,
			s.TimeoutsPerS, s.AdmissionRejectedPerS, s.BudgetDeniedPerS, s.Amplification, s.EffectiveSuccess, s.AttemptSuccess}
	}
	names := []string{"originals", "attempts", "completed", "successes", "retries", "timeouts", "admission rejections",
		"budget denied", "AMP", "EFF", "ATT"}
	bad := 0
	for name, tl := range timelines {
		key := model.Key{Target: name, Dependency: tl[0].Dependency}
		ftl := f.Timelines[key].Bins()
		if len(ftl) != n {
			t.Errorf("%s: frame timeline of %d bins, want %d", key, len(ftl), n)
			continue
		}
		for j := range n {
			a, b := run.startMs+int64(j)*bin.Milliseconds(), run.startMs+int64(j+1)*bin.Milliseconds()
			want := fields(tl[j])
			for path, got := range map[string][]model.Value{
				"frame":      fields(ftl[j]),
				"SignalsFor": fields(analysis.SignalsFor(run.store, key.Target, key.Dependency, a, b)),
			} {
				for i := range want {
					if got[i].OK() != want[i].OK() || math.Abs(got[i].V()-want[i].V()) > 1e-9 {
						if bad++; bad <= 10 {
							t.Errorf("%s bin %d: %s %s %v, timeline %v", key, j, path, names[i], got[i], want[i])
						}
					}
				}
			}
		}
	}
}
