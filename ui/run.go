package ui

import (
	"context"
	"errors"

	tea "github.com/charmbracelet/bubbletea"
)

// Run shows the dashboard for src on the terminal (alternate screen) until
// the user quits or ctx ends. It returns nil in both cases, or the error
// that stopped the program.
func Run(ctx context.Context, src Source, opts Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the goroutine waiting on src.Updates()

	m := NewModel(src, opts)
	m.done = ctx.Done()
	popts := []tea.ProgramOption{
		tea.WithAltScreen(),
		tea.WithContext(ctx),
		tea.WithFPS(m.c.opts.FPS),
	}
	if !m.c.opts.NoMouse {
		// Clicks and the wheel (cell motion, not all motion: the
		// dashboard has no hover, so no stream of events for nothing).
		popts = append(popts, tea.WithMouseCellMotion())
	}
	p := tea.NewProgram(m, popts...)
	_, err := p.Run()
	if err != nil && errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // the caller cancelled: a normal end
	}
	return err
}
