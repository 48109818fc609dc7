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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
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
	cmd.Flags().DurationVar(&f.interval, "interval", scrape.DefaultInterval, "scrape interval")
	cmd.Flags().DurationVar(&f.duration, "duration", 0, "stop after this long (default: until interrupted)")
	cmd.Flags().BoolVar(&f.force, "force", false, "overwrite FILE if it exists")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "no progress, only the summary")
	cmd.Flags().DurationVar(&f.progress, "progress", 0, "print a progress line this often (default: 1s on a terminal, 10s otherwise)")
	cmd.Flags().BoolVar(&f.relevant, "only-relevant", false, "write only the families some dialect reads (a target no dialect reads is kept whole, with a warning)")
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
	var rel *onlyRelevant
	if f.relevant {
		rel = newOnlyRelevant(src, func(msg string) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(errw, "\nretrytop: --only-relevant: %s\n", ui.Sanitize(msg))
		})
		hook = rel.hook(hook)
	}
	// The recorder keeps no history: one scrape per target is enough.
	// Discovery files are followed; their changes and errors are printed.
	// Bodies are written as served (or as --only-relevant selects them); a
	// parse now and then only validates them and counts series for the
	// progress line (recordParseEvery).
	scraper := scrape.NewScraper(targets, model.NewStore(model.StoreConfig{History: 2}),
		src.follow(scrape.Options{OnScrape: hook, ParseEvery: recordParseEvery}, errw))
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
	if rel != nil {
		fmt.Fprintln(errw, rel.summary())
	}
	if cerr != nil {
		return cerr
	}
	if st := w.Stats(); st.Frames == 0 && st.Errors > 0 {
		return errors.New("nothing could be written")
	}
	return nil
}

// onlyRelevant is record --only-relevant: it rewrites each body handed
// to the dump to the lines of the families some dialect reads
// (expo.SelectBody with the dialects' filter), which analyze, replay
// and export read alike, since they read a recording through the same
// filter. Whether a dialect reads a target is decided on its first body
// that parses; a target none reads is written whole from then on, with
// one warning: its families are what 'retrytop dialect draft' needs, and
// a recording cannot be made again.
type onlyRelevant struct {
	tr     *dialect.Translator
	forced map[string]string // target -> the dialect name=URL@dialect forces
	urls   map[string]string // target -> URL without credentials, for the hint
	warn   func(string)

	mu      sync.Mutex
	targets map[string]*relevantTarget

	served, written atomic.Int64 // body bytes
}

// relevantTarget is onlyRelevant's state for one target. The scraper
// calls OnScrape for one target at a time, so only the map needs the lock.
type relevantTarget struct {
	decided, whole bool
	buf            []byte // the selected body, reused
}

func newOnlyRelevant(src *sources, warn func(string)) *onlyRelevant {
	o := &onlyRelevant{tr: src.translate, forced: map[string]string{}, urls: map[string]string{},
		warn: warn, targets: map[string]*relevantTarget{}}
	for _, t := range src.targets {
		o.urls[t.Name] = scrape.SafeURL(t.URL)
		if t.Dialect != "" {
			o.forced[t.Name] = t.Dialect
		}
	}
	return o
}

// hook wraps a dump hook: bodies are selected before next writes them.
func (o *onlyRelevant) hook(next func(string, time.Time, []byte, string, error)) func(string, time.Time, []byte, string, error) {
	return func(target string, at time.Time, body []byte, contentType string, err error) {
		if err == nil {
			body = o.body(target, at, body, contentType)
		}
		next(target, at, body, contentType, err)
	}
}

// body returns what to write of one target's body.
func (o *onlyRelevant) body(target string, at time.Time, body []byte, contentType string) []byte {
	o.mu.Lock()
	st := o.targets[target]
	if st == nil {
		st = &relevantTarget{}
		o.targets[target] = st
	}
	o.mu.Unlock()
	o.served.Add(int64(len(body)))
	if !st.decided {
		o.decide(st, target, at, body, contentType)
	}
	if st.decided && !st.whole {
		if out, ok := expo.SelectBody(st.buf[:0], body, contentType, o.tr.Filter); ok {
			st.buf = out
			o.written.Add(int64(len(out)))
			return out
		}
	}
	// Undecided (it did not parse: the replay reports it as the scrape
	// did), kept whole, or a body the selection must not touch.
	o.written.Add(int64(len(body)))
	return body
}

// decide tells from a body whether a dialect reads the target, as the
// analysis of the recording will: the dialects' filter, then detection.
func (o *onlyRelevant) decide(st *relevantTarget, target string, at time.Time, body []byte, contentType string) {
	if o.forced[target] != "" {
		st.decided = true // the user named its dialect
		return
	}
	var p expo.ExpfmtParser
	fams, err := p.Parse(target, body, contentType, o.tr.Filter)
	if err != nil {
		return // decided on a later body
	}
	st.decided = true
	if _, _, err := o.tr.Translate("", &model.Snapshot{Target: target, Time: at, Families: fams}); err == nil && len(o.tr.Detected(target)) > 0 {
		return
	}
	st.whole = true
	seen := "no families"
	if all, err := p.Parse(target, body, contentType, nil); err == nil && len(all) > 0 {
		seen = "families such as " + dialect.SeenFamilies(all, 5)
	}
	url := o.urls[target]
	if url == "" {
		url = "URL"
	}
	o.warn(fmt.Sprintf("no dialect reads %q (%s): recording all of its families; run 'retrytop dialect draft %s' for a custom mapping to start from (docs/dialects.md)",
		target, seen, url))
}

// summary is the line record prints at the end with --only-relevant.
func (o *onlyRelevant) summary() string {
	served, written := o.served.Load(), o.written.Load()
	pct := "-"
	if served > 0 {
		pct = fmt.Sprintf("%.0f%%", 100*float64(written)/float64(served))
	}
	return fmt.Sprintf("  --only-relevant: wrote %s of the %s of bodies served (%s)", formatSize(written), formatSize(served), pct)
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
		fmt.Fprintf(errw, "recording the query results of %s every %s to %s (Ctrl-C stops)\n", ui.Sanitize(scrape.SafeURL(pf.url)), f.interval, f.out)
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
func (f *dashboardFlags) startRecording(opts *ui.Options, copts *scrape.Options) (func() error, error) {
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
