package ui

import (
	"errors"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// ctrl+s hands the screen on display to Options.SaveScreen in a command
// and the header says where it went, until the next key.
func TestSaveScreenKey(t *testing.T) {
	var got string
	m := goldenModel(t, Options{SaveScreen: func(view string) ([]string, error) {
		got = view
		return []string{"/tmp/x/retrytop-1.txt", "/tmp/x/retrytop-1.ansi", "/tmp/x/retrytop-1.svg"}, nil
	}}, 120, 40)
	shown := m.View()
	cmd := send(m, tea.KeyMsg{Type: tea.KeyCtrlS})
	if cmd == nil {
		t.Fatal("ctrl+s returned no command")
	}
	if got != "" {
		t.Fatal("the screen was saved inside Update")
	}
	send(m, cmd())
	if got != shown {
		t.Errorf("saved view differs from the one on screen")
	}
	h := firstLine(ansi.Strip(m.View()))
	if !strings.Contains(h, "screen saved: /tmp/x/retrytop-1.{txt,ansi,svg}") {
		t.Errorf("header %q does not say where the screen went", h)
	}
	send(m, keyMsg("j"))
	if h := firstLine(ansi.Strip(m.View())); strings.Contains(h, "saved") {
		t.Errorf("the note outlived the next key: %q", h)
	}

	// A failure says why; no SaveScreen says it is not available.
	m = goldenModel(t, Options{SaveScreen: func(string) ([]string, error) { return nil, errors.New("disk full\x1b[2J") }}, 120, 40)
	send(m, send(m, tea.KeyMsg{Type: tea.KeyCtrlS})())
	if v := m.View(); !strings.Contains(ansi.Strip(v), "screen not saved: disk full") || strings.Contains(v, "\x1b[2J") {
		t.Errorf("failure: %q", firstLine(ansi.Strip(v)))
	}
	m = goldenModel(t, Options{}, 120, 40)
	if cmd := send(m, tea.KeyMsg{Type: tea.KeyCtrlS}); cmd != nil || !strings.Contains(firstLine(ansi.Strip(m.View())), "not available") {
		t.Errorf("without SaveScreen: cmd %v, header %q", cmd != nil, firstLine(ansi.Strip(m.View())))
	}
}
