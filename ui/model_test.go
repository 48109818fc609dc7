package ui

import (
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
	"github.com/retrytop/retrytop/model"
)

// run executes cmd and feeds every message it yields back into m, the way
// the program would, except commands that block (the update wait, ticks):
// those are abandoned after a short wait.
func run(t *testing.T, m *Model, cmd tea.Cmd) {
	t.Helper()
	if cmd == nil {
		return
	}
	ch := make(chan tea.Msg, 1)
	go func() { ch <- cmd() }()
	var msg tea.Msg
	select {
	case msg = <-ch:
	case <-time.After(2 * time.Second):
		return // blocked (waiting for an update): not for this test
	}
	switch msg := msg.(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			run(t, m, c)
		}
	default:
		_, next := m.Update(msg)
		if _, isFrame := msg.(frameMsg); !isFrame {
			run(t, m, next)
		}
	}
}

func keys(m *Model, ks ...string) tea.Cmd {
	var last tea.Cmd
	for _, k := range ks {
		_, last = m.Update(keyMsg(k))
	}
	return last
}

// order is the overview's rows as "target/dependency", top to bottom.
func order(m *Model) []string {
	var out []string
	for _, i := range m.overview.order {
		r := &m.overview.frame.Rows[i]
		out = append(out, r.Target+"/"+r.Dependency)
	}
	return out
}

func selected(m *Model) string {
	k, ok := m.overview.selectedKey()
	if !ok {
		return ""
	}
	return k.Target + "/" + k.Dependency
}

func TestPauseFreezesViewWhileFramesArrive(t *testing.T) {
	m := newTestModel(t, Options{}, nil)
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, liveFrame(fixtureFrame(dataTime, time.Minute, 0)))
	before := ansi.Strip(m.View())
	if !strings.Contains(before, "● LIVE") || !strings.Contains(before, "2.41x") {
		t.Fatalf("live view lacks badge or data:\n%s", before)
	}

	keys(m, "space")
	if !m.Paused() {
		t.Fatal("space did not pause")
	}
	// Data keeps arriving while paused: 5 s, then 9 s of newer frames.
	for _, d := range []time.Duration{5 * time.Second, 9 * time.Second} {
		send(m, frameMsg{frame: fixtureFrame(dataTime.Add(d), time.Minute, 1), req: frameRequest{Window: time.Minute}, kind: frameLive})
	}
	if m.live.Time != dataTime.Add(9*time.Second) {
		t.Fatalf("live frame not kept while paused: %v", m.live.Time)
	}
	paused := ansi.Strip(m.View())
	if !strings.Contains(paused, "PAUSED 9s behind") {
		t.Errorf("header does not say how far behind:\n%s", firstLine(paused))
	}
	// The body is frozen: same table as before the new frames.
	if body(paused) != body(before) {
		t.Errorf("paused body changed:\n%s\n---\n%s", body(before), body(paused))
	}

	keys(m, "space")
	if m.Paused() {
		t.Fatal("space did not resume")
	}
	resumed := ansi.Strip(m.View())
	if body(resumed) == body(before) {
		t.Error("resuming did not show the newest frame")
	}
	if !strings.Contains(resumed, "● LIVE") {
		t.Errorf("header after resume: %s", firstLine(resumed))
	}
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

// body is the screen without the header and footer lines.
func body(s string) string {
	ls := strings.Split(s, "\n")
	return strings.Join(ls[1:len(ls)-1], "\n")
}

func TestSortCycles(t *testing.T) {
	m := newTestModel(t, Options{}, nil)
	send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, liveFrame(fixtureFrame(dataTime, time.Minute, 0)))
	m.View() // the layout decides the columns on screen
	if m.overview.sortBy != colAmp {
		t.Fatalf("first sort %v, want AMP", colSpecs[m.overview.sortBy].head)
	}
	// Every column on screen, in display order, then around again.
	var seen []string
	for range numCols {
		keys(m, "s")
		id := m.overview.sortBy
		seen = append(seen, colSpecs[id].head)
		if !m.overview.lay.show[id] {
			t.Errorf("sort by %s, a column not on screen", colSpecs[id].head)
		}
		checkSorted(t, m, id)
		if id == colAmp {
			break
		}
	}
	if want := "EFF% ATT% RETR/s HDG/s RSC/s BDG/s ADM/s ERR/s TMO/s"; !strings.HasPrefix(strings.Join(seen, " "), want) {
		t.Errorf("s steps %v, want %s first", seen, want)
	}
	if seen[len(seen)-1] != "AMP" {
		t.Errorf("s did not come back to AMP: %v", seen)
	}
	keys(m, "S")
	if h := colSpecs[m.overview.sortBy].head; h != "ATT/s" {
		t.Errorf("S from AMP: %s, want ATT/s", h)
	}
	for m.overview.sortBy != colTimeouts {
		keys(m, "s")
	}
	if !strings.Contains(ansi.Strip(m.View()), "sort TMO/s ↓") {
		t.Error("title does not name the sort")
	}
	for m.overview.sortBy != colEff {
		keys(m, "S")
	}
	if !strings.Contains(ansi.Strip(m.View()), "sort EFF% ↑") {
		t.Error("title does not say the lowest success comes first")
	}
}

// checkSorted: rows worst first by column id (largest first, lowest for
// the success ratios), absent last, ties by name.
func checkSorted(t *testing.T, m *Model, id colID) {
	t.Helper()
	rows := m.overview.frame.Rows
	ord := m.overview.order
	for i := 1; i < len(ord); i++ {
		a, b := colValue(id, &rows[ord[i-1]]), colValue(id, &rows[ord[i]])
		switch {
		case !a.OK() && b.OK():
			t.Errorf("sort %s: absent before %v", colSpecs[id].head, b.V())
		case a.OK() && b.OK() && worstLow[id] && a.V() > b.V(), a.OK() && b.OK() && !worstLow[id] && a.V() < b.V():
			t.Errorf("sort %s: %v before %v", colSpecs[id].head, a.V(), b.V())
		}
	}
}

func TestAbsentLastInEverySort(t *testing.T) {
	m := newTestModel(t, Options{}, nil)
	send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, liveFrame(fixtureFrame(dataTime, time.Minute, 0)))
	m.overview.sortBy = colOK99
	m.overview.refresh()
	o := order(m)
	if o[len(o)-1] != "legacy/mainframe" {
		t.Errorf("row without p99 not last: %v", o)
	}
}

func TestFilter(t *testing.T) {
	m := newTestModel(t, Options{}, nil)
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, liveFrame(fixtureFrame(dataTime, time.Minute, 0)))
	keys(m, "/", "p", "a", "y")
	if !m.overview.filtering {
		t.Fatal("/ did not open the filter")
	}
	got := order(m)
	for _, r := range got {
		if !strings.Contains(r, "pay") {
			t.Errorf("filter pay kept %q", r)
		}
	}
	if len(got) != 3 {
		t.Errorf("filter pay: %v", got)
	}
	// Keys go to the input while it is open: q types, it does not quit.
	if cmd := keys(m, "q"); cmd != nil {
		if _, quit := cmd().(tea.QuitMsg); quit {
			t.Fatal("q quit while typing a filter")
		}
	}
	m.Update(tea.KeyMsg{Type: tea.KeyBackspace})
	if v := m.overview.filter.Value(); v != "pay" {
		t.Fatalf("filter value %q", v)
	}
	keys(m, "enter")
	if m.overview.filtering || len(order(m)) != 3 {
		t.Fatalf("enter should keep the filter and close the input: filtering=%v rows=%v", m.overview.filtering, order(m))
	}
	v := ansi.Strip(m.View())
	if !strings.Contains(v, `filter "pay"`) {
		t.Errorf("title does not show the filter:\n%s", v)
	}
	// Two terms must both match.
	keys(m, "/", " ", "b", "a", "n", "k", "enter")
	if o := order(m); len(o) != 1 || o[0] != "payments/bank-api" {
		t.Errorf("filter 'pay bank': %v", o)
	}
	keys(m, "esc") // esc outside the input clears the filter
	if len(order(m)) != 7 {
		t.Errorf("esc did not clear the filter: %v", order(m))
	}
	keys(m, "/", "z", "z", "z")
	if !strings.Contains(ansi.Strip(m.View()), "no row matches the filter") {
		t.Error("empty filter result not explained")
	}
	keys(m, "esc")
	if m.overview.filtering || len(order(m)) != 7 {
		t.Error("esc in the input should clear and close it")
	}
}

func TestSelectionStableAcrossRefresh(t *testing.T) {
	m := newTestModel(t, Options{}, nil)
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, liveFrame(fixtureFrame(dataTime, time.Minute, 0)))
	keys(m, "j", "j")
	if got := selected(m); got != "checkout/inventory" {
		t.Fatalf("selected %q", got)
	}
	// Variant 1 reorders: inventory's amplification jumps to the top.
	send(m, liveFrame(fixtureFrame(dataTime.Add(time.Second), time.Minute, 1)))
	if o := order(m); o[0] != "checkout/inventory" {
		t.Fatalf("fixture should reorder rows: %v", o)
	}
	if got := selected(m); got != "checkout/inventory" {
		t.Errorf("selection moved to %q after refresh", got)
	}
	if m.overview.cursor != 0 {
		t.Errorf("cursor %d, want 0 (the row moved up)", m.overview.cursor)
	}
	// A row that disappears keeps the cursor's place; when it comes back
	// it is selected again.
	f := fixtureFrame(dataTime.Add(2*time.Second), time.Minute, 1)
	f.Rows = f.Rows[:1:1] // only checkout/payments
	send(m, liveFrame(f))
	if got := selected(m); got != "checkout/payments" {
		t.Errorf("with the row gone: %q", got)
	}
	send(m, liveFrame(fixtureFrame(dataTime.Add(3*time.Second), time.Minute, 1)))
	if got := selected(m); got != "checkout/inventory" {
		t.Errorf("row came back, selection %q", got)
	}
}

func TestScrollKeepsCursorVisible(t *testing.T) {
	m := newTestModel(t, Options{}, nil)
	send(m, tea.WindowSizeMsg{Width: 120, Height: 30}, liveFrame(bigFrame(dataTime, 60, 0)))
	for i := 0; i < 40; i++ {
		keys(m, "j")
	}
	v := ansi.Strip(m.View())
	sel := selected(m)
	dep := sel[strings.Index(sel, "/")+1:]
	if !strings.Contains(v, "► ") || !strings.Contains(v, dep) {
		t.Errorf("selected row %q not on screen:\n%s", sel, v)
	}
	if !strings.Contains(v, "rows ") || !strings.Contains(v, " of 60") {
		t.Errorf("no scroll position in title:\n%s", firstLine(body(v)))
	}
	keys(m, "G")
	if m.overview.cursor != 59 {
		t.Errorf("G: cursor %d", m.overview.cursor)
	}
	keys(m, "g")
	m.View()
	if m.overview.cursor != 0 || m.overview.offset != 0 {
		t.Errorf("g: cursor %d offset %d", m.overview.cursor, m.overview.offset)
	}
}

func TestWindowChange(t *testing.T) {
	var reqs []frameRequest
	m := newTestModel(t, Options{}, func(req frameRequest) model.Frame {
		reqs = append(reqs, req)
		return fixtureFrame(dataTime, req.Window, 0)
	})
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, liveFrame(fixtureFrame(dataTime, time.Minute, 0)))
	run(t, m, keys(m, "]"))
	if m.Window() != 5*time.Minute {
		t.Fatalf("] from 1m: %v", m.Window())
	}
	if len(reqs) != 1 || reqs[0].Window != 5*time.Minute || reqs[0].EndMs != 0 || reqs[0].Bin != 0 || reqs[0].Range != 5*time.Minute || reqs[0].Bins != 30 {
		t.Fatalf("requests: %+v", reqs)
	}
	if m.shown.Window != 5*time.Minute {
		t.Errorf("shown frame window %v", m.shown.Window)
	}
	if v := ansi.Strip(m.View()); !strings.Contains(firstLine(v), "window 5m ") {
		t.Errorf("header: %s", firstLine(v))
	}
	for range 3 {
		run(t, m, keys(m, "]")) // clamps at 15m
	}
	if m.Window() != 15*time.Minute {
		t.Errorf("] clamps: %v", m.Window())
	}
	for range 6 {
		run(t, m, keys(m, "["))
	}
	if m.Window() != 10*time.Second {
		t.Errorf("[ clamps: %v", m.Window())
	}

	// A frame built for an old window is dropped.
	send(m, liveFrame(fixtureFrame(dataTime.Add(time.Hour), time.Minute, 0)))
	if m.shown.Window != 10*time.Second || m.shown.Time.Equal(dataTime.Add(time.Hour)) {
		t.Error("frame for a stale window was shown")
	}

	// Paused: the frozen moment is recomputed with the new window, and the
	// newest data too.
	keys(m, "space")
	frozenAt := m.shown.Time
	reqs = nil
	run(t, m, keys(m, "]"))
	var sawFrozen bool
	for _, r := range reqs {
		if r.EndMs == frozenAt.UnixMilli() && r.Window == 30*time.Second {
			sawFrozen = true
		}
	}
	if !sawFrozen || len(reqs) != 2 {
		t.Errorf("paused window change requests: %+v", reqs)
	}
	if !m.Paused() || m.shown.Window != 30*time.Second {
		t.Errorf("paused view not recomputed: paused=%v window=%v", m.Paused(), m.shown.Window)
	}
}

func TestStartingWindowNotInList(t *testing.T) {
	m := newTestModel(t, Options{Window: 2 * time.Minute}, func(req frameRequest) model.Frame { return fixtureFrame(dataTime, req.Window, 0) })
	run(t, m, keys(m, "]"))
	if m.Window() != 5*time.Minute {
		t.Errorf("] from 2m: %v", m.Window())
	}
	run(t, m, keys(m, "["))
	run(t, m, keys(m, "["))
	if m.Window() != time.Minute {
		t.Errorf("[[ from 5m: %v", m.Window())
	}
}

func TestViewsAndHelp(t *testing.T) {
	m := newTestModel(t, Options{}, nil)
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, liveFrame(fixtureFrame(dataTime, time.Minute, 0)))
	keys(m, "j", "enter")
	if m.view != viewDetail || m.detail.key.Dependency != "bank-api" {
		t.Fatalf("enter: view %v key %+v", m.view, m.detail.key)
	}
	v := ansi.Strip(m.View())
	for _, s := range []string{"DETAIL", "payments → bank-api", "ORIGINALS vs ATTEMPTS", "OUTCOMES", "CAPACITY", "LATENCY"} {
		if !strings.Contains(v, s) {
			t.Errorf("detail lacks %q", s)
		}
	}
	keys(m, "j", "j", "j")
	if m.detail.scroll != 3 {
		t.Errorf("detail scroll %d", m.detail.scroll)
	}
	keys(m, "esc")
	if m.view != viewOverview {
		t.Error("esc did not go back")
	}
	keys(m, "tab")
	if m.view != viewDetail {
		t.Error("tab did not switch to detail")
	}
	keys(m, "tab")
	if m.view != viewChains || !strings.Contains(ansi.Strip(m.View()), "CHAINS") {
		t.Error("tab did not switch to the chain view")
	}
	keys(m, "tab")
	if m.view != viewOverview {
		t.Error("tab did not switch back")
	}
	keys(m, "?")
	if v := ansi.Strip(m.View()); !strings.Contains(v, "KEYS") || !strings.Contains(v, "pause/resume") || !strings.Contains(v, "shorter window") {
		t.Errorf("help screen:\n%s", v)
	}
	keys(m, "j") // ignored under help
	if m.overview.cursor != 1 {
		t.Error("keys leaked through the help screen")
	}
	keys(m, "?")
	if m.showHelp {
		t.Error("? did not close help")
	}
	if cmd := keys(m, "q"); cmd == nil {
		t.Error("q did not quit")
	} else if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("q did not quit")
	}
	if cmd := keys(m, "ctrl+c"); cmd == nil {
		t.Error("ctrl+c did not quit")
	}
}

func TestHelpFromKeyMap(t *testing.T) {
	km := DefaultKeyMap()
	km.Pause.SetKeys("p")
	km.Pause.SetHelp("p", "freeze")
	m := newTestModel(t, Options{Keys: &km}, nil)
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, liveFrame(fixtureFrame(dataTime, time.Minute, 0)))
	keys(m, "p")
	if !m.Paused() {
		t.Error("remapped pause key did not pause")
	}
	keys(m, "?")
	if v := ansi.Strip(m.View()); !regexp.MustCompile(`p +freeze`).MatchString(v) || !strings.Contains(lastLine(v), "p resume") {
		t.Errorf("help does not show the remapped key:\n%s", v)
	}
	for _, b := range km.FullHelp() {
		for _, k := range b {
			for _, s := range k.Keys() {
				// tmux's pane navigation (ctrl+h/j/k/l) and the tmux and
				// screen prefixes (ctrl+b, ctrl+a) must reach tmux.
				switch s {
				case "ctrl+h", "ctrl+j", "ctrl+k", "ctrl+l", "ctrl+a", "ctrl+b":
					t.Errorf("default binding %q collides with tmux", s)
				}
			}
		}
	}
}

func TestResize(t *testing.T) {
	m := newTestModel(t, Options{}, nil)
	send(m, liveFrame(fixtureFrame(dataTime, time.Minute, 0)))
	if v := m.View(); v != "" {
		t.Errorf("before a size: %q", v)
	}
	for _, sz := range []struct{ w, h int }{{79, 24}, {80, 23}, {40, 10}} {
		send(m, tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
		v := m.View()
		if strings.Contains(v, "\n") || !strings.Contains(v, "need 80x24") || ansi.StringWidth(v) > sz.w {
			t.Errorf("%dx%d: %q", sz.w, sz.h, v)
		}
	}
	for _, sz := range []struct{ w, h int }{{80, 24}, {99, 30}, {100, 30}, {160, 48}, {250, 80}} {
		for _, view := range []string{"overview", "detail"} {
			send(m, tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
			if view == "detail" {
				keys(m, "enter")
			}
			screen(t, m) // checks line count and widths
			if view == "detail" {
				keys(m, "esc")
			}
		}
	}
	// The two layouts: side by side from 100 columns.
	send(m, tea.WindowSizeMsg{Width: 99, Height: 40})
	if v := ansi.Strip(m.View()); strings.Contains(v, "now               √") || strings.Count(v, "OUTCOMES") != 0 && strings.Contains(lineWith(v, "ORIGINALS"), "OUTCOMES") {
		t.Errorf("99 columns should stack:\n%s", v)
	}
	send(m, tea.WindowSizeMsg{Width: 100, Height: 40})
	if v := ansi.Strip(m.View()); !strings.Contains(lineWith(v, "ORIGINALS"), "OUTCOMES") {
		t.Errorf("100 columns should be side by side:\n%s", v)
	}
}

func lastLine(s string) string { return s[strings.LastIndex(s, "\n")+1:] }

// lineWith is the first line of s holding sub's words in a row, whatever
// the column widths between them.
func lineWith(s, sub string) string {
	want := strings.Join(strings.Fields(sub), " ")
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(strings.Join(strings.Fields(l), " "), want) {
			return l
		}
	}
	return ""
}

func TestAbsentShowsDash(t *testing.T) {
	m := newTestModel(t, Options{}, nil)
	send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, liveFrame(fixtureFrame(dataTime, time.Minute, 0)))
	row := lineWith(ansi.Strip(m.View()), "mainframe")
	fields := strings.Fields(row)
	// !legacy mainframe ORIG ATT AMP then 13 more columns: all absent but
	// provider errors, which the fixture sets to a real zero.
	if len(fields) != 2+16 {
		t.Fatalf("row fields %d: %q", len(fields), row)
	}
	for i, f := range fields[5:] {
		id := colID(i + 3)
		want := "-"
		if id == colErrors {
			want = "0"
		}
		if f != want {
			t.Errorf("column %s: %q, want %q", colSpecs[id].head, f, want)
		}
	}
}

func TestNoLeakedEscapes(t *testing.T) {
	// A colour terminal: the only escapes in the output are our SGR
	// sequences; the evil label's clear-screen and title sequences and its
	// bidi override are gone.
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.ANSI)
	m := newTestModel(t, Options{Renderer: r}, nil)
	send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, liveFrame(fixtureFrame(dataTime, time.Minute, 0)))
	keys(m, "G") // select the evil row
	for _, view := range []string{"overview", "detail"} {
		if view == "detail" {
			keys(m, "g", "enter")
		}
		v := m.View()
		for i := 0; i < len(v); i++ {
			if v[i] == 0x1b {
				j := i + 1
				if j < len(v) && v[j] == '[' {
					j++
					for j < len(v) && (v[j] >= '0' && v[j] <= '9' || v[j] == ';') {
						j++
					}
					if j < len(v) && v[j] == 'm' {
						i = j
						continue
					}
				}
				t.Fatalf("%s: non-SGR escape at %d: %q", view, i, v[i:min(i+12, len(v))])
			}
			if v[i] == 0x07 {
				t.Fatalf("%s: BEL in output", view)
			}
		}
		// The override is shown as text (\u202e), never written raw.
		if strings.Contains(v, "\u202e") {
			t.Errorf("%s: a raw bidi override reached the screen", view)
		}
	}
}

func TestColourDoesNotMoveAnything(t *testing.T) {
	// The same screen with and without colour must be identical once the
	// escapes are stripped: widths are tracked, not measured.
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.ANSI)
	for _, sz := range goldenSizes {
		for _, view := range []string{"overview", "detail", "help"} {
			plain := goldenModel(t, Options{}, sz.w, sz.h)
			col := goldenModel(t, Options{Renderer: r}, sz.w, sz.h)
			for _, mm := range []*Model{plain, col} {
				switch view {
				case "detail":
					keys(mm, "j", "enter")
				case "help":
					keys(mm, "?")
				}
			}
			cv := col.View()
			if !strings.Contains(cv, "\x1b[") {
				t.Fatalf("%s %dx%d: colour profile produced no colour", view, sz.w, sz.h)
			}
			if got, want := ansi.Strip(cv), plain.View(); got != want {
				t.Errorf("%s %dx%d: coloured screen differs once stripped\n%s\n---\n%s", view, sz.w, sz.h, got, want)
			}
		}
	}
}

func TestNoColorKeepsMeaning(t *testing.T) {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.ANSI)
	m := goldenModel(t, Options{Renderer: r, NoColor: true}, 120, 40)
	v := m.View()
	if strings.Contains(v, "\x1b") {
		t.Fatal("NoColor output has escapes")
	}
	// Selection, down target and protection vs provider columns are told
	// apart by glyphs and headers alone.
	for _, s := range []string{"► checkout", " !legacy", "$BDG/s", "¬ADM/s", "×ERR/s", "τTMO/s", "√ success", "¬ admission rej", "$ budget denied", "× provider err"} {
		if !strings.Contains(v, s) {
			t.Errorf("no-colour screen lacks %q", s)
		}
	}
}

func TestSourceLoop(t *testing.T) {
	src := &testSource{updates: make(chan struct{}, 1)}
	built := 0
	m := NewModel(src, Options{Now: func() time.Time { return fixedNow }, StaleAfter: -1, Renderer: lipgloss.NewRenderer(io.Discard)})
	m.build = func(_ Source, req frameRequest) (model.Frame, derived) {
		built++
		return fixtureFrame(dataTime.Add(time.Duration(built)*time.Second), req.Window, 0), derived{}
	}
	done := make(chan struct{})
	defer close(done)
	m.done = done

	src.updates <- struct{}{}
	if msg := waitCmd(src, m.done)(); msg != (updateMsg{}) {
		t.Fatalf("wait after an update: %#v", msg)
	}
	// A live frame waits for the rest of the burst of scrapes (the
	// test plays the tick: virtual time).
	if cmd := send(m, updateMsg{}); cmd == nil || built != 0 {
		t.Fatalf("an update built at once (%d builds) or set no tick", built)
	}
	cmd := send(m, settledMsg{})
	if cmd == nil {
		t.Fatal("no frame built once the burst settled")
	}
	fm, ok := cmd().(frameMsg)
	if !ok || fm.kind != frameLive || fm.req.Window != time.Minute || built != 1 {
		t.Fatalf("the settled update's frame: %#v, %d builds", fm, built)
	}
	if next := send(m, fm); next == nil {
		t.Fatal("the wait loop was not re-armed")
	}
	if m.live == nil || m.shown != m.live {
		t.Fatal("live frame not shown")
	}
	// The next update, settled before MinFrameGap passed, waits for it.
	send(m, updateMsg{})
	if cmd := send(m, settledMsg{}); cmd != nil {
		t.Fatal("a frame was built sooner than MinFrameGap after the last")
	}
	cmd = send(m, frameGapMsg{})
	if cmd == nil {
		t.Fatal("no frame once MinFrameGap passed")
	}
	if fm, ok := cmd().(frameMsg); !ok || fm.kind != frameLive || built != 2 {
		t.Fatalf("the second frame: %#v, %d builds", fm, built)
	}
	// With no update waiting, the gap opening builds nothing.
	if cmd := send(m, frameGapMsg{}); cmd != nil {
		t.Error("a frame was built with no update waiting")
	}

	close(src.updates)
	if msg := waitCmd(src, m.done)(); msg != (sourceClosedMsg{}) {
		t.Fatalf("closed source: %#v", msg)
	}
	m.Update(sourceClosedMsg{})
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40})
	if !strings.Contains(ansi.Strip(m.View()), "(source ended)") {
		t.Error("header does not say the source ended")
	}

	// A cancelled program releases the waiting command.
	src2 := &testSource{updates: make(chan struct{})}
	stop := make(chan struct{})
	got := make(chan tea.Msg, 1)
	go func() { got <- waitCmd(src2, stop)() }()
	close(stop)
	select {
	case msg := <-got:
		if msg != nil {
			t.Errorf("cancelled wait returned %#v", msg)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("wait did not end on done")
	}
}

// The header clock moves on a tea.Tick only when no frame came for
// StaleAfter; the test plays the ticks (virtual time).
func TestClockTicksOnlyWhenQuiet(t *testing.T) {
	now := fixedNow
	m := NewModel(&testSource{}, Options{Now: func() time.Time { return now }, StaleAfter: 2 * time.Second, Renderer: lipgloss.NewRenderer(io.Discard)})
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40})
	cmd := send(m, liveFrame(fixtureFrame(dataTime, time.Minute, 0)))
	if cmd == nil || !m.quietArmed {
		t.Fatal("no quiet-spell tick scheduled after a frame")
	}
	// Later frames start no tick of their own (a tick per frame fired,
	// for nothing, once a second while data flowed).
	if c := send(m, liveFrame(fixtureFrame(dataTime, time.Minute, 1))); c != nil {
		t.Error("a second frame scheduled another tick")
	}
	// A tick that was on its way when a frame came moves nothing and
	// waits for the rest of the spell.
	now = fixedNow.Add(time.Second)
	m.View()
	if _, c := m.Update(clockMsg{}); c == nil || !m.quietArmed || !m.now.Equal(fixedNow) || m.dirty {
		t.Error("a tick within StaleAfter of a frame acted, or stopped waiting")
	}
	// After StaleAfter without a frame it advances the clock and waits
	// for the next second.
	now = fixedNow.Add(3 * time.Second)
	if _, c := m.Update(clockMsg{}); c == nil || !m.now.Equal(now) {
		t.Error("quiet tick did not advance the clock")
	}
	if !strings.Contains(ansi.Strip(m.View()), "newest scrape 5s ago  03:12:48") {
		t.Errorf("header: %s", firstLine(ansi.Strip(m.View())))
	}
	// An unchanged model renders nothing new.
	v1 := m.View()
	v2 := m.View()
	if v1 != v2 || m.dirty {
		t.Error("view not cached")
	}

	// A clock that stands still (a paused replay's position): once no
	// frame came since the tick was armed, no tick follows; the next
	// frame arms one.
	send(m, liveFrame(fixtureFrame(dataTime, time.Minute, 2)))
	if _, c := m.Update(clockMsg{}); c == nil {
		t.Fatal("a frame came while the tick was on its way: want another tick")
	}
	if _, c := m.Update(clockMsg{}); c != nil || m.quietArmed {
		t.Error("a standing clock kept ticking")
	}
	if c := send(m, liveFrame(fixtureFrame(dataTime, time.Minute, 3))); c == nil || !m.quietArmed {
		t.Error("a frame after the ticks stopped armed none")
	}
}

func TestFindingsStrip(t *testing.T) {
	m := goldenModel(t, Options{}, 120, 40)
	send(m, FindingsMsg{"checkout → payments amplifies 2.4x\x1b[2J"})
	v := ansi.Strip(m.View())
	if l := strings.Split(v, "\n")[1]; !strings.Contains(l, "amplifies 2.4x") || strings.Contains(m.View(), "\x1b[2J") {
		t.Errorf("findings line: %q", l)
	}
	screen(t, m)
}

// Live frames are built on the frame before (its final bins are reused);
// frames of a fixed moment are built from scratch.
func TestLiveRequestsCarryThePreviousFrame(t *testing.T) {
	m := newTestModel(t, Options{}, nil)
	if req := m.request(0); req.Prev != nil {
		t.Fatalf("first request carries a frame: %v", req.Prev.Time)
	}
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, liveFrame(fixtureFrame(dataTime, time.Minute, 0)))
	if req := m.request(0); req.Prev == nil || req.Prev != m.live {
		t.Errorf("live request does not carry the newest frame")
	}
	if req := m.request(dataTime.UnixMilli()); req.Prev != nil {
		t.Errorf("a frozen moment's request carries a frame")
	}
}
