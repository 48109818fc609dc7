package main

import (
	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "retrytop",
		Short: "See retry amplification, load shedding and pool waits live in your terminal",
		Long: `retrytop reads the Prometheus metrics of retry libraries, proxies and
services and shows, per rate window, how many provider calls each original
request costs (amplification), which retries rescued a request, which were
denied by a retry budget, admission rejections kept apart from provider
errors, active calls against their limit, pool wait time, and latency split
into successes and fast failures.`,
		Example: `  # run the tests / see version information
  retrytop version`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newVersionCmd(), newAnalyzeCmd())
	return root
}
