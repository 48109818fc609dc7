package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/common/config"
	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/collect/dialect"
	"github.com/retrytop/retrytop/collect/promapi"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/ui"
)

// promFlags read the signals from a Prometheus-compatible API instead of
// scraping targets (docs/prometheus.md).
type promFlags struct {
	url      string
	selector string
	by       []string
	rng      time.Duration
	dialects []string
	// cmd is the command the flags belong to: its --config (the custom
	// dialects) is read when the source is built.
	cmd *cobra.Command
}

func (f *promFlags) register(cmd *cobra.Command) {
	f.cmd = cmd
	cmd.Flags().StringVar(&f.url, "prometheus", "", "read from this Prometheus-compatible API (http://host:9090) instead of scraping TARGETs")
	cmd.Flags().StringVar(&f.selector, "selector", "", `with --prometheus: label matchers merged into every query, e.g. '{job="checkout"}'`)
	cmd.Flags().StringSliceVar(&f.by, "by", []string{"job"}, "with --prometheus: label(s) whose values name a target (dependency is always kept)")
	cmd.Flags().DurationVar(&f.rng, "prometheus-range", promapi.DefaultRange, "with --prometheus: range of increase(); at least 2 of the server's scrape intervals")
	cmd.Flags().StringSliceVar(&f.dialects, "prometheus-dialect", []string{dialect.NameNative},
		"with --prometheus: dialect(s) whose PromQL to query ("+strings.Join(dialect.Names(), ", ")+", or a custom one of --config), or auto to detect them from the server's metric names")
}

// translator provides the dialects: the built-in ones and the custom
// mappings of --config, when the command has that flag.
func (f *promFlags) translator() (*dialect.Translator, error) {
	cfg := dialect.Config{}
	if f.cmd != nil {
		if fl := f.cmd.Flags().Lookup("config"); fl != nil && fl.Value.String() != "" {
			b, err := os.ReadFile(fl.Value.String())
			if err != nil {
				return nil, err
			}
			if cfg.Custom, err = dialect.ParseMappings(fl.Value.String(), b); err != nil {
				return nil, err
			}
		}
	}
	return dialect.NewTranslator(cfg)
}

// source builds the promapi source for the flags.
func (f *promFlags) source(args []string, interval, backfill time.Duration, store *model.Store) (*promapi.Source, error) {
	if len(args) > 0 {
		return nil, errors.New("--prometheus reads every target from the server: give no TARGET arguments")
	}
	tr, err := f.translator()
	if err != nil {
		return nil, err
	}
	return promapi.New(promapi.Options{
		Client:     promapi.ClientConfig{URL: f.url, HTTP: config.DefaultHTTPClientConfig},
		Selector:   f.selector,
		By:         f.by,
		Dialects:   f.dialects,
		Translator: tr,
		Step:       interval,
		Range:      f.rng,
		Backfill:   backfill,
		Store:      store,
	})
}

// analyzePrometheus is analyze --prometheus: a refresh at once (which
// backfills the window), then every interval until the window has passed.
func analyzePrometheus(cmd *cobra.Command, pf *promFlags, f *analyzeFlags, args []string) error {
	if f.window <= 0 || f.interval <= 0 {
		return withCode(exitUsage, errors.New("--window and --interval must be positive"))
	}
	src, err := pf.source(args, f.interval, f.window, model.NewStore(model.StoreConfig{}))
	if err != nil {
		return withCode(exitUsage, err)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	showProgress := !f.quiet && isTerminal(os.Stderr)
	end := time.Now().Add(f.window)
	statuses := src.Refresh(ctx)
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	for round := 1; time.Now().Before(end) && ctx.Err() == nil; round++ {
		if showProgress {
			fmt.Fprintf(cmd.ErrOrStderr(), "\rquerying %s: round %d", promapiURL(statuses), round)
		}
		timer := time.NewTimer(time.Until(end))
		select {
		case <-ctx.Done():
		case <-tick.C:
		case <-timer.C:
		}
		timer.Stop()
		if ctx.Err() == nil {
			statuses = src.Refresh(ctx)
		}
	}
	if showProgress {
		fmt.Fprintln(cmd.ErrOrStderr())
	}
	if len(statuses) < 2 {
		for _, s := range statuses {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", ui.Sanitize(s.Name), ui.Sanitize(s.LastError))
		}
		return withCode(exitNoData, errors.New("no target found in Prometheus' results"))
	}
	rep := analysis.BuildReport(src.Store(), statuses, analysis.ReportOptions{Window: f.window, Bin: f.bin})
	if err := ui.WriteReport(cmd.OutOrStdout(), rep, f.format); err != nil {
		return err
	}
	return failOn(rep.Findings, f.failOn)
}

func promapiURL(st []model.TargetStatus) string {
	if len(st) == 0 {
		return "prometheus"
	}
	return strings.TrimSpace(st[0].URL)
}

// watchPrometheus is watch --prometheus: the dashboard on a promapi source.
func watchPrometheus(ctx context.Context, pf *promFlags, f *dashboardFlags, args []string) error {
	opts, err := f.options()
	if err != nil {
		return withCode(exitUsage, err)
	}
	if f.record != "" {
		return withCode(exitUsage, errors.New("--record is not supported with --prometheus yet"))
	}
	src, err := pf.source(args, f.interval, f.history, model.NewStore(f.storeConfig()))
	if err != nil {
		return withCode(exitUsage, err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = src.Run(ctx)
	}()
	err = ui.Run(ctx, src, opts)
	cancel()
	<-done
	return err
}
