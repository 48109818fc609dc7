package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/retrytop/retrytop/config"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "retrytop [TARGET...]",
		Short: "See retry amplification, load shedding and pool waits live in your terminal",
		Long: `retrytop reads the Prometheus metrics of retry libraries, proxies and
services and shows, per rate window, how many provider calls each original
request costs (amplification), which retries rescued a request, which were
denied by a retry budget, admission rejections kept apart from provider
errors, active calls against their limit, pool wait time, and latency split
into successes and fast failures.`,
		Example: `  # see a real overload incident on loopback, no setup
  retrytop demo

  # watch live endpoints (watch is the default verb)
  retrytop watch app=http://10.0.0.5:8080/metrics client=http://10.0.0.6:9090/metrics
  retrytop http://127.0.0.1:9102/metrics

  # print the signals over one minute as JSON
  retrytop analyze app=http://127.0.0.1:9102/metrics --window 1m --format json`,
		Args:          cobra.ArbitraryArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	registerMemoryLimit(root)
	// retrytop TARGET... with no verb is watch.
	var f dashboardFlags
	var src sourceFlags
	f.register(root)
	src.register(root)
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 && !src.given() {
			return cmd.Help()
		}
		// A bare word is a mistyped verb, never a target (a target is a
		// URL, name=URL or a recording's path).
		if len(args) > 0 && isBareWord(args[0]) {
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += "; did you mean " + strings.Join(s, " or ") + "?"
			}
			return withCode(exitUsage, fmt.Errorf("%s (run 'retrytop --help' for the verbs)", msg))
		}
		return runWatch(cmd.Context(), &f, &src, args)
	}
	root.AddCommand(newVersionCmd(), newAnalyzeCmd(), newWatchCmd(), newDemoCmd(), newRecordCmd(), newReplayCmd(), newExportCmd(), newReportCmd(), newWhatifCmd(), newPolicyCmd(), newDialectCmd(), newRulesCmd())
	v, rev, _ := buildInfo()
	root.Version = v + " (commit " + rev + ")"
	root.SetVersionTemplate("retrytop {{.Version}}\n")
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(flagError) // the verbs inherit it
	return root
}

// flagError is a usage error; an unknown flag gets a "did you mean" as
// a mistyped verb does: the verb's flags starting with it, or else those
// nearest to it, within two edits.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	typed, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return withCode(exitUsage, err)
	}
	typed = strings.ToLower(typed)
	var near, prefixed []string
	best := cmd.Root().SuggestionsMinimumDistance + 1
	seen := map[string]bool{}
	visit := func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" || seen[f.Name] {
			return
		}
		seen[f.Name] = true
		switch d := config.EditDistance(typed, f.Name); {
		case strings.HasPrefix(f.Name, typed):
			prefixed = append(prefixed, "--"+f.Name)
		case d < best:
			best, near = d, []string{"--" + f.Name}
		case d == best:
			near = append(near, "--"+f.Name)
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	if len(prefixed) > 0 {
		near = prefixed
	}
	if len(near) > 0 {
		msg += "; did you mean " + strings.Join(near, " or ") + "?"
	}
	return withCode(exitUsage, errors.New(msg))
}

// isBareWord reports whether arg is a plain word: no scheme, no name=,
// no path, no port, no file of that name.
func isBareWord(arg string) bool {
	if arg == "" || strings.ContainsAny(arg, ":/=.@") {
		return false
	}
	if _, err := os.Stat(arg); err == nil {
		return false
	}
	return true
}
