package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/retrytop/retrytop/model"
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

// The detail pane of a gRPC row without an exported balance shows the
// token count rebuilt from its bins: 200 successes fill it (10 from any
// start), then 10 - 2 + 0.2 = 8.2, then 6.4 (10 s bins of 0.4 attempts/s
// at 50 %); drain 0.2 - 0.02 = 0.18/s.
func TestDetailBudgetLine(t *testing.T) {
	bin := func(i int64) model.Signals {
		return model.Signals{Target: "gw", Dependency: "api", StartMs: i * 10000, EndMs: (i + 1) * 10000,
			AttemptsPerS: model.Some(0.4), AttemptSuccess: model.Some(0.5), TemporaryErrorsPerS: model.Some(0.2), OriginalsPerS: model.Some(0.4)}
	}
	fill := bin(-1)
	fill.AttemptsPerS, fill.AttemptSuccess, fill.TemporaryErrorsPerS = model.Some(20), model.Some(1), model.Some(0)
	win := bin(0)
	win.EndMs = 20000
	f := model.Frame{Time: dataTime, Window: time.Minute, Bin: 10 * time.Second,
		Targets:   []model.TargetStatus{{Name: "gw", Up: true, Dialect: "grpc", LastScrape: dataTime, LastSuccess: dataTime}},
		Rows:      []model.Signals{win},
		Timelines: map[model.Key]*model.Timeline{win.Key(): model.NewTimeline([]model.Signals{fill, bin(0), bin(1)})}}
	m := newTestModel(t, Options{}, nil)
	send(m, tea.WindowSizeMsg{Width: 140, Height: 200}, liveFrame(f))
	keys(m, "enter")
	v := ansi.Strip(m.View())
	for _, want := range []string{"BUDGET LEFT", "6.40 of 10 tokens, retries stop at 5, drain 0.18/s, exhausted in 7.78s (grpc model, reconstructed)"} {
		if !strings.Contains(v, want) {
			t.Errorf("detail lacks %q:\n%s", want, v)
		}
	}
	f.Targets[0].Dialect = "native"
	send(m, liveFrame(f))
	if v := ansi.Strip(m.View()); strings.Contains(v, "BUDGET LEFT") {
		t.Errorf("a native row without a balance shows a budget:\n%s", v)
	}
}

// Leaving the what-if pane, or quitting, cancels a comparison under way:
// its context ends, its late answer is not shown, and the pane opened
// again starts it again.
func TestWhatIfCancelledWhenThePaneCloses(t *testing.T) {
	runs := make(chan context.Context, 4)
	run := func(ctx context.Context) (string, error) {
		runs <- ctx
		<-ctx.Done() // blocks until cancelled
		return "", ctx.Err()
	}
	cancelled := func(what string, ctx context.Context) {
		t.Helper()
		// A bound for a busy machine, not a wait: cancel closes Done.
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the comparison's context was not cancelled", what)
		}
	}
	started := func(cmd tea.Cmd) (context.Context, chan tea.Msg) {
		t.Helper()
		if cmd == nil {
			t.Fatal("w started no comparison")
		}
		answer := make(chan tea.Msg, 1)
		go func() { answer <- cmd() }()
		return <-runs, answer
	}

	for _, leave := range []string{"esc", "w", "f", "tab"} {
		m := storyModel(t, Options{WhatIf: run}, 120, 40)
		ctx, answer := started(send(m, keyMsg("w")))
		if ctx.Err() != nil {
			t.Fatalf("%s: cancelled before the pane closed", leave)
		}
		send(m, keyMsg(leave))
		if m.view == viewWhatIf {
			t.Fatalf("%s did not leave the pane", leave)
		}
		cancelled(leave, ctx)
		send(m, <-answer) // the cancelled run's late answer
		if m.whatIf.done {
			t.Errorf("%s: the cancelled run's answer was shown", leave)
		}
		// Opened again, the pane computes again.
		ctx, answer = started(send(m, keyMsg("w")))
		if scr := ansi.Strip(m.View()); !strings.Contains(scr, "fitting the model") {
			t.Errorf("%s: reopened pane does not say it computes:\n%s", leave, scr)
		}
		// Quitting cancels it too.
		if cmd := send(m, keyMsg("q")); cmd == nil {
			t.Fatal("q did not quit")
		}
		cancelled(leave+" then q", ctx)
		<-answer
	}
}
