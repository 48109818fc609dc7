package ui

import (
	"context"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/retrytop/retrytop/internal/celltext"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// The what-if pane (w, in a replay of a recording) shows the recording
// replayed by the model under other retry policies: the text of
// `retrytop whatif FILE`, computed once, in a command, the
// first time the pane opens.

// whatIfMsg carries the comparison, or why there is none; run says which
// run it answers (a cancelled run's answer comes too late to show).
type whatIfMsg struct {
	text string
	err  error
	run  int
}

// whatIfState is the pane's content: not asked, computing (cancel set),
// or done.
type whatIfState struct {
	asked  bool
	done   bool
	lines  []string
	err    string
	run    int
	cancel context.CancelFunc
}

// toggleWhatIf opens (starting the comparison unless it is done) or
// closes the pane. Leaving the pane before the comparison is done
// cancels it (cancelWhatIf); opening it again starts it again.
func (m *Model) toggleWhatIf() tea.Cmd {
	if m.view == viewWhatIf {
		m.switchView(viewOverview)
		return nil
	}
	run := m.c.opts.WhatIf
	if run == nil {
		m.saved = "what if needs a recording (retrytop replay FILE)"
		return nil
	}
	m.view = viewWhatIf
	m.paneView.scroll = 0
	if m.whatIf.asked {
		return nil
	}
	ctx, cancel := context.WithCancel(m.ctx)
	m.whatIf.asked = true
	m.whatIf.run++
	m.whatIf.cancel = cancel
	n := m.whatIf.run
	return func() tea.Msg {
		// Seconds of work (an hour of incident per policy in seconds);
		// nothing waits for it but the pane.
		defer cancel()
		text, err := run(ctx)
		return whatIfMsg{text: text, err: err, run: n}
	}
}

// cancelWhatIf cancels a comparison under way, if any.
func (m *Model) cancelWhatIf() {
	if m.whatIf.cancel == nil {
		return
	}
	m.whatIf.cancel()
	m.whatIf.cancel = nil
	m.whatIf.asked = false
}

func (m *Model) onWhatIf(msg whatIfMsg) {
	if msg.run != m.whatIf.run || !m.whatIf.asked {
		return // a cancelled run's
	}
	m.whatIf.cancel = nil
	m.whatIf.done = true
	if msg.err != nil {
		m.whatIf.err = msg.err.Error()
		return
	}
	m.whatIf.lines = strings.Split(strings.TrimRight(msg.text, "\n"), "\n")
}

// whatIfPane renders the pane into s's cache.
func (m *Model) whatIfPane(s *scroller, width int) {
	p := &s.pane
	l, st, g := &p.l, &m.c.st, m.c.g
	out := p.title(s.cache[:0], "WHAT IF", "this recording replayed by the model under other retry policies "+g.dot+" w or esc back "+g.dot+" docs/whatif.md", width)
	switch {
	case !m.whatIf.done:
		l.text("fitting the model to the recording and replaying it under each policy…", st.dim)
		out = append(out, l.line())
	case m.whatIf.err != "":
		l.text("no comparison: ", st.warn)
		l.cell(safetext.Terminal(m.whatIf.err), width-l.w, false, st.text)
		out = append(out, l.line())
	default:
		for _, t := range m.whatIf.lines {
			l.cell(safetext.Terminal(t), width, false, st.text)
			out = append(out, trimSpaceRight(l.line()))
		}
	}
	s.cache = out
}

// detailBudget is the detail pane's budget line for a row whose budget the
// emitter does not export: rebuilt from its timeline with the model of its
// target's dialects; nothing when there is no such model.
func (p *painter) detailBudget(dst []line, row *model.Signals, tl []model.Signals, f *model.Frame, width int) []line {
	if row.BudgetBalance.OK() || f == nil {
		return dst // exported: SIGNALS shows it
	}
	b := rowBudget(row, tl, f)
	if b == nil {
		return dst
	}
	st := &p.c.st
	dst = append(dst, line{})
	dst = p.title(dst, "BUDGET LEFT", "reconstructed "+p.c.g.dot+" docs/whatif.md", width)
	p.l.cell(safetext.Terminal(celltext.BudgetText(b)), width, false, st.text)
	return append(dst, p.l.line())
}
