package policy

import (
	"fmt"
	"math"
	"strconv"
	"testing"
)

func checkAt(t *testing.T, list string, o CheckOptions, p float64) (CheckPoint, *Check) {
	t.Helper()
	sp, err := Parse(list)
	if err != nil {
		t.Fatal(err)
	}
	c, err := CheckChain(sp, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range c.Points {
		if math.Abs(pt.P-p) < 1e-9 {
			return pt, c
		}
	}
	t.Fatalf("%s: no point at p=%v", list, p)
	return CheckPoint{}, nil
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestCheckHandComputed: each model's equilibrium at one p, computed by
// hand from its source's definition (the comments give the arithmetic).
func TestCheckHandComputed(t *testing.T) {
	for _, tc := range []struct {
		list           string
		p              float64
		steady, worst  float64
		lastsOriginals float64 // 0: no budget that runs dry
	}{
		// 1 + p + p^2.
		{"attempts=3,budget=none,limiter=none", 0.5, 1.75, 1.75, 0},
		// Earn 1, cost 10: 0.1 retries per original; a full cap of 200
		// lasts 200 / (10 x (1.75 - 1) - 1) originals.
		{"bounded", 0.5, 1.1, 1.75, 200 / 6.5},
		{"bounded", 1, 1.1, 3, 200.0 / 19},
		// Quota conserved: 5 x 0.5 x R = 1 x 0.5, R = 0.2; a full quota
		// lasts 500 / (5 x 0.5 x 0.75 - 0.5).
		{"aws", 0.5, 1.2, 1.75, 500 / 1.375},
		// 0.2 of originals + 10/s at 50/s: 0.4 retries per original; at
		// p = 1, 2 retries each, the window's 200 last 100 originals.
		{"finagle", 1, 1.4, 3, 100},
		// Tokens drain at p = 0.5 (0.5 x 1 > 0.5 x 0.1): no retries; the
		// 5 tokens above half last 5 / (1.75 x (0.5 - 0.05)).
		{"grpc", 0.5, 1, 1.75, 5 / (1.75 * 0.45)},
		// Below p* = 0.1/1.1 the count stays full.
		{"grpc", 0.02, 1.0204, 1.0204, 0},
		// K x (1 - p) = 1.4 > 1: no throttling.
		{"sre", 0.3, 1.39, 1.39, 0},
		// One retry offered per original at 50/s, held 12.5 ms (the mean
		// of U[0, 25 ms]) and a 0 s failure: load 0.625 on 3 retries,
		// Erlang B = (0.625^3/6) / (1 + 0.625 + 0.625^2/2 + 0.625^3/6).
		{"envoy", 1, 2 - 0.040690/1.860026, 2, 0},
		{"none", 1, 1, 1, 0},
	} {
		pt, _ := checkAt(t, tc.list, CheckOptions{Steps: 100}, tc.p)
		if !near(pt.SteadyLoad, tc.steady, 1e-3) || !near(pt.WorstLoad, tc.worst, 1e-3) {
			t.Errorf("%s at p=%v: steady %.4f worst %.4f, want %.4f and %.4f", tc.list, tc.p, pt.SteadyLoad, pt.WorstLoad, tc.steady, tc.worst)
		}
		l := pt.Lasts[0]
		switch {
		case tc.lastsOriginals == 0 && l != nil:
			t.Errorf("%s at p=%v: lasts %+v, want none", tc.list, tc.p, *l)
		case tc.lastsOriginals > 0 && (l == nil || !near(l.Originals, tc.lastsOriginals, 1e-6*tc.lastsOriginals) || !near(l.Seconds, l.Originals/50, 1e-9)):
			t.Errorf("%s at p=%v: lasts %+v, want %.3f originals", tc.list, tc.p, l, tc.lastsOriginals)
		}
	}
}

// TestCheckSREShedsAboveTheBoundary: above p = 1 - 1/K the throttle
// rejects nearly every request, first tries too; at the boundary every
// level is an equilibrium and the steady state is unknown; the full
// window of successes lasts W (K-1) / ((K-1) + 3 (1 - K (1-p))) = 30 s at
// p = 1.
func TestCheckSREShedsAboveTheBoundary(t *testing.T) {
	pt, _ := checkAt(t, "sre", CheckOptions{}, 0.9)
	if pt.SteadyLoad > 0.01 || pt.WorstLoad != capped(3, 0.9) {
		t.Errorf("sre at 90 %%: steady %v worst %v", pt.SteadyLoad, pt.WorstLoad)
	}
	pt, _ = checkAt(t, "sre", CheckOptions{}, 0.5)
	if !math.IsNaN(pt.SteadyLoad) {
		t.Errorf("sre at 50 %%: steady %v, want unknown", pt.SteadyLoad)
	}
	pt, _ = checkAt(t, "sre", CheckOptions{}, 1)
	if pt.Lasts[0] == nil || !near(pt.Lasts[0].Seconds, 30, 1e-9) {
		t.Errorf("sre at 100 %%: lasts %+v, want 30 s", pt.Lasts[0])
	}
}

// TestCheckChainMultiplies: three layers of 3 attempts are one of 27:
// (1 - p^27) / (1 - p) attempts per original at the provider, 27 at p = 1.
func TestCheckChainMultiplies(t *testing.T) {
	const three = "attempts=3,budget=none,limiter=none,recorded:attempts=3,recorded:attempts=3"
	for _, p := range []float64{0.25, 0.5, 0.75, 1} {
		pt, c := checkAt(t, three, CheckOptions{Steps: 4}, p)
		want := 27.0
		if p < 1 {
			want = (1 - math.Pow(p, 27)) / (1 - p)
		}
		if len(c.Layers) != 3 || !near(pt.SteadyLoad, want, 1e-9) || !near(pt.WorstLoad, want, 1e-9) {
			t.Errorf("p=%v: %d layers, steady %v worst %v, want %v", p, len(c.Layers), pt.SteadyLoad, pt.WorstLoad, want)
		}
		// The provider's caller sees p, the layers above p^3 and p^9.
		if !near(pt.Steady[2], capped(3, p), 1e-12) || !near(pt.Steady[0], capped(3, math.Pow(p, 9)), 1e-12) {
			t.Errorf("p=%v: layers %v", p, pt.Steady)
		}
	}
}

// TestCheckSettingsKeepTheTarget: each bound found keeps the chain at or
// under the target, and one step past it does not.
func TestCheckSettingsKeepTheTarget(t *testing.T) {
	for _, tc := range []struct {
		list, key, with string // with: the list with the key set to %s
		bound           string
		step            float64
	}{
		{"bounded", "budget_cost", "bounded:budget_cost=%s", "at_least", 1},
		{"aws", "retry_cost", "aws:retry_cost=%s", "at_least", 1},
		{"grpc", "token_ratio", "grpc:token_ratio=%s", "at_most", 0.01},
		{"finagle", "percent_can_retry", "", "none", 0}, // 10 retries/s alone are 1.2x at 50/s
		{"finagle:min_retries_per_sec=0", "percent_can_retry", "finagle:min_retries_per_sec=0,percent_can_retry=%s", "at_most", 0.01},
		{"budget=none,limiter=none", "attempts", "budget=none,limiter=none,attempts=%s", "at_most", 1},
	} {
		_, c := checkAt(t, tc.list, CheckOptions{MaxAmplification: 1.2}, 0)
		var s *Setting
		for i := range c.Settings[0] {
			if c.Settings[0][i].Key == tc.key {
				s = &c.Settings[0][i]
			}
		}
		if s == nil || s.Bound != tc.bound {
			t.Errorf("%s: %s setting %+v, want %s", tc.list, tc.key, s, tc.bound)
			continue
		}
		if tc.step == 0 {
			continue
		}
		past := s.Value + tc.step
		if tc.bound == "at_least" {
			past = s.Value - tc.step
		}
		for _, v := range []struct {
			x  float64
			ok bool
		}{{s.Value, true}, {past, false}} {
			list := fmt.Sprintf(tc.with, strconv.FormatFloat(v.x, 'f', -1, 64))
			_, c2 := checkAt(t, list, CheckOptions{}, 0)
			m := 0.0
			for _, pt := range c2.Points {
				m = max(m, pt.SteadyLoad)
			}
			if (m <= 1.2+1e-9) != v.ok {
				t.Errorf("%s: highest steady load %.4f, want under 1.2: %v", list, m, v.ok)
			}
		}
	}
}
