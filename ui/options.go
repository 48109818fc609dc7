package ui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/retrytop/retrytop/analysis"
)

// Charset selects the glyphs used for charts, bars and markers.
type Charset int

const (
	// CharsetBlock draws with Unicode block elements (the default).
	CharsetBlock Charset = iota
	// CharsetBraille draws charts with Braille patterns.
	CharsetBraille
	// CharsetASCII draws with printable ASCII only (TERM=linux, non-UTF-8
	// locales, fonts without block or Braille glyphs).
	CharsetASCII
)

func (c Charset) String() string {
	switch c {
	case CharsetBraille:
		return "braille"
	case CharsetASCII:
		return "ascii"
	}
	return "block"
}

// ParseCharset reads a --charset value: braille, block or ascii.
func ParseCharset(s string) (Charset, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "block", "blocks":
		return CharsetBlock, nil
	case "braille":
		return CharsetBraille, nil
	case "ascii", "tty":
		return CharsetASCII, nil
	}
	return CharsetBlock, fmt.Errorf("unknown charset %q (want braille, block or ascii)", s)
}

// CharsetFromEnv returns the default charset for an environment, given as a
// lookup function (os.Getenv in production, a map in tests): ascii when
// TERM is "linux" (the Linux console has no Braille and few block glyphs)
// or when the locale (LC_ALL, else LC_CTYPE, else LANG) is not UTF-8,
// block otherwise. An unset locale is the POSIX locale, which is not UTF-8.
func CharsetFromEnv(getenv func(string) string) Charset {
	if getenv == nil {
		return CharsetBlock
	}
	if strings.TrimSpace(getenv("TERM")) == "linux" {
		return CharsetASCII
	}
	locale := ""
	for _, k := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if v := getenv(k); v != "" {
			locale = v
			break
		}
	}
	l := strings.ToLower(locale)
	if strings.Contains(l, "utf-8") || strings.Contains(l, "utf8") {
		return CharsetBlock
	}
	return CharsetASCII
}

// NoColorFromEnv reports whether the environment asks for no colour:
// NO_COLOR set to a non-empty value (https://no-color.org).
func NoColorFromEnv(getenv func(string) string) bool {
	return getenv != nil && getenv("NO_COLOR") != ""
}

// Mode is what the header says the data is.
type Mode int

const (
	// ModeLive shows frames as a collector scrapes them.
	ModeLive Mode = iota
	// ModeReplay shows frames from a recording.
	ModeReplay
)

// DefaultWindows are the rate windows that [ and ] step through.
var DefaultWindows = []time.Duration{10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute}

// Options configure the dashboard. The zero value is usable: every zero
// field takes the default named in its comment.
type Options struct {
	// Window is the initial rate window (default 1m). A value not in
	// Windows is added to it.
	Window time.Duration
	// Windows are the windows [ and ] cycle through (default
	// DefaultWindows).
	Windows []time.Duration
	// Ranges are the time ranges the charts' z and Z step through
	// (default DefaultRanges; 0 is all the data held) and Range the first
	// (default 5m; negative: all). The charts span the data held, up to
	// the range, so they fill as history grows.
	Ranges []time.Duration
	Range  time.Duration
	// Bins is about how many timeline bins a chart shows (default 30):
	// their width is the nice step (1s, 2s, 5s, 10s, ...) that fits the
	// span shown into as many. Bin, when set, fixes the width instead.
	Bin  time.Duration
	Bins int

	// Charset picks glyphs; use CharsetFromEnv for the default.
	Charset Charset
	// NoColor drops every colour and attribute; state stays readable
	// through glyphs and positions. Set it from --no-color or
	// NoColorFromEnv.
	NoColor bool
	// Theme holds the colours (nil: DefaultTheme).
	Theme *Theme
	// Keys are the key bindings (nil: DefaultKeyMap). Help is generated
	// from them.
	Keys *KeyMap
	// Renderer detects the terminal's colour profile (nil: lipgloss'
	// default renderer, bound to stdout).
	Renderer *lipgloss.Renderer

	// Mode is LIVE or REPLAY in the header; Badges are extra header badges
	// such as "● REC", sanitised before display.
	Mode   Mode
	Badges []string
	// Player, in ModeReplay, drives the replay: a timeline bar under the
	// header and the player's keys (space, arrows, + and -, g and G).
	Player Player
	// Source and Version are what the info pane (i) says is watched
	// ("scrape of 4 targets every 1s", "recording incident.rtd") and which
	// build watches it; sanitised before display.
	Source  string
	Version string
	// WhatIf, when set (a replay of a recording), is what the what-if pane
	// (w) shows: the recording replayed by the model under other retry
	// policies, as retrytop whatif prints it. It runs once, in a command,
	// when the pane first opens; its text is sanitised before display.
	WhatIf func(ctx context.Context) (string, error)
	// SaveScreen, when set, writes a rendered view (with its escape
	// sequences) to files and returns their paths; ctrl+s calls it in a
	// command (never in Update) and the header says where the files are.
	SaveScreen func(view string) ([]string, error)
	// Status, when set, is asked at every render for one more header
	// badge (the recorder's "● REC", or its write error); "" shows none.
	Status func() string

	// Now is the wall clock shown in the header (default time.Now).
	Now func() time.Time
	// Location is where clock times are shown: the header clock, the
	// charts' time axes and the replay bar (default time.Local; --utc sets
	// time.UTC).
	Location *time.Location
	// NoMouse leaves the mouse to the terminal (--no-mouse): no clicks,
	// no wheel, and text can be selected as usual.
	NoMouse bool
	// StaleAfter: when no data arrived for this long, the header clock
	// and scrape age advance once a second until data arrives again
	// (default 2s; negative disables). With data arriving, the clock moves
	// on data and input only, so an idle dashboard does not tick.
	StaleAfter time.Duration
	// Chains are declared amplification chains by target names (from
	// --chain or a config file); none means chains are inferred.
	Chains []analysis.ChainSpec
	// Derived is, per dialect name, what its custom mapping derives
	// (short family name -> expression, analysis.ReportOptions.Derived):
	// the columns it feeds are marked in the rows of targets it reads.
	Derived map[string]map[string]string
	// Links tie dependency label values to services where no naming rule
	// does (a config's links: entries).
	Links []analysis.LinkRule
	// MinFrameGap is the least time between two live frames (default 1 s):
	// updates from many targets within it make one frame.
	MinFrameGap time.Duration
	// FPS caps how many frames a second Run draws while views keep
	// changing (default 30): a view comes to the terminal as soon as it
	// changes, unless the last came less than 1/FPS ago. Nothing is drawn,
	// and nothing wakes up, while nothing changes (termScreen).
	FPS int
}

func (o Options) withDefaults() Options {
	if len(o.Windows) == 0 {
		o.Windows = DefaultWindows
	}
	o.Windows = slices.Clone(o.Windows)
	if o.Window <= 0 {
		o.Window = time.Minute
	}
	if !slices.Contains(o.Windows, o.Window) {
		o.Windows = append(o.Windows, o.Window)
	}
	slices.Sort(o.Windows)
	if len(o.Ranges) == 0 {
		o.Ranges = DefaultRanges
	}
	o.Ranges = slices.Clone(o.Ranges)
	switch {
	case o.Range == 0:
		o.Range = 5 * time.Minute
	case o.Range < 0:
		o.Range = 0
	}
	if !slices.Contains(o.Ranges, o.Range) {
		o.Ranges = append(o.Ranges, o.Range)
	}
	// Shortest first, all (0) last.
	slices.SortFunc(o.Ranges, func(a, b time.Duration) int {
		if a <= 0 || b <= 0 {
			return cmpAll(a) - cmpAll(b)
		}
		return cmp.Compare(a, b)
	})
	if o.Bins <= 0 {
		o.Bins = 30
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.StaleAfter == 0 {
		o.StaleAfter = 2 * time.Second
	}
	if o.MinFrameGap == 0 {
		o.MinFrameGap = time.Second
	}
	if o.FPS <= 0 {
		o.FPS = 30
	}
	if o.Renderer == nil {
		o.Renderer = lipgloss.DefaultRenderer()
	}
	return o
}

// cmpAll orders the range "all" (0) after every other.
func cmpAll(r time.Duration) int {
	if r <= 0 {
		return 1
	}
	return 0
}
