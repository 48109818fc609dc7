package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
	"github.com/retrytop/retrytop/sim"
	"github.com/retrytop/retrytop/sources"
)

// demoDashboardDuration is the default length of an interactive demo: long
// enough to watch the slowdown build and the recovery with a 30 s window.
const demoDashboardDuration = 3 * time.Minute

type demoFlags struct {
	dashboardFlags
	scenario   string
	duration   time.Duration
	headless   bool
	listenBase int
	compare    bool
	rate       float64
	hiddenHop  bool
	post       bool
	breaker    bool
	seed       uint64
	every      time.Duration
}

func newDemoCmd() *cobra.Command {
	var f demoFlags
	return demoCmdWith(&f)
}

// demoCmdWith is the demo verb with its flags bound to f.
func demoCmdWith(f *demoFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a real overload incident on loopback and watch it",
		Long: `demo starts a small stack on 127.0.0.1 — an open-loop load generator
(the browser), an app, a client that owns retries, and a provider with 4
execution slots — each a real HTTP service with its own /metrics. The
provider is healthy, then slows from 20 ms to 120 ms, then recovers, and the
dashboard shows what the retry policy does to it.

Scenarios: ` + strings.Join(sim.ScenarioNames(), ", ") + ` (docs/scenarios.md).

With --headless it prints the sim's ground truth per hop every few seconds
instead of opening the dashboard. With --compare it runs baseline and
bounded on identical traffic and prints the seed article's comparison.`,
		Example: `  retrytop demo                               # the dashboard on the baseline scenario
  retrytop demo --scenario chain              # 3 x 3 x 3 = 27 attempts worst case
  retrytop demo --headless --duration 20s     # ground truth tables, no TUI
  retrytop demo --compare                     # baseline vs bounded on identical traffic
  retrytop demo --post                        # the client retries a POST: UNSAFE_RETRIES
  retrytop demo --breaker --duration 2m       # a breaker that stays open: BREAKER_STUCK_OPEN`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			opts := f.simOptions()
			out := cmd.OutOrStdout()
			if f.compare {
				return runCompare(ctx, out, opts)
			}
			sc, ok := sim.ScenarioByName(f.scenario)
			if !ok {
				return withCode(exitUsage, fmt.Errorf("unknown scenario %q (want one of %s)", f.scenario, strings.Join(sim.ScenarioNames(), ", ")))
			}
			if f.headless {
				return runHeadless(ctx, out, sc, opts, f.every)
			}
			if !cmd.Flags().Changed("duration") {
				opts.Duration = demoDashboardDuration
			}
			return runDemoDashboard(ctx, f, sc, opts)
		},
	}
	f.dashboardFlags.register(cmd)
	cmd.Flags().StringVarP(&f.scenario, "scenario", "s", "baseline", "scenario to run: "+strings.Join(sim.ScenarioNames(), ", "))
	cmd.Flags().DurationVarP(&f.duration, "duration", "d", 0, "total length of the phases, scaled in proportion (default: the scenario's 50s headless, 3m with the dashboard)")
	cmd.Flags().BoolVar(&f.headless, "headless", false, "print ground-truth tables instead of opening the dashboard")
	cmd.Flags().IntVar(&f.listenBase, "listen-base", 0, "first loopback port (browser, then each layer, then the provider); 0 picks free ports")
	cmd.Flags().BoolVar(&f.compare, "compare", false, "run baseline and bounded on identical traffic and print the comparison")
	cmd.Flags().Float64Var(&f.rate, "rate", 0, "originals per second (default: the scenario's, 50)")
	cmd.Flags().BoolVar(&f.hiddenHop, "hidden-hop", false, "insert a retrying proxy that exports no metrics before the provider")
	cmd.Flags().BoolVar(&f.post, "post", false, "the client sends POST without an idempotency key and retries it anyway (labelled method=\"POST\")")
	cmd.Flags().BoolVar(&f.breaker, "breaker", false, "put a circuit breaker in front of the client's retries that needs 45 good probes to close")
	cmd.Flags().Uint64Var(&f.seed, "seed", 1, "seed for error injection and jitter")
	cmd.Flags().DurationVar(&f.every, "print-every", 5*time.Second, "with --headless, how often to print the table")
	_ = cmd.RegisterFlagCompletionFunc("scenario", cobra.FixedCompletions(sim.ScenarioNames(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// simOptions are the sim's options the flags ask for.
func (f *demoFlags) simOptions() sim.Options {
	return sim.Options{
		ListenBase:    f.listenBase,
		Duration:      f.duration,
		Rate:          f.rate,
		HiddenHop:     f.hiddenHop,
		NonIdempotent: f.post,
		Breaker:       f.breaker,
		Seed:          f.seed,
	}
}

func printTargets(w io.Writer, s *sim.Stack) {
	fmt.Fprintf(w, "scenario %s: serving on loopback\n", s.Scenario().Name)
	for _, t := range s.Targets() {
		fmt.Fprintf(w, "  %-9s %-9s %s\n", t.Name, t.Layer, t.URL)
	}
}

func runHeadless(ctx context.Context, w io.Writer, sc sim.Scenario, opts sim.Options, every time.Duration) error {
	s, err := sim.Start(ctx, sc, opts)
	if err != nil {
		return err
	}
	defer s.Close()
	printTargets(w, s)
	if every <= 0 {
		every = 5 * time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(w, "\ninterrupted; final ground truth:")
			s.Truth().WriteTable(w)
			return nil
		case <-s.Done():
			fmt.Fprintln(w, "\nfinal ground truth:")
			s.Truth().WriteTable(w)
			return s.Close()
		case <-tick.C:
			fmt.Fprintln(w)
			s.Truth().WriteTable(w)
		}
	}
}

func runCompare(ctx context.Context, w io.Writer, opts sim.Options) error {
	opts.OnStart = func(s *sim.Stack) {
		fmt.Fprintf(w, "running %s...\n", s.Scenario().Name)
	}
	res, err := sim.Compare(ctx, opts)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return withCode(exitUsage, errors.New("interrupted"))
		}
		return err
	}
	fmt.Fprintln(w)
	res.WriteTable(w)
	return nil
}

func runDemoDashboard(ctx context.Context, f *demoFlags, sc sim.Scenario, opts sim.Options) (err error) {
	uiOpts, err := f.options()
	if err != nil {
		return withCode(exitUsage, err)
	}
	// The load goes on after the schedule ends, until the dashboard
	// closes, so the recovery can be read at leisure.
	opts.Hold = true
	s, err := sim.Start(ctx, sc, opts)
	if err != nil {
		return err
	}
	defer s.Close()
	// Before the dashboard takes the screen, and again after it closes:
	// the terminal's scrollback keeps where the targets are.
	printDemoTargets(os.Stderr, s.Targets())
	var targets []scrape.Target
	for _, t := range s.Targets() {
		tgt, err := scrape.ParseTarget(t.Name + "=" + t.URL)
		if err != nil {
			return err
		}
		tgt.Layer, tgt.Interval = t.Layer, f.interval
		targets = append(targets, tgt)
	}
	uiOpts.Badges = append(uiOpts.Badges, "DEMO "+sc.Name)
	uiOpts.Source = "demo " + sc.Name + " on loopback, scrapes every " + f.interval.String()
	var copts scrape.Options
	closeRec, err := f.startRecording(&uiOpts, &copts)
	if err != nil {
		return withCode(exitUsage, err)
	}
	defer func() { err = closeRecording(err, closeRec) }()
	// The header tells the story: the phase and the time it still lasts,
	// then that the scenario has ended, beside any recording badge.
	rec := uiOpts.Status
	uiOpts.Status = func() string {
		st := s.PhaseStatus()
		if rec != nil {
			if r := rec(); r != "" {
				st += "  " + r
			}
		}
		return st
	}
	src := &sources.Sources{Targets: targets, Translate: dialect.Auto()}
	scraper := src.Scraper(model.NewStore(f.storeConfig()), copts)
	// The stack closes when the dashboard does.
	err = runDashboard(ctx, scraper, uiOpts)
	printDemoTargets(os.Stderr, s.Targets())
	return err
}

// printDemoTargets says where the demo's targets are, so a second
// terminal can analyze or record them while the demo runs.
func printDemoTargets(w io.Writer, targets []sim.Target) {
	// On a line of its own: the terminal's cursor may still sit on the
	// dashboard's last line.
	fmt.Fprintln(w, "\ndemo targets (while the demo runs, another terminal can read them with retrytop analyze; i lists them):")
	for _, t := range targets {
		fmt.Fprintf(w, "  %s=%s\n", t.Name, t.URL)
	}
}
