package main

import (
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/policy"
	"github.com/retrytop/retrytop/policyreport"
)

type policyCheckFlags struct {
	format           string
	rate             float64
	latency          time.Duration
	failureLatency   time.Duration
	timeouts         bool
	step             float64
	maxAmplification float64
}

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Check retry policies before an incident",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newPolicyCheckCmd())
	return cmd
}

func newPolicyCheckCmd() *cobra.Command {
	var f policyCheckFlags
	cmd := &cobra.Command{
		Use:   "check POLICY [POLICY...]",
		Short: "Attempts per original of a retry policy chain as the provider fails more",
		Long: `check takes one retry policy, or a chain from the caller to the hop that
calls the provider (arguments in order, or one comma-separated list), in
whatif's --policy language, and prints for the provider's failure fraction p
from 0 to 100 %: the attempts per original at each layer and their product
(the provider's load multiplier), in steady state (budgets and throttles at
equilibrium) and in the worst case (budgets full at the start of an outage);
how long a full budget lasts; and with --max-amplification, the setting of
each layer that keeps every p under it.

Policies: ` + strings.Join(policy.Names, ", ") + `; recorded and a list that starts
with KEY=VALUE are a plain retry owner of 3 attempts changed by the
parameters. docs/whatif.md ("Checking a policy before an incident") has the
models, their sources and the sim runs the figures were checked against.

Exit codes: 0 printed, 1 usage error (a bad policy, naming the argument and
the column).`,
		Example: `  retrytop policy check bounded
  retrytop policy check grpc:attempts=3 envoy attempts=3 --max-amplification 1.2
  retrytop policy check 'attempts=3,budget=none,limiter=none' --format markdown
  retrytop policy check aws --rate 200 --format json | jq '.points[] | {p, load: .steady.provider_load}'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			err := policyreport.Run(cmd.OutOrStdout(), f.options(args))
			var ue *policyreport.UsageError
			if errors.As(err, &ue) {
				return withCode(exitUsage, err)
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", "text", "output: "+strings.Join(policyreport.Formats, ", "))
	fl.Float64Var(&f.rate, "rate", 50, "user originals per second at the first layer")
	fl.DurationVar(&f.latency, "latency", 20*time.Millisecond, "a successful attempt's duration at the provider")
	fl.DurationVar(&f.failureLatency, "failure-latency", 0, "a failed attempt's duration at the provider")
	fl.BoolVar(&f.timeouts, "timeouts", false, "the provider's failures are timeouts, not answered errors")
	fl.Float64Var(&f.step, "step", 5, "step of p, in percent")
	fl.Float64Var(&f.maxAmplification, "max-amplification", 0, "target attempts per original at the provider (above 1): print the settings that keep every p under it")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(policyreport.Formats, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (f policyCheckFlags) options(args []string) policyreport.Options {
	steps := 0 // refused: a step must be above 0
	if f.step > 0 && f.step <= 100 {
		steps = max(int(100/f.step+0.5), 1)
	}
	return policyreport.Options{Args: args, Format: f.format, Check: policy.CheckOptions{
		Rate: f.rate, Latency: f.latency, FailureLatency: f.failureLatency, Timeouts: f.timeouts,
		Steps: steps, MaxAmplification: f.maxAmplification,
	}}
}
