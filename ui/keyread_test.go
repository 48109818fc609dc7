package ui

import (
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// TestKeysReadTogetherEachAct: bubbletea reads the printable keys that
// arrive in one read as one message ("jj"); each of them acts, as it
// would have one by one. A paste stays one piece of text.
func TestKeysReadTogetherEachAct(t *testing.T) {
	m := newTestModel(t, Options{}, nil)
	send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, liveFrame(fixtureFrame(dataTime, time.Minute, 0)))
	rows := order(m)

	keys(m, "jj")
	if got := selected(m); got != rows[2] {
		t.Errorf("jj selected %q, want the third row %q", got, rows[2])
	}
	keys(m, "ss")
	if m.overview.sortBy != colAttOK {
		t.Errorf("ss: sort %s, want ATT%% (two columns after AMP)", colSpecs[m.overview.sortBy].head)
	}
	keys(m, "]]")
	if m.Window() != 15*time.Minute {
		t.Errorf("]] from 1m: window %v, want 15m (two steps)", m.Window())
	}
	keys(m, "[[[")
	if m.Window() != 30*time.Second {
		t.Errorf("[[[ from 15m: window %v, want 30s (three steps)", m.Window())
	}

	// A paste of "jj" is text, not two key presses.
	before := selected(m)
	send(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jj"), Paste: true})
	if got := selected(m); got != before {
		t.Errorf("a pasted jj moved the cursor from %q to %q", before, got)
	}
	// In the filter, keys read together are typed in order.
	keys(m, "/", "pay")
	if got := m.overview.filter.Value(); got != "pay" {
		t.Errorf("filter %q, want %q", got, "pay")
	}
}
