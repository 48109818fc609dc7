package ui

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/term"
)

// Run shows the dashboard for src on the terminal (alternate screen) until
// the user quits or ctx ends. It returns nil in both cases, or the error
// that stopped the program.
//
// The terminal is drawn by termScreen, not by bubbletea's renderer, so an
// idle dashboard has no timer firing. Without its renderer bubbletea
// neither puts the terminal in raw mode nor reports its size, so Run does
// both (as bubbletea does with its renderer on).
func Run(ctx context.Context, src Source, opts Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the goroutines waiting on src.Updates() and SIGWINCH

	m := NewModel(src, opts)
	m.done = ctx.Done()
	mouse := !m.c.opts.NoMouse

	in := os.Stdin
	if !term.IsTerminal(in.Fd()) {
		// Input piped in: keys come from the terminal, as bubbletea does.
		if tty, err := os.Open("/dev/tty"); err == nil {
			defer tty.Close()
			in = tty
		}
	}
	if term.IsTerminal(in.Fd()) {
		st, err := term.MakeRaw(in.Fd())
		if err != nil {
			return err
		}
		defer term.Restore(in.Fd(), st) //nolint:errcheck // nothing left to do about it
	}
	out := os.Stdout
	scr := newTermScreen(out, time.Second/time.Duration(m.c.opts.FPS))
	_, _ = io.WriteString(out, screenEnter(mouse))
	go scr.run()
	defer func() {
		scr.stop()
		_, _ = io.WriteString(out, screenLeave(mouse))
	}()

	p := tea.NewProgram(&program{Model: m, scr: scr, force: true},
		tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out), tea.WithoutRenderer())
	if term.IsTerminal(out.Fd()) {
		go watchSize(ctx, out, p)
	}
	_, err := p.Run()
	if err != nil && errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // the caller cancelled: a normal end
	}
	return err
}

// program is the model bubbletea runs: the dashboard, whose views go to
// the screen when they change.
type program struct {
	*Model
	scr    *termScreen
	posted string
	force  bool // post the next view even if unchanged (a resize)
}

func (p *program) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if ws, ok := msg.(tea.WindowSizeMsg); ok {
		p.scr.resize(ws.Width)
		p.force = true
	}
	_, cmd := p.Model.Update(msg)
	return p, cmd
}

// View runs after every message (bubbletea calls it); an unchanged view
// is the model's cached string, compared by its pointer first.
func (p *program) View() string {
	v := p.Model.View()
	if p.force || v != p.posted {
		p.force = false
		p.posted = v
		p.scr.post(v)
	}
	return v
}

// watchSize sends the terminal's size now and after every resize.
func watchSize(ctx context.Context, out *os.File, p *tea.Program) {
	send := func() {
		if w, h, err := term.GetSize(out.Fd()); err == nil {
			p.Send(tea.WindowSizeMsg{Width: w, Height: h})
		}
	}
	send()
	resized, stop := notifyResize()
	defer stop()
	for {
		select {
		case <-resized:
			send()
		case <-ctx.Done():
			return
		}
	}
}
