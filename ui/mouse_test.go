package ui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/retrytop/retrytop/model"
)

// lineIndex is the screen line holding sub, -1 when none does.
// lineIndex is the first line of scr holding sub's words in a row,
// whatever the column widths between them.
func lineIndex(scr, sub string) int {
	want := strings.Join(strings.Fields(sub), " ")
	for i, ln := range strings.Split(scr, "\n") {
		if strings.Contains(strings.Join(strings.Fields(ln), " "), want) {
			return i
		}
	}
	return -1
}

func press(x, y int) tea.MouseMsg {
	return tea.MouseMsg{X: x, Y: y, Button: tea.MouseButtonLeft, Action: tea.MouseActionPress}
}

func wheel(down bool) tea.MouseMsg {
	b := tea.MouseButtonWheelUp
	if down {
		b = tea.MouseButtonWheelDown
	}
	return tea.MouseMsg{X: 10, Y: 5, Button: b, Action: tea.MouseActionPress}
}

func TestMouseClickSelectsDoubleClickOpens(t *testing.T) {
	m := goldenModel(t, Options{}, 120, 40)
	scr := ansi.Strip(m.View())
	y := lineIndex(scr, "payments bank-api")
	if y < 0 {
		t.Fatalf("no bank-api row:\n%s", scr)
	}
	send(m, press(20, y))
	if k, _ := m.overview.selectedKey(); k != (model.Key{Target: "payments", Dependency: "bank-api"}) || m.following {
		t.Fatalf("click: selected %v following %v, want bank-api pinned", k, m.following)
	}
	if m.view != viewOverview {
		t.Fatalf("one click opened view %v", m.view)
	}
	// A click on another row, then this one: not a double click.
	yFraud := lineIndex(ansi.Strip(m.View()), "payments fraud")
	send(m, press(20, yFraud), press(20, y))
	if m.view != viewOverview {
		t.Fatalf("clicks on two rows opened view %v", m.view)
	}
	send(m, press(20, y))
	if m.view != viewDetail || m.detail.key.Dependency != "bank-api" {
		t.Fatalf("double click: view %v detail %v, want bank-api's detail", m.view, m.detail.key)
	}
	// A click off the rows (the header) changes nothing.
	send(m, keyMsg("esc"), press(5, 0))
	if k, _ := m.overview.selectedKey(); k.Dependency != "bank-api" {
		t.Errorf("a click on the header moved the cursor to %v", k)
	}
}

func TestMouseWheelScrolls(t *testing.T) {
	m := goldenModel(t, Options{}, 120, 40)
	send(m, wheel(true), wheel(true))
	if m.overview.cursor != 2 || m.following {
		t.Errorf("wheel down twice: cursor %d following %v, want 2 and pinned", m.overview.cursor, m.following)
	}
	send(m, wheel(false))
	if m.overview.cursor != 1 {
		t.Errorf("wheel up: cursor %d, want 1", m.overview.cursor)
	}
	// In the detail the wheel scrolls the pane.
	send(m, keyMsg("enter"), wheel(true), wheel(true), wheel(true))
	if m.detail.scroll != 3 {
		t.Errorf("wheel in the detail: scroll %d, want 3", m.detail.scroll)
	}
}

func TestMouseTabs(t *testing.T) {
	m := goldenModel(t, Options{}, 120, 40)
	scr := ansi.Strip(m.View())
	title := strings.Split(scr, "\n")[m.bodyTop]
	for _, name := range []string{"[overview]", " detail ", " chains "} {
		if !strings.Contains(title, name) {
			t.Fatalf("title line lacks the tab %q: %q", name, title)
		}
	}
	// Columns, not bytes: the title holds multi-byte glyphs.
	at := func(name string) int { return ansi.StringWidth(title[:strings.Index(title, name)]) + 1 }
	send(m, press(at(" chains "), m.bodyTop))
	if m.view != viewChains {
		t.Fatalf("click on chains: view %v", m.view)
	}
	m.View()
	title = strings.Split(ansi.Strip(m.View()), "\n")[m.bodyTop]
	send(m, press(at(" detail "), m.bodyTop))
	if m.view != viewDetail {
		t.Fatalf("click on detail: view %v", m.view)
	}
	m.View()
	send(m, press(at("overview"), m.bodyTop))
	if m.view != viewOverview {
		t.Fatalf("click on overview: view %v", m.view)
	}
	// Narrow screens have no tabs: the title keeps the room.
	n := goldenModel(t, Options{}, 80, 24)
	if title := strings.Split(ansi.Strip(n.View()), "\n")[n.bodyTop]; strings.Contains(title, "[overview]") {
		t.Errorf("80 columns: tabs in %q", title)
	}
}

func TestNoMouseIgnoresTheMouse(t *testing.T) {
	m := goldenModel(t, Options{NoMouse: true}, 120, 40)
	scr := ansi.Strip(m.View())
	if strings.Contains(scr, "[overview]") {
		t.Errorf("tabs shown with the mouse off")
	}
	y := lineIndex(scr, "payments bank-api")
	send(m, press(20, y), press(20, y), wheel(true))
	if m.overview.cursor != 0 || m.view != viewOverview || !m.following {
		t.Errorf("with --no-mouse: cursor %d view %v following %v", m.overview.cursor, m.view, m.following)
	}
}

// The help scrolls (j/k and the wheel) when it is taller than the screen.
func TestHelpScrolls(t *testing.T) {
	m := goldenModel(t, Options{}, 80, 24)
	send(m, keyMsg("?"))
	scr := ansi.Strip(m.View())
	lines := strings.Split(scr, "\n")
	if !strings.Contains(scr, "more lines") {
		t.Fatalf("80x24 help fits? it should scroll:\n%s", scr)
	}
	first := lines[m.bodyTop]
	send(m, keyMsg("j"))
	if got := strings.Split(ansi.Strip(m.View()), "\n")[m.bodyTop]; got == first {
		t.Errorf("j did not scroll the help: %q", got)
	}
	send(m, wheel(false))
	if got := strings.Split(ansi.Strip(m.View()), "\n")[m.bodyTop]; got != first {
		t.Errorf("wheel up did not scroll back: %q, want %q", got, first)
	}
	send(m, keyMsg("G"))
	if scr := ansi.Strip(m.View()); !strings.Contains(scr, "outcomes:") {
		t.Errorf("G does not reach the end of the help:\n%s", scr)
	}
}
