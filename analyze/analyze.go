// Package analyze builds analyze's report from a source: live targets
// scraped over a window, recordings read whole or between two times, or a
// Prometheus-compatible API's history. It reads, stores and hands the
// store to analysis.BuildReport (or, for one recording, reduces its bins
// while it loads with analysis.WholeBuilder); the writers are package
// report's.
package analyze

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/scrape"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/promapi"
	"github.com/retrytop/retrytop/sources"
)

// NoDataError says that nothing (or, on a first scrape, not every
// target) could be read; Statuses are the targets to name with their
// errors.
type NoDataError struct {
	Statuses []model.TargetStatus
	err      error
}

func (e *NoDataError) Error() string { return e.err.Error() }
func (e *NoDataError) Unwrap() error { return e.err }

// LiveOptions are a live analyze's settings.
type LiveOptions struct {
	Window, Interval, Bin time.Duration
	// KeepGoing analyses the targets that answer when others cannot be
	// read on the first scrape.
	KeepGoing bool
	// Derived marks what custom mappings derive (sources.Spec.Derived).
	Derived map[string]map[string]string
	// Progress is told of each round of scrapes (nil: nothing).
	Progress func(round int)
}

// Live scrapes src's targets at the start and the end of the window (and
// at the interval in between) and reports on them. A target that cannot
// be read on the first scrape ends it at once (unless KeepGoing): it
// will not be read in a minute either.
func Live(ctx context.Context, src *sources.Sources, opts LiveOptions) (analysis.Report, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	scraper := src.Scraper(model.NewStore(model.StoreConfig{}), scrape.Options{})
	var unreadable []model.TargetStatus
	progress := func(round int, st []model.TargetStatus) {
		if opts.Progress != nil {
			opts.Progress(round)
		}
		if round == 1 && !opts.KeepGoing {
			for _, s := range st {
				if scrape.Unreadable(s) {
					unreadable = append(unreadable, s)
				}
			}
			if len(unreadable) > 0 {
				cancel()
			}
		}
	}
	statuses := scraper.ScrapeWindow(ctx, opts.Window, opts.Interval, progress)
	if len(unreadable) > 0 {
		err := fmt.Errorf("%d of %d target(s) could not be read on the first scrape", len(unreadable), len(statuses))
		if len(statuses) > 1 {
			err = fmt.Errorf("%w (--keep-going analyses the others)", err)
		}
		return analysis.Report{}, &NoDataError{unreadable, err}
	}
	if !scrape.AnyScraped(statuses) {
		return analysis.Report{}, &NoDataError{statuses, errors.New("no target could be scraped")}
	}
	rep := analysis.BuildReport(scraper.Store(), statuses, analysis.ReportOptions{Window: opts.Window, Bin: opts.Bin, ChainSpecs: src.Chains, Links: src.Links, Derived: opts.Derived})
	urls := map[string]string{}
	for _, s := range statuses {
		urls[s.Name] = s.URL
	}
	ExplainUnread(&rep, src.Translate, urls)
	return rep, nil
}

// Prometheus reports on what one refresh of src reads: the window is in
// the server's history, so src (built with the window as its backfill)
// reads it at once.
func Prometheus(ctx context.Context, src *promapi.Source, window, bin time.Duration) (analysis.Report, error) {
	statuses := src.Refresh(ctx)
	if len(statuses) < 2 {
		return analysis.Report{}, &NoDataError{statuses, errors.New("no target found in Prometheus' results")}
	}
	return analysis.BuildReport(src.Store(), statuses, analysis.ReportOptions{Window: window, Bin: bin}), nil
}

// ExplainUnread words every NO_RETRY_SIGNALS finding of a target no
// dialect reads with tr.Unread (what it exposes, and dialect draft), so a
// report says why and --fail-on warning still gates on it. urls names the
// URL a target was given by (none for a recording).
func ExplainUnread(rep *analysis.Report, tr *dialect.Translator, urls map[string]string) {
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
