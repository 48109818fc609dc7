package ui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// The dashboard marks a value a custom mapping derives: the retries cell
// of a target its dialect reads carries *, its other cells and the other
// targets' rows none; without Options.Derived nothing is marked.
func TestDerivedMarkOnScreen(t *testing.T) {
	for _, marked := range []bool{true, false} {
		var opts Options
		if marked {
			opts.Derived = map[string]map[string]string{"shop": {"retries": "attempts - originals"}}
		}
		m := newTestModel(t, opts, nil)
		f := fixtureFrame(dataTime, time.Minute, 0)
		f.Targets[0].Dialect = "shop+pools" // checkout
		send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, liveFrame(f))
		view := ansi.Strip(m.View())
		var checkout, gateway string
		for _, l := range strings.Split(view, "\n") {
			switch {
			case strings.Contains(l, "checkout") && strings.Contains(l, "inventory"):
				checkout = l
			case strings.Contains(l, "gateway") && strings.Contains(l, "checkout"):
				gateway = l
			}
		}
		if checkout == "" || gateway == "" {
			t.Fatalf("rows not found:\n%s", view)
		}
		if strings.Contains(gateway, derivedMark) {
			t.Errorf("gateway's row is marked: %q", gateway)
		}
		if got := strings.Count(checkout, derivedMark); marked && got != 1 || !marked && got != 0 {
			t.Errorf("marked=%v: %d marks in %q", marked, got, checkout)
		}
		if marked {
			// The mark follows the RETR/s column's value.
			fields := strings.Fields(checkout)
			var i int
			for i = range fields {
				if strings.HasSuffix(fields[i], derivedMark) {
					break
				}
			}
			head := strings.Fields(lineWith(view, "RETR/s"))
			col := -1
			for j, h := range head {
				if strings.HasSuffix(h, "RETR/s") {
					col = j
				}
			}
			if col < 0 || i != col {
				t.Errorf("the mark is on field %d of %q, want under RETR/s (header %q)", i, checkout, head)
			}
		}
	}
}
