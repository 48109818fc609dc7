package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
)

// recordingArgs reports whether every argument names an existing file (a
// recording) rather than a target URL.
// missingFile returns the error for the first argument that can only be
// meant as a recording (a path, or a name with a recording's extension,
// never a URL, name=URL or host:port) and does not exist: "no such file"
// says more than "missing scheme".
func missingFile(args []string) error {
	for _, a := range args {
		if strings.Contains(a, "://") || strings.Contains(a, "=") {
			continue
		}
		ext := strings.ToLower(filepath.Ext(a))
		looksLikeFile := strings.ContainsRune(a, os.PathSeparator) || slices.Contains(recordingExts, ext)
		if !looksLikeFile {
			continue
		}
		if _, err := os.Stat(a); err != nil {
			return withCode(exitNoData, fmt.Errorf("recording %s: %w", a, errors.Unwrap(err)))
		}
	}
	return nil
}

// recordingExts are the extensions a recording or an importable file has.
var recordingExts = []string{".rtd", ".om", ".prom", ".txt", ".json", ".jsonl", ".gz", ".zst"}

func recordingArgs(args []string) bool {
	if len(args) == 0 {
		return false
	}
	for _, a := range args {
		if strings.Contains(a, "://") {
			return false
		}
		if fi, err := os.Stat(a); err != nil || fi.IsDir() {
			return false
		}
	}
	return true
}

// analyzeRecordings is analyze over recordings: the report is the one a
// live run ending at the last scrape would print, with the timeline over
// the whole recording. One recording streams through a store of a few
// minutes while its bins are reduced (analysis.WholeBuilder); several load
// whole into one store.
func analyzeRecordings(cmd *cobra.Command, f *analyzeFlags, args []string) error {
	var recs []dump.Recording
	defer func() {
		for _, r := range recs {
			r.Close()
		}
	}()
	// As live: dialects translate each target into the metric contract,
	// with the config's custom mappings and forced dialects.
	rs, err := f.forRecordings()
	if err != nil {
		return withCode(exitUsage, err)
	}
	tr, translate := rs.translator()
	hist := 2
	for _, a := range args {
		// tr.Parsing around the recording's own parse: a frame whose text
		// kept its previous frame's structure is read without parsing.
		rec, err := openTranslated(cmd.ErrOrStderr(), a, f.inputFormat, tr.Filter, nil, unreadWrap(tr))
		if err != nil {
			return err
		}
		recs = append(recs, rec)
	}
	// --from and --to: only the scrapes between them are decoded (a dump
	// seeks to them through its index), as if the recording held no more.
	spans, err := recordingSpans(recs, f.from, f.to)
	if err != nil {
		return withCode(exitUsage, err)
	}
	for k, rec := range recs {
		per := map[string]int{}
		for i := spans[k][0]; i < spans[k][1]; i++ {
			per[rec.Target(i)]++
		}
		for _, n := range per {
			hist = max(hist, n+1)
		}
	}
	opts := analysis.ReportOptions{Window: f.window, Bin: f.bin, ChainSpecs: rs.chains, Links: rs.links, Derived: derivedByDialect(rs.dialects)}
	var statuses []model.TargetStatus
	var st *model.Store
	var whole *analysis.WholeBuilder
	if len(recs) == 1 && wholeStreaming {
		// One recording: its bins are reduced while it loads, and the store
		// keeps a few minutes (analysis.WholeBuilder). Its total series cap
		// is the one a store of every scrape gets, so the same series are
		// kept.
		wh := analysis.WholeHistory(entryTimes(recs[0], spans[0]), opts)
		defer dump.StreamGC(wh, hist)()
		st = model.NewStore(model.StoreConfig{History: wh, KeepSeries: true,
			MaxSeries: model.DefaultMaxSeries(debug.SetMemoryLimit(-1), hist, model.DefaultStoreConfig.MaxSeriesPerTarget)})
		whole = analysis.NewWholeBuilder(st, opts)
		statuses = dump.LoadStoreRangeFunc(recs[0], spans[0][0], spans[0][1], st, translate, whole.Observe)
	} else {
		// Several recordings load one after the other, each in time order
		// but not together: into one store of every scrape.
		st = model.NewStore(model.StoreConfig{History: hist})
		for k, rec := range recs {
			statuses = append(statuses, loadRange(rec, spans[k][0], spans[k][1], st, translate)...)
		}
	}
	// As live, each target shows the dialects that read it
	// (targets[].dialects is the same for a recording as for its run).
	for i := range statuses {
		d := strings.Join(tr.Detected(statuses[i].Name), "+")
		if d == "" {
			d = rs.forced[statuses[i].Name] // live shows a forced one before any scrape succeeds
		}
		statuses[i].Dialect = safetext.Terminal(d)
	}
	if !scrape.AnyScraped(statuses) {
		return withCode(exitNoData, errors.New("no scrape in the recording could be read"))
	}
	var rep analysis.Report
	if whole != nil {
		if rep, err = whole.Report(statuses); err != nil {
			return err
		}
	} else {
		rep = analysis.BuildReport(st, statuses, opts)
	}
	explainUnread(&rep, tr, nil) // a recording keeps no URL
	if err := writeRecordingAnalysis(cmd, rep, f.format); err != nil {
		return err
	}
	return failOn(rep.Findings, f.failOn)
}

// loadRange loads a recording's entries into the store: dump.LoadStoreRange,
// which parses ahead of storing on a second goroutine. A variable so that
// TestAnalyzeWholeSameAsSequential can compare it with entry-by-entry
// loading.
var loadRange = dump.LoadStoreRange

// wholeStreaming makes analyze of one recording reduce its bins while
// loading (analysis.WholeBuilder); TestAnalyzeWholeSameAsSequential turns
// it off for the reference.
var wholeStreaming = true

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

// writeRecordingAnalysis is writeAnalysis with JSON written one dependency
// at a time (Report.WriteJSON, the same bytes): a whole recording's
// timeline is hundreds of MB of JSON, which writeAnalysis builds whole. A
// variable so that TestAnalyzeWholeSameAsSequential compares the two.
var writeRecordingAnalysis = func(cmd *cobra.Command, rep analysis.Report, format string) error {
	if format == "json" {
		return rep.WriteJSON(cmd.OutOrStdout())
	}
	return writeAnalysis(cmd, rep, format)
}

// recordingSpans reads --from and --to (as replay's --from: an offset from
// the earliest recording's start, RFC 3339 or Unix seconds) into each
// recording's entries between them.
func recordingSpans(recs []dump.Recording, fromFlag, toFlag string) ([][2]int, error) {
	var start time.Time
	for _, rec := range recs {
		if t := rec.Time(0); start.IsZero() || t.Before(start) {
			start = t
		}
	}
	from, err := parseFrom(fromFlag, start)
	if err != nil {
		return nil, err
	}
	to, err := parseFrom(toFlag, start)
	if err != nil {
		return nil, fmt.Errorf("--to: %w", err)
	}
	if !from.IsZero() && !to.IsZero() && to.Before(from) {
		return nil, fmt.Errorf("--to %s is before --from %s", toFlag, fromFlag)
	}
	spans := make([][2]int, len(recs))
	for k, rec := range recs {
		spans[k][0], spans[k][1] = dump.Range(rec, from, to)
	}
	return spans, nil
}
