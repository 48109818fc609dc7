package analysis

import (
	"testing"

	"github.com/retrytop/retrytop/model"
)

// TestActiveCallsChange: attempts ended plus the change of active calls
// are the attempts started. Over scrapes 1 s apart, two series of active
// calls grow from 2+1 to 8+3 over 10 s: 0.8/s; a series missing the
// window's first scrape leaves the change absent (its start is unknown).
func TestActiveCallsChange(t *testing.T) {
	times := every(t0, 1000, 11)
	st := load(t, nil, "svc", times,
		ts{model.MetricAttempts, []string{"dependency", "db", "outcome", "success"}, "0+10x10"},
		ts{model.MetricActiveCalls, []string{"dependency", "db", "pool", "a"}, "2 2 3 3 4 4 5 6 7 8 8"},
		ts{model.MetricActiveCalls, []string{"dependency", "db", "pool", "b"}, "1x9 3"},
		ts{model.MetricActiveCalls, []string{"dependency", "late", "pool", "a"}, "_ 1x9"},
		ts{model.MetricAttempts, []string{"dependency", "late", "outcome", "success"}, "0+10x10"},
	)
	s := SignalsFor(st, "svc", "db", t0, t0+10000)
	checkValue(t, "attempts", s.AttemptsPerS, 10)
	checkValue(t, "active change", s.ActiveCallsChangePerS, 0.8)
	if v := SignalsFor(st, "svc", "late", t0, t0+10000).ActiveCallsChangePerS; v.OK() {
		t.Errorf("active change of a series without a first sample = %v, want absent", v.V())
	}
	// Over the second half only: 4+1 to 8+3, over 5 s.
	checkValue(t, "active change, second half", SignalsFor(st, "svc", "db", t0+5000, t0+10000).ActiveCallsChangePerS, 1.2)
}
