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
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/collect"
	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/policy"
	"github.com/retrytop/retrytop/replay"
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
		fmt.Fprintf(errw, "retrytop: %s\n", ui.Sanitize(p.Error()))
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
func openTranslated(errw io.Writer, path, format string, filter func(string) bool, parser collect.Parser, wrap func(collect.Parser) collect.Parser) (dump.Recording, error) {
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
		fmt.Fprintf(errw, "retrytop: %s\n", ui.Sanitize(p.Error()))
	}
	printNotes(errw, rec)
	return rec, nil
}

// printNotes says, once per file, how a dump without index frames was
// indexed (docs/dump-format.md, "Index frames").
func printNotes(errw io.Writer, rec dump.Recording) {
	for _, n := range dump.Notes(rec) {
		fmt.Fprintf(errw, "retrytop: note: %s\n", ui.Sanitize(n))
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
	dialects := newReplayDialects(rs)
	rec, err := openTranslated(errw, path, f.format, dialects.filter, dialects.parser(), nil)
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
	probe := replay.New(rec, replay.Options{})
	interval := probe.Interval()
	player := replay.New(rec, replay.Options{
		Speed:         f.speed,
		From:          from,
		Play:          !f.paused,
		Store:         model.StoreConfig{History: max(int(f.history/interval), 2)},
		Lookback:      max(5*time.Minute, f.window+opts.Bin+interval),
		QuickLookback: f.window,
		NewTransform:  dialects.transform,
	})
	player.Tick()
	opts.Mode = ui.ModeReplay
	opts.Source = "recording " + path
	opts.Player = player
	opts.Chains, opts.Links = rs.chains, rs.links
	opts.Derived = derivedByDialect(rs.dialects)
	// w: the recording under other retry policies (issue 18), as
	// retrytop whatif prints it, on a recording of its own (the player
	// reads this one).
	// The dashboard cancels ctx when the pane closes: the comparison
	// stops at the next phase.
	opts.WhatIf = func(ctx context.Context) (string, error) {
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
		_, translate := rs.translator()
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
	// A step or a jump shows at once (live frames wait up to 1 s to fold
	// the targets' scrapes into one).
	opts.MinFrameGap = 100 * time.Millisecond
	opts.Now = func() time.Time {
		pos, _, _ := player.Position()
		return pos
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{}, 3)
	go func() { _ = player.Run(ctx); done <- struct{}{} }()
	go func() { _ = player.ComputeSpikes(ctx); done <- struct{}{} }()
	// The seek index: seeks it reaches restore the store at once
	// (docs/performance.md, "Replay seek"); its memory comes out of
	// --memory-limit. Read from the cache when an earlier replay of the
	// same recording, dialects and build wrote it; built otherwise.
	var notes indexNotes
	go func() {
		replay.IndexWithCache(ctx, player, path, f.noIndexCache, indexKeyParts(f, rs), notes.add)
		done <- struct{}{}
	}()
	opts.Status = indexBadge(player, unreadBadge(dialects.latest.Load, dialects.source(player).Statuses, opts.Status))
	err = ui.Run(ctx, dialects.source(player), opts)
	cancel()
	<-done
	<-done
	<-done
	// Said before the dashboard took the screen; said again now.
	for _, p := range rec.Problems() {
		fmt.Fprintf(errw, "retrytop: %s\n", ui.Sanitize(p.Error()))
	}
	for _, n := range notes.all() {
		fmt.Fprintf(errw, "retrytop: note: %s\n", ui.Sanitize(n))
	}
	if perr := player.Err(); perr != nil {
		fmt.Fprintf(errw, "retrytop: %s\n", ui.Sanitize(perr.Error()))
	}
	return err
}

// indexKeyParts is what besides the recording decides its seek index:
// the dialects in use (the config file's bytes, dialects forced by
// target, the input format) and this build of retrytop (its executable's
// digest: another build may translate differently).
func indexKeyParts(f *replayFlags, rs *recordingSources) func() []string {
	return func() []string {
		parts := []string{"input-format " + f.format}
		if f.src.config != "" {
			b, err := os.ReadFile(f.src.config)
			if err != nil {
				b = []byte("unreadable: " + err.Error())
			}
			parts = append(parts, "config "+string(b))
		}
		forced := make([]string, 0, len(rs.forced))
		for t, d := range rs.forced {
			forced = append(forced, t+"@"+d)
		}
		slices.Sort(forced)
		parts = append(parts, "forced "+strings.Join(forced, ","))
		return append(parts, "build "+replay.BuildDigest())
	}
}

// indexNotes are the notes of the seek index's cache, said after the
// dashboard leaves the screen.
type indexNotes struct {
	mu    sync.Mutex
	notes []string
}

func (n *indexNotes) add(s string) {
	n.mu.Lock()
	n.notes = append(n.notes, s)
	n.mu.Unlock()
}

func (n *indexNotes) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.notes)
}

// indexBadge puts "indexing N %" before prev's badge while the player's
// seek index is built (seeks past it load the lookback, slower), and says
// where it stopped when it gave up (its budget, half of --memory-limit).
func indexBadge(p *replay.Player, prev func() string) func() string {
	return func() string {
		b := ""
		switch done, total, stopped := p.IndexProgress(); {
		case stopped:
			b = fmt.Sprintf("index stopped at %d %%", 100*done/max(total, 1))
		case done < total:
			b = fmt.Sprintf("indexing %d %%", 100*done/max(total, 1))
		}
		if p := prev(); p != "" && b != "" {
			b += " " + p
		} else if p != "" {
			b = p
		}
		return b
	}
}

// replayDialects follows what the replay's translators (a fresh one for
// every seek, one for the spike pass: dialects keep per-target state)
// find of each target, so the dashboard shows, as live, the dialects that
// read it (sticky: any translator that read it counts) and, for a target
// none has read, Unread's words.
type replayDialects struct {
	rs     *recordingSources
	filter func(string) bool
	// latest is the translator made last; the recording's parser and the
	// header badge ask it.
	latest atomic.Pointer[dialect.Translator]

	mu    sync.Mutex
	order []string                   // dialect names in detection order
	read  map[string]map[string]bool // target -> dialects that read it
	names map[string]string          // target -> read's names joined by "+"
	seen  map[string][]string        // target -> its families (parser), nil until parsed
}

func newReplayDialects(rs *recordingSources) *replayDialects {
	tr, _ := rs.translator()
	d := &replayDialects{rs: rs, filter: tr.Filter, order: tr.Names(), read: map[string]map[string]bool{}, names: map[string]string{}, seen: map[string][]string{}}
	d.latest.Store(tr)
	return d
}

// transform makes a translator and the function that reads the replay's
// snapshots with it (replay.Options.NewTransform).
func (d *replayDialects) transform() replay.Transform {
	tr, _ := d.rs.translator()
	// Stored first: a name the parser notes after this copy is told to
	// the translator it loads, which is tr or a newer one.
	d.latest.Store(tr)
	d.mu.Lock()
	for target, names := range d.seen {
		if names != nil {
			tr.Saw(target, names)
		}
	}
	d.mu.Unlock()
	return func(s *model.Snapshot) (*model.Snapshot, error) {
		out, names, err := tr.Translate(d.rs.forced[s.Target], s)
		if err == nil && names != "" {
			d.note(s.Target, names)
		}
		return out, err
	}
}

func (d *replayDialects) note(target, names string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.names[target] == names {
		return
	}
	set := d.read[target]
	if set == nil {
		set = map[string]bool{}
		d.read[target] = set
	}
	for _, n := range strings.Split(names, "+") {
		set[n] = true
	}
	var all []string
	for _, n := range d.order {
		if set[n] {
			all = append(all, n)
		}
	}
	d.names[target] = collect.Sanitize(strings.Join(all, "+"))
}

// parser parses the recording: a target's first body whole, once for
// all the replay's translators (Translator.Saw: Unread names its
// families, which the filter drops), the rest with the filter. The player
// parses ahead of translating, in parallel, so a translator cannot say
// which targets it will find unread when their bodies are parsed.
func (d *replayDialects) parser() collect.Parser {
	parse := collect.ExpfmtParser{}.Parse
	return parserFunc(func(target string, body []byte, ct string, filter func(string) bool) ([]model.Family, error) {
		d.mu.Lock()
		_, looked := d.seen[target]
		if !looked {
			d.seen[target] = nil
		}
		d.mu.Unlock()
		if looked || filter == nil {
			return parse(target, body, ct, filter)
		}
		kept, names, err := dialect.ParseNamingAll(parse, target, body, ct, filter)
		if names == nil {
			return kept, err // as without the whole parse
		}
		d.mu.Lock()
		d.seen[target] = names
		d.mu.Unlock()
		d.latest.Load().Saw(target, names)
		return kept, nil
	})
}

// source is the player with each target's dialects in its statuses.
func (d *replayDialects) source(p *replay.Player) dialectSource {
	return dialectSource{Player: p, d: d}
}

type dialectSource struct {
	*replay.Player
	d *replayDialects
}

// Statuses are the player's, with the dialects that read each target.
func (s dialectSource) Statuses() []model.TargetStatus {
	st := s.Player.Statuses()
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	for i := range st {
		if st[i].Dialect == "" {
			st[i].Dialect = s.d.names[st[i].Name]
			if st[i].Dialect == "" {
				st[i].Dialect = s.d.rs.forced[st[i].Name]
			}
		}
	}
	return st
}
