package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/collect"
	"github.com/retrytop/retrytop/collect/dump"
	"github.com/retrytop/retrytop/model"
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
written. Replay it with 'retrytop replay FILE', analyse it with
'retrytop analyze FILE', backfill it into Prometheus with
'retrytop export FILE --format openmetrics'.

TARGET is URL or name=URL.`,
		Example: `  retrytop record app=http://127.0.0.1:9102/metrics client=http://127.0.0.1:9103/metrics -o incident.rtd
  retrytop record --config retrytop.yaml -o soak.rtd --duration 1h --interval 5s
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
			if len(src.targets) == 0 {
				return withCode(exitUsage, errors.New("no target: give TARGET arguments, --config, --chain, --file-sd or --prometheus-config with --job"))
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
	pf.register(cmd)
	cmd.Flags().StringVarP(&f.out, "output", "o", "", "dump file to write")
	cmd.Flags().DurationVar(&f.interval, "interval", collect.DefaultInterval, "scrape interval")
	cmd.Flags().DurationVar(&f.duration, "duration", 0, "stop after this long (default: until interrupted)")
	cmd.Flags().BoolVar(&f.force, "force", false, "overwrite FILE if it exists")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "no progress, only the summary")
	cmd.Flags().DurationVar(&f.progress, "progress", 0, "print a progress line this often (default: 1s on a terminal, 10s otherwise)")
	return cmd
}

// recordParseEvery: record parses a target's first body, then one in 60
// (a minute at the default interval) and the one after a failure. Parsing
// every body was four fifths of record's CPU (docs/performance.md).
const recordParseEvery = 60

func runRecord(ctx context.Context, errw io.Writer, f *recordFlags, src *sources) error {
	targets := src.targets
	w, err := createDump(f.out, f.force, "--force")
	if err != nil {
		return err
	}
	var mu sync.Mutex
	hook := w.Hook(func(err error) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(errw, "\nretrytop: recording: %s\n", ui.Sanitize(err.Error()))
	})
	// The recorder keeps no history: one scrape per target is enough.
	// Discovery files are followed; their changes and errors are printed.
	// Bodies are written as served; a parse now and then only validates
	// them and counts series for the progress line (recordParseEvery).
	scraper := collect.NewScraper(targets, model.NewStore(model.StoreConfig{History: 2}),
		src.follow(collect.Options{OnScrape: hook, ParseEvery: recordParseEvery}, errw))
	tty := isTerminal(os.Stderr)
	every := f.progress
	if every <= 0 {
		every = 10 * time.Second
		if tty {
			every = time.Second
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = scraper.Run(ctx)
	}()
	if !f.quiet {
		fmt.Fprintf(errw, "recording %d target(s) every %s to %s (Ctrl-C stops)\n", len(targets), f.interval, f.out)
		tick := time.NewTicker(every)
	loop:
		for {
			select {
			case <-ctx.Done():
				break loop
			case <-tick.C:
				mu.Lock()
				line := progressLine(scraper.Statuses(), w.Stats())
				if tty {
					fmt.Fprintf(errw, "\r\x1b[K%s", line)
				} else {
					fmt.Fprintln(errw, line)
				}
				mu.Unlock()
			}
		}
		tick.Stop()
		if tty {
			fmt.Fprintln(errw)
		}
	}
	<-done
	cerr := w.Close()
	writeRecordSummary(errw, f.out, scraper.Statuses(), w.Stats())
	if cerr != nil {
		return cerr
	}
	if st := w.Stats(); st.Frames == 0 && st.Errors > 0 {
		return errors.New("nothing could be written")
	}
	return nil
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
	var mu sync.Mutex
	onErr := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(errw, "retrytop: recording: %s\n", ui.Sanitize(err.Error()))
	}
	if !f.quiet {
		fmt.Fprintf(errw, "recording the query results of %s every %s to %s (Ctrl-C stops)\n", ui.Sanitize(collect.SafeURL(pf.url)), f.interval, f.out)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = src.Run(ctx) })
	frames := recordQueries(ctx, src.Store(), w, f.interval, onErr)
	wg.Wait()
	cerr := w.Close()
	writeRecordSummary(errw, f.out, src.Statuses(), w.Stats())
	if cerr != nil {
		return cerr
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

// progressLine is one line of record's progress.
func progressLine(statuses []model.TargetStatus, ws dump.Stats) string {
	scrapes, failed := 0, 0
	var per []string
	for _, s := range statuses {
		scrapes += s.Scrapes
		failed += s.Failures
		part := fmt.Sprintf("%s %d", ui.Sanitize(s.Name), s.Scrapes)
		if s.Failures > 0 {
			part += fmt.Sprintf(" (%d failed)", s.Failures)
		}
		per = append(per, part)
	}
	line := fmt.Sprintf("%s  scrapes %d, failed %d  written %s", time.Now().Format("15:04:05"), scrapes, failed, formatSize(ws.Bytes))
	if ws.Errors > 0 {
		line += fmt.Sprintf(", %d write error(s)", ws.Errors)
	}
	return line + "  " + strings.Join(per, ", ")
}

func writeRecordSummary(w io.Writer, path string, statuses []model.TargetStatus, ws dump.Stats) {
	fmt.Fprintf(w, "%s: %d frame(s), %s (bodies %s)\n", path, ws.Frames, formatSize(ws.Bytes), formatSize(ws.BodyBytes))
	byName := map[string]dump.TargetStats{}
	for _, t := range ws.Targets {
		byName[t.Target] = t
	}
	for _, s := range statuses {
		t := byName[s.Name]
		fmt.Fprintf(w, "  %-20s scrapes %d, failed %d, written %s", ui.Sanitize(s.Name), s.Scrapes, s.Failures, formatSize(t.Bytes))
		if t.Errors > 0 {
			fmt.Fprintf(w, ", %d write error(s): %s", t.Errors, ui.Sanitize(t.LastError))
		}
		if s.LastError != "" {
			fmt.Fprintf(w, "; last scrape error: %s", ui.Sanitize(s.LastError))
		}
		fmt.Fprintln(w)
	}
}

func formatSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// startRecording opens --record's dump for a dashboard: it hooks the
// scraper options and adds the REC badge (which shows a write error at
// once). The returned function closes the dump.
func (f *dashboardFlags) startRecording(opts *ui.Options, copts *collect.Options) (func() error, error) {
	w, onErr, err := f.openRecord(opts)
	if err != nil || w == nil {
		return func() error { return nil }, err
	}
	copts.OnScrape = w.Hook(onErr)
	return w.Close, nil
}

// openRecord creates --record's dump (nil when not given) and puts the REC
// badge into opts; onErr reports a write error there.
func (f *dashboardFlags) openRecord(opts *ui.Options) (*dump.Writer, func(error), error) {
	if f.record == "" {
		return nil, nil, nil
	}
	w, err := createDump(f.record, f.recordForce, "--record-force")
	if err != nil {
		return nil, nil, err
	}
	var mu sync.Mutex
	var lastErr string
	onErr := func(err error) {
		mu.Lock()
		lastErr = err.Error()
		mu.Unlock()
	}
	prev := opts.Status
	opts.Status = func() string {
		mu.Lock()
		e := lastErr
		mu.Unlock()
		s := "● REC"
		if e != "" {
			if len(e) > 48 {
				e = e[:48] + "…"
			}
			s += " ERROR: " + e
		}
		if prev != nil {
			if p := prev(); p != "" {
				s = p + " " + s
			}
		}
		return s
	}
	return w, onErr, nil
}
