package celltext

import (
	"testing"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// BudgetText: every figure, "-" where unknown, "now" once retries have
// stopped, "not draining" for a known drain of 0 or less.
func TestBudgetText(t *testing.T) {
	s, no := model.Some, model.Absent
	for _, tc := range []struct {
		b    analysis.Budget
		want string
	}{
		{analysis.Budget{Model: "grpc", Reconstructed: true, Unit: "tokens", Balance: s(6.4), Capacity: s(10), StopAt: s(5), DrainPerS: s(0.18), TimeToExhaustionS: s(1.4 / 0.18)},
			"6.40 of 10 tokens, retries stop at 5, drain 0.18/s, exhausted in 7.78s (grpc model, reconstructed)"},
		{analysis.Budget{Model: "envoy", Reconstructed: true, Unit: "retries", Balance: s(0), Capacity: s(3), StopAt: s(0), DrainPerS: s(0), TimeToExhaustionS: s(0)},
			"0 of 3 retries, retries stop at 0, drain 0/s, exhausted now (envoy model, reconstructed)"},
		{analysis.Budget{Model: "finagle", Reconstructed: true, Unit: "retries", Balance: s(250), Capacity: s(300), StopAt: s(1), DrainPerS: s(-3)},
			"250 of 300 retries, retries stop at 1, drain -3.00/s, not draining (finagle model, reconstructed)"},
		{analysis.Budget{Model: "envoy", Reconstructed: true, Unit: "retries", Balance: no, Capacity: no, StopAt: s(0), DrainPerS: no},
			"- of - retries, retries stop at 0, drain -/s, exhausted in - (envoy model, reconstructed)"},
	} {
		if got := BudgetText(&tc.b); got != tc.want {
			t.Errorf("BudgetText:\n got %s\nwant %s", got, tc.want)
		}
	}
}
