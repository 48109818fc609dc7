package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/dashboard"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/policy"
	"github.com/retrytop/retrytop/replay"
	"github.com/retrytop/retrytop/sources"
	"github.com/retrytop/retrytop/ui"
	"github.com/retrytop/retrytop/whatif"
)

type replayFlags struct {
	dashboardFlags
	// src carries --config and --chain: custom dialects, dialects forced
	// by target name and declared chains apply to a replay as to watch.
	src    sourceFlags
	speed  float64
	from   string
	format string
	paused bool
	// noIndexCache: build the seek index every time, neither read nor
	// write it on disk.
	noIndexCache bool
}

func newReplayCmd() *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Replay a recording in the dashboard, like a video",
		Long: `replay opens a recording in the dashboard in REPLAY mode: the same views as
live, at the playhead, with a timeline bar under the header that shows the
position, the length and the bins where amplification or provider errors
spiked.

Keys: space play/pause, left/right step one scrape, shift+left/right jump
one minute, + and - change the speed (0.25x to 64x), g and G go to the
start and the end; ? shows the dashboard's other keys.

FILE is a retrytop dump, or (detected, or forced with --input-format) OpenMetrics
text with timestamps, a Prometheus query_range JSON result, a
VictoriaMetrics /api/v1/export file, or exposition snapshots with a
timestamp line before each (docs/dump-format.md).`,
		Example: `  retrytop replay incident.rtd
  retrytop replay incident.rtd --speed 8 --from 5m
  retrytop replay query_range.json --from 2025-03-04T03:10:00Z`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplay(cmd.Context(), cmd.ErrOrStderr(), &f, args[0])
		},
	}
	f.dashboardFlags.register(cmd)
	cmd.Flags().Float64Var(&f.speed, "speed", 1, "playback speed, 0.25 to 64")
	cmd.Flags().StringVar(&f.from, "from", "", "start at this time: an offset from the start (5m), RFC 3339, or Unix seconds")
	cmd.Flags().StringVar(&f.format, "input-format", "", "input format: "+strings.Join(dump.Formats, ", ")+" (default: detected)")
	// --input-format, as in analyze, export, report and whatif; the old
	// spelling stays, hidden, with a note.
	cmd.Flags().StringVar(&f.format, "format", "", "input format")
	_ = cmd.Flags().MarkDeprecated("format", "use --input-format")
	cmd.Flags().BoolVar(&f.paused, "paused", false, "open paused")
	cmd.Flags().BoolVar(&f.noIndexCache, "no-index-cache", false, "index the recording for seeks every time, without reading or writing the index under the user cache directory")
	cmd.Flags().StringVarP(&f.src.config, "config", "c", "", "config file whose dialects: (custom mappings), targets' dialects and chains: apply to the recording (docs/config.md)")
	cmd.Flags().StringArrayVar(&f.src.chains, "chain", nil, "a chain as name=URL,name=URL,... (only the names matter here; repeatable)")
	_ = cmd.RegisterFlagCompletionFunc("input-format", cobra.FixedCompletions(dump.Formats, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// parseFrom reads --from against the recording's start.
func parseFrom(s string, start time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return start.Add(d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Unix(0, int64(f*1e9)), nil
	}
	return time.Time{}, fmt.Errorf("--from %q: want an offset (5m), RFC 3339 or Unix seconds", s)
}

// openRecording opens FILE and reports what was skipped. filter (nil: all)
// selects the families parsed.
func openRecording(errw io.Writer, path, format string, filter func(string) bool) (dump.Recording, error) {
	if format != "" && !slices.Contains(dump.Formats, format) {
		return nil, withCode(exitUsage, fmt.Errorf("unknown --input-format %q (want one of %s)", format, strings.Join(dump.Formats, ", ")))
	}
	rec, err := dump.OpenRecording(path, dump.OpenOptions{Format: format, Filter: filter})
	if err != nil {
		return nil, withCode(exitNoData, err)
	}
	for _, p := range rec.Problems() {
		fmt.Fprintf(errw, "retrytop: %s\n", safetext.Terminal(p.Error()))
	}
	printNotes(errw, rec)
	if rec.Len() == 0 {
		rec.Close()
		return nil, withCode(exitNoData, fmt.Errorf("%s: no readable scrape", path))
	}
	return rec, nil
}

// openTranslated opens FILE to be read by a translator: only the families
// a dialect reads are parsed (its Filter), with parser (through its
// Parsing, so that a target no dialect reads has its families named by
// Unread). An import
// whose every scrape the filter empties (families no dialect reads, which
// an import drops before any parser) is opened whole instead: its targets
// are then translated, found unread and named, as live, rather than "no
// readable scrape", which is kept for a file with no scrape at all.
func openTranslated(errw io.Writer, path, format string, filter func(string) bool, parser expo.Parser, wrap func(expo.Parser) expo.Parser) (dump.Recording, error) {
	if format != "" && !slices.Contains(dump.Formats, format) {
		return nil, withCode(exitUsage, fmt.Errorf("unknown --input-format %q (want one of %s)", format, strings.Join(dump.Formats, ", ")))
	}
	rec, err := dump.OpenRecording(path, dump.OpenOptions{Format: format, Filter: filter, Parser: parser, Wrap: wrap})
	if err != nil {
		return nil, withCode(exitNoData, err)
	}
	if rec.Len() == 0 {
		rec.Close()
		return openRecording(errw, path, format, nil)
	}
	for _, p := range rec.Problems() {
		fmt.Fprintf(errw, "retrytop: %s\n", safetext.Terminal(p.Error()))
	}
	printNotes(errw, rec)
	return rec, nil
}

// printNotes says, once per file, how a dump without index frames was
// indexed (docs/dump-format.md, "Index frames").
func printNotes(errw io.Writer, rec dump.Recording) {
	for _, n := range dump.Notes(rec) {
		fmt.Fprintf(errw, "retrytop: note: %s\n", safetext.Terminal(n))
	}
}

func runReplay(ctx context.Context, errw io.Writer, f *replayFlags, path string) error {
	opts, err := f.options()
	if err != nil {
		return withCode(exitUsage, err)
	}
	if err := f.dashboardFlags.look(&opts, f.src.config); err != nil {
		return withCode(exitUsage, err)
	}
	if f.speed < replay.MinSpeed || f.speed > replay.MaxSpeed {
		return withCode(exitUsage, fmt.Errorf("--speed %v: want %v to %v", f.speed, replay.MinSpeed, replay.MaxSpeed))
	}
	if f.record != "" {
		return withCode(exitUsage, errors.New("--record does not apply to replay"))
	}
	// As live: only the families a dialect reads are parsed, and each
	// target's exposition is translated into the metric contract.
	rs, err := f.src.forRecordings()
	if err != nil {
		return withCode(exitUsage, err)
	}
	dialects := replay.NewDialects(rs.NewTranslator, rs.Forced)
	rec, err := openTranslated(errw, path, f.format, dialects.Filter, nil, dialects.Wrap)
	if err != nil {
		return err
	}
	defer rec.Close()
	from, err := parseFrom(f.from, rec.Time(0))
	if err != nil {
		return withCode(exitUsage, err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	player := newPlayer(rec, f, &opts, from, dialects.Transform)
	opts.Source = "recording " + path
	opts.Chains, opts.Links = rs.Chains, rs.Links
	opts.Derived = dialect.DerivedByDialect(rs.Dialects)
	opts.WhatIf = replayWhatIf(rec, path, rs)
	// The seek index: seeks it reaches restore the store at once
	// (docs/performance.md, "Replay seek"); its memory comes out of
	// --memory-limit. Read from the cache when an earlier replay of the
	// same recording, dialects and build wrote it; built otherwise.
	bg := &replay.Background{Player: player, Path: path, NoCache: f.noIndexCache, KeyParts: indexKeyParts(f, rs)}
	src := dialects.Source(player)
	opts.Status = replay.IndexBadge(player, sources.UnreadBadge(dialects.Latest, src.Statuses, opts.Status))
	err = dashboard.Run(ctx, src, opts, bg.Run)
	// Said before the dashboard took the screen; said again now.
	for _, p := range rec.Problems() {
		fmt.Fprintf(errw, "retrytop: %s\n", safetext.Terminal(p.Error()))
	}
	for _, n := range bg.Notes() {
		fmt.Fprintf(errw, "retrytop: note: %s\n", safetext.Terminal(n))
	}
	if perr := player.Err(); perr != nil {
		fmt.Fprintf(errw, "retrytop: %s\n", safetext.Terminal(perr.Error()))
	}
	return err
}

// newPlayer makes the replay's player at from and puts it into opts.
func newPlayer(rec dump.Recording, f *replayFlags, opts *ui.Options, from time.Time, transform func() replay.Transform) *replay.Player {
	probe := replay.New(rec, replay.Options{})
	interval := probe.Interval()
	player := replay.New(rec, replay.Options{
		Speed:         f.speed,
		From:          from,
		Play:          !f.paused,
		Store:         model.StoreConfig{History: max(int(f.history/interval), 2)},
		Lookback:      max(5*time.Minute, f.window+opts.Bin+interval),
		QuickLookback: f.window,
		NewTransform:  transform,
	})
	player.Tick()
	opts.Mode = ui.ModeReplay
	opts.Player = player
	// A step or a jump shows at once (live frames wait up to 1 s to fold
	// the targets' scrapes into one).
	opts.MinFrameGap = 100 * time.Millisecond
	opts.Now = func() time.Time {
		pos, _, _ := player.Position()
		return pos
	}
	return player
}

// replayWhatIf is the replay's w pane: the recording under other retry
// policies, as retrytop whatif prints it, on a recording of its own (the
// player reads this one). The dashboard cancels ctx when the pane
// closes: the comparison stops at the next phase.
func replayWhatIf(rec dump.Recording, path string, rs *sources.Recording) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		fork, err := rec.Fork()
		if err != nil {
			return "", err
		}
		specs, err := policy.Parse(defaultPolicies)
		if err != nil {
			return "", err
		}
		if err := ctx.Err(); err != nil {
			return "", err
		}
		_, translate := rs.Translator()
		rep, err := whatIfReport(fork, path, translate, time.Second, specs)
		if err != nil {
			return "", err
		}
		if err := ctx.Err(); err != nil {
			return "", err
		}
		var b strings.Builder
		err = whatif.Write(&b, rep, "text")
		return b.String(), err
	}
}

// indexKeyParts is what besides the recording decides its seek index:
// the dialects in use (the config file's bytes, dialects forced by
// target, the input format) and this build of retrytop (its executable's
// digest: another build may translate differently).
func indexKeyParts(f *replayFlags, rs *sources.Recording) func() []string {
	return func() []string {
		parts := []string{"input-format " + f.format}
		if f.src.config != "" {
			b, err := os.ReadFile(f.src.config)
			if err != nil {
				b = []byte("unreadable: " + err.Error())
			}
			parts = append(parts, "config "+string(b))
		}
		forced := make([]string, 0, len(rs.Forced))
		for t, d := range rs.Forced {
			forced = append(forced, t+"@"+d)
		}
		slices.Sort(forced)
		parts = append(parts, "forced "+strings.Join(forced, ","))
		return append(parts, "build "+replay.BuildDigest())
	}
}
