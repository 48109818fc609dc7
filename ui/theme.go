package ui

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// Theme is every colour the dashboard uses. The default uses the terminal's
// own 16-colour palette (ANSI 0-15), so it follows the user's light or dark
// scheme. Colour is never the only carrier of meaning: every outcome also
// has its own glyph, column or fixed position.
type Theme struct {
	Text   lipgloss.TerminalColor // ordinary text (nil: terminal default)
	Dim    lipgloss.TerminalColor // secondary text, zeros, absent values, rules
	Accent lipgloss.TerminalColor // titles, key names
	Warn   lipgloss.TerminalColor // high amplification, misleading-p99 warning

	Live   lipgloss.TerminalColor // LIVE badge
	Paused lipgloss.TerminalColor // PAUSED badge
	Replay lipgloss.TerminalColor // REPLAY badge
	Down   lipgloss.TerminalColor // a down target in the header

	// Outcomes, one colour each. Protection (admission, budget) never
	// shares a colour with provider failures (provider error, timeout).
	Success           lipgloss.TerminalColor
	Rescued           lipgloss.TerminalColor
	AdmissionRejected lipgloss.TerminalColor
	BudgetDenied      lipgloss.TerminalColor
	DeadlineExhausted lipgloss.TerminalColor
	ProviderError     lipgloss.TerminalColor
	Timeout           lipgloss.TerminalColor

	// Chart series.
	Originals lipgloss.TerminalColor
	Attempts  lipgloss.TerminalColor
	// Latency classes.
	FastFailure lipgloss.TerminalColor
	Failure     lipgloss.TerminalColor
}

// DefaultTheme returns the ANSI 0-15 theme.
func DefaultTheme() Theme {
	return Theme{
		Dim:    lipgloss.ANSIColor(8),
		Accent: lipgloss.ANSIColor(12),
		Warn:   lipgloss.ANSIColor(11),

		Live:   lipgloss.ANSIColor(2),
		Paused: lipgloss.ANSIColor(3),
		Replay: lipgloss.ANSIColor(6),
		Down:   lipgloss.ANSIColor(1),

		Success:           lipgloss.ANSIColor(2),
		Rescued:           lipgloss.ANSIColor(6),
		AdmissionRejected: lipgloss.ANSIColor(5),
		BudgetDenied:      lipgloss.ANSIColor(4),
		DeadlineExhausted: lipgloss.ANSIColor(3),
		ProviderError:     lipgloss.ANSIColor(1),
		Timeout:           lipgloss.ANSIColor(9),

		Originals: lipgloss.ANSIColor(12),
		Attempts:  lipgloss.ANSIColor(3),

		FastFailure: lipgloss.ANSIColor(11),
		Failure:     lipgloss.ANSIColor(1),
	}
}

// span is a style reduced to the escape sequences around its text, so that
// rendering a cell is two string writes instead of a lipgloss Render.
type span struct{ pre, post string }

// styles are the theme's spans for one renderer and colour setting.
type styles struct {
	text, dim, bold, accent, title, warn span
	selected                             span
	live, paused, replay, badge, down    span
	outcome                              [numOutcomes]span
	resp                                 [numResp]span
	originals, attempts                  span
	class                                [3]span // success, fast failure, failure
}

const spanSentinel = "\uE000"

func makeSpan(st lipgloss.Style) span {
	out := st.Render(spanSentinel)
	i := strings.Index(out, spanSentinel)
	if i < 0 {
		return span{}
	}
	return span{pre: out[:i], post: out[i+len(spanSentinel):]}
}

func newStyles(t Theme, r *lipgloss.Renderer, noColor bool) styles {
	if noColor {
		// Every span empty: no colour and no attributes. Selection and
		// state are carried by glyphs.
		return styles{}
	}
	fg := func(c lipgloss.TerminalColor) span {
		st := r.NewStyle()
		if c != nil {
			st = st.Foreground(c)
		}
		return makeSpan(st)
	}
	bfg := func(c lipgloss.TerminalColor) span {
		st := r.NewStyle().Bold(true)
		if c != nil {
			st = st.Foreground(c)
		}
		return makeSpan(st)
	}
	s := styles{
		text:     fg(t.Text),
		dim:      fg(t.Dim),
		bold:     makeSpan(r.NewStyle().Bold(true)),
		accent:   fg(t.Accent),
		title:    bfg(t.Accent),
		warn:     bfg(t.Warn),
		selected: makeSpan(r.NewStyle().Reverse(true)),
		live:     bfg(t.Live),
		paused:   makeSpan(r.NewStyle().Bold(true).Reverse(true).Foreground(orDefault(t.Paused))),
		replay:   bfg(t.Replay),
		badge:    bfg(t.Down),
		down:     bfg(t.Down),

		originals: fg(t.Originals),
		attempts:  fg(t.Attempts),
	}
	s.outcome[outSuccess] = fg(t.Success)
	s.outcome[outRescued] = fg(t.Rescued)
	s.outcome[outAdmission] = fg(t.AdmissionRejected)
	s.outcome[outBudget] = fg(t.BudgetDenied)
	s.outcome[outDeadline] = fg(t.DeadlineExhausted)
	s.outcome[outProvider] = fg(t.ProviderError)
	s.outcome[outTimeout] = fg(t.Timeout)
	// Service responses reuse the outcome colours: 429 is protection,
	// 503 with Retry-After the caller's cue to wait, the rest failures.
	s.resp[resp2xx] = s.outcome[outSuccess]
	s.resp[resp429] = s.outcome[outAdmission]
	s.resp[resp503RA] = s.outcome[outDeadline]
	s.resp[resp503] = s.outcome[outProvider]
	s.resp[resp5xx] = s.outcome[outTimeout]
	s.class[0] = fg(t.Success)
	s.class[1] = fg(t.FastFailure)
	s.class[2] = fg(t.Failure)
	return s
}

func orDefault(c lipgloss.TerminalColor) lipgloss.TerminalColor {
	if c == nil {
		return lipgloss.NoColor{}
	}
	return c
}
