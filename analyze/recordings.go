package analyze

import (
	"errors"
	"strings"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/scrape"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/sources"
)

// RecordingOptions are analyze FILE's settings.
type RecordingOptions struct {
	Window time.Duration
	// Bin is the timeline's bin width; 0: analysis.AutoBin of the
	// recordings' span (10 s up to an hour, wider past it).
	Bin time.Duration
	// Spans are, per recording, the entries to read [lo, hi) (--from,
	// --to; dump.Range).
	Spans [][2]int
	// Incident: the rows cover the incident the recording tells
	// (analysis.IncidentSpan; the whole recording when it tells none)
	// instead of the Window ending at its last scrape.
	Incident bool
	// CompactTimelines: the report's rows keep their timelines compactly
	// (analysis.ReportOptions.CompactTimelines), for a report only
	// written (report's writers read them through TimelineBins).
	CompactTimelines bool
	// MaxBinBytes bounds what one recording's report holds per bin
	// (analysis.ReportOptions.MaxBinBytes; 0: no bound): past it the
	// load stops and Recordings fails with an *analysis.BinBudgetError.
	MaxBinBytes int64

	// sequential loads entry by entry into one store of every scrape:
	// the reference the tests compare the streaming path with.
	sequential func(rec dump.Recording, lo, hi int, st *model.Store, transform func(*model.Snapshot) (*model.Snapshot, error)) []model.TargetStatus
}

// Recordings is analyze over recordings: the report a live run ending at
// the last scrape would print, with the timeline over the whole
// recording. One recording streams through a store of a few minutes while
// its bins are reduced (analysis.WholeBuilder); several load whole into
// one store. tr is the translator the recordings were opened with
// (sources.UnreadWrap) and translate reads a snapshot with it.
func Recordings(recs []dump.Recording, rs *sources.Recording, tr *dialect.Translator, translate func(*model.Snapshot) (*model.Snapshot, error), opts RecordingOptions) (analysis.Report, error) {
	spans := opts.Spans
	start, end := recordingsSpan(recs, spans)
	if opts.Bin <= 0 {
		opts.Bin = analysis.AutoBin(start.UnixMilli(), end.UnixMilli())
	}
	hist := 2
	for k, rec := range recs {
		hist = max(hist, dump.WholeHistory(rec, spans[k][0], spans[k][1]))
	}
	ropts := analysis.ReportOptions{Window: opts.Window, Bin: opts.Bin, ChainSpecs: rs.Chains, Links: rs.Links, Derived: dialect.DerivedByDialect(rs.Dialects),
		RecordingEnd: end, CompactTimelines: opts.CompactTimelines, MaxBinBytes: opts.MaxBinBytes}
	var statuses []model.TargetStatus
	var st *model.Store
	var whole *analysis.WholeBuilder
	// A fixed total cap, the unmeasured one of a store of every scrape
	// (model.FixedConfig): the series kept never depend on how the
	// recording is streamed or on how its values compress.
	maxSeries := model.FixedConfig(model.StoreConfig{History: hist}).MaxSeries
	if len(recs) == 1 && opts.sequential == nil {
		// One recording: its bins are reduced while it loads, and the store
		// keeps a few minutes (analysis.WholeBuilder). Its total series cap
		// is the one a store of every scrape gets, so the same series are
		// kept. Unsealed: each value is written and read back once, and
		// sealing it cost a tenth of the CPU; the rings stay within what
		// that cap takes a series to cost, every scrape uncompressed.
		wh := analysis.WholeHistory(entryTimes(recs[0], spans[0]), ropts)
		defer dump.StreamGC(wh, hist)() // loading and the report
		st = model.NewStore(model.StoreConfig{History: wh, KeepSeries: true, MaxSeries: maxSeries, Unsealed: true})
		whole = analysis.NewWholeBuilder(st, ropts)
		statuses = dump.LoadStoreRangeWith(recs[0], spans[0][0], spans[0][1], st, dump.Loading{Transform: translate, Release: tr.Release, After: whole.Observe,
			Stop: func() bool { return whole.Err() != nil }})
		if err := whole.Err(); err != nil {
			return analysis.Report{}, err
		}
	} else {
		// Several recordings load one after the other, each in time order
		// but not together: into one store of every scrape.
		load := dump.LoadStoreRange // parses ahead of storing on a second goroutine
		if opts.sequential != nil {
			load = opts.sequential
		}
		st = model.NewStore(model.StoreConfig{History: hist, MaxSeries: maxSeries})
		for k, rec := range recs {
			statuses = append(statuses, load(rec, spans[k][0], spans[k][1], st, translate)...)
		}
	}
	// As live, each target shows the dialects that read it
	// (targets[].dialects is the same for a recording as for its run).
	for i := range statuses {
		d := strings.Join(tr.Detected(statuses[i].Name), "+")
		if d == "" {
			d = rs.Forced[statuses[i].Name] // live shows a forced one before any scrape succeeds
		}
		statuses[i].Dialect = safetext.Terminal(d)
		for _, why := range tr.SetAside(statuses[i].Name) {
			statuses[i].DialectsSetAside = append(statuses[i].DialectsSetAside, safetext.Terminal(why))
		}
	}
	if !scrape.AnyScraped(statuses) {
		return analysis.Report{}, &NoDataError{nil, errors.New("no scrape in the recording could be read")}
	}
	rep, err := buildRecordingReport(st, whole, statuses, ropts, opts.Incident)
	if err != nil {
		return rep, err
	}
	ExplainUnread(&rep, tr, nil) // a recording keeps no URL
	return rep, nil
}

// buildRecordingReport builds the recording's report over its last window, or, with
// incident, over the span its timeline's phases tell (IncidentSpan).
func buildRecordingReport(st *model.Store, whole *analysis.WholeBuilder, statuses []model.TargetStatus, ropts analysis.ReportOptions, incident bool) (analysis.Report, error) {
	ropts.Incident = incident
	if whole == nil {
		return analysis.BuildReport(st, statuses, ropts), nil
	}
	if incident {
		return whole.ReportIncident(statuses)
	}
	return whole.Report(statuses)
}

// recordingsSpan is when the recordings' first and last read entries
// were taken (zero times when none is read).
func recordingsSpan(recs []dump.Recording, spans [][2]int) (start, end time.Time) {
	for k, rec := range recs {
		lo, hi := spans[k][0], spans[k][1]
		if hi <= lo {
			continue
		}
		if t := rec.Time(lo); start.IsZero() || t.Before(start) {
			start = t
		}
		if t := rec.Time(hi - 1); t.After(end) {
			end = t
		}
	}
	return start, end
}

// entryTimes lists each target's entry times within span, oldest first.
func entryTimes(rec dump.Recording, span [2]int) [][]int64 {
	idx := map[string]int{}
	var out [][]int64
	for i := span[0]; i < span[1]; i++ {
		t := rec.Target(i)
		k, ok := idx[t]
		if !ok {
			k = len(out)
			idx[t] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], rec.Time(i).UnixMilli())
	}
	return out
}
