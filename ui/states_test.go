package ui

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// demoTargets are four targets as a scraper lists them before its first
// round: named, with URLs, never tried.
func demoTargets() []model.TargetStatus {
	var ts []model.TargetStatus
	for i, n := range []string{"browser", "app", "client", "provider"} {
		ts = append(ts, model.TargetStatus{Name: n, URL: "http://127.0.0.1:1808" + itoa(i) + "/metrics"})
	}
	return ts
}

// The first frame, before any scrape ended, says "connecting" and lists
// the targets with their URLs; no target is called down.
func TestFirstFrameConnecting(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{80, 24}, {200, 60}} {
		m := newTestModel(t, Options{}, nil)
		send(m, tea.WindowSizeMsg{Width: sz.w, Height: sz.h}, liveFrame(model.Frame{Window: time.Minute, Bin: 10 * time.Second, Targets: demoTargets()}))
		scr := screen(t, m)
		if h := firstLine(scr); !strings.Contains(h, "connecting to 4 targets") || strings.Contains(h, "down") || strings.Contains(h, "0/4") {
			t.Errorf("%dx%d header %q, want connecting to 4 targets and no target down", sz.w, sz.h, h)
		}
		for i, n := range []string{"browser", "app", "client", "provider"} {
			if l := lineWith(scr, "http://127.0.0.1:1808"+itoa(i)+"/metrics"); !strings.Contains(l, n) {
				t.Errorf("%dx%d: no line names %s with its URL:\n%s", sz.w, sz.h, n, scr)
			}
		}
		if strings.Contains(scr, "waiting for the first scrape") {
			t.Errorf("%dx%d still waiting for the first scrape:\n%s", sz.w, sz.h, scr)
		}
	}
}

// With every target down, the overview says so with each one's error,
// and the findings hold a TARGET_DOWN for each.
func TestEveryTargetDown(t *testing.T) {
	at := dataTime
	ts := demoTargets()
	for i := range ts {
		ts[i].LastScrape, ts[i].Scrapes, ts[i].Failures = at, 15, 15
		ts[i].LastError = "dial tcp 127.0.0.1:1808" + itoa(i) + ": connect: connection refused"
	}
	found := withTargetsDown(nil, ts)
	if len(found) != 4 {
		t.Fatalf("%d findings, want a TARGET_DOWN for each of the 4 targets: %+v", len(found), found)
	}
	for _, fd := range found {
		if fd.Code != analysis.CodeTargetDown || fd.Severity != analysis.SeverityCritical {
			t.Errorf("finding %s %v, want critical TARGET_DOWN (no scrape ever succeeded)", fd.Code, fd.Severity)
		}
	}
	m := newTestModel(t, Options{}, nil)
	f := model.Frame{Window: time.Minute, Bin: 10 * time.Second, Targets: ts}
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, frameMsg{frame: f, derived: derived{found: found, findings: findingLines(f, found)}, req: frameRequest{Window: time.Minute}, kind: frameRebuild})
	scr := screen(t, m)
	if !strings.Contains(scr, "every target is down") {
		t.Errorf("overview does not say every target is down:\n%s", scr)
	}
	for i := range ts {
		if !strings.Contains(scr, "127.0.0.1:1808"+itoa(i)+": connect: connection refused") {
			t.Errorf("target %s's error is not on screen:\n%s", ts[i].Name, scr)
		}
	}
	if !strings.Contains(scr, "CRITICAL TARGET_DOWN browser: ") {
		t.Errorf("no TARGET_DOWN finding in the strip:\n%s", scr)
	}
	keys(m, "f")
	if scr := screen(t, m); !strings.Contains(scr, "4 findings") || strings.Contains(scr, "no finding") {
		t.Errorf("findings pane, want 4 findings:\n%s", scr)
	}
}

// A target whose first scrape has not ended is connecting, not down, and
// gets no finding.
func TestConnectingIsNotDown(t *testing.T) {
	ts := demoTargets()
	ts[0].Up, ts[0].Scrapes, ts[0].LastScrape, ts[0].LastSuccess = true, 1, dataTime, dataTime
	if found := withTargetsDown(nil, ts); len(found) != 0 {
		t.Errorf("findings for targets still connecting: %+v", found)
	}
	m := newTestModel(t, Options{}, nil)
	send(m, tea.WindowSizeMsg{Width: 120, Height: 40}, liveFrame(model.Frame{Time: dataTime, Window: time.Minute, Bin: 10 * time.Second, Targets: ts}))
	if h := firstLine(screen(t, m)); !strings.Contains(h, "targets 1/4 up, 3 connecting") || strings.Contains(h, "down") {
		t.Errorf("header %q, want 1/4 up, 3 connecting", h)
	}
}

// A key that does nothing in the current state says why in the footer,
// until the next key; the footer offers resume while paused.
func TestKeysThatDoNothingSaySo(t *testing.T) {
	m := goldenModel(t, Options{}, 120, 40)
	tests := []struct{ key, want string }{
		{"a", "a: no replicas to fold"},
		{"x", "x: not a key here (? lists them)"},
		{"]", "]: 1m is the longest window already"},
	}
	m.c.opts.Windows = []time.Duration{time.Minute}
	m.windowIdx = 0
	for _, tt := range tests {
		keys(m, tt.key)
		if got := lastLine(ansi.Strip(m.View())); !strings.Contains(got, tt.want) {
			t.Errorf("after %q the footer is %q, want %q", tt.key, got, tt.want)
		}
	}
	keys(m, "j")
	if got := lastLine(ansi.Strip(m.View())); !strings.Contains(got, "space pause") {
		t.Errorf("the next key keeps the hint: %q", got)
	}
	keys(m, "space")
	if got := lastLine(ansi.Strip(m.View())); !strings.Contains(got, "space resume") {
		t.Errorf("paused footer %q, want space resume", got)
	}
	keys(m, "space", "w")
	if got := lastLine(ansi.Strip(m.View())); !strings.Contains(got, "w: the what-if pane needs a replay of a recording") {
		t.Errorf("w live: footer %q", got)
	}
	// In a detail the overview's keys say where they act.
	keys(m, "enter", "s")
	if got := lastLine(ansi.Strip(m.View())); m.view != viewDetail || !strings.Contains(got, "s: acts in the overview (esc goes back to it)") {
		t.Errorf("s in the detail (view %v): footer %q", m.view, got)
	}
	keys(m, "j")
	if got := lastLine(ansi.Strip(m.View())); !strings.Contains(got, "esc back") {
		t.Errorf("j scrolls the detail and clears the hint: footer %q", got)
	}
	// No row yet: enter has nothing to open.
	e := newTestModel(t, Options{}, nil)
	send(e, tea.WindowSizeMsg{Width: 120, Height: 40}, liveFrame(model.Frame{Window: time.Minute, Targets: demoTargets()}))
	keys(e, "enter")
	if got := lastLine(ansi.Strip(e.View())); !strings.Contains(got, "enter: no row to open yet") {
		t.Errorf("enter with no row: footer %q", got)
	}
}

// Each outcome's bars sit on its label's line and under it, down to the
// next label: in plain text no outcome's bars come before its label (the
// timeouts under the provider errors' label).
func TestOutcomeBarsUnderTheirLabel(t *testing.T) {
	for _, cs := range []Charset{CharsetBlock, CharsetASCII} {
		m := goldenModel(t, Options{Charset: cs, NoColor: true}, 200, 60)
		lines := strings.Split(screen(t, m), "\n")
		title := firstIndex(lines, func(ln string) bool { return strings.Contains(ln, "OUTCOMES") })
		if title < 0 {
			t.Fatal("no OUTCOMES section")
		}
		col := utf8.RuneCountInString(lines[title][:strings.Index(lines[title], "OUTCOMES")])
		var at []int
		for o := outcome(0); o < numOutcomes; o++ {
			for i := title + 1; i < len(lines); i++ {
				if r := []rune(lines[i]); len(r) > col && strings.Contains(string(r[col:]), outcomeNames[o]) {
					at = append(at, i)
					break
				}
			}
		}
		if len(at) != int(numOutcomes) || at[0] != title+1 {
			t.Fatalf("charset %d: labels at %v, want the first right under the title (line %d)", cs, at, title+1)
		}
		rows := at[1] - at[0]
		for i := 1; i < len(at); i++ {
			if at[i]-at[i-1] != rows {
				t.Errorf("charset %d: labels at %v, want every %d lines", cs, at, rows)
			}
		}
		// The timeouts' block starts at its label: the line before it is
		// the provider errors' bottom row, blank in the gutter.
		if r := []rune(lines[at[numOutcomes-1]-1]); strings.TrimSpace(string(r[col:col+gutterW])) != "" {
			t.Errorf("charset %d: line above the timeout label has a label: %q", cs, string(r))
		}
	}
}
