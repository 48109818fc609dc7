package record

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/promapi"
	"github.com/retrytop/retrytop/scrape"
)

// Queries writes what st gains to w every interval until ctx is done,
// then once more: query results have no bodies of their own, so each
// refresh of each target becomes a text frame (dump.StoreRecorder). It
// returns the frames written; onErr (nil: none) is told of write errors.
func Queries(ctx context.Context, st *model.Store, w *dump.Writer, interval time.Duration, onErr func(error)) int {
	rec := dump.NewStoreRecorder(w)
	frames := 0
	sync := func() {
		n, err := rec.Sync(st)
		frames += n
		if err != nil && onErr != nil {
			onErr(err)
		}
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			sync()
			return frames
		case <-tick.C:
			sync()
		}
	}
}

// RunPrometheus is record --prometheus: the query results of every
// refresh of src (and the history the first one backfills) written to w
// as text frames until ctx is done, so a fleet incident read from
// Prometheus replays like a scraped one. It closes w, prints the summary
// and returns the frames written.
func RunPrometheus(ctx context.Context, errw io.Writer, w *dump.Writer, src *promapi.Source, url string, opts Options) (int, error) {
	out := &lockedWriter{w: errw}
	onErr := func(err error) {
		fmt.Fprintf(out, "retrytop: recording: %s\n", safetext.Terminal(err.Error()))
	}
	if !opts.Quiet {
		fmt.Fprintf(out, "recording the query results of %s every %s to %s (Ctrl-C stops)\n", safetext.Terminal(scrape.SafeURL(url)), opts.Interval, opts.Path)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = src.Run(ctx) })
	frames := Queries(ctx, src.Store(), w, opts.Interval, onErr)
	wg.Wait()
	cerr := w.Close()
	WriteSummary(errw, opts.Path, src.Statuses(), w.Stats())
	return frames, Outcome(opts.Path, w.Stats(), cerr)
}

// Dashboard is a dashboard's --record: the dump its scrapes are written
// to and the REC badge, which shows a write error at once.
type Dashboard struct {
	w       *dump.Writer
	mu      sync.Mutex
	lastErr string
}

// NewDashboard records into w.
func NewDashboard(w *dump.Writer) *Dashboard { return &Dashboard{w: w} }

// Writer is the dump.
func (d *Dashboard) Writer() *dump.Writer { return d.w }

// Close closes the dump; a *LossError when it lacks scrapes (Outcome).
func (d *Dashboard) Close() error {
	err := d.w.Close()
	return Outcome("--record", d.w.Stats(), err)
}

// OnErr notes a write error for the badge.
func (d *Dashboard) OnErr(err error) {
	d.mu.Lock()
	d.lastErr = err.Error()
	d.mu.Unlock()
}

// Hook is the scraper's OnScrape hook that writes every scrape.
func (d *Dashboard) Hook() func(string, time.Time, []byte, string, error) {
	return d.w.Hook(d.OnErr)
}

// Status is the header badge function: prev's badge, then "● REC" and
// the last write error.
func (d *Dashboard) Status(prev func() string) func() string {
	return func() string {
		d.mu.Lock()
		e := d.lastErr
		d.mu.Unlock()
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
}

// Feed records src's store into the dump every interval until ctx is
// done (a dashboard on a Prometheus API source: its results have no
// bodies to hook).
func (d *Dashboard) Feed(st *model.Store, interval time.Duration) func(context.Context) {
	return func(ctx context.Context) { Queries(ctx, st, d.w, interval, d.OnErr) }
}
