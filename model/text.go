package model

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// InvisibleFormat reports the format characters that can reorder or hide
// text on a terminal: bidirectional marks, embeddings, overrides and
// isolates, zero-width characters, the word joiner family, the byte-order
// mark and the soft hyphen. Every place that puts untrusted text on a
// screen or in a log treats them alike (collect.Sanitize escapes them,
// ui.Sanitize drops them), so the list lives here once.
func InvisibleFormat(r rune) bool {
	switch {
	case r >= 0x200b && r <= 0x200f, // zero width space .. right-to-left mark
		r >= 0x202a && r <= 0x202e, // embeddings and overrides
		r >= 0x2060 && r <= 0x2069, // word joiner .. isolates
		r == 0xfeff, r == 0x061c, r == 0x00ad:
		return true
	}
	return false
}

// EscapeHiddenJSON rewrites, in encoded JSON, the characters a target's
// labels may carry to reorder or hide text (InvisibleFormat, and the C1
// controls such as U+009B, a CSI on some terminals) as \u escapes, so a
// JSON report piped to a terminal or a log shows them instead of obeying
// them; a JSON reader gets the same string back. They can only occur
// inside strings, where an escape means the same. b is returned as is
// when it holds none.
func EscapeHiddenJSON(b []byte) []byte {
	hidden := func(r rune) bool { return InvisibleFormat(r) || (r >= 0x80 && r <= 0x9f) }
	if !bytes.ContainsFunc(b, hidden) {
		return b
	}
	out := make([]byte, 0, len(b)+64)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if hidden(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}
