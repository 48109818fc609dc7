package ui

import (
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// doubleClick is the longest gap between two clicks on one row that
// opens it (the common desktop default is 500 ms).
const doubleClick = 500 * time.Millisecond

// tabHit is a view name in the tab strip: its columns [x0, x1) on the
// first body line.
type tabHit struct {
	x0, x1 int
	view   viewID
	name   string
}

// tabNames are the views the tab strip offers, in tab order.
var tabNames = []struct {
	view viewID
	name string
}{{viewOverview, "overview"}, {viewDetail, "detail"}, {viewChains, "chains"}}

// onMouse handles a mouse event: the wheel scrolls the list or the pane
// under it, a click on a row selects it and a second one opens it, a
// click on a tab name switches to its view. Coordinates are the
// terminal's cells, 0-based.
func (m *Model) onMouse(msg tea.MouseMsg) tea.Cmd {
	if m.c.opts.NoMouse {
		return nil
	}
	k := &m.c.keys
	wheel := 0
	switch msg.Button {
	case tea.MouseButtonWheelUp:
		wheel = -1
	case tea.MouseButtonWheelDown:
		wheel = +1
	}
	if wheel != 0 {
		if msg.Action != tea.MouseActionPress {
			return nil
		}
		ks := keyOf(k.Down)
		if wheel < 0 {
			ks = keyOf(k.Up)
		}
		switch {
		case m.showHelp:
			m.helpView.update(ks)
			return nil
		case m.view == viewOverview && m.overview.filtering:
			return nil
		}
		return m.onKey(ks) // as the key would: the cursor moves, a pane scrolls
	}
	if msg.Button != tea.MouseButtonLeft || msg.Action != tea.MouseActionPress || m.showHelp {
		return nil
	}
	if msg.Y == m.bodyTop {
		for _, t := range m.tabs {
			if msg.X >= t.x0 && msg.X < t.x1 {
				return m.toTab(t.view)
			}
		}
	}
	if m.view != viewOverview || m.overview.filtering {
		return nil
	}
	pos, ok := m.overview.rowAt(msg.Y - m.bodyTop)
	if !ok {
		return nil
	}
	now := m.c.opts.Now()
	double := m.lastClick.ok && m.lastClick.pos == pos && now.Sub(m.lastClick.at) <= doubleClick
	m.lastClick = clickAt{pos: pos, at: now, ok: !double}
	m.following = false // the user chose a row
	m.overview.moveTo(pos)
	if double {
		cmd, _ := m.openSelected()
		return cmd
	}
	return nil
}

// keyOf is the key message of a binding's first key, for the wheel.
func keyOf(b key.Binding) tea.KeyMsg {
	keys := b.Keys()
	if len(keys) == 0 {
		return tea.KeyMsg{}
	}
	switch keys[0] {
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(keys[0])}
}

// truncateANSI cuts a rendered line to w columns, escapes kept.
func truncateANSI(ln line, w int) string {
	if ln.w <= w {
		return ln.s
	}
	return ansi.Truncate(ln.s, w, "")
}

// clickAt is the last click on a row, for double clicks.
type clickAt struct {
	pos int
	at  time.Time
	ok  bool
}

// toTab switches to a tab's view as tab and esc would.
func (m *Model) toTab(v viewID) tea.Cmd {
	switch v {
	case viewOverview:
		m.switchView(viewOverview)
	case viewDetail:
		if m.view == viewOverview {
			cmd, _ := m.openSelected()
			return cmd
		}
		if m.view == viewChains {
			m.view = viewOverview
			cmd, _ := m.openSelected()
			return cmd
		}
	case viewChains:
		m.switchView(viewChains)
	}
	return nil
}

// tabStrip appends the view names to the first body line when they fit
// beside its title, the current one highlighted, and records where each
// is for clicks.
func (m *Model) tabStrip(ln line) line {
	if m.c.opts.NoMouse || m.showHelp || m.c.width < wideWidth {
		m.tabs = m.tabs[:0]
		return ln
	}
	// The title line changes with the data, not with the clock: reuse the
	// last strip while it is the same line.
	if ck := (tabKey{ln.s, m.c.width, m.view}); ck == m.tabKey {
		return m.tabLine
	} else {
		m.tabKey = ck
	}
	m.tabs = m.tabs[:0]
	st := &m.c.st
	cur := m.view
	if cur == viewService || cur == viewGroup {
		cur = viewDetail
	}
	w := 1
	for _, t := range tabNames {
		w += len(t.name) + 2
	}
	keep := m.c.width - w
	l := &m.lw
	l.buf = append(l.buf, truncateANSI(ln, keep)...)
	l.w = min(ln.w, keep)
	l.padTo(keep)
	l.pad(1)
	for _, t := range tabNames {
		x0 := l.w
		sp := st.dim
		if t.view == cur {
			sp = st.selected
		}
		if t.view == cur {
			l.text("["+t.name+"]", sp) // bracketed: it reads without colour too
		} else {
			l.text(" "+t.name+" ", sp)
		}
		m.tabs = append(m.tabs, tabHit{x0: x0, x1: l.w, view: t.view, name: t.name})
	}
	m.tabLine = l.line()
	return m.tabLine
}

// tabKey is what the tab strip's line depends on.
type tabKey struct {
	title string
	width int
	view  viewID
}
