package ui

import "github.com/retrytop/retrytop/model"

// outcome is one of the fixed outcome positions of the detail view.
type outcome int

const (
	outSuccess outcome = iota
	outRescued
	outAdmission
	outBudget
	outDeadline
	outProvider
	outTimeout
	numOutcomes
)

var outcomeNames = [numOutcomes]string{
	"success", "rescued", "admission rej", "budget denied", "deadline exh", "provider err", "timeout",
}

// value returns the outcome's rate in a Signals.
func (o outcome) value(s *model.Signals) model.Value {
	switch o {
	case outSuccess:
		return s.SuccessesPerS
	case outRescued:
		return s.RescuedPerS
	case outAdmission:
		return s.AdmissionRejectedPerS
	case outBudget:
		return s.BudgetDeniedPerS
	case outDeadline:
		return s.DeadlineExhaustedPerS
	case outProvider:
		return s.ProviderErrorsPerS
	case outTimeout:
		return s.TimeoutsPerS
	}
	return model.Absent
}

// respClass is one response class of a service, at a fixed row of the
// service detail and with its own glyph.
type respClass int

const (
	resp2xx   respClass = iota
	resp429             // rate limited: the service's own protection
	resp503RA           // 503 carrying Retry-After: shed, come back later
	resp503             // 503 without Retry-After (all 503s when unknown)
	resp5xx             // any other 5xx
	numResp
)

// glyphs are the characters one charset draws with. Every entry is one
// terminal column wide.
type glyphs struct {
	outcome [numOutcomes]string
	resp    [numResp]string
	// levels are the eight heights of a sparkline cell (lowest first);
	// zero is drawn as zero and an absent value as a gap.
	levels [8]string
	zero   string
	gap    string
	// sub is how many vertical steps one chart cell resolves; fill[i] is a
	// cell filled i/sub from the bottom (fill[sub] is full).
	sub  int
	fill []string
	// second series fill (attempts above originals).
	above string
	// bars: filled and empty cells; histogram bars per latency class.
	bar, barEmpty string
	classBar      [3]string
	classGlyph    [3]string
	// markers and separators.
	selected, down, warn, pause, live, replay string
	sep, rule, arrowDown, arrowUp, mark       string
	micro, to                                 string
	inf                                       string // an unbounded limit
	times                                     string // a group's size: "checkout ×40"
	// dot separates the parts of a title or note; ellipsis ends cut text.
	dot, ellipsis string
}

func glyphsFor(c Charset) *glyphs {
	switch c {
	case CharsetASCII:
		return &asciiGlyphs
	case CharsetBraille:
		return &brailleGlyphs
	}
	return &blockGlyphs
}

var unicodeOutcomes = [numOutcomes]string{"✓", "↻", "⊘", "$", "◷", "✗", "⧗"}

var unicodeResp = [numResp]string{"✓", "⊖", "↩", "⊗", "✗"}

var blockGlyphs = glyphs{
	outcome:    unicodeOutcomes,
	resp:       unicodeResp,
	levels:     [8]string{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"},
	zero:       "·",
	gap:        " ",
	sub:        8,
	fill:       []string{" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"},
	above:      "░",
	bar:        "█",
	barEmpty:   "░",
	classBar:   [3]string{"█", "▒", "▓"},
	classGlyph: [3]string{"✓", "↯", "✗"},
	selected:   "▶",
	down:       "!",
	warn:       "⚠",
	pause:      "⏸",
	live:       "●",
	replay:     "▶",
	rule:       "─",
	arrowDown:  "↓",
	mark:       "◂",
	micro:      "µs",
	to:         "→",
	inf:        "∞",
	times:      "×",
	dot:        "·",
	ellipsis:   "…",
}

var brailleGlyphs = glyphs{
	outcome:    unicodeOutcomes,
	resp:       unicodeResp,
	levels:     [8]string{"⣀", "⣀", "⣤", "⣤", "⣶", "⣶", "⣿", "⣿"},
	zero:       "·",
	gap:        " ",
	sub:        4,
	fill:       []string{" ", "⣀", "⣤", "⣶", "⣿"},
	above:      "⠶",
	bar:        "⣿",
	barEmpty:   "⠤",
	classBar:   [3]string{"⣿", "⡪", "⢾"},
	classGlyph: [3]string{"✓", "↯", "✗"},
	selected:   "▶",
	down:       "!",
	warn:       "⚠",
	pause:      "⏸",
	live:       "●",
	replay:     "▶",
	rule:       "─",
	arrowDown:  "↓",
	mark:       "◂",
	micro:      "µs",
	to:         "→",
	inf:        "∞",
	times:      "×",
	dot:        "·",
	ellipsis:   "…",
}

var asciiGlyphs = glyphs{
	outcome:    [numOutcomes]string{"S", "R", "A", "B", "D", "E", "T"},
	resp:       [numResp]string{"2", "4", "R", "3", "5"},
	levels:     [8]string{"_", "-", "=", "+", "*", "#", "%", "@"},
	zero:       ".",
	gap:        " ",
	sub:        1,
	fill:       []string{" ", "#"},
	above:      "+",
	bar:        "#",
	barEmpty:   ".",
	classBar:   [3]string{"#", "f", "x"},
	classGlyph: [3]string{"S", "F", "X"},
	selected:   ">",
	down:       "!",
	warn:       "!",
	pause:      "||",
	live:       "*",
	replay:     ">",
	rule:       "-",
	arrowDown:  "v",
	mark:       "<",
	micro:      "us",
	to:         "->",
	inf:        "inf",
	times:      "x",
	dot:        "-",
	ellipsis:   "...",
}
