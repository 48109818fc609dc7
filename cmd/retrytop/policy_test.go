package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestPolicyCheckExamples: every example of `policy check --help`
// without a pipe runs and prints its chain.
func TestPolicyCheckExamples(t *testing.T) {
	ran := 0
	for _, line := range strings.Split(newPolicyCheckCmd().Example, "\n") {
		args := strings.Fields(strings.ReplaceAll(line, "'", ""))
		if len(args) < 3 || strings.Contains(line, "|") {
			continue
		}
		out, _, err := execute(t, args[1:]...)
		if err != nil || !strings.Contains(out, "policy check: ") {
			t.Errorf("%s: %v\n%s", line, err, out)
		}
		ran++
	}
	if ran != 3 {
		t.Errorf("ran %d examples, want 3", ran)
	}
}

// TestPolicyCheckFlags: the flags reach the check (rate, step, timeouts
// and the target), and bad ones exit 1 naming what is wrong.
func TestPolicyCheckFlags(t *testing.T) {
	out, _, err := execute(t, "policy", "check", "aws", "--format", "json", "--rate", "100", "--step", "50", "--timeouts", "--max-amplification", "1.5")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		RatePerS float64 `json:"rate_per_s"`
		Failures string
		Points   []struct {
			P      float64
			Steady struct {
				ProviderLoad float64 `json:"provider_load"`
			}
		}
		MaxAmplification float64 `json:"max_amplification"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	// A timeout costs 10: 10 x 0.5 x R = 0.5, R = 0.1 retries per original.
	if r.RatePerS != 100 || r.Failures != "timeout" || len(r.Points) != 3 || r.Points[1].Steady.ProviderLoad != 1.1 || r.MaxAmplification != 1.5 {
		t.Errorf("%+v", r)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"policy", "check"}, "at least one policy"},
		{[]string{"policy", "check", "envoy", "grpc:max_tokns=3"}, "argument 2 (grpc:max_tokns=3) at column 6"},
		{[]string{"policy", "check", "none", "--format", "yaml"}, `unknown --format "yaml"`},
		{[]string{"policy", "check", "none", "--step", "0"}, "--step between 0.1 and 100"},
	} {
		_, _, err := execute(t, tc.args...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want exit 1 saying %q", tc.args, err, tc.want)
		}
	}
}
