package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/policy"
	"github.com/retrytop/retrytop/scrape"
	"github.com/retrytop/retrytop/whatif"
)

type whatifFlags struct {
	policies    string
	format      string
	bin         time.Duration
	inputFormat string
}

func newWhatifCmd() *cobra.Command {
	var f whatifFlags
	cmd := &cobra.Command{
		Use:   "whatif FILE --policy LIST",
		Short: "Replay a recorded incident under other retry policies",
		Long: `whatif fits a model of the incident in a recording (open-loop arrivals at
the user-facing hop, the provider's slots and service time per bin, each
hop's deadline and recorded policy), then replays it in virtual time once
per policy on the hop that calls the provider, and prints per policy:
success ratio, goodput, peak and mean amplification, peak provider load,
recovery time after the trigger and whether the run went metastable.

The first row is the recording's own numbers, the second the recorded
policy replayed by the model: how far the model can be trusted. Every
assumption of the fit is printed with the signal it came from.

Policies: ` + strings.Join(policy.Names, ", ") + `. A list is NAME, NAME:KEY=VALUE
or KEY=VALUE items separated by commas; KEY=VALUE adds to the policy before
it, or at the start makes a custom policy (the recorded one, changed).
docs/whatif.md has every model, its parameters and its source.

Exit codes: 0 printed, 1 usage error (a bad --policy list, a missing
file), 2 the recording cannot be read or fitted.`,
		Example: `  retrytop whatif incident.rtd --policy recorded,envoy,finagle,grpc,sre,aws,bounded,none
  retrytop whatif incident.rtd --policy envoy:budget_percent=30,attempts=3 --format markdown
  retrytop whatif incident.rtd --policy attempts=3,budget=none,limiter=none,backoff=none,attempt_timeout=300ms
  retrytop whatif incident.rtd --policy bounded --format json | jq '.policies[] | {policy, success_ratio}'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return withCode(exitUsage, fmt.Errorf("whatif wants one recording, got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(whatif.Formats, f.format) {
				return withCode(exitUsage, fmt.Errorf("unknown --format %q (want one of %s)", f.format, strings.Join(whatif.Formats, ", ")))
			}
			if f.bin < time.Second {
				return withCode(exitUsage, fmt.Errorf("--bin %v: want at least 1s", f.bin))
			}
			specs, err := policy.Parse(f.policies)
			if err != nil {
				return withCode(exitUsage, err)
			}
			for _, s := range specs {
				if _, err := policy.New(s, policy.Base{MaxAttempts: 1}, func(int64) int64 { return 0 }); err != nil {
					return withCode(exitUsage, err)
				}
			}
			if err := missingFile(args); err != nil {
				return err // as analyze, replay and export: exit 2, a file that could not be read
			}
			rs, err := (&sourceFlags{}).forRecordings()
			if err != nil {
				return withCode(exitUsage, err)
			}
			tr, translate := rs.Translator()
			rec, err := openRecording(cmd.ErrOrStderr(), args[0], f.inputFormat, tr.Filter)
			if err != nil {
				return err
			}
			defer rec.Close()
			rep, err := whatIfReport(rec, args[0], translate, f.bin, specs)
			if err != nil {
				return err
			}
			return whatif.Write(cmd.OutOrStdout(), rep, f.format)
		},
	}
	cmd.Flags().StringVarP(&f.policies, "policy", "p", defaultPolicies, "policies to replay (see above)")
	cmd.Flags().StringVar(&f.format, "format", "text", "output: "+strings.Join(whatif.Formats, ", "))
	cmd.Flags().DurationVar(&f.bin, "bin", time.Second, "width of the model's bins (at least the recording's scrape interval)")
	cmd.Flags().StringVar(&f.inputFormat, "input-format", "", "force the recording's format: "+strings.Join(dump.Formats, ", "))
	return cmd
}

// whatIfReport loads a recording whole, fits the model to it and replays
// it under each policy (whatif FILE, and the replay's w pane).
func whatIfReport(rec dump.Recording, name string, translate func(*model.Snapshot) (*model.Snapshot, error), bin time.Duration, specs []policy.Spec) (whatif.Report, error) {
	st, statuses := dump.LoadWhole(rec, translate)
	if !scrape.AnyScraped(statuses) {
		return whatif.Report{}, withCode(exitNoData, errors.New("no scrape in the recording could be read"))
	}
	fit, err := whatif.Fit(st, bin)
	if err != nil {
		return whatif.Report{}, withCode(exitNoData, fmt.Errorf("%q: %w", name, err))
	}
	rep, err := whatif.Build(name, fit, specs)
	if err != nil {
		return whatif.Report{}, withCode(exitUsage, err)
	}
	return rep, nil
}

// defaultPolicies are the policies whatif and the replay's w pane compare.
const defaultPolicies = "recorded,envoy,finagle,grpc,sre,aws,bounded,none"
