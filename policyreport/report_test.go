package policyreport

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/policy"
)

func run(t *testing.T, format string, args ...string) string {
	t.Helper()
	var b bytes.Buffer
	if err := Run(&b, Options{Args: args, Format: format, Check: policy.CheckOptions{Rate: 50, Steps: 4, MaxAmplification: 1.2}}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestJSON: the chain's layers from several arguments, 27 attempts per
// original at p = 1 for three layers of 3, and an unknown steady state
// (SRE at its boundary) as null, never 0.
func TestJSON(t *testing.T) {
	var r struct {
		Chain  []struct{ Spec, Model string }
		Points []struct {
			P      float64
			Steady struct {
				Layers       []*float64
				ProviderLoad *float64 `json:"provider_load"`
			}
			Worst struct {
				ProviderLoad *float64 `json:"provider_load"`
			}
			BudgetLasts []*struct{ Originals, Seconds float64 } `json:"budget_lasts"`
		}
		MaxAmplification *float64 `json:"max_amplification"`
		Settings         [][]struct{ Key, Bound string }
	}
	out := run(t, "json", "attempts=3,budget=none,limiter=none", "recorded:attempts=3", "attempts=3")
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	last := r.Points[len(r.Points)-1]
	if len(r.Chain) != 3 || len(r.Points) != 5 || last.P != 1 || *last.Steady.ProviderLoad != 27 || *last.Worst.ProviderLoad != 27 {
		t.Fatalf("chain %v, %d points, last %+v", r.Chain, len(r.Points), last)
	}
	if r.MaxAmplification == nil || *r.MaxAmplification != 1.2 || len(r.Settings) != 3 || r.Settings[0][0].Bound != "none" {
		t.Errorf("settings: %v %+v", r.MaxAmplification, r.Settings)
	}
	out = run(t, "json", "sre")
	r.Points = nil
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	mid := r.Points[2]
	if mid.P != 0.5 || mid.Steady.ProviderLoad != nil || mid.Steady.Layers[0] != nil || mid.Worst.ProviderLoad == nil || *mid.Worst.ProviderLoad != 1.75 {
		t.Errorf("sre at p=0.5: %+v", mid)
	}
	// From a window of successes the throttle starts after 120 s x 1 /
	// (1 + 3) at p = 1, never at p = 0.5.
	if l := r.Points[4].BudgetLasts[0]; !strings.Contains(out, `"provider_load": null`) || mid.BudgetLasts[0] != nil || l == nil || l.Seconds != 30 || l.Originals != 1500 {
		t.Errorf("sre: unknown not null, or budget lasts wrong:\n%s", out)
	}
}

// TestText: the table, the plot and the settings; unknown is "-".
func TestText(t *testing.T) {
	out := run(t, "text", "sre")
	for _, want := range []string{
		"policy check: sre\n",
		"   50%         -",
		"provider load (attempts per original): * steady, o worst, # both",
		"  3.00x |        o\n",
		"  0.00x |      * *\n",
		"k at most 1.33 (now 2)",
		"to keep the steady state at or under 1.20x",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	md := run(t, "markdown", "bounded")
	for _, want := range []string{"## policy check: `bounded`", "| 100% | 1.10 | 1.10x | 3.00 | 3.00x | 211ms (11) |", "budget\\_cost at least 5 (now 10)"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// TestUsage: bad input is a UsageError naming the argument and column.
func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Args: []string{"bounded", "envoy:budget_percnt=3"}}, "argument 2 (envoy:budget_percnt=3) at column 7: envoy has no parameter"},
		{Options{Args: []string{"bogus"}}, `argument 1 (bogus) at column 1: unknown policy "bogus"`},
		{Options{}, "at least one policy"},
		{Options{Args: []string{"none"}, Format: "yaml"}, `unknown --format "yaml"`},
		{Options{Args: []string{"none"}, Check: policy.CheckOptions{Rate: -1}}, "--rate -1"},
		{Options{Args: []string{"none"}, Check: policy.CheckOptions{MaxAmplification: 0.9}}, "--max-amplification 0.9"},
		{Options{Args: []string{"grpc:attempts=\x1b[31m"}}, `\x1b[31m`},
	} {
		if tc.o.Check.Rate == 0 {
			tc.o.Check.Rate = 50
		}
		if tc.o.Check.Steps == 0 {
			tc.o.Check.Steps = 20
		}
		err := Run(&bytes.Buffer{}, tc.o)
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) || strings.ContainsRune(err.Error(), 0x1b) {
			t.Errorf("%+v: %v, want a usage error saying %q", tc.o, err, tc.want)
		}
	}
}
