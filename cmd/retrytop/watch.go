package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/scrape"

	"github.com/retrytop/retrytop/dashboard"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/report"
	"github.com/retrytop/retrytop/sources"
	"github.com/retrytop/retrytop/ui"
)

// dashboardFlags are the flags every command that opens the dashboard takes.
type dashboardFlags struct {
	interval time.Duration
	window   time.Duration
	charset  string
	noColor  bool
	history  time.Duration
	// record is --record's dump file (record.go: startRecording).
	record      string
	recordForce bool
	utc         bool
	noMouse     bool
	theme       string
}

func (f *dashboardFlags) register(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&f.interval, "interval", scrape.DefaultInterval, "scrape interval")
	cmd.Flags().DurationVarP(&f.window, "window", "w", analysis.DefaultWindow, "rate window (change live with [ and ])")
	cmd.Flags().StringVar(&f.charset, "charset", "", "chart glyphs: braille, block or ascii (default block; ascii when the locale is not UTF-8 or TERM=linux)")
	cmd.Flags().BoolVar(&f.noColor, "no-color", false, "no colours (also when NO_COLOR is set)")
	cmd.Flags().DurationVar(&f.history, "history", 15*time.Minute, "history kept per series")
	cmd.Flags().StringVar(&f.record, "record", "", "also record every scrape to this dump file (replay it with retrytop replay)")
	cmd.Flags().BoolVar(&f.recordForce, "record-force", false, "overwrite the --record file if it exists")
	cmd.Flags().BoolVar(&f.utc, "utc", false, "show clock times in UTC (default: local time)")
	cmd.Flags().BoolVar(&f.noMouse, "no-mouse", false, "leave the mouse to the terminal (no clicks or wheel; text selects as usual)")
	cmd.Flags().StringVar(&f.theme, "theme", "", "colours: "+strings.Join(ui.ThemeNames, ", ")+" (default terminal: the terminal's own 16 colours)")
	_ = cmd.RegisterFlagCompletionFunc("theme", cobra.FixedCompletions(ui.ThemeNames, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("charset", cobra.FixedCompletions([]string{"braille", "block", "ascii"}, cobra.ShellCompDirectiveNoFileComp))
}

// options turns the flags into dashboard options.
func (f *dashboardFlags) options() (ui.Options, error) {
	opts := ui.Options{
		Window:  f.window,
		Charset: ui.CharsetFromEnv(os.Getenv),
		NoColor: f.noColor || ui.NoColorFromEnv(os.Getenv),
		NoMouse: f.noMouse,
	}
	ver, rev, _ := buildInfo()
	opts.Version = ver + " (" + rev + ")"
	// ctrl+s: the screen as text, as ANSI and as SVG, in the working
	// directory (report.SaveScreen never overwrites).
	opts.SaveScreen = func(view string) ([]string, error) {
		dir, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		return report.SaveScreen(dir, time.Now(), view)
	}
	if f.utc {
		opts.Location = time.UTC
	}
	if f.theme != "" {
		th, err := ui.ParseTheme(f.theme)
		if err != nil {
			return opts, err
		}
		opts.Theme = &th
	}
	if f.charset != "" {
		cs, err := ui.ParseCharset(f.charset)
		if err != nil {
			return opts, err
		}
		opts.Charset = cs
	}
	if f.interval <= 0 || f.window <= 0 || f.history <= 0 {
		return opts, fmt.Errorf("--interval, --window and --history must be positive")
	}
	return opts, nil
}

// storeConfig sizes the store to hold --history at --interval.
func (f *dashboardFlags) storeConfig() model.StoreConfig {
	return model.StoreConfig{History: int(f.history / f.interval)}
}

func newWatchCmd() *cobra.Command {
	var f dashboardFlags
	var src sourceFlags
	var pf promFlags
	cmd := &cobra.Command{
		Use:   "watch TARGET...",
		Short: "Open the live dashboard on Prometheus endpoints",
		Long: `watch scrapes every target at the interval and shows, per target and
dependency, originals vs attempts and their ratio (amplification), retries,
rescues, budget denials, admission rejections kept apart from provider
errors, timeouts, active calls vs limit, pool wait and latency split into
successes and fast failures. A dead target is shown as down while the
others keep updating.

TARGET is URL or name=URL. Press ? in the dashboard for the keys.`,
		Example: `  retrytop watch app=http://127.0.0.1:9102/metrics client=http://127.0.0.1:9103/metrics
  retrytop http://10.0.0.5:8080/metrics --window 1m      # watch is the default verb
  NO_COLOR=1 retrytop watch --charset ascii http://127.0.0.1:9102/metrics
  retrytop watch --file-sd '/etc/prometheus/targets/*.json'        # re-read when the files change
  retrytop watch --prometheus-config /etc/prometheus/prometheus.yml --job checkout --interval 2s`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if pf.url != "" {
				return watchPrometheus(cmd.Context(), &pf, &src, &f, args)
			}
			return runWatch(cmd.Context(), &f, &src, args)
		},
	}
	f.register(cmd)
	src.register(cmd)
	src.registerOTLP(cmd)
	pf.register(cmd)
	return cmd
}

func runWatch(ctx context.Context, f *dashboardFlags, src *sourceFlags, args []string) (err error) {
	opts, err := f.options()
	if err != nil {
		return withCode(exitUsage, err)
	}
	if err := f.look(&opts, src.config); err != nil {
		return withCode(exitUsage, err)
	}
	srcs, err := src.resolve(args, f.interval)
	if err != nil {
		return withCode(exitUsage, err)
	}
	opts.Chains, opts.Links = srcs.Chains, srcs.Links
	opts.Derived = src.derived()
	opts.Status = srcs.Status(opts.Status) // discovery file problems
	opts.Source = "scrapes every " + f.interval.String()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var copts scrape.Options
	closeRec, err := f.startRecording(&opts, &copts)
	if err != nil {
		return withCode(exitUsage, err)
	}
	defer func() { err = closeRecording(err, closeRec) }()
	scraper := srcs.Scraper(model.NewStore(f.storeConfig()), copts)
	opts.Status = sources.UnreadBadge(func() *dialect.Translator { return srcs.Translate }, scraper.Statuses, opts.Status)
	return runDashboard(ctx, scraper, opts)
}

// runDashboard scrapes in the background while the dashboard runs, and
// stops both when either ends.
func runDashboard(ctx context.Context, scraper *scrape.Scraper, opts ui.Options) error {
	defer dashboard.LiveGC()()
	return dashboard.Run(ctx, scraper, opts, func(ctx context.Context) { _ = scraper.Run(ctx) })
}
