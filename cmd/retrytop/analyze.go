package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/analyze"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/report"
	"github.com/retrytop/retrytop/scrape"
)

type analyzeFlags struct {
	sourceFlags
	window   time.Duration
	interval time.Duration
	bin      time.Duration
	format   string
	quiet    bool
	failOn   string
	// keepGoing analyses the targets that answer when others cannot be
	// read on the first scrape.
	keepGoing bool
	// inputFormat forces the format of recordings (analyze_file.go).
	inputFormat string
	// from and to bound what is read of recordings (analyze_file.go).
	from, to string
}

func newAnalyzeCmd() *cobra.Command {
	var f analyzeFlags
	var pf promFlags
	cmd := &cobra.Command{
		Use:   "analyze TARGET...",
		Short: "Scrape targets over a window and print their retry signals",
		Long: `analyze scrapes every target at the start and the end of the window (and
at the interval in between), then prints, per target and dependency, the
retry signals: originals/s, attempts/s, amplification, retries, rescued,
budget denials, admission rejections, provider errors, timeouts, active
calls vs limit, pool wait and split latency, plus a timeline of bins.

It also prints the amplification chains (where a dependency names another
target), findings over the whole run and the incident phases per row.

A FILE argument instead of targets (a dump from retrytop record or watch
--record, or an imported file: see retrytop replay --help) is analysed
over the incident it holds: the rows cover the phases from the trigger to
the recovery, padded by a bin (the whole recording when it holds no
incident; --window W: the last W instead; --from/--to narrow what is
read), and the timeline covers all of it. The header and the JSON's span
say which.

TARGET is URL or name=URL. Exit codes: 0 printed, 1 usage error,
2 no target could be scraped, 3 a finding at or above --fail-on.`,
		Example: `  retrytop analyze http://127.0.0.1:9102/metrics
  retrytop analyze app=http://10.0.0.5:8080/metrics client=http://10.0.0.6:9090/metrics --window 1m
  retrytop analyze app=http://127.0.0.1:9102/metrics --format json | jq '.dependencies[].amplification'
  retrytop analyze app=http://127.0.0.1:9102/metrics --window 5m --fail-on warning   # gate a load test
  retrytop analyze --chain browser=http://127.0.0.1:9100/metrics,app=http://127.0.0.1:9101/metrics,client=http://127.0.0.1:9102/metrics
  retrytop analyze --config retrytop.yaml
  retrytop analyze --prometheus-config prometheus.yml --job checkout --window 1m
  retrytop analyze incident.rtd --format json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if pf.url != "" {
				return analyzePrometheus(cmd, &pf, &f, args)
			}
			if recordingArgs(args) {
				return analyzeRecordings(cmd, &f, args)
			}
			if f.from != "" || f.to != "" {
				return withCode(exitUsage, errors.New("--from and --to apply to recordings (analyze FILE); a live analyze reads --window from now"))
			}
			if err := missingFile(args); err != nil {
				return err // exit 2: a file that could not be read
			}
			return analyzeLive(cmd, &f, args)
		},
	}
	f.sourceFlags.register(cmd)
	f.sourceFlags.registerOTLP(cmd)
	pf.register(cmd)
	pf.registerEnd(cmd)
	cmd.Flags().Bool("wide", false, "text: every column, however wide (by default the table fits the terminal, or $COLUMNS)")
	cmd.Flags().DurationVarP(&f.window, "window", "w", 30*time.Second, "rate window: how long to scrape before printing")
	cmd.Flags().DurationVar(&f.interval, "interval", scrape.DefaultInterval, "scrape interval")
	cmd.Flags().DurationVar(&f.bin, "bin", 0, "width of one timeline bin (default 10s; for a FILE over an hour, the narrowest of 15s, 20s, 30s, 1m, 2m, 5m... that keeps its timeline within 360 bins)")
	cmd.Flags().StringVarP(&f.format, "format", "o", "text", "output format: text, json, markdown or html (the postmortem page of retrytop report)")
	// One meaning per flag across verbs: -o/--output names the file a verb
	// writes (record, export, report), --format the output format,
	// --input-format the format of files read. analyze's -o meant the
	// format; it still does, with a note (docs/cli.md).
	_ = cmd.Flags().MarkShorthandDeprecated("format", "use --format; -o names the output file in record, export and report")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "no progress on stderr")
	cmd.Flags().BoolVar(&f.keepGoing, "keep-going", false, "analyse the targets that answer when others cannot be read on the first scrape (they become TARGET_DOWN findings) instead of exiting 2")
	cmd.Flags().StringVar(&f.inputFormat, "input-format", "", "format of FILE arguments (recordings): dump, openmetrics, prometheus, victoriametrics, concat (default: detected)")
	cmd.Flags().StringVar(&f.from, "from", "", "FILE only: read the recording from this time: an offset from its start (30m), RFC 3339, or Unix seconds (as replay --from)")
	cmd.Flags().StringVar(&f.to, "to", "", "FILE only: read the recording up to this time (same forms as --from); the rows' --window ends here")
	cmd.Flags().StringVar(&f.failOn, "fail-on", "", "exit 3 when a finding of this severity or worse is present: info, warning or critical")
	_ = cmd.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions([]string{"info", "warning", "critical"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(report.AnalysisFormats, cobra.ShellCompDirectiveNoFileComp))
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if f.bin < 0 {
			return withCode(exitUsage, fmt.Errorf("--bin %v: want a positive width (or none: 10s, wider past an hour of recording)", f.bin))
		}
		if f.failOn != "" {
			if _, err := analysis.ParseSeverity(f.failOn); err != nil {
				return withCode(exitUsage, err)
			}
		}
		if reportFormat(f.format) {
			return nil
		}
		for _, ok := range report.AnalysisFormats {
			if f.format == ok || (f.format == "md" && ok == "markdown") {
				return nil
			}
		}
		return withCode(exitUsage, fmt.Errorf("unknown --format %q (want text, json, markdown or html)", f.format))
	}
	return cmd
}

// analyzeLive is analyze TARGET...: the targets scraped over --window.
func analyzeLive(cmd *cobra.Command, f *analyzeFlags, args []string) error {
	src, err := f.resolve(args, f.interval)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if f.window <= 0 {
		return withCode(exitUsage, errors.New("--window must be positive"))
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	opts := analyze.LiveOptions{Window: f.window, Interval: f.interval, Bin: f.bin, KeepGoing: f.keepGoing, Derived: f.derived()}
	showProgress := !f.quiet && isTerminal(os.Stderr)
	if showProgress {
		opts.Progress = func(round int) {
			fmt.Fprintf(cmd.ErrOrStderr(), "\rscraping %d target(s): round %d", len(src.Targets), round)
		}
	}
	rep, err := analyze.Live(ctx, src, opts)
	if showProgress {
		fmt.Fprintln(cmd.ErrOrStderr())
	}
	if err != nil {
		return noData(cmd, err)
	}
	if err := writeAnalysis(cmd, rep, f.format); err != nil {
		return err
	}
	return failOn(rep.Findings, f.failOn)
}

// noData prints the targets an analyze.NoDataError names, each on a
// line of its own after "retrytop:" as every error, with its error, and
// gives it exit code 2.
func noData(cmd *cobra.Command, err error) error {
	var nd *analyze.NoDataError
	if !errors.As(err, &nd) {
		return err
	}
	for _, s := range nd.Statuses {
		fmt.Fprintf(cmd.ErrOrStderr(), "retrytop: %s: %s\n", safetext.Terminal(s.Name), safetext.Terminal(report.TargetError(s.Name, s.LastError)))
	}
	return withCode(exitNoData, err)
}

// isTerminal reports whether f is a terminal, where a progress line that
// rewrites itself makes sense and raw bytes would be obeyed. Not every
// character device: /dev/null is one.
func isTerminal(f *os.File) bool {
	return term.IsTerminal(f.Fd())
}

// failOn turns findings at or above the named severity into exit code 3.
func failOn(findings []analysis.Finding, severity string) error {
	if severity == "" {
		return nil
	}
	min, err := analysis.ParseSeverity(severity)
	if err != nil {
		return withCode(exitUsage, err)
	}
	n := 0
	for _, fd := range findings {
		if fd.Severity >= min {
			n++
		}
	}
	if n > 0 {
		return withCode(exitFinding, fmt.Errorf("%d finding(s) at or above %s", n, min))
	}
	return nil
}
