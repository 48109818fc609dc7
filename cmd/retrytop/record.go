package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/record"
	"github.com/retrytop/retrytop/scrape"
	"github.com/retrytop/retrytop/sources"
	"github.com/retrytop/retrytop/ui"
)

type recordFlags struct {
	sourceFlags
	out      string
	interval time.Duration
	duration time.Duration
	force    bool
	quiet    bool
	progress time.Duration
	relevant bool
}

func newRecordCmd() *cobra.Command {
	var f recordFlags
	var pf promFlags
	cmd := &cobra.Command{
		Use:   "record TARGET... -o FILE",
		Short: "Record scrapes of targets into a dump file, headless",
		Long: `record scrapes every target at the interval and appends each scrape, the
body exactly as served, to a dump file (docs/dump-format.md) until
--duration has passed or it is interrupted. Failed scrapes are recorded
too, so a replay shows the target down. It prints progress on stderr:
scrapes, bytes written, and errors per target. A write error (a full disk)
is reported at once; recording goes on.

The dump is crash-safe: killing the recorder loses at most the scrape being
written. With --only-relevant, each body is written with only the families some
dialect (built-in, or the --config file's) reads: the recording analyzes
to the same numbers and is smaller. A target no dialect reads is written
whole, with a warning, so that 'retrytop dialect draft' can still start a
mapping from it (docs/cli.md, "record").

Replay it with 'retrytop replay FILE', analyse it with
'retrytop analyze FILE', backfill it into Prometheus with
'retrytop export FILE --format openmetrics'.

TARGET is URL or name=URL.`,
		Example: `  retrytop record app=http://127.0.0.1:9102/metrics client=http://127.0.0.1:9103/metrics -o incident.rtd
  retrytop record --config retrytop.yaml -o soak.rtd --duration 1h --interval 5s
  retrytop record --only-relevant app=http://127.0.0.1:9102/metrics -o small.rtd --duration 1h
  retrytop record --file-sd targets.json -o fleet.rtd --duration 10m
  retrytop record --prometheus http://prometheus:9090 --selector '{namespace="shop"}' -o fleet.rtd --duration 30m`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.out == "" {
				return withCode(exitUsage, errors.New("-o FILE is required"))
			}
			if f.interval <= 0 || f.duration < 0 {
				return withCode(exitUsage, errors.New("--interval must be positive and --duration not negative"))
			}
			if pf.url != "" {
				if f.relevant {
					return withCode(exitUsage, errors.New("--only-relevant applies to scraped targets; --prometheus records query results, which hold only what the dialects read"))
				}
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				if f.duration > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, f.duration)
					defer cancel()
				}
				return runRecordPrometheus(ctx, cmd.ErrOrStderr(), &f, &pf, args)
			}
			src, err := f.resolve(args, f.interval)
			if err != nil {
				return withCode(exitUsage, err)
			}
			if len(src.Targets) == 0 && src.OTLPAddr() == "" {
				return withCode(exitUsage, errors.New("no target: give TARGET arguments, --config, --chain, --file-sd, --prometheus-config with --job, or --otlp"))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if f.duration > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, f.duration)
				defer cancel()
			}
			return runRecord(ctx, cmd.ErrOrStderr(), &f, src)
		},
	}
	f.sourceFlags.register(cmd)
	f.sourceFlags.registerOTLP(cmd)
	pf.register(cmd)
	cmd.Flags().StringVarP(&f.out, "output", "o", "", "dump file to write")
	cmd.Flags().DurationVar(&f.interval, "interval", scrape.DefaultInterval, "scrape interval")
	cmd.Flags().DurationVar(&f.duration, "duration", 0, "stop after this long (default: until interrupted)")
	cmd.Flags().BoolVar(&f.force, "force", false, "overwrite FILE if it exists")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "no progress, only the summary")
	cmd.Flags().DurationVar(&f.progress, "progress", 0, "print a progress line this often (default: 1s on a terminal, 10s otherwise)")
	cmd.Flags().BoolVar(&f.relevant, "only-relevant", false, "write only the families some dialect reads (a target no dialect reads is kept whole, with a warning)")
	return cmd
}

// runRecord is record TARGET...: the scrapes of src written to -o FILE.
func runRecord(ctx context.Context, errw io.Writer, f *recordFlags, src *sources.Sources) error {
	w, err := createDump(f.out, f.force, "--force")
	if err != nil {
		return err
	}
	return recordExit(record.Run(ctx, errw, w, src, f.options()))
}

// recordExit gives a recording's error its exit code: 4 when scrapes
// could not be written, 2 when no target ever answered.
func recordExit(err error) error {
	var lost *record.LossError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &lost):
		return withCode(exitLost, err)
	case errors.Is(err, record.ErrNothingRead):
		return withCode(exitNoData, err)
	}
	return err
}

// closeRecording closes a dashboard's --record dump once the dashboard
// ended with err, which wins; else the recording's own outcome.
func closeRecording(err error, closeRec func() error) error {
	cerr := closeRec()
	if err != nil {
		return err
	}
	return recordExit(cerr)
}

// options are the flags as record.Options.
func (f *recordFlags) options() record.Options {
	return record.Options{Path: f.out, Interval: f.interval, Quiet: f.quiet, Progress: f.progress, TTY: isTerminal(os.Stderr), Relevant: f.relevant}
}

// runRecordPrometheus is record --prometheus: the query results of every
// refresh (and the history the first one backfills) written as text frames,
// so a fleet incident read from Prometheus replays like a scraped one.
func runRecordPrometheus(ctx context.Context, errw io.Writer, f *recordFlags, pf *promFlags, args []string) error {
	src, err := pf.source(args, &f.sourceFlags, f.interval, 0, model.NewStore(model.DefaultStoreConfig))
	if err != nil {
		return withCode(exitUsage, err)
	}
	w, err := createDump(f.out, f.force, "--force")
	if err != nil {
		return err
	}
	frames, err := record.RunPrometheus(ctx, errw, w, src, pf.url, f.options())
	if err != nil {
		return recordExit(err)
	}
	if frames == 0 {
		return withCode(exitNoData, errors.New("nothing recorded: no query returned data"))
	}
	return nil
}

// createDump creates a dump file; an existing file without force is a
// usage error naming the flag that allows overwriting it.
func createDump(path string, force bool, forceFlag string) (*dump.Writer, error) {
	w, err := dump.Create(path, force, dump.WriterOptions{})
	if errors.Is(err, os.ErrExist) {
		return nil, withCode(exitUsage, fmt.Errorf("%s exists; use %s to overwrite it", path, forceFlag))
	}
	return w, err
}

// startRecording opens --record's dump for a dashboard: it hooks the
// scraper options and adds the REC badge (which shows a write error at
// once). The returned function closes the dump.
func (f *dashboardFlags) startRecording(opts *ui.Options, copts *scrape.Options) (func() error, error) {
	rec, err := f.openRecord(opts)
	if err != nil || rec == nil {
		return func() error { return nil }, err
	}
	copts.OnScrape = rec.Hook()
	return rec.Close, nil
}

// openRecord creates --record's dump (nil when not given) and puts the REC
// badge into opts.
func (f *dashboardFlags) openRecord(opts *ui.Options) (*record.Dashboard, error) {
	if f.record == "" {
		return nil, nil
	}
	w, err := createDump(f.record, f.recordForce, "--record-force")
	if err != nil {
		return nil, err
	}
	rec := record.NewDashboard(w)
	opts.Status = rec.Status(opts.Status)
	return rec, nil
}
