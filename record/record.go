// Package record writes recordings: the record verb (scrape targets and
// append every body to a dump, with progress and a summary), its
// --only-relevant selection of the families some dialect reads, the
// recording of a Prometheus API source's query results, and a dashboard's
// --record (the dump beside the live view and its REC badge).
package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/internal/gcpercent"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
	"github.com/retrytop/retrytop/sources"
)

// ParseEvery: record parses a target's first body, then one in 60 (a
// minute at the default interval) and the one after a failure. Parsing
// every body was four fifths of record's CPU (docs/performance.md).
const ParseEvery = 60

// GCPercent is the collector's GOGC while recording (unless GOGC is set
// in the environment). The recorder's live heap is its writer's state
// per target, steady, and its garbage the bodies it scraped and wrote: at
// Go's default of 100 its RSS rose to twice the live heap. Collecting
// twice as often costs little: the recorder's CPU is a tenth of a
// Prometheus scraping the same targets (docs/performance.md).
const GCPercent = 10

// Options are a recording's settings.
type Options struct {
	// Path names the dump in messages.
	Path     string
	Interval time.Duration
	// Quiet prints only the summary.
	Quiet bool
	// Progress is how often a progress line is printed (0: 1 s on a
	// terminal, 10 s otherwise).
	Progress time.Duration
	// TTY: the progress line rewrites itself.
	TTY bool
	// Relevant writes only the families some dialect reads (Relevant).
	Relevant bool
	// Now stamps the progress lines (nil: time.Now).
	Now func() time.Time
}

func (o *Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Run scrapes src's targets into w until ctx is done, printing progress
// and then a summary on errw, and closes w. Discovery files are followed;
// their changes and errors are printed.
func Run(ctx context.Context, errw io.Writer, w *dump.Writer, src *sources.Sources, opts Options) error {
	defer gcpercent.Set(GCPercent)()
	out := &lockedWriter{w: errw}
	hook := w.Hook(func(err error) {
		fmt.Fprintf(out, "\nretrytop: recording: %s\n", safetext.Terminal(err.Error()))
	})
	var rel *Relevant
	if opts.Relevant {
		rel = NewRelevant(src, func(msg string) {
			fmt.Fprintf(out, "\nretrytop: --only-relevant: %s\n", safetext.Terminal(msg))
		})
		hook = rel.Hook(hook)
	}
	// The recorder keeps no history and stores nothing (NoStore).
	// Bodies are written as served (or as --only-relevant selects them); a
	// parse now and then only validates them and counts series for the
	// progress line (ParseEvery). Parsed once a minute, a body gains
	// nothing from the parser's line caches, which were a fifth of the
	// recorder's heap on 100 targets of 2,000 series: none are kept.
	scraper := scrape.NewScraper(src.Targets, model.NewStore(model.StoreConfig{History: 2}), // stays empty
		src.Follow(scrape.Options{OnScrape: hook, ParseEvery: ParseEvery, NoStore: true, Parser: expo.ExpfmtParser{}}, out))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = scraper.Run(ctx)
	}()
	if !opts.Quiet {
		fmt.Fprintf(out, "recording %d target(s) every %s to %s (Ctrl-C stops)\n", len(src.Targets), opts.Interval, opts.Path)
		if addr := src.OTLPAddr(); addr != "" {
			fmt.Fprintf(out, "receiving OTLP pushes on http://%s/v1/metrics: each resource that pushes is a target\n", addr)
		}
		progress(ctx, out, scraper, w, &opts)
	}
	<-done
	cerr := w.Close()
	statuses := scraper.Statuses()
	WriteSummary(errw, opts.Path, statuses, w.Stats())
	if rel != nil {
		fmt.Fprintln(errw, rel.Summary())
	}
	if err := Outcome(opts.Path, w.Stats(), cerr); err != nil {
		return err
	}
	if !anyAnswered(statuses) {
		return ErrNothingRead
	}
	return nil
}

// ErrNothingRead: no target answered a single scrape, so the recording
// holds only failures.
var ErrNothingRead = errors.New("no target answered a scrape: the recording holds only failures")

// anyAnswered reports whether any target answered a scrape.
func anyAnswered(statuses []model.TargetStatus) bool {
	for _, s := range statuses {
		if !s.LastSuccess.IsZero() {
			return true
		}
	}
	return false
}

// LossError says a recording lacks what it should hold: scrapes that could
// not be written (a full disk, a failing device), or the index its close
// could not write (the dump still reads, by scanning).
type LossError struct {
	Path     string
	Lost     int
	From, To time.Time
	Close    error // the close's error, when it failed
}

func (e *LossError) Error() string {
	var parts []string
	if e.Lost > 0 {
		parts = append(parts, fmt.Sprintf("%d scrape(s) could not be written between %s and %s; the recording lacks them",
			e.Lost, e.From.UTC().Format(time.RFC3339), e.To.UTC().Format(time.RFC3339)))
	}
	if e.Close != nil {
		parts = append(parts, fmt.Sprintf("closing it failed (%s); what was written reads without its index", safetext.Terminal(e.Close.Error())))
	}
	return e.Path + ": " + strings.Join(parts, "; ")
}

func (e *LossError) Unwrap() error { return e.Close }

// Outcome is a closed recording's loss (a *LossError), nil when it holds
// every scrape: st is the writer's stats after Close, closeErr Close's
// error.
func Outcome(path string, st dump.Stats, closeErr error) error {
	if st.Lost == 0 && closeErr == nil {
		return nil
	}
	return &LossError{Path: path, Lost: st.Lost, From: st.FirstLost, To: st.LastLost, Close: closeErr}
}

// progress prints a progress line every opts.Progress until ctx is done.
func progress(ctx context.Context, out *lockedWriter, scraper *scrape.Scraper, w *dump.Writer, opts *Options) {
	every := opts.Progress
	if every <= 0 {
		every = 10 * time.Second
		if opts.TTY {
			every = time.Second
		}
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if opts.TTY {
				fmt.Fprintln(out)
			}
			return
		case <-tick.C:
			line := ProgressLine(opts.now(), scraper.Statuses(), w.Stats())
			if opts.TTY {
				fmt.Fprintf(out, "\r\x1b[K%s", line)
			} else {
				fmt.Fprintln(out, line)
			}
		}
	}
}

// lockedWriter serialises the writes of the scraper's hooks and the
// progress line, which run on different goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// ProgressLine is one line of record's progress at now.
func ProgressLine(now time.Time, statuses []model.TargetStatus, ws dump.Stats) string {
	scrapes, failed := 0, 0
	var per []string
	for _, s := range statuses {
		scrapes += s.Scrapes
		failed += s.Failures
		part := fmt.Sprintf("%s %d", safetext.Terminal(s.Name), s.Scrapes)
		if s.Failures > 0 {
			part += fmt.Sprintf(" (%d failed)", s.Failures)
		}
		per = append(per, part)
	}
	line := fmt.Sprintf("%s  scrapes %d, failed %d  written %s", now.Format("15:04:05"), scrapes, failed, FormatSize(ws.Bytes))
	if ws.Errors > 0 {
		line += fmt.Sprintf(", %d write error(s)", ws.Errors)
	}
	return line + "  " + strings.Join(per, ", ")
}

// WriteSummary prints what was recorded to path, per target.
func WriteSummary(w io.Writer, path string, statuses []model.TargetStatus, ws dump.Stats) {
	fmt.Fprintf(w, "%s: %d frame(s), %s (bodies %s)\n", path, ws.Frames, FormatSize(ws.Bytes), FormatSize(ws.BodyBytes))
	if ws.Lost > 0 {
		fmt.Fprintf(w, "  LOST %d scrape(s) that could not be written, from %s to %s\n", ws.Lost,
			ws.FirstLost.UTC().Format(time.RFC3339), ws.LastLost.UTC().Format(time.RFC3339))
	}
	byName := map[string]dump.TargetStats{}
	for _, t := range ws.Targets {
		byName[t.Target] = t
	}
	for _, s := range statuses {
		t := byName[s.Name]
		fmt.Fprintf(w, "  %-20s scrapes %d, failed %d, written %s", safetext.Terminal(s.Name), s.Scrapes, s.Failures, FormatSize(t.Bytes))
		if t.Errors > 0 {
			fmt.Fprintf(w, ", %d write error(s): %s", t.Errors, safetext.Terminal(t.LastError))
		}
		if s.LastError != "" {
			fmt.Fprintf(w, "; last scrape error: %s", safetext.Terminal(s.LastError))
		}
		fmt.Fprintln(w)
	}
}

// FormatSize prints a byte count in the binary unit that reads best.
func FormatSize(n int64) string {
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
