package analysis

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/model"
)

// wantBudget are the figures a test expects; absent (NaN) for Absent.
type wantBudget struct {
	balance, capacity, stopAt, drain, tte float64
	timeline                              []float64
}

func checkBudget(t *testing.T, b Budget, w wantBudget) {
	t.Helper()
	checkValue(t, "balance", b.Balance, w.balance)
	checkValue(t, "capacity", b.Capacity, w.capacity)
	checkValue(t, "stop_at", b.StopAt, w.stopAt)
	checkValue(t, "drain_per_s", b.DrainPerS, w.drain)
	checkValue(t, "time_to_exhaustion_s", b.TimeToExhaustionS, w.tte)
	if len(b.Timeline) != len(w.timeline) {
		t.Fatalf("timeline %v, want %v", b.Timeline, w.timeline)
	}
	for i, v := range w.timeline {
		checkValue(t, "timeline", b.Timeline[i], v)
	}
	if !b.Reconstructed {
		t.Errorf("reconstructed false, want true")
	}
}

// TestGRPCBudget: gRFC A6 with max_tokens 10, token_ratio 0.1: an attempt
// failed with a retryable status (a temporary error) takes 1 token, a
// success adds 0.1, retries stop at or below 5. The drain is retryable
// failures/s - 0.1 x successes/s over the window. bin and win make every
// failure retryable unless a case says otherwise (binT).
func TestGRPCBudget(t *testing.T) {
	binT := func(i int, att, succ, temp float64) model.Signals {
		return model.Signals{StartMs: int64(i) * 1000, EndMs: int64(i+1) * 1000, AttemptsPerS: model.Some(att),
			AttemptSuccess: model.Some(succ), TemporaryErrorsPerS: model.Some(temp)}
	}
	bin := func(i int, att, succ float64) model.Signals { return binT(i, att, succ, att*(1-succ)) }
	full := bin(0, 200, 1)
	win := func(endS int, att, succ model.Value) model.Signals {
		s := model.Signals{StartMs: 0, EndMs: int64(endS) * 1000, AttemptsPerS: att, AttemptSuccess: succ}
		if att.OK() && succ.OK() {
			s.TemporaryErrorsPerS = model.Some(att.V() * (1 - succ.V()))
		}
		return s
	}
	for _, tc := range []struct {
		name   string
		bins   []model.Signals
		window model.Signals
		want   wantBudget
	}{
		// Bin 0's 200 successes fill the count from any start: 10 (each
		// case but the last begins with it). 10 - 4 = 6; drain 4 x 0.5 -
		// 0.1 x 4 x 0.5 = 1.8/s; (6 - 5) / 1.8.
		{"draining", []model.Signals{full, bin(1, 4, 0)}, win(2, model.Some(4), model.Some(0.5)),
			wantBudget{6, 10, 5, 1.8, 1 / 1.8, []float64{10, 6}}},
		// 6, then 6 - 2 + 0.2 = 4.2: at or below 5, retries stopped.
		{"stopped", []model.Signals{full, bin(1, 4, 0), bin(2, 4, 0.5)}, win(3, model.Some(4), model.Some(0.5)),
			wantBudget{4.2, 10, 5, 1.8, 0, []float64{10, 6, 4.2}}},
		// 10 - 2 + 1 = 9; drain 2 - 0.1 x 10 = 1/s; (9 - 5) / 1 = 4 s.
		{"failures outweigh", []model.Signals{full, bin(1, 12, 10.0/12)}, win(2, model.Some(12), model.Some(10.0/12)),
			wantBudget{9, 10, 5, 1, 4, []float64{10, 9}}},
		// Full and only succeeding: the cap holds it, nothing drains.
		{"full", []model.Signals{full, bin(1, 4, 1)}, win(2, model.Some(4), model.Some(1)),
			wantBudget{10, 10, 5, 0, absent, []float64{10, 10}}},
		// 10 - 5 + 0.5 = 5.5, + 0.4 = 5.9; filling at -0.4/s: never exhausted.
		{"filling", []model.Signals{full, bin(1, 10, 0.5), bin(2, 4, 1)}, win(3, model.Some(4), model.Some(1)),
			wantBudget{5.9, 10, 5, -0.4, absent, []float64{10, 5.5, 5.9}}},
		// No attempts in the window: 0 drain, known.
		{"idle", []model.Signals{full, bin(1, 4, 0)}, win(2, model.Some(0), model.Absent),
			wantBudget{6, 10, 5, 0, absent, []float64{10, 6}}},
		// Attempts unknown: the count and the drain are unknown, not 10 and 0.
		{"unknown", []model.Signals{full, {StartMs: 1000, EndMs: 2000}}, win(2, model.Absent, model.Absent),
			wantBudget{absent, 10, 5, absent, absent, []float64{10, absent}}},
		// 10 attempts: 2 successes, 3 UNAVAILABLE, 5 permanent errors,
		// cancels or timeouts, which A6 does not count: 10 - 3 + 0.2 =
		// 7.2; drain 3 - 0.1 x 2 = 2.8/s; (7.2 - 5) / 2.8. Counting every
		// failure read 10 - 8 + 0.2 = 2.2, retries stopped.
		{"only retryable failures", []model.Signals{full, binT(1, 10, 0.2, 3)},
			func() model.Signals {
				w := win(2, model.Some(10), model.Some(0.2))
				w.TemporaryErrorsPerS = model.Some(3)
				return w
			}(),
			wantBudget{7.2, 10, 5, 2.8, 2.2 / 2.8, []float64{10, 7.2}}},
		// The split by outcome unknown: so is what A6 counts.
		{"split unknown", []model.Signals{full, {StartMs: 1000, EndMs: 2000, AttemptsPerS: model.Some(4), AttemptSuccess: model.Some(0.5)}},
			model.Signals{StartMs: 0, EndMs: 2000, AttemptsPerS: model.Some(4), AttemptSuccess: model.Some(0.5)},
			wantBudget{absent, 10, 5, absent, absent, []float64{10, absent}}},
		// The start unknown: from full bin 0 leaves 6, from empty 0, so it
		// is unknown; bin 1's 100 failures empty it from either: 0.
		{"start unknown", []model.Signals{bin(0, 4, 0), bin(1, 100, 0)}, win(2, model.Some(100), model.Some(0)),
			wantBudget{0, 10, 5, 100, 0, []float64{absent, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkBudget(t, GRPCBudget(tc.window, tc.bins, 10, 0.1), tc.want)
		})
	}
}

// TestEnvoyBudget: Envoy's allowance is max(floor(20 % of active +
// pending), 3) retries in progress; those in progress are the retries'
// share of the attempts in flight; the headroom is the allowance less them.
func TestEnvoyBudget(t *testing.T) {
	bin := func(i int, active, pending, att, ret model.Value) model.Signals {
		return model.Signals{StartMs: int64(i) * 10000, EndMs: int64(i+1) * 10000,
			ActiveCalls: active, QueueDepth: pending, AttemptsPerS: att, RetriesPerS: ret}
	}
	s := model.Some
	win := model.Signals{StartMs: 0, EndMs: 20000}
	for _, tc := range []struct {
		name string
		bins []model.Signals
		want wantBudget
	}{
		// bin 0: allowance 0.2 x 30 = 6, retries 10 % of 30 in flight = 3,
		// headroom 3; bin 1: 0.2 x 50 = 10, 20 % of 40 = 8, headroom 2.
		// Drain (3 - 2) / 10 s = 0.1/s; 2 / 0.1 = 20 s.
		{"draining", []model.Signals{bin(0, s(30), s(0), s(100), s(10)), bin(1, s(40), s(10), s(100), s(20))},
			wantBudget{2, 10, 0, 0.1, 20, []float64{3, 2}}},
		// 20 % of 12 is 2.4: truncated to 2, then the minimum of 3 holds;
		// 20 % of 24 is 4.8, truncated to 4. No retries: headroom = allowance,
		// filling at (3 - 4) / 10 s.
		{"minimum and truncation", []model.Signals{bin(0, s(12), s(0), s(50), s(0)), bin(1, s(24), s(0), s(50), s(0))},
			wantBudget{4, 4, 0, -0.1, absent, []float64{3, 4}}},
		// Retries fill the allowance: 0 headroom, retries stopped.
		{"overflowing", []model.Signals{bin(0, s(10), s(0), s(100), s(50)), bin(1, s(10), s(0), s(100), s(50))},
			wantBudget{0, 3, 0, 0, 0, []float64{0, 0}}},
		// No pending gauge: the allowance is unknown, so is everything.
		{"pending unknown", []model.Signals{bin(0, s(30), model.Absent, s(100), s(10)), bin(1, s(30), model.Absent, s(100), s(10))},
			wantBudget{absent, absent, 0, absent, absent, []float64{absent, absent}}},
		// No retry counter: the allowance is known, the headroom not.
		{"retries unknown", []model.Signals{bin(0, s(30), s(0), s(100), model.Absent), bin(1, s(30), s(0), s(100), model.Absent)},
			wantBudget{absent, 6, 0, absent, absent, []float64{absent, absent}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkBudget(t, EnvoyBudget(win, tc.bins, 20, 3), tc.want)
		})
	}
}

// TestFinagleBudget: Finagle's RetryBudget with ttl 10 s, 10 retries/s
// minimum, 20 %: a reserve of 100 retries, plus 0.2 per original of the
// last 10 s, less the retries of the last 10 s.
func TestFinagleBudget(t *testing.T) {
	bin := func(startMs, endMs int64, orig, ret float64) model.Signals {
		return model.Signals{StartMs: startMs, EndMs: endMs, OriginalsPerS: model.Some(orig), RetriesPerS: model.Some(ret)}
	}
	t.Run("draining", func(t *testing.T) {
		bins := []model.Signals{bin(0, 5000, 100, 0), bin(5000, 10000, 100, 10), bin(10000, 15000, 100, 30)}
		// end 5 s: the 5 s before the recording are unknown.
		// end 10 s: 100 + 0.2 x 1000 = 300, less 50 retries = 250.
		// end 15 s: 300, less 50 + 150 = 100. Drain over the window
		// [10 s, 15 s]: (250 - 100) / 5 = 30/s; (100 - 1) / 30.
		b := FinagleBudget(model.Signals{StartMs: 10000, EndMs: 15000}, bins, 10, 10, 0.2)
		checkBudget(t, b, wantBudget{100, 300, 1, 30, 99.0 / 30, []float64{absent, 250, 100}})
	})
	t.Run("bins across the ttl", func(t *testing.T) {
		// 4 s bins, end 12 s: the ttl starts 2 s into bin 0, so 2 + 4 + 4 s
		// at 10 originals and 1 retry per second: 100 + 0.2 x 100 = 120,
		// less 10. The window starts where the first known bin ends.
		bins := []model.Signals{bin(0, 4000, 10, 1), bin(4000, 8000, 10, 1), bin(8000, 12000, 10, 1)}
		b := FinagleBudget(model.Signals{StartMs: 0, EndMs: 12000}, bins, 10, 10, 0.2)
		checkBudget(t, b, wantBudget{110, 120, 1, absent, absent, []float64{absent, absent, 110}})
	})
	t.Run("exhausted", func(t *testing.T) {
		// 100 + 0.2 x 0 - 10 x 10 = 0: below one retry.
		bins := []model.Signals{bin(0, 10000, 0, 10)}
		b := FinagleBudget(model.Signals{StartMs: 0, EndMs: 10000}, bins, 10, 10, 0.2)
		checkBudget(t, b, wantBudget{0, 100, 1, absent, 0, []float64{0}})
	})
	t.Run("originals unknown", func(t *testing.T) {
		bins := []model.Signals{{StartMs: 0, EndMs: 10000, RetriesPerS: model.Some(1)}}
		b := FinagleBudget(model.Signals{StartMs: 0, EndMs: 10000}, bins, 10, 10, 0.2)
		checkBudget(t, b, wantBudget{absent, absent, 1, absent, absent, []float64{absent}})
	})
}

// TestBudgetFor: an exported balance is read as is; otherwise the
// dialect's model rebuilds one; no model, no budget.
func TestBudgetFor(t *testing.T) {
	bins := []model.Signals{{StartMs: 0, EndMs: 1000, AttemptsPerS: model.Some(100), AttemptSuccess: model.Some(0),
		TemporaryErrorsPerS: model.Some(100), BudgetBalance: model.Some(42)}}
	win := model.Signals{StartMs: 0, EndMs: 1000, AttemptsPerS: model.Some(4), AttemptSuccess: model.Some(0), TemporaryErrorsPerS: model.Some(4)}
	if b := BudgetFor([]string{"native"}, win, bins); b != nil {
		t.Errorf("native without a balance: %+v, want nil", b)
	}
	b := BudgetFor([]string{"grpc"}, win, bins)
	if b == nil || b.Model != BudgetGRPC || !b.Reconstructed {
		t.Fatalf("grpc: %+v, want a reconstructed grpc budget", b)
	}
	checkValue(t, "grpc balance", b.Balance, 0)
	win.BudgetBalance = model.Some(40)
	b = BudgetFor([]string{"grpc"}, win, bins)
	if b == nil || b.Model != BudgetExported || b.Reconstructed {
		t.Fatalf("exported: %+v, want the exported balance", b)
	}
	checkValue(t, "exported balance", b.Balance, 40)
	checkValue(t, "exported timeline", b.Timeline[0], 42)
	checkValue(t, "exported tte", b.TimeToExhaustionS, absent)
	for d, want := range map[string]string{"istio": BudgetEnvoy, "envoy": BudgetEnvoy, "grpc-prometheus": BudgetGRPC, "linkerd1": BudgetFinagle, "linkerd": "", "native": ""} {
		if got := BudgetModelFor([]string{"pools", d}); got != want {
			t.Errorf("%s: %q, want %q", d, got, want)
		}
	}
}

// TestReportBudget: analyze's JSON carries fates.budget, rebuilt for a
// gRPC target from its attempts (3 successes and 1 failure per second; 10 s
// bins: from full 10 - 10 + 3 = 3, from empty 0, so unknown; then both
// clamp to 0 and stay; drain 1 - 0.1 x 3 = 0.7/s, exhausted now), and null
// for a native target that exports no balance.
func TestReportBudget(t *testing.T) {
	times := every(1_000_000, 1000, 31)
	dep := []string{model.LabelDependency, "db"}
	series := []ts{
		{model.MetricOriginals, append(dep, "priority", "critical"), "0+4x30"},
		{model.MetricAttempts, append(dep, "outcome", "success"), "0+3x30"},
		{model.MetricAttempts, append(dep, "outcome", "temporary_error"), "0+1x30"},
	}
	st := load(t, nil, "grpcapp", times, series...)
	st = load(t, st, "nativeapp", times, series...)
	rep := BuildReport(st, []model.TargetStatus{{Name: "grpcapp", Dialect: "grpc"}, {Name: "nativeapp", Dialect: "native"}},
		ReportOptions{Window: 30e9, Bin: 10e9})
	if len(rep.Dependencies) != 2 {
		t.Fatalf("dependencies %d, want 2", len(rep.Dependencies))
	}
	b := rep.Dependencies[0].Fates.Budget
	if b == nil {
		t.Fatal("grpcapp: no budget, want the reconstructed token count")
	}
	checkBudget(t, *b, wantBudget{0, 10, 5, 0.7, 0, []float64{absent, 0, 0}})
	js, err := json.Marshal(rep.Dependencies)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"budget":{"model":"grpc","reconstructed":true,"unit":"tokens","balance":0,"capacity":10,"stop_at":5,"drain_per_s":0.7`,
		`"budget_balance":null,"budget":null}`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("JSON lacks %s:\n%s", want, js)
		}
	}
}
