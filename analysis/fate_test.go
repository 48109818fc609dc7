package analysis

import (
	"math"
	"testing"

	"github.com/retrytop/retrytop/model"
)

func TestFates(t *testing.T) {
	s := model.Signals{Target: "client", Dependency: "provider", RescuedPerS: model.Some(2),
		ResultsPerS: map[string]model.Value{
			model.ResultSuccess: model.Some(10), model.ResultProviderError: model.Some(1),
			model.ResultBudgetExhausted: model.Some(3), model.ResultCapacityRejected: model.Some(4),
			model.ResultDeadlineExhausted: model.Some(0), model.ResultNotRetryable: model.Some(5),
		}}
	f := Fates(s)
	for name, c := range map[string]struct{ got, want model.Value }{
		"first try":     {f.SucceededFirstTry, model.Some(8)},
		"after retry":   {f.SucceededAfterRetry, model.Some(2)},
		"exhausted":     {f.FailedAfterAttempts, model.Some(1)},
		"budget":        {f.NotRetriedBudget, model.Some(3)},
		"limiter":       {f.NotRetriedLimiter, model.Some(4)},
		"deadline":      {f.NotRetriedDeadline, model.Some(0)}, // zero is never absent
		"non-retryable": {f.NotRetriedNonRetry, model.Absent},  // absent is never zero
		"unsafe":        {f.NotRetriedUnsafe, model.Some(5)},
		"breaker":       {f.NotRetriedBreaker, model.Absent},
		"balance":       {f.BudgetBalance, model.Absent},
	} {
		if c.got != c.want {
			t.Errorf("%s: %+v, want %+v", name, c.got, c.want)
		}
	}
	if g := Fates(model.Signals{}); g.SucceededFirstTry.OK() || g.FailedAfterAttempts.OK() {
		t.Errorf("no results: %+v, want everything absent", g)
	}
}

// Hand-computed from A6: 10 tokens; 1 s bins of 4 attempts. Only failures
// with a retryable status (temporary errors) take a token.
func TestGRPCTokens(t *testing.T) {
	binT := func(att, succ, temp float64) model.Signals {
		return model.Signals{StartMs: 0, EndMs: 1000, AttemptsPerS: model.Some(att), AttemptSuccess: model.Some(succ),
			TemporaryErrorsPerS: model.Some(temp)}
	}
	bin := func(att, succ float64) model.Signals { return binT(att, succ, att*(1-succ)) }
	tl := []model.Signals{
		bin(4, 0),        // 10 - 4 = 6
		bin(4, 0.5),      // 6 - 2 + 0.2 = 4.2
		bin(4, 1),        // 4.2 + 0.4 = 4.6
		binT(4, 0.25, 1), // 1 UNAVAILABLE, 2 permanent or timed out: 4.6 - 1 + 0.1 = 3.7
		bin(100, 0),      // 0 (clamped)
		bin(200, 1),      // 0 + 20 -> 10 (capped)
		{EndMs: 1000},    // unknown attempts: absent from here on
		bin(4, 1),
	}
	want := []float64{6, 4.2, 4.6, 3.7, 0, 10}
	got := GRPCTokens(tl, 10, 0.1)
	for i, w := range want {
		if !got[i].OK() || math.Abs(got[i].V()-w) > 1e-9 {
			t.Errorf("bin %d: %+v, want %v", i, got[i], w)
		}
	}
	if got[6].OK() || got[7].OK() {
		t.Errorf("after an unknown bin: %+v %+v, want absent", got[6], got[7])
	}
}
