package ui

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// Minimum terminal size; below it the dashboard asks for a bigger one.
const (
	MinWidth  = 80
	MinHeight = 24
	// wideWidth is where panels go side by side.
	wideWidth = 100
)

// viewID names the main views. tab cycles overview, a detail (of the
// selected caller or service row) and chains.
type viewID int

const (
	viewOverview viewID = iota
	viewDetail
	viewChains
	// viewService is the detail of a service row.
	viewService
	// viewGroup is the detail of a group row (replicas folded by layer).
	viewGroup
	// viewFindings is every finding whole (f); viewInfo what is watched (i).
	viewFindings
	viewInfo
	// viewWhatIf is the recording under other retry policies (w, replay).
	viewWhatIf
)

// common is the state every sub-model reads: size, styles, glyphs, keys
// and options. Sub-models hold a pointer to the root's copy.
type common struct {
	opts          Options
	width, height int
	st            styles
	g             *glyphs
	keys          KeyMap
	window        time.Duration
	// chartRange is the charts' time range (0: all the data held).
	chartRange time.Duration
}

// Model is the root bubbletea model: it owns the frames and the mode
// (paused, view, window) and delegates rendering and view-specific keys to
// its sub-models. Use it through a pointer (NewModel).
type Model struct {
	c    *common
	src  Source
	done <-chan struct{}
	// ctx is the program's (Run's): commands that can be cancelled run
	// under a context derived from it.
	ctx   context.Context
	build buildFunc

	view      viewID
	showHelp  bool
	windowIdx int
	rangeIdx  int

	live         *model.Frame // the newest frame built
	shown        *model.Frame // the frame on screen (== live unless paused)
	shownSeq     uint64       // bumped whenever shown changes
	paused       bool
	closed       bool
	findings     []string // the strip from FindingsMsg (sanitised)
	shownDerived derived  // findings, chains and services of the frame on screen
	liveDerived  derived  // those of the newest frame, shown on resume
	liveSeeking  bool     // the newest frame was asked for while the replay was seeking
	chains       chainsView
	// grouping folds the rows of replicas (targets sharing a layer) into
	// one row per (layer, dependency). It starts on: it changes nothing
	// unless some layer has more than one target, and then tens of
	// near-identical replica rows would bury every other row; a replica
	// is one enter away in its group's detail, or a press of the key.
	grouping bool
	// following: the cursor, charts and detail follow the worst row
	// (worstRow) as frames arrive, until the user moves the cursor; the
	// Follow key turns it back on.
	following bool

	now time.Time
	// The header clock moves on frames and keys; when no frame came for
	// StaleAfter, a tea.Tick moves it once a second (every five after a
	// minute of silence). One tick is on its way at a time (quietArmed):
	// a frame only notes when it came (frameAt, by Options.Now) and
	// counts itself (frameSeq), and the tick that finds a frame younger
	// than StaleAfter waits for the rest of the spell, so while data flows
	// no tick moves the clock. quietSeq is frameSeq when the tick on its
	// way was armed.
	quietArmed bool
	quietSeq   uint64
	frameSeq   uint64
	frameAt    time.Time

	// Live frames wait for the data (waitCmd): pending, an update has
	// come and waits for its frame; settled, its burst had time to land
	// (settledMsg); gapClosed, MinFrameGap has not passed since the last
	// live frame (frameGapMsg).
	pending, settled, gapClosed bool

	header    headerModel
	overview  overviewModel
	detail    detailModel
	svcDetail serviceDetailModel
	grpDetail groupDetailModel
	help      help.Model

	// Mouse: where the body starts on screen, the tab strip's names and
	// the last click on a row (double clicks open it).
	bodyTop   int
	tabs      []tabHit
	tabKey    tabKey
	tabLine   line
	lastClick clickAt
	// saved says where the last ctrl+s wrote the screen (or why it could
	// not), until the next key.
	saved string
	// hint says why the last key did nothing here ("a: no replicas to
	// fold"), in the footer until the next key.
	hint string
	// helpView scrolls the help when it is taller than the screen;
	// paneView the findings and info panes.
	helpView scroller
	paneView scroller
	// whatIf is the what-if pane's content (whatif.go).
	whatIf whatIfState

	// cache keeps the targets' series from one live frame to the next
	// (nil in replay).
	cache *analysis.FrameCache

	lw         lineWriter // scratch for header, findings and footer
	overflows  int        // lines cut at the screen edge (layout slack; tests want 0)
	dirty      bool
	viewCache  string
	lines      []line
	footerLine line
	footerKey  [4]int
}

// asciiFold maps the one-column non-ASCII characters that text outside
// the glyph tables may carry to one ASCII character each.
var asciiFold = strings.NewReplacer(
	"…", "~", "·", "-", "•", "-", "↑", "^", "↓", "v", "←", "<", "→", ">",
	"±", "+", "×", "x", "─", "-", "│", "|", "●", "O", "►", ">", "µ", "u",
)

// NewModel returns the dashboard model for src. It does no I/O: frames are
// built by the commands Init and Update return.
func NewModel(src Source, opts Options) *Model {
	opts = opts.withDefaults()
	keys := DefaultKeyMap()
	if opts.Keys != nil {
		keys = *opts.Keys
	}
	theme := DefaultTheme()
	if opts.Theme != nil {
		theme = *opts.Theme
	}
	c := &common{
		opts:       opts,
		st:         newStyles(theme, opts.Renderer, opts.NoColor),
		g:          glyphsFor(opts.Charset),
		keys:       keys,
		window:     opts.Window,
		chartRange: opts.Range,
	}
	m := &Model{
		c:         c,
		src:       src,
		build:     buildFrame,
		ctx:       context.Background(),
		now:       opts.Now(),
		dirty:     true,
		grouping:  true,
		following: true,
	}
	// A replay's seek replaces its store: the cache starts over then
	// (FrameCache.lock), keeping its selection buffers.
	m.cache = analysis.NewFrameCache()
	for i, w := range opts.Windows {
		if w == opts.Window {
			m.windowIdx = i
		}
	}
	m.rangeIdx = slices.Index(opts.Ranges, opts.Range)
	m.header = headerModel{c: c}
	m.overview = newOverview(c)
	m.detail = detailModel{scroller: scroller{c: c, pane: painter{c: c}}}
	m.svcDetail = serviceDetailModel{scroller: scroller{c: c, pane: painter{c: c}}}
	m.grpDetail = groupDetailModel{scroller: scroller{c: c, pane: painter{c: c}}}
	m.help = newHelp(c, theme)
	m.helpView = scroller{c: c, pane: painter{c: c}}
	m.paneView = scroller{c: c, pane: painter{c: c}}
	m.chains = chainsView{c: c}
	return m
}

// stripLines are the findings strip: those sent with FindingsMsg, or else
// the ones derived from the frame on screen.
func (m *Model) stripLines() []string {
	if len(m.findings) > 0 {
		return m.findings
	}
	d := &m.shownDerived
	if !m.showHelp && (m.view == viewFindings || m.view == viewInfo || m.view == viewWhatIf ||
		(m.view == viewOverview && m.overview.tall() && len(d.found) > 0)) {
		// The tall overview and the panes list the findings whole; the
		// strip keeps only what is not a finding (the series cap).
		return d.findings[:min(d.capLines, len(d.findings))]
	}
	return d.findings
}

// Init builds a first frame at once and starts waiting for updates.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{
		buildCmd(m.src, m.build, m.request(0), frameRebuild),
		waitCmd(m.src, m.done),
	}
	if cmd := m.armQuiet(m.c.opts.StaleAfter); cmd != nil {
		cmds = append(cmds, cmd)
	}
	return tea.Batch(cmds...)
}

// armQuiet starts the quiet-spell tick, to fire after d, unless one is
// on its way already.
func (m *Model) armQuiet(d time.Duration) tea.Cmd {
	if m.c.opts.StaleAfter <= 0 || m.quietArmed {
		return nil
	}
	m.quietArmed, m.quietSeq = true, m.frameSeq
	return tea.Tick(d, func(time.Time) tea.Msg { return clockMsg{} })
}

// onClock moves the header clock when no frame came for StaleAfter.
func (m *Model) onClock() tea.Cmd {
	m.quietArmed = false
	stale := m.c.opts.StaleAfter
	now := m.c.opts.Now()
	if quietFor := now.Sub(m.frameAt); !m.frameAt.IsZero() && quietFor < stale {
		if m.frameSeq != m.quietSeq {
			// A frame came while this tick was on its way: wait for
			// the rest of the spell from it.
			return m.armQuiet(stale - quietFor)
		}
		// The clock stood still (a paused replay's): the next frame
		// arms the tick again.
		return nil
	}
	m.now = now
	m.dirty = true
	// Seconds matter in the first minute of silence; after that the age
	// is shown in minutes and a tick every 5 s is enough.
	every := time.Second
	if m.live != nil && !m.live.Time.IsZero() && m.now.Sub(m.live.Time) > time.Minute {
		every = 5 * time.Second
	}
	return m.armQuiet(every)
}

// onUpdate notes that the source has new data; its frame is built once
// the burst settled and MinFrameGap passed (maybeBuild).
func (m *Model) onUpdate() tea.Cmd {
	m.pending = true
	if settle := m.settle(); settle > 0 {
		return tea.Tick(settle, func(time.Time) tea.Msg { return settledMsg{} })
	}
	m.settled = true
	return m.maybeBuild()
}

// maybeBuild builds the live frame an update waits for, when it may.
func (m *Model) maybeBuild() tea.Cmd {
	if !m.pending || !m.settled || m.gapClosed {
		return nil
	}
	m.pending, m.settled = false, false
	return buildCmd(m.src, m.build, m.request(0), frameLive)
}

func (m *Model) request(endMs int64) frameRequest {
	req := frameRequest{Window: m.c.window, Bin: m.c.opts.Bin, EndMs: endMs, Range: m.c.chartRange, Bins: m.c.opts.Bins, Chains: m.c.opts.Chains, Links: m.c.opts.Links, Service: m.wantService()}
	if p := m.player(); p != nil {
		req.Seeking = p.Seeking()
	}
	if endMs == 0 {
		req.Prev = m.live
		req.Cache = m.cache
	}
	return req
}

// settle is how long a live frame waits for the rest of a burst of
// scrapes (burstSettle); a replay's updates come from its player, not in
// bursts.
func (m *Model) settle() time.Duration {
	if m.c.opts.Mode == ModeLive {
		return burstSettle
	}
	return 0
}

// wantService is the service whose bins frames must carry: the one whose
// detail is open.
func (m *Model) wantService() string {
	if m.view == viewService {
		return m.svcDetail.target
	}
	return ""
}

// Paused reports whether the view is frozen.
func (m *Model) Paused() bool { return m.paused }

// Window is the rate window in force.
func (m *Model) Window() time.Duration { return m.c.window }

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.c.width, m.c.height = msg.Width, msg.Height
		m.help.Width = msg.Width
		m.overview.setWidth(msg.Width)
		m.dirty = true
		return m, nil

	case frameMsg:
		return m, m.onFrame(msg)

	case clockMsg:
		return m, m.onClock()

	case updateMsg:
		return m, m.onUpdate()

	case settledMsg:
		m.settled = true
		return m, m.maybeBuild()

	case frameGapMsg:
		m.gapClosed = false
		return m, m.maybeBuild()

	case sourceClosedMsg:
		m.closed = true
		m.dirty = true
		return m, nil

	case FindingsMsg:
		m.findings = m.findings[:0]
		for _, f := range msg {
			m.findings = append(m.findings, safetext.Terminal(f))
		}
		m.dirty = true
		return m, nil

	case tea.KeyMsg:
		if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste {
			return m, m.eachRune(msg)
		}
		m.now = m.c.opts.Now()
		m.dirty = true
		m.saved, m.hint = "", ""
		cmd := m.onKey(msg)
		if m.view != viewWhatIf {
			m.cancelWhatIf() // the pane was left
		}
		return m, cmd

	case screenSavedMsg:
		m.saved = msg.status()
		m.dirty = true
		return m, nil

	case whatIfMsg:
		m.onWhatIf(msg)
		m.dirty = true
		return m, nil

	case tea.MouseMsg:
		if m.c.opts.NoMouse || msg.Action == tea.MouseActionMotion {
			return m, nil // motion: nothing to redraw
		}
		m.dirty = true
		cmd := m.onMouse(msg)
		if m.view != viewWhatIf {
			m.cancelWhatIf() // the pane was left
		}
		return m, cmd
	}
	return m, nil
}

// eachRune handles the runes of msg as one key press each. bubbletea v1
// reads the printable runes that arrive in one read as one key ("jj" for
// j pressed twice quickly, by key repeat, over SSH or by tmux send-keys):
// matched as a whole, that key would match no binding and be lost. A
// paste stays whole (bracketed paste marks it).
func (m *Model) eachRune(msg tea.KeyMsg) tea.Cmd {
	cmds := make([]tea.Cmd, 0, len(msg.Runes))
	for _, r := range msg.Runes {
		_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt})
		cmds = append(cmds, cmd)
	}
	return tea.Batch(cmds...)
}

func (m *Model) onFrame(msg frameMsg) tea.Cmd {
	var cmds []tea.Cmd
	if msg.kind == frameLive {
		// Re-arm the wait loop whatever happens to this frame; the next
		// live frame comes no sooner than MinFrameGap after this one,
		// unless this one shows a seek in progress: the frame of its end
		// is built as soon as the player has loaded it.
		cmds = append(cmds, waitCmd(m.src, m.done))
		if !msg.req.Seeking {
			m.gapClosed = true
			cmds = append(cmds, tea.Tick(m.c.opts.MinFrameGap, func(time.Time) tea.Msg { return frameGapMsg{} }))
		}
	}
	if msg.req.Window != m.c.window {
		// Built for a window that is no longer in force.
		return tea.Batch(cmds...)
	}
	f := msg.frame
	if m.c.opts.Mode == ModeReplay {
		f.Targets = notYetRead(f.Targets)
	}
	switch msg.kind {
	case frameLive, frameRebuild:
		m.live = &f
		m.liveSeeking = msg.req.Seeking
		m.liveDerived = m.keepTimeline(msg.derived, &m.liveDerived)
		if !m.paused {
			m.show(&f, m.liveDerived)
		}
		m.now = m.c.opts.Now()
		m.frameAt = m.now
		m.frameSeq++
		if cmd := m.armQuiet(m.c.opts.StaleAfter); cmd != nil {
			cmds = append(cmds, cmd)
		}
	case frameFrozen:
		if !m.paused || m.shown == nil || msg.req.EndMs != m.shown.Time.UnixMilli() {
			return tea.Batch(cmds...)
		}
		m.show(&f, m.keepTimeline(msg.derived, &m.shownDerived))
	}
	m.dirty = true
	return tea.Batch(cmds...)
}

// notYetRead drops the targets a replay has not reached yet (never
// scraped, no error): at the first frames of a recording they are not
// down, only not in it yet ("targets 1/4 up ! app down" at the
// first frame). The slice is copied: frames are shared, never modified.
func notYetRead(ts []model.TargetStatus) []model.TargetStatus {
	n := 0
	for i := range ts {
		if !ts[i].Up && ts[i].LastScrape.IsZero() && ts[i].LastError == "" {
			n++
		}
	}
	if n == 0 {
		return ts
	}
	out := make([]model.TargetStatus, 0, len(ts)-n)
	for _, t := range ts {
		if t.Up || !t.LastScrape.IsZero() || t.LastError != "" {
			out = append(out, t)
		}
	}
	return out
}

// keepTimeline carries the open service's bins over from prev when d was
// built for a request made before the view opened (the wait loop's), so
// the charts do not blink empty until the next frame.
func (m *Model) keepTimeline(d derived, prev *derived) derived {
	if want := m.wantService(); want != "" && d.svcTarget != want && prev.svcTarget == want {
		d.svcTarget, d.svcTimeline = prev.svcTarget, prev.svcTimeline
	}
	return d
}

// show puts a frame and what was derived from it on screen.
func (m *Model) show(f *model.Frame, d derived) {
	m.shown = f
	m.shownSeq++
	m.shownDerived = d
	m.showOverview()
	m.followWorst()
}

// followWorst puts the cursor (and an open caller detail) on the worst
// row while following.
func (m *Model) followWorst() {
	d := &m.shownDerived
	if !m.following || !d.hasWorst {
		return
	}
	m.overview.follow(d.worst)
	if m.view == viewDetail && m.detail.group == "" && m.detail.key != d.worst {
		m.detail.open(d.worst, "")
	}
}

// followed is the row being followed, for the header ("" when the
// cursor is pinned or no row stands out).
func (m *Model) followed() (model.Key, bool) {
	d := &m.shownDerived
	if !m.following || !d.hasWorst {
		return model.Key{}, false
	}
	// Only what the cursor is on: a filter may hide the worst row.
	want := d.worst
	if gs := m.overview.groups; gs != nil {
		if gk, ok := gs.of[want]; ok {
			want = gk
		}
	}
	if k, ok := m.overview.selectedKey(); !ok || k != want {
		return model.Key{}, false
	}
	return d.worst, true
}

// showOverview gives the overview the frame on screen, folded by layer
// when grouping is on and there are groups.
func (m *Model) showOverview() {
	if m.shown == nil {
		return
	}
	gs := m.shownDerived.groups
	m.overview.groupable = gs != nil
	m.overview.chains, m.overview.found = m.shownDerived.chains, m.shownDerived.found
	if m.grouping && gs != nil {
		m.overview.setFrame(&gs.frame, m.shownDerived.services, gs)
		return
	}
	m.overview.setFrame(m.shown, m.shownDerived.services, nil)
}

// toggleGrouping folds or unfolds replicas; the selection moves between
// a group and its first member.
func (m *Model) toggleGrouping() {
	m.grouping = !m.grouping
	m.showOverview()
	m.followWorst()
}

// screenSavedMsg reports a ctrl+s: the files written, or the error.
type screenSavedMsg struct {
	paths []string
	err   error
}

// status is what the header says about a save.
func (s screenSavedMsg) status() string {
	if s.err != nil {
		return "screen not saved: " + s.err.Error()
	}
	if len(s.paths) == 0 {
		return "screen not saved"
	}
	// NAME.txt, NAME.ansi, NAME.svg: one stem, its extensions.
	stem := strings.TrimSuffix(s.paths[0], filepath.Ext(s.paths[0]))
	exts := make([]string, 0, len(s.paths))
	for _, p := range s.paths {
		exts = append(exts, strings.TrimPrefix(filepath.Ext(p), "."))
	}
	return "screen saved: " + stem + ".{" + strings.Join(exts, ",") + "}"
}

// saveScreen writes the screen on display with Options.SaveScreen, in a
// command: file I/O never blocks Update.
func (m *Model) saveScreen() tea.Cmd {
	save := m.c.opts.SaveScreen
	if save == nil {
		m.saved = "saving the screen is not available here"
		return nil
	}
	view := m.viewCache
	return func() tea.Msg {
		paths, err := save(view)
		return screenSavedMsg{paths: paths, err: err}
	}
}

// quit cancels what is running and ends the program.
func (m *Model) quit() tea.Cmd {
	m.cancelWhatIf()
	return tea.Quit
}

// isCursorKey: the key moves the cursor.
func isCursorKey(k *KeyMap, msg tea.KeyMsg) bool {
	return key.Matches(msg, k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom)
}

func (m *Model) onKey(msg tea.KeyMsg) tea.Cmd {
	k := &m.c.keys
	// The filter input owns the keyboard while it is open, except ctrl+c.
	if m.view == viewOverview && m.overview.filtering {
		if key.Matches(msg, k.ForceQuit) {
			return m.quit()
		}
		return m.overview.update(msg)
	}
	if m.showHelp {
		switch {
		case key.Matches(msg, k.Quit):
			return m.quit()
		case key.Matches(msg, k.Help), key.Matches(msg, k.Back):
			m.showHelp = false
		default:
			m.helpView.update(msg) // j/k, pgup/pgdn, g/G scroll a long help
		}
		return nil
	}
	if cmd, ok := m.replayKey(msg); ok {
		return cmd
	}
	if cmd, ok := m.globalKey(msg); ok {
		return cmd
	}
	return m.viewKey(msg)
}

// globalKey acts on the keys every view shares (quit, help, pause, the
// window, save, what-if, follow, the panes, switching views); ok is false
// for any other key.
func (m *Model) globalKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	k := &m.c.keys
	switch {
	case key.Matches(msg, k.Quit):
		return m.quit(), true
	case key.Matches(msg, k.Help):
		m.showHelp = true
		m.helpView.scroll = 0
		return nil, true
	case key.Matches(msg, k.Pause):
		return m.togglePause(), true
	case key.Matches(msg, k.WindowDown):
		return m.stepWindow(-1), true
	case key.Matches(msg, k.WindowUp):
		return m.stepWindow(+1), true
	case key.Matches(msg, k.ZoomIn):
		return m.stepRange(-1), true
	case key.Matches(msg, k.ZoomOut):
		return m.stepRange(+1), true
	case key.Matches(msg, k.Save):
		return m.saveScreen(), true
	case m.c.opts.WhatIf != nil && key.Matches(msg, k.WhatIf):
		return m.toggleWhatIf(), true
	case key.Matches(msg, k.Follow):
		m.following = true
		if !m.shownDerived.hasWorst {
			m.hint = k.Follow.Help().Key + ": no row stands out to follow yet"
		}
		m.followWorst()
		return nil, true
	case key.Matches(msg, k.Findings), key.Matches(msg, k.Info):
		v := viewFindings
		if key.Matches(msg, k.Info) {
			v = viewInfo
		}
		if m.view == v {
			m.switchView(viewOverview) // the same key closes it
			return nil, true
		}
		m.view = v
		m.paneView.scroll = 0
		return nil, true
	case key.Matches(msg, k.SwitchView):
		switch m.view {
		case viewOverview:
			if cmd, ok := m.openSelected(); ok {
				return cmd, true
			}
			m.switchView(viewChains) // no row to detail yet
		case viewDetail, viewService, viewGroup:
			m.switchView(viewChains)
		default:
			m.switchView(viewOverview)
		}
		return nil, true
	}
	return nil, false
}

// viewKey acts on a key in the current view.
func (m *Model) viewKey(msg tea.KeyMsg) tea.Cmd {
	k := &m.c.keys
	if m.view != viewOverview && !key.Matches(msg, k.Back) && !isCursorKey(k, msg) &&
		(m.view != viewGroup || !key.Matches(msg, k.Open)) {
		m.idle(msg) // the other views move, scroll and go back only
		return nil
	}
	switch m.view {
	case viewChains:
		if key.Matches(msg, k.Back) {
			m.switchView(viewOverview)
		} else {
			m.idle(msg)
		}
		return nil
	case viewFindings, viewInfo, viewWhatIf:
		if key.Matches(msg, k.Back) {
			m.switchView(viewOverview)
			return nil
		}
		m.paneView.update(msg)
		return nil
	case viewDetail:
		if key.Matches(msg, k.Back) {
			if m.detail.group != "" {
				// Back up one level: the group the replica was opened from.
				m.view = viewGroup
				return nil
			}
			m.switchView(viewOverview)
			return nil
		}
		m.detail.update(msg)
		return nil
	case viewGroup:
		switch {
		case key.Matches(msg, k.Back):
			m.switchView(viewOverview)
		case key.Matches(msg, k.Open):
			m.openReplica()
		default:
			m.grpDetail.update(msg, m.shownDerived.groups)
		}
		return nil
	case viewService:
		if key.Matches(msg, k.Back) {
			m.switchView(viewOverview)
			return nil
		}
		m.svcDetail.update(msg)
		return nil
	default:
		switch {
		case key.Matches(msg, k.Open):
			cmd, ok := m.openSelected()
			if !ok {
				m.hint = k.Open.Help().Key + ": no row to open yet"
			}
			return cmd
		case key.Matches(msg, k.Group):
			if !m.overview.groupable {
				m.hint = k.Group.Help().Key + ": no replicas to fold (no layer has two targets)"
				return nil
			}
			m.toggleGrouping()
			return nil
		case isCursorKey(k, msg):
			m.following = false // the user chose a row: pin it
			if m.overview.total() == 0 {
				m.hint = "no rows to move through yet"
			}
		case !m.overview.knows(msg):
			m.idle(msg)
			return nil
		}
		return m.overview.update(msg)
	}
}

// idle says in the footer why msg does nothing in the current view.
func (m *Model) idle(msg tea.KeyMsg) {
	k := &m.c.keys
	switch {
	case key.Matches(msg, k.Sort, k.SortBack, k.Filter, k.Group):
		m.hint = msg.String() + ": acts in the overview (" + k.Back.Help().Key + " goes back to it)"
	case key.Matches(msg, k.Open):
		m.hint = msg.String() + ": nothing to open here"
	case key.Matches(msg, k.WhatIf):
		m.hint = msg.String() + ": the what-if pane needs a replay of a recording"
	default:
		m.hint = msg.String() + ": not a key here (" + k.Help.Help().Key + " lists them)"
	}
}

// openSelected opens the detail of the row under the cursor: a caller
// row's, or a service row's, whose bins are then built at once (they are
// computed only while its detail is open).
func (m *Model) openSelected() (tea.Cmd, bool) {
	if s, ok := m.overview.selectedService(); ok {
		m.svcDetail.open(s.Target)
		m.view = viewService
		return m.rebuild(), true
	}
	if k, _, ok := m.overview.group(); ok {
		m.grpDetail.open(k)
		m.view = viewGroup
		return nil, true
	}
	if _, ok := m.overview.selectedKey(); ok {
		m.switchView(viewDetail)
		return nil, true
	}
	return nil, false
}

func (m *Model) switchView(v viewID) {
	if v == viewDetail {
		sel, ok := m.overview.selectedKey()
		if !ok {
			return
		}
		if k, _, isGroup := m.overview.group(); isGroup {
			m.grpDetail.open(k)
			v = viewGroup
		} else {
			m.detail.open(sel, "")
		}
	}
	m.view = v
}

// openReplica opens the detail of the replica under the group detail's
// cursor; esc comes back to the group.
func (m *Model) openReplica() {
	k, ok := m.grpDetail.selected(m.shownDerived.groups)
	if !ok {
		return
	}
	name := ""
	if gs := m.shownDerived.groups; gs != nil {
		if gi := gs.info[m.grpDetail.key]; gi != nil {
			name = groupName(gi, m.c.g)
		}
	}
	if name == "" {
		name = safetext.Terminal(m.grpDetail.key.Target)
	}
	m.detail.open(k, name)
	m.view = viewDetail
}

// rebuild asks for frames built with the current request: the newest
// data, and the frozen moment when paused.
func (m *Model) rebuild() tea.Cmd {
	cmds := []tea.Cmd{buildCmd(m.src, m.build, m.request(0), frameRebuild)}
	if m.paused && m.shown != nil && !m.shown.Time.IsZero() {
		cmds = append(cmds, buildCmd(m.src, m.build, m.request(m.shown.Time.UnixMilli()), frameFrozen))
	}
	return tea.Batch(cmds...)
}

// togglePause freezes or thaws the view. Frames keep arriving while
// paused: they update m.live (and the "behind" badge), not the screen.
func (m *Model) togglePause() tea.Cmd {
	m.paused = !m.paused
	if !m.paused && m.live != nil && m.live != m.shown {
		m.show(m.live, m.liveDerived)
	}
	return nil
}

// stepWindow moves to the previous or next window and asks for frames
// computed with it: the newest data, and the frozen moment when paused.
func (m *Model) stepWindow(d int) tea.Cmd {
	k := &m.c.keys
	if !m.stepIn(&m.windowIdx, len(m.c.opts.Windows), d, k.WindowDown, k.WindowUp, windowLabel(m.c.window)+" is the %s window already", "shortest", "longest") {
		return nil
	}
	m.c.window = m.c.opts.Windows[m.windowIdx]
	return m.rebuild()
}

// stepIn moves *idx by d within [0, n) and reports whether it moved; at
// either end the footer's hint says so with the key pressed (down when
// d < 0) and what (a format taking first or last).
func (m *Model) stepIn(idx *int, n, d int, down, up key.Binding, what, first, last string) bool {
	i := min(max(*idx+d, 0), n-1)
	if i != *idx {
		*idx = i
		return true
	}
	k, which := up, last
	if d < 0 {
		k, which = down, first
	}
	m.hint = k.Help().Key + ": " + fmt.Sprintf(what, which)
	return false
}

// stepRange moves the charts to the previous or next time range and asks
// for frames with bins for it.
func (m *Model) stepRange(d int) tea.Cmd {
	k := &m.c.keys
	if !m.stepIn(&m.rangeIdx, len(m.c.opts.Ranges), d, k.ZoomIn, k.ZoomOut, "range "+rangeLabel(m.c.chartRange)+" is the %s already", "narrowest", "widest") {
		return nil
	}
	m.c.chartRange = m.c.opts.Ranges[m.rangeIdx]
	return m.rebuild()
}

// behind is how far the frozen view trails the newest data.
func (m *Model) behind() time.Duration {
	if !m.paused || m.live == nil || m.shown == nil {
		return 0
	}
	return max(m.live.Time.Sub(m.shown.Time), 0)
}

// View renders the whole screen. Nothing is rendered again unless a
// message changed something, and each panel reuses its own cache.
func (m *Model) View() string {
	if !m.dirty {
		return m.viewCache
	}
	m.dirty = false
	w, h := m.c.width, m.c.height
	if w <= 0 || h <= 0 {
		m.viewCache = ""
		return ""
	}
	if w < MinWidth || h < MinHeight {
		msg := "terminal too small (" + strconv.Itoa(w) + "x" + strconv.Itoa(h) + "): need " +
			strconv.Itoa(MinWidth) + "x" + strconv.Itoa(MinHeight) + ", please enlarge it"
		s, _ := truncate(msg, w)
		m.viewCache = s
		return s
	}

	lines := m.lines[:0]
	lines = m.header.view(lines, m)
	lines = m.replayBar(lines)
	for _, f := range m.stripLines() {
		l := &m.lw
		l.text(m.c.g.warn, m.c.st.warn)
		l.pad(1)
		l.cell(f, w-2, false, m.c.st.text)
		lines = append(lines, trimSpaceRight(l.line()))
	}
	footer := m.footer()
	bodyH := h - len(lines) - 1
	m.bodyTop = len(lines)
	if bodyH > 0 {
		switch {
		case m.showHelp:
			m.helpView.cache = m.helpLines(m.helpView.cache[:0])
			lines = m.helpView.show(lines, bodyH)
		case m.view == viewChains:
			lines = m.chains.view(lines, m.shownDerived.chains, w, bodyH)
		case m.view == viewFindings:
			m.findingsPane(&m.paneView, w)
			lines = m.paneView.show(lines, bodyH)
		case m.view == viewInfo:
			m.infoPane(&m.paneView, w)
			lines = m.paneView.show(lines, bodyH)
		case m.view == viewWhatIf:
			m.whatIfPane(&m.paneView, w)
			lines = m.paneView.show(lines, bodyH)
		case m.view == viewDetail:
			lines = m.detail.view(lines, m.shown, m.shownSeq, w, bodyH)
		case m.view == viewService:
			lines = m.svcDetail.view(lines, m.shown, &m.shownDerived, m.shownSeq, w, bodyH)
		case m.view == viewGroup:
			lines = m.grpDetail.view(lines, m.shownDerived.groups, m.shown, m.shownSeq, w, bodyH)
		default:
			lines = m.overview.view(lines, w, bodyH)
		}
	}
	if bodyH > 0 && len(lines) > m.bodyTop {
		lines[m.bodyTop] = m.tabStrip(lines[m.bodyTop])
	}
	// Pad the body so the footer sits on the last line.
	for len(lines) < h-1 {
		lines = append(lines, line{})
	}
	lines = append(lines[:h-1], footer)
	for i := range lines {
		if lines[i].w > w {
			// Never let a line wrap: the renderer would scroll the screen.
			lines[i] = line{s: ansi.Truncate(lines[i].s, w, ""), w: w}
			m.overflows++
		}
	}
	if m.c.g == &asciiGlyphs {
		// The last word for non-UTF-8 terminals: punctuation from shared
		// code (ellipses, separators, key labels, bubbles' help) folds to
		// ASCII, one column for one, so no width changes.
		for i := range lines {
			lines[i].s = asciiFold.Replace(lines[i].s)
		}
	}
	m.lines = lines

	n := len(lines)
	for _, ln := range lines {
		n += len(ln.s)
	}
	var b strings.Builder
	b.Grow(n)
	for i, ln := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(ln.s)
	}
	m.viewCache = b.String()
	return m.viewCache
}
