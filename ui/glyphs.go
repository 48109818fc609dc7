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
	}
	// Braille patterns are in one of the five fonts the glyphs must render
	// in (Cascadia Code; not DejaVu Sans Mono, Menlo, Consolas or
	// JetBrains Mono): the braille charset draws with the block glyphs.
	return &blockGlyphs
}

// The Unicode glyphs are chosen from the code points every one of five
// common terminal fonts carries: DejaVu Sans Mono, Menlo, Consolas,
// Cascadia Code and JetBrains Mono (testdata/fonts/ holds their coverage
// tables; TestGlyphsInEveryFont checks every glyph the UI can print).
// That rules out the eighth blocks, Braille, ✓ ✗ ⚠ ⏸ and ⧗: Menlo and
// Consolas are proven to carry WGL4, and no more is claimed for them.
// Outcomes keep one glyph each, so they read without colour:
// √ success, ↑ rescued (brought back up), ¬ admission rejected (not
// let in), $ budget denied, δ deadline exhausted, × provider error,
// τ timeout.
var unicodeOutcomes = [numOutcomes]string{"√", "↑", "¬", "$", "δ", "×", "τ"}

// 2xx, 429 (refused like an admission), 503 with Retry-After (come back:
// ←), 503 (Ø: unavailable), other 5xx.
var unicodeResp = [numResp]string{"√", "¬", "←", "Ø", "×"}

var blockGlyphs = glyphs{
	outcome: unicodeOutcomes,
	resp:    unicodeResp,
	// Four shades, two levels each: the eighth blocks are not in WGL4.
	levels:     [8]string{"░", "░", "▒", "▒", "▓", "▓", "█", "█"},
	zero:       "·",
	gap:        " ",
	sub:        2,
	fill:       []string{" ", "▄", "█"},
	above:      "░",
	bar:        "█",
	barEmpty:   "░",
	classBar:   [3]string{"█", "▒", "▓"},
	classGlyph: [3]string{"√", "»", "×"},
	selected:   "►",
	down:       "!",
	warn:       "▲",
	pause:      "║",
	live:       "●",
	replay:     "►",
	rule:       "─",
	arrowDown:  "↓",
	arrowUp:    "↑",
	mark:       "◄",
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
	arrowUp:    "^",
	mark:       "<",
	micro:      "us",
	to:         "->",
	inf:        "inf",
	times:      "x",
	dot:        "-",
	ellipsis:   "~",
}
