package ui

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Sanitize makes untrusted text (label values, error messages, anything a
// target sent) safe to print in a terminal cell: escape sequences are
// removed whole, remaining control characters (C0, C1, DEL) are dropped,
// tabs and line breaks become spaces, bidirectional overrides and
// zero-width characters are dropped, and invalid UTF-8 becomes U+FFFD.
// Printable ASCII is returned as is without allocating.
func Sanitize(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	if strings.IndexByte(s, 0x1b) >= 0 {
		s = ansi.Strip(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteRune(utf8.RuneError)
		case r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f':
			b.WriteByte(' ')
		case unicode.IsControl(r), invisible(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// invisible reports format characters that can reorder or hide text:
// bidirectional embeddings, overrides and isolates, zero-width characters
// and the byte-order mark.
func invisible(r rune) bool {
	switch {
	case r >= 0x200b && r <= 0x200f, // zero width space .. right-to-left mark
		r >= 0x202a && r <= 0x202e, // embeddings and overrides
		r >= 0x2060 && r <= 0x2069, // word joiner .. isolates
		r == 0xfeff, r == 0x061c, r == 0x00ad:
		return true
	}
	return false
}
