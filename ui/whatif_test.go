package ui

import (
	"context"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// w, in a replay of a recording, opens the what-if pane: the comparison
// runs once, in a command, never in Update; its text is shown sanitised;
// w or esc closes; without a recording the key says what it needs.
func TestWhatIfPane(t *testing.T) {
	calls := 0
	run := func(context.Context) (string, error) {
		calls++
		return "policy    success  peak amp\nrecorded  61.7%    3.18x\nbounded   83.1%    1.00x \x1b[2J\u202e\n", nil
	}
	m := storyModel(t, Options{WhatIf: run}, 120, 40)
	cmd := send(m, keyMsg("w"))
	if m.view != viewWhatIf || cmd == nil || calls != 0 {
		t.Fatalf("w: view %v, command %v, %d runs in Update", m.view, cmd != nil, calls)
	}
	if scr := ansi.Strip(m.View()); !strings.Contains(scr, "fitting the model") {
		t.Errorf("no progress while computing:\n%s", scr)
	}
	send(m, cmd())
	scr := screen(t, m)
	for _, want := range []string{"WHAT IF", "recorded  61.7%    3.18x", "bounded   83.1%    1.00x"} {
		if !strings.Contains(scr, want) {
			t.Errorf("pane lacks %q:\n%s", want, scr)
		}
	}
	if strings.Contains(m.View(), "\x1b[2J") || strings.Contains(scr, "\u202e") {
		t.Errorf("untrusted text reached the screen:\n%q", scr)
	}
	send(m, keyMsg("w"))
	if m.view != viewOverview {
		t.Errorf("w again: view %v", m.view)
	}
	if cmd := send(m, keyMsg("w")); cmd != nil || calls != 1 {
		t.Errorf("reopened: command %v, %d runs (want the first answer kept)", cmd != nil, calls)
	}

	plain := storyModel(t, Options{}, 120, 40)
	send(plain, keyMsg("w"))
	if plain.view == viewWhatIf {
		t.Error("w opened the pane without a recording")
	}
}
