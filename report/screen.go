package report

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
	"github.com/retrytop/retrytop/internal/safetext"
)

// rgb is a colour; ok is false for the terminal's default.
type rgb struct {
	r, g, b uint8
	ok      bool
}

func (c rgb) hex() string { return fmt.Sprintf("#%02x%02x%02x", c.r, c.g, c.b) }

// cellStyle is the SGR state a cell was written with.
type cellStyle struct {
	fg, bg                                          rgb
	bold, faint, italic, underline, reverse, hidden bool
}

// cell is one character on the screen; a wide rune takes width 2 and is
// followed by nothing (the next cell starts after it).
type cell struct {
	r     rune
	width int
	st    cellStyle
}

// Default colours of the SVG rendering: a dark terminal, as the
// dashboard's theme assumes.
var (
	defaultFG = rgb{0xd0, 0xd0, 0xd0, true}
	defaultBG = rgb{0x1c, 0x1c, 0x1c, true}
)

// ansi16 is xterm's palette for SGR 30-37 and 90-97.
var ansi16 = [16]rgb{
	{0x00, 0x00, 0x00, true}, {0xcd, 0x00, 0x00, true}, {0x00, 0xcd, 0x00, true}, {0xcd, 0xcd, 0x00, true},
	{0x00, 0x00, 0xee, true}, {0xcd, 0x00, 0xcd, true}, {0x00, 0xcd, 0xcd, true}, {0xe5, 0xe5, 0xe5, true},
	{0x7f, 0x7f, 0x7f, true}, {0xff, 0x00, 0x00, true}, {0x00, 0xff, 0x00, true}, {0xff, 0xff, 0x00, true},
	{0x5c, 0x5c, 0xff, true}, {0xff, 0x00, 0xff, true}, {0x00, 0xff, 0xff, true}, {0xff, 0xff, 0xff, true},
}

// color256 is xterm's 256-colour palette: 16 system colours, a 6x6x6
// cube, then 24 greys.
func color256(n int) rgb {
	switch {
	case n < 16:
		return ansi16[n]
	case n < 232:
		n -= 16
		level := func(v int) uint8 {
			if v == 0 {
				return 0
			}
			return uint8(55 + 40*v)
		}
		return rgb{level(n / 36), level(n / 6 % 6), level(n % 6), true}
	default:
		g := uint8(8 + 10*(n-232))
		return rgb{g, g, g, true}
	}
}

// parseScreen splits a rendered view into lines of cells, applying its
// SGR sequences. Every other escape sequence (cursor moves, OSC titles and
// links) and every control character but \n and \t is dropped: a view is
// a page of text, and nothing in it may act on whoever reads the file.
func parseScreen(view string) [][]cell {
	var lines [][]cell
	var line []cell
	var st cellStyle
	for i := 0; i < len(view); {
		c := view[i]
		switch {
		case c == 0x1b:
			n, params, final := escape(view[i:])
			if final == 'm' {
				st = applySGR(st, params)
			}
			i += n
			continue
		case c == '\n':
			lines = append(lines, line)
			line = nil
			i++
			continue
		case c == '\t':
			for pad := 8 - cols(line)%8; pad > 0; pad-- {
				line = append(line, cell{r: ' ', width: 1, st: st})
			}
			i++
			continue
		case c < 0x20 || c == 0x7f:
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(view[i:])
		i += size
		if r == 0x9b || (r >= 0x80 && r < 0xa0) || safetext.Invisible(r) {
			continue // C1 controls (0x9b is a CSI on some terminals) and bidi/zero-width marks
		}
		w := runewidth.RuneWidth(r)
		if w == 0 {
			continue // combining marks would need a grapheme-aware grid; the text stays readable without them
		}
		line = append(line, cell{r: r, width: w, st: st})
	}
	if len(line) > 0 || len(lines) == 0 {
		lines = append(lines, line)
	}
	return lines
}

func cols(line []cell) int {
	n := 0
	for _, c := range line {
		n += c.width
	}
	return n
}

// escape measures the escape sequence at the start of s (which begins
// with ESC) and returns its length, and for a CSI its parameters and
// final byte (0 for any other sequence).
func escape(s string) (n int, params string, final byte) {
	if len(s) < 2 {
		return len(s), "", 0
	}
	switch s[1] {
	case '[': // CSI: parameters and intermediates, then a final byte 0x40-0x7e
		for j := 2; j < len(s); j++ {
			if s[j] >= 0x40 && s[j] <= 0x7e {
				return j + 1, s[2:j], s[j]
			}
		}
		return len(s), "", 0
	case ']', 'P', '_', '^', 'X': // OSC, DCS, APC, PM, SOS: up to BEL or ST
		for j := 2; j < len(s); j++ {
			if s[j] == 0x07 {
				return j + 1, "", 0
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2, "", 0
			}
		}
		return len(s), "", 0
	}
	return 2, "", 0
}

// applySGR returns the style after an SGR sequence's parameters.
func applySGR(st cellStyle, params string) cellStyle {
	if params == "" {
		return cellStyle{}
	}
	ps := strings.FieldsFunc(params, func(r rune) bool { return r == ';' || r == ':' })
	num := func(i int) int {
		if i >= len(ps) {
			return -1
		}
		v, err := strconv.Atoi(ps[i])
		if err != nil {
			return -1
		}
		return v
	}
	for i := 0; i < len(ps); i++ {
		switch p := num(i); {
		case p == 0:
			st = cellStyle{}
		case p == 1:
			st.bold = true
		case p == 2:
			st.faint = true
		case p == 3:
			st.italic = true
		case p == 4:
			st.underline = true
		case p == 7:
			st.reverse = true
		case p == 8:
			st.hidden = true
		case p == 22:
			st.bold, st.faint = false, false
		case p == 23:
			st.italic = false
		case p == 24:
			st.underline = false
		case p == 27:
			st.reverse = false
		case p == 28:
			st.hidden = false
		case p >= 30 && p <= 37:
			st.fg = ansi16[p-30]
		case p == 39:
			st.fg = rgb{}
		case p >= 40 && p <= 47:
			st.bg = ansi16[p-40]
		case p == 49:
			st.bg = rgb{}
		case p >= 90 && p <= 97:
			st.fg = ansi16[p-90+8]
		case p >= 100 && p <= 107:
			st.bg = ansi16[p-100+8]
		case p == 38 || p == 48:
			var c rgb
			switch num(i + 1) {
			case 5:
				if n := num(i + 2); n >= 0 && n <= 255 {
					c = color256(n)
				}
				i += 2
			case 2:
				r, g, b := num(i+2), num(i+3), num(i+4)
				if r >= 0 && r <= 255 && g >= 0 && g <= 255 && b >= 0 && b <= 255 {
					c = rgb{uint8(r), uint8(g), uint8(b), true}
				}
				i += 4
			default:
				i = len(ps) // malformed: the rest cannot be read reliably
			}
			if p == 38 {
				st.fg = c
			} else {
				st.bg = c
			}
		}
	}
	return st
}

// ScreenText is the view without escape sequences or control characters
// (but newlines), trailing spaces trimmed from each line.
func ScreenText(view string) string {
	var b strings.Builder
	for i, line := range parseScreen(view) {
		if i > 0 {
			b.WriteByte('\n')
		}
		var l strings.Builder
		for _, c := range line {
			l.WriteRune(c.r)
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
	}
	b.WriteByte('\n')
	return b.String()
}

// SVG cell geometry: a 14 px monospace font is about 8.4 px wide (0.6 em)
// and reads well at 17 px per line.
const (
	svgFont   = 14
	svgCellW  = 8.4
	svgLineH  = 17
	svgMargin = 8
)

// colours resolves a style to the fill of its text and its background
// (ok false: the default background, nothing to paint).
func (st cellStyle) colours() (fg, bg rgb) {
	fg, bg = st.fg, st.bg
	if !fg.ok {
		fg = defaultFG
	}
	if st.reverse {
		if !bg.ok {
			bg = defaultBG
		}
		fg, bg = bg, fg
	}
	return fg, bg
}

// ScreenSVG renders the view's cells as an SVG: a monospace grid on the
// default dark background, each run of cells of one style one <text>
// stretched to its cells' width so the grid holds whatever font the
// viewer substitutes.
func ScreenSVG(view string) []byte {
	lines := parseScreen(view)
	width := 0
	for _, l := range lines {
		width = max(width, cols(l))
	}
	w := float64(width)*svgCellW + 2*svgMargin
	h := float64(len(lines)*svgLineH + 2*svgMargin)
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="'DejaVu Sans Mono','Menlo','Consolas',monospace" font-size="%d">`+"\n",
		num(w), num(h), num(w), num(h), svgFont)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="%s"/>`+"\n", defaultBG.hex())
	for y, line := range lines {
		top := float64(svgMargin + y*svgLineH)
		// Backgrounds first, so text is painted over them.
		x := 0
		for i := 0; i < len(line); {
			_, bg := line[i].st.colours()
			j, span := i, 0
			for j < len(line) {
				_, bg2 := line[j].st.colours()
				if bg2 != bg {
					break
				}
				span += line[j].width
				j++
			}
			if bg.ok {
				fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%d" fill="%s"/>`+"\n",
					num(svgMargin+float64(x)*svgCellW), num(top), num(float64(span)*svgCellW), svgLineH, bg.hex())
			}
			x += span
			i = j
		}
		x = 0
		for i := 0; i < len(line); {
			st := line[i].st
			j, span := i, 0
			var text strings.Builder
			for j < len(line) && line[j].st == st && (j == i || line[j].width == line[i].width) {
				text.WriteRune(line[j].r)
				span += line[j].width
				j++
			}
			if s := text.String(); strings.TrimSpace(s) != "" && !st.hidden {
				fg, _ := st.colours()
				fmt.Fprintf(&b, `<text x="%s" y="%s" fill="%s" textLength="%s" lengthAdjust="spacingAndGlyphs" xml:space="preserve"`,
					num(svgMargin+float64(x)*svgCellW), num(top+svgLineH-4), fg.hex(), num(float64(span)*svgCellW))
				if st.bold {
					b.WriteString(` font-weight="bold"`)
				}
				if st.faint {
					b.WriteString(` fill-opacity="0.6"`)
				}
				if st.italic {
					b.WriteString(` font-style="italic"`)
				}
				if st.underline {
					b.WriteString(` text-decoration="underline"`)
				}
				b.WriteByte('>')
				b.WriteString(safetext.HTML(s))
				b.WriteString("</text>\n")
			}
			x += span
			i = j
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// num formats a coordinate compactly: two decimals at most (a hundredth
// of a pixel), no trailing zeros, no float noise such as 83.60000000000001.
func num(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

// ScreenName is the file name stem of a screen saved at now:
// retrytop-20261201-171310.123 (UTC, milliseconds so two saves in one
// second do not collide).
func ScreenName(now time.Time) string {
	return "retrytop-" + now.UTC().Format("20060102-150405.000")
}

// SaveScreen writes a rendered dashboard view (a string with ANSI SGR
// sequences, as bubbletea's View returns) into dir as three files named
// for now (ScreenName): NAME.txt, the text without escape sequences;
// NAME.ansi, the view as the terminal received it; and NAME.svg, the
// cells drawn in their colours. It returns the paths written, in that
// order. It never overwrites a file: a name already taken is an error.
//
//	paths, err := report.SaveScreen(dir, time.Now(), m.View())
func SaveScreen(dir string, now time.Time, view string) ([]string, error) {
	if dir == "" {
		dir = "."
	}
	stem := filepath.Join(dir, ScreenName(now))
	files := []struct {
		ext  string
		body []byte
	}{
		{".txt", []byte(ScreenText(view))},
		{".ansi", []byte(view)},
		{".svg", ScreenSVG(view)},
	}
	var paths []string
	for _, f := range files {
		p := stem + f.ext
		if err := writeNew(p, f.body); err != nil {
			return paths, fmt.Errorf("save screen: %w", err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// writeNew creates path (failing when it exists) and writes body.
func writeNew(path string, body []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(body)
	return errors.Join(err, f.Close())
}
