package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/common/config"
	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/analyze"
	"github.com/retrytop/retrytop/dashboard"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/promapi"
)

// promFlags read the signals from a Prometheus-compatible API instead of
// scraping targets (docs/prometheus.md).
type promFlags struct {
	url      string
	selector string
	by       []string
	rng      time.Duration
	dialects []string
	// end is analyze's --end: the window's end (default: now).
	end string
}

func (f *promFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.url, "prometheus", "", "read from this Prometheus-compatible API (http://host:9090) instead of scraping TARGETs")
	cmd.Flags().StringVar(&f.selector, "selector", "", `with --prometheus: label matchers merged into every query, e.g. '{job="checkout"}'`)
	cmd.Flags().StringSliceVar(&f.by, "by", []string{"job"}, "with --prometheus: label(s) whose values name a target (dependency is always kept)")
	// Counters are now their increase between consecutive evaluations
	// (docs/prometheus.md): no range to choose. The flag stays so that
	// scripts keep working, and says so.
	cmd.Flags().DurationVar(&f.rng, "prometheus-range", 0, "no effect: counters are counted between evaluations, at --interval")
	_ = cmd.Flags().MarkDeprecated("prometheus-range", "counters are counted between consecutive evaluations (every --interval); the flag has no effect")
	cmd.Flags().StringSliceVar(&f.dialects, "prometheus-dialect", []string{dialect.NameNative},
		"with --prometheus: dialect(s) whose PromQL to query ("+strings.Join(dialect.Names(), ", ")+", or a custom one of --config), or auto to detect them from the server's metric names")
}

// source builds the promapi source for the flags. srcFlags are the
// command's other sources: the server names every target, so targets and
// discovery files are a usage error, while --config still brings its
// custom dialects.
// registerEnd adds analyze's --end.
func (f *promFlags) registerEnd(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.end, "end", "", "with --prometheus: the window's end, RFC 3339 or Unix seconds (default now); the window is read from the server's history at once")
}

// endTime parses --end (zero: now).
func (f *promFlags) endTime() (time.Time, error) {
	if f.end == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, f.end); err == nil {
		return t, nil
	}
	if sec, err := strconv.ParseFloat(f.end, 64); err == nil && sec > 0 && !math.IsInf(sec, 0) {
		return time.UnixMilli(int64(sec * 1000)), nil
	}
	return time.Time{}, fmt.Errorf("--end %q: want RFC 3339 (2026-12-01T14:05:00Z) or Unix seconds", f.end)
}

func (f *promFlags) source(args []string, srcFlags *sourceFlags, interval, backfill time.Duration, store *model.Store) (*promapi.Source, error) {
	return f.sourceAt(args, srcFlags, interval, backfill, store, nil)
}

// sourceAt is source with the clock of its evaluations (nil: time.Now).
func (f *promFlags) sourceAt(args []string, srcFlags *sourceFlags, interval, backfill time.Duration, store *model.Store, clock func() time.Time) (*promapi.Source, error) {
	if len(args) > 0 {
		return nil, errors.New("--prometheus reads every target from the server: give no TARGET arguments")
	}
	if len(srcFlags.fileSD) > 0 || srcFlags.promConfig != "" {
		return nil, errors.New("--prometheus reads every target from the server: --file-sd and --prometheus-config do not apply")
	}
	cfg, err := srcFlags.spec().DialectConfig()
	if err != nil {
		return nil, err
	}
	tr, err := dialect.NewTranslator(cfg)
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
		Backfill:   backfill,
		Store:      store,
		Clock:      clock,
	})
}

// analyzePrometheus is analyze --prometheus: the window is in the server's
// history, so one refresh reads it at once (query_range over the window at
// --interval), ending at --end or now. Samples sit at the server's scrape
// times, so the report's start and end say which span was read
// (docs/prometheus.md).
func analyzePrometheus(cmd *cobra.Command, pf *promFlags, f *analyzeFlags, args []string) error {
	if f.window <= 0 || f.interval <= 0 {
		return withCode(exitUsage, errors.New("--window and --interval must be positive"))
	}
	end, err := pf.endTime()
	if err != nil {
		return withCode(exitUsage, err)
	}
	if end.IsZero() {
		end = time.Now()
	}
	// The window in whole intervals: the first stored refresh is the
	// baseline, as a scraper's first scrape is.
	window := max(f.window/f.interval, 1) * f.interval
	store := model.NewStore(model.StoreConfig{History: int(window/f.interval) + 2})
	// The source evaluates DefaultDelay behind its clock (scrapes still
	// being written): a given --end is read as given, now as now less it.
	clock := end
	if pf.end != "" {
		clock = end.Add(promapi.DefaultDelay)
	}
	src, err := pf.sourceAt(args, &f.sourceFlags, f.interval, window, store, func() time.Time { return clock })
	if err != nil {
		return withCode(exitUsage, err)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	if !f.quiet && isTerminal(os.Stderr) {
		fmt.Fprintf(cmd.ErrOrStderr(), "querying %s for %v ending %s\n", pf.url, window, end.Format(time.RFC3339))
	}
	rep, err := analyze.Prometheus(ctx, src, window, f.bin)
	if err != nil {
		return noData(cmd, err)
	}
	if err := writeAnalysis(cmd, rep, f.format); err != nil {
		return err
	}
	return failOn(rep.Findings, f.failOn)
}

// watchPrometheus is watch --prometheus: the dashboard on a promapi source.
func watchPrometheus(ctx context.Context, pf *promFlags, srcFlags *sourceFlags, f *dashboardFlags, args []string) error {
	opts, err := f.options()
	if err != nil {
		return withCode(exitUsage, err)
	}
	if err := f.look(&opts, srcFlags.config); err != nil {
		return withCode(exitUsage, err)
	}
	src, err := pf.source(args, srcFlags, f.interval, f.history, model.NewStore(f.storeConfig()))
	if err != nil {
		return withCode(exitUsage, err)
	}
	rec, err := f.openRecord(&opts)
	if err != nil {
		return withCode(exitUsage, err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	feeds := []func(context.Context){func(ctx context.Context) { _ = src.Run(ctx) }}
	if rec != nil {
		feeds = append(feeds, rec.Feed(src.Store(), f.interval))
	}
	restoreGC := dashboard.LiveGC()
	err = dashboard.Run(ctx, src, opts, feeds...)
	restoreGC()
	if rec != nil {
		return closeRecording(err, rec.Close)
	}
	return err
}
