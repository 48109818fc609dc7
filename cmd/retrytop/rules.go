package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/rules"
)

func newRulesCmd() *cobra.Command {
	var o rules.Options
	cmd := &cobra.Command{
		Use:   "rules [--dialect NAME...] [--config F] [-o rules.yml] | rules --test RECORDING [-o rules_test.yml]",
		Short: "Write Prometheus recording and alerting rules, or a promtool test of them on a recording",
		Long: `rules writes Prometheus rules computed from the dialects' PromQL
(docs/prometheus.md): recording rules for each signal (originals,
attempts, retries, amplification, budget denials, admission rejections,
timeouts, provider errors, effective success) over a 30 s window, and
alerting rules for the findings PromQL can express (RETRY_AMPLIFICATION,
BUDGET_EXHAUSTED, ADMISSION_SHEDDING, MULTIPLE_RETRY_LAYERS on each chain of
--config, METASTABLE) with the thresholds of docs/findings.md, the
finding's advice as description and its section as runbook_url.

With --test it reads a recording instead and writes a promtool test file:
the recording's series as input (its OpenMetrics export, up per target),
and the alerts retrytop's own findings of the recording say should fire,
at the times they fired. Give it the same --dialect and --config as the
rules. docs/rules.md has the rules and how to test them.

Exit codes: 0 written, 1 usage error (an unknown dialect or one without
PromQL, a bad config), 2 the recording cannot be read.`,
		Example: `  retrytop rules -o rules.yml
  retrytop rules --dialect envoy --dialect native --config retrytop.yaml -o rules.yml
  promtool check rules rules.yml
  retrytop rules --test incident.rtd --config retrytop.yaml -o rules_test.yml
  promtool test rules rules_test.yml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Stdout = cmd.OutOrStdout()
			err := rules.Run(o)
			var ue *rules.UsageError
			switch {
			case err == nil:
				return nil
			case errors.As(err, &ue):
				return withCode(exitUsage, err)
			case o.Test != "":
				return withCode(exitNoData, err)
			}
			return err
		},
	}
	cmd.Flags().StringSliceVar(&o.Dialects, "dialect", nil, "dialects whose PromQL computes the signals (repeat or comma-separate; default native)")
	cmd.Flags().StringVar(&o.Config, "config", "", "config file: its chains get a MULTIPLE_RETRY_LAYERS alert, its dialects can be named")
	cmd.Flags().StringVar(&o.Test, "test", "", "write a promtool test file from this recording instead of the rules")
	cmd.Flags().StringVar(&o.Rules, "rules", "rules.yml", "the rule file a --test file names (rule_files)")
	cmd.Flags().StringVarP(&o.Out, "output", "o", "-", "file to write (- for stdout)")
	return cmd
}
