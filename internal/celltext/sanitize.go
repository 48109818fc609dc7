package celltext

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/retrytop/retrytop/model"
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
		case unicode.IsControl(r), model.InvisibleFormat(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
