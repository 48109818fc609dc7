package ui

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
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
	m.ctx, m.done = ctx, ctx.Done()
	mouse := !m.c.opts.NoMouse

	in := os.Stdin
	if !term.IsTerminal(in.Fd()) {
		// Input piped in: keys come from the terminal, as bubbletea does.
		if tty, err := os.Open("/dev/tty"); err == nil {
			defer tty.Close()
			in = tty
		}
	}
	out := os.Stdout
	t := &terminal{out: out, mouse: mouse}
	if term.IsTerminal(in.Fd()) {
		st, err := term.MakeRaw(in.Fd())
		if err != nil {
			return err
		}
		t.restore = func() { _ = term.Restore(in.Fd(), st) }
	}
	t.scr = newTermScreen(out, time.Second/time.Duration(m.c.opts.FPS), screenClock{now: time.Now, after: time.After})
	_, _ = io.WriteString(out, screenEnter(mouse))
	go t.scr.run()
	defer t.leave()

	p := tea.NewProgram(&program{Model: m, scr: t.scr, term: t, force: true},
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
	term   *terminal // nil in tests
	posted string
	force  bool // post the next view even if unchanged (a resize)
}

func (p *program) Init() tea.Cmd {
	return p.guard(p.Model.Init())
}

func (p *program) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	defer p.leaveOnPanic()
	if ws, ok := msg.(tea.WindowSizeMsg); ok {
		p.scr.resize(ws.Width)
		p.force = true
	}
	_, cmd := p.Model.Update(msg)
	return p, p.guard(cmd)
}

// View runs after every message (bubbletea calls it); an unchanged view
// is the model's cached string, compared by its pointer first.
func (p *program) View() string {
	defer p.leaveOnPanic()
	v := p.Model.View()
	if p.force || v != p.posted {
		p.force = false
		p.posted = v
		p.scr.post(v)
	}
	return v
}

// terminal is the terminal's state Run changed, given back once: when
// Run returns, or before a panic goes on to bubbletea, which prints it
// (on the normal screen, not on the alternate one about to be left).
type terminal struct {
	once    sync.Once
	scr     *termScreen
	out     io.Writer
	mouse   bool
	restore func() // the tty's mode before raw (nil: not a tty)
}

func (t *terminal) leave() {
	t.once.Do(func() {
		t.scr.stop()
		_, _ = io.WriteString(t.out, screenLeave(t.mouse))
		if t.restore != nil {
			t.restore()
		}
	})
}

func (p *program) leaveOnPanic() {
	if r := recover(); r != nil {
		if p.term != nil {
			p.term.leave()
		}
		panic(r)
	}
}

// guard makes cmd (and the commands of a batch it returns) give the
// terminal back before a panic goes on: commands run in goroutines of
// bubbletea, which recovers their panics and prints them.
func (p *program) guard(cmd tea.Cmd) tea.Cmd {
	if cmd == nil {
		return nil
	}
	return func() tea.Msg {
		defer p.leaveOnPanic()
		msg := cmd()
		if b, ok := msg.(tea.BatchMsg); ok {
			for i := range b {
				b[i] = p.guard(b[i])
			}
		}
		return msg
	}
}

// watchSize sends the terminal's size now and after every resize
// (watchResizes: SIGWINCH, or on Windows, which has none, a poll).
func watchSize(ctx context.Context, out *os.File, p *tea.Program) {
	get := func() (int, int, error) { return term.GetSize(out.Fd()) }
	send := func(m tea.Msg) { p.Send(m) }
	last := termSize{-1, -1} // none sent: a poll sends the first size it reads
	if w, h, err := get(); err == nil {
		last = termSize{w, h}
		send(tea.WindowSizeMsg{Width: w, Height: h})
	}
	watchResizes(ctx.Done(), last, get, send)
}

type termSize struct{ w, h int }

// followSize reads the size each time ticks fires and sends it as a
// tea.WindowSizeMsg (when onlyChanged, only when it differs from the
// last one sent, starting from last), until done. A size that cannot be
// read is skipped.
func followSize[T any](done <-chan struct{}, ticks <-chan T, onlyChanged bool, last termSize, get func() (int, int, error), send func(tea.Msg)) {
	for {
		select {
		case <-ticks:
			w, h, err := get()
			if err != nil || (onlyChanged && last == termSize{w, h}) {
				continue
			}
			last = termSize{w, h}
			send(tea.WindowSizeMsg{Width: w, Height: h})
		case <-done:
			return
		}
	}
}
