package ui

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"github.com/mattn/go-runewidth"
)

// line is one rendered terminal line and its width in columns (escape
// sequences excluded), so panels can be padded and joined without
// measuring strings again.
type line struct {
	s string
	w int
}

// lineWriter builds one line into a reusable buffer while tracking its
// visible width. Text written to it must already be sanitised.
type lineWriter struct {
	buf []byte
	w   int
	num []byte // scratch for number formatting
	// an open run of glyphs sharing one span (see glyph)
	run     span
	runOpen bool
}

func (l *lineWriter) reset() {
	l.buf = l.buf[:0]
	l.w = 0
	l.runOpen = false
}

// line returns the finished line (one allocation) and resets the writer.
func (l *lineWriter) line() line {
	l.endRun()
	ln := line{s: string(l.buf), w: l.w}
	l.reset()
	return ln
}

// glyph writes a one-column glyph; consecutive glyphs in the same span
// share one pair of escape sequences.
func (l *lineWriter) glyph(s string, sp span) {
	if !l.runOpen || sp.pre != l.run.pre {
		l.endRun()
		l.buf = append(l.buf, sp.pre...)
		l.run, l.runOpen = sp, true
	}
	l.buf = append(l.buf, s...)
	l.w++
}

func (l *lineWriter) endRun() {
	if l.runOpen {
		l.buf = append(l.buf, l.run.post...)
		l.runOpen = false
	}
}

// text writes s in span sp.
func (l *lineWriter) text(s string, sp span) {
	if s == "" {
		return
	}
	l.endRun()
	l.buf = append(l.buf, sp.pre...)
	l.buf = append(l.buf, s...)
	l.buf = append(l.buf, sp.post...)
	l.w += textWidth(s)
}

// bytes writes b in span sp.
func (l *lineWriter) bytes(b []byte, sp span) {
	if len(b) == 0 {
		return
	}
	l.endRun()
	l.buf = append(l.buf, sp.pre...)
	l.buf = append(l.buf, b...)
	l.buf = append(l.buf, sp.post...)
	l.w += bytesWidth(b)
}

// plain writes s without a span.
func (l *lineWriter) plain(s string) {
	l.endRun()
	l.buf = append(l.buf, s...)
	l.w += textWidth(s)
}

// repeat writes s (one column wide) n times in span sp.
func (l *lineWriter) repeat(s string, n int, sp span) {
	if n <= 0 {
		return
	}
	l.endRun()
	l.buf = append(l.buf, sp.pre...)
	for i := 0; i < n; i++ {
		l.buf = append(l.buf, s...)
	}
	l.buf = append(l.buf, sp.post...)
	l.w += n * glyphWidth(s)
}

// glyphWidth is the width of a glyph or short run of them: one column a
// rune for the glyph sets (TestGlyphsAreOneColumn), measured otherwise.
func glyphWidth(s string) int {
	if n := utf8.RuneCountInString(s); n == 1 {
		if r, _ := utf8.DecodeRuneInString(s); r < 0x1100 || (r >= 0x2010 && r <= 0x25ff) {
			return 1 // before the wide ranges, or general punctuation to geometric shapes
		}
	}
	return textWidth(s)
}

// pad writes n spaces.
func (l *lineWriter) pad(n int) {
	if n > 0 {
		l.endRun()
	}
	for ; n > 0; n-- {
		l.buf = append(l.buf, ' ')
		l.w++
	}
}

// padTo pads with spaces up to column col.
func (l *lineWriter) padTo(col int) { l.pad(col - l.w) }

// cell writes s fitted into exactly width columns: truncated with an
// ellipsis when longer, padded left (right-aligned) or right otherwise.
func (l *lineWriter) cell(s string, width int, right bool, sp span) {
	if width <= 0 {
		return
	}
	w := textWidth(s)
	if w > width {
		s, w = truncate(s, width)
	}
	if right {
		l.pad(width - w)
	}
	l.text(s, sp)
	if !right {
		l.pad(width - w)
	}
}

// cellBytes is cell for formatted numbers (always ASCII or known glyphs).
func (l *lineWriter) cellBytes(b []byte, width int, right bool, sp span) {
	w := bytesWidth(b)
	if w > width {
		l.cell(string(b), width, right, sp)
		return
	}
	if right {
		l.pad(width - w)
	}
	l.bytes(b, sp)
	if !right {
		l.pad(width - w)
	}
}

// textWidth is the width of s in terminal columns.
func textWidth(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return i + nonASCIIWidth(s[i:])
		}
	}
	return len(s)
}

// nonASCIIWidth measures text past its first non-ASCII byte: the one-column
// ranges the dashboard prints often (Latin-1, arrows and mathematical
// operators, box drawing to geometric shapes) are counted without a table
// look-up, anything else by runewidth. Control characters never get here
// (Sanitize removes them).
func nonASCIIWidth(s string) int {
	w := 0
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf, r >= 0xa0 && r < 0x300 && r != 0xad, // 0xad: soft hyphen, 0 wide
			r >= 0x2010 && r <= 0x2027, r >= 0x2030 && r <= 0x205e,
			r >= 0x2190 && r <= 0x22ff, r >= 0x2500 && r <= 0x25fc:
			w++
		default:
			w += runewidth.RuneWidth(r)
		}
	}
	return w
}

func bytesWidth(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] >= utf8.RuneSelf {
			return utf8.RuneCount(b) // our glyphs are all one column wide
		}
	}
	return len(b)
}

// truncate cuts s to at most width columns, ending in "…" when cut.
func truncate(s string, width int) (string, int) {
	if width <= 0 {
		return "", 0
	}
	if textWidth(s) <= width {
		return s, textWidth(s)
	}
	if width == 1 {
		return "…", 1
	}
	w := 0
	for i, r := range s {
		rw := runewidth.RuneWidth(r)
		if w+rw > width-1 {
			return s[:i] + "…", w + 1
		}
		w += rw
	}
	return s, w
}

// joinColumns lays panels side by side: column i is width widths[i], lines
// are padded so the next column starts aligned, and sep sits between.
// The result has as many lines as the tallest column.
func joinColumns(cols [][]line, widths []int, sep string) []line {
	n := 0
	for _, c := range cols {
		n = max(n, len(c))
	}
	sw := textWidth(sep)
	out := make([]line, n)
	var b strings.Builder
	for i := 0; i < n; i++ {
		size := len(sep) * len(cols)
		for j, c := range cols {
			if i < len(c) {
				size += len(c[i].s)
			}
			size += widths[j]
		}
		b = strings.Builder{}
		b.Grow(size)
		w := 0
		for j, c := range cols {
			if j > 0 {
				b.WriteString(sep)
				w += sw
			}
			var ln line
			if i < len(c) {
				ln = c[i]
			}
			if j < len(cols)-1 && ln.w > widths[j] {
				// Never let a column push the next one out of place.
				ln = line{s: ansi.Truncate(ln.s, widths[j], "…"), w: widths[j]}
			}
			b.WriteString(ln.s)
			w += ln.w
			if j < len(cols)-1 {
				for k := ln.w; k < widths[j]; k++ {
					b.WriteByte(' ')
				}
				w += max(0, widths[j]-ln.w)
			}
		}
		out[i] = line{s: b.String(), w: w}
	}
	return out
}

// trimSpaceRight drops trailing spaces of plain lines (keeps goldens tidy;
// lines with escape sequences end in a reset and are left alone).
func trimSpaceRight(ln line) line {
	n := len(ln.s)
	for n > 0 && ln.s[n-1] == ' ' {
		n--
	}
	ln.w -= len(ln.s) - n
	ln.s = ln.s[:n]
	return ln
}
