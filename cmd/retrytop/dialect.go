package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
)

// maxDraftFileBytes bounds an exposition file read by dialect draft.
const maxDraftFileBytes = 64 << 20

func newDialectCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dialect",
		Short: "Work with dialects (how an emitter's metrics are read)",
		Args:  cobra.NoArgs,
	}
	var timeout time.Duration
	draft := &cobra.Command{
		Use:   "draft URL|FILE",
		Short: "Print a commented custom-mapping skeleton (YAML) for an exposition no dialect reads",
		Long: `draft reads one exposition (a /metrics URL, or a file in the text format)
and prints a commented YAML custom mapping for a config file's dialects:
section: originals, attempts, retries, refusals, outcomes and latency proposed
from the families' names, types, units and label values, with why, and what
it could not guess. Review it before use (docs/dialects.md, "Custom").`,
		Example: `  retrytop dialect draft http://10.0.0.5:9100/metrics > acme.yml
  retrytop dialect draft saved.prom`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fams, source, err := readExposition(cmd.Context(), args[0], timeout)
			if err != nil {
				return withCode(exitNoData, err)
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), dialect.Draft(source, fams))
			return err
		},
	}
	draft.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "scrape timeout for a URL")
	cmd.AddCommand(draft)
	return cmd
}

// readExposition reads every family of one exposition: a file when arg
// names one, else a scrape target (URL or name=URL, with the scraper's
// HTTP handling). source names it for the draft's header.
func readExposition(ctx context.Context, arg string, timeout time.Duration) ([]model.Family, string, error) {
	if fi, err := os.Stat(arg); err == nil && !fi.IsDir() {
		if fi.Size() > maxDraftFileBytes {
			return nil, "", fmt.Errorf("%s: %d bytes, more than an exposition (%d)", arg, fi.Size(), maxDraftFileBytes)
		}
		b, err := os.ReadFile(arg)
		if err != nil {
			return nil, "", err
		}
		ct := "text/plain; version=0.0.4"
		if strings.Contains(string(b), "\n# EOF") {
			ct = "application/openmetrics-text; version=1.0.0"
		}
		fams, err := expo.ExpfmtParser{}.Parse(arg, b, ct, nil)
		return fams, arg, err
	}
	tg, err := scrape.ParseTarget(arg)
	if err != nil {
		return nil, "", fmt.Errorf("%s is neither a file nor a target: %w", arg, err)
	}
	tg.Timeout = timeout
	var fams []model.Family
	// The scraper hands every parsed snapshot, unfiltered, to Translate:
	// keep its families as they are.
	keep := func(_ string, snap *model.Snapshot) (*model.Snapshot, string, error) {
		fams = snap.Families
		return snap, "", nil
	}
	sc := scrape.NewScraper([]scrape.Target{tg}, model.NewStore(model.StoreConfig{History: 2}), scrape.Options{Translate: keep})
	st := sc.ScrapeOnce(ctx)
	if len(st) != 1 || !st[0].Up {
		msg := "no answer"
		if len(st) == 1 {
			msg = st[0].LastError
		}
		return nil, "", fmt.Errorf("%s: %s", scrape.SafeURL(tg.URL), msg)
	}
	return fams, scrape.SafeURL(tg.URL), nil
}
