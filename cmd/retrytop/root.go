package main

import (
	"github.com/spf13/cobra"
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
	// retrytop TARGET... with no verb is watch.
	var f dashboardFlags
	var src sourceFlags
	f.register(root)
	src.register(root)
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 && !src.given() {
			return cmd.Help()
		}
		return runWatch(cmd.Context(), &f, &src, args)
	}
	root.AddCommand(newVersionCmd(), newAnalyzeCmd(), newWatchCmd(), newDemoCmd(), newRecordCmd(), newReplayCmd(), newExportCmd())
	return root
}
