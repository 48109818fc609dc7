package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/analyze"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/sources"
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

// analyzeRecordings is analyze over recordings (analyze.Recordings): the
// report a live run ending at the last scrape would print, with the
// timeline over the whole recording.
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
	tr, translate := rs.Translator()
	for _, a := range args {
		// tr.Parsing around the recording's own parse: a frame whose text
		// kept its previous frame's structure is read without parsing.
		rec, err := openTranslated(cmd.ErrOrStderr(), a, f.inputFormat, tr.Filter, nil, sources.UnreadWrap(tr))
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
	rep, err := analyze.Recordings(recs, rs, tr, translate, analyze.RecordingOptions{Window: f.window, Bin: f.bin, Spans: spans,
		Incident: !cmd.Flags().Changed("window"), // the incident, unless a window is asked for
		// Every writer reads a row's bins through TimelineBins, one row at
		// a time: held as BinReports they were 100 MB of the text report's
		// 192 MB live heap on the 1-hour dump.
		CompactTimelines: true,
		// Half of --memory-limit for the bins; the rest for the store,
		// the decoders and the output.
		MaxBinBytes: commandMemoryLimit(cmd) / 2})
	if err != nil {
		return noData(cmd, binBudget(err, cmd.Flags().Changed("bin")))
	}
	if err := writeAnalysis(cmd, rep, f.format); err != nil {
		return err
	}
	return failOn(rep.Findings, f.failOn)
}

// binBudget says what to do about a report over its share of
// --memory-limit (exit code 1: the flags decide it); other errors pass.
// binGiven: --bin was set, so the width without it is named when it fits.
func binBudget(err error, binGiven bool) error {
	var be *analysis.BinBudgetError
	if !errors.As(err, &be) {
		return err
	}
	fix := "narrow --from/--to or raise --memory-limit"
	if b := be.WiderBin(); b > 0 {
		fix = fmt.Sprintf("use --bin %v or wider, narrow --from/--to, or raise --memory-limit", b)
		if auto := be.AutoBin(); binGiven && auto > 0 {
			fix = fmt.Sprintf("leave --bin out (%v here), ", auto) + fix
		}
	}
	return withCode(exitUsage, fmt.Errorf("analyze: %w (half of --memory-limit): %s", err, fix))
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
