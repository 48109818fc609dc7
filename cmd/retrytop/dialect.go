package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/internal/safetext"
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

// parserFunc makes a dialect.ParseFunc a expo.Parser.
type parserFunc dialect.ParseFunc

func (f parserFunc) Parse(target string, body []byte, contentType string, filter func(string) bool) ([]model.Family, error) {
	return f(target, body, contentType, filter)
}

// unreadParser parses through tr.Parsing: a target no dialect reads has
// one scrape parsed whole, so that tr.Unread names its families.
func unreadParser(tr *dialect.Translator) expo.Parser {
	return unreadWrap(tr)(expo.ExpfmtParser{})
}

// unreadWrap puts tr.Parsing around a parse (dump.OpenOptions.Wrap): a
// recording's own parse, which reads a frame that kept its structure
// through a value map, then stays under the translator's eye.
func unreadWrap(tr *dialect.Translator) func(expo.Parser) expo.Parser {
	return func(p expo.Parser) expo.Parser { return parserFunc(tr.Parsing(p.Parse)) }
}

// explainUnread words every NO_RETRY_SIGNALS finding of a target no
// dialect reads with tr.Unread (what it exposes, and dialect draft), so a
// report says why and --fail-on warning still gates on it. urls names the
// URL a target was given by (none for a recording).
func explainUnread(rep *analysis.Report, tr *dialect.Translator, urls map[string]string) {
	for i := range rep.Findings {
		f := &rep.Findings[i]
		if f.Code != analysis.CodeNoRetrySignals {
			continue
		}
		if err := tr.Unread(f.Target, urls[f.Target]); err != nil {
			f.Message = err.Error()
		}
	}
}

// unreadBadge returns the dashboard's header badge function: the first
// target no dialect reads (Unread's own words up to its list), how many
// more, and the verb to run; then whatever prev shows. One line: the
// families and the URL are in retrytop analyze's finding.
func unreadBadge(tr func() *dialect.Translator, statuses func() []model.TargetStatus, prev func() string) func() string {
	return func() string {
		b, n := "", 0
		if t := tr(); t != nil {
			for _, s := range statuses() {
				if !s.Up || s.Dialect != "" {
					continue // down, or read by a dialect (a replay's may know it when its latest translator does not yet)
				}
				if err := t.Unread(s.Name, s.URL); err != nil {
					if n == 0 {
						b, _, _ = strings.Cut(err.Error(), " (")
					}
					n++
				}
			}
		}
		if n > 1 {
			b += fmt.Sprintf(" (+%d more)", n-1)
		}
		if n > 0 {
			b = safetext.TerminalN(b, 60) + ": retrytop dialect draft URL"
		}
		if prev != nil {
			if p := prev(); p != "" && b != "" {
				b += " " + p
			} else if p != "" {
				b = p
			}
		}
		return b
	}
}

// derivedByDialect is, per custom dialect of cfg, what its mapping
// derives from other families (short name -> expression): analyze's rows
// and the dashboard mark those values as derived.
func derivedByDialect(cfg dialect.Config) map[string]map[string]string {
	var out map[string]map[string]string
	for _, m := range cfg.Custom {
		for f, expr := range m.DerivedFamilies() {
			if out == nil {
				out = map[string]map[string]string{}
			}
			if out[m.Name] == nil {
				out[m.Name] = map[string]string{}
			}
			out[m.Name][dialect.ShortName(f)] = expr
		}
	}
	return out
}

// derived is derivedByDialect of the config file (already read and
// checked by resolve: an error here leaves nothing marked).
func (f *sourceFlags) derived() map[string]map[string]string {
	cfg, err := f.dialectConfig()
	if err != nil {
		return nil
	}
	return derivedByDialect(cfg)
}
