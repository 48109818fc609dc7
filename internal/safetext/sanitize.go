package safetext

import (
	"strings"
	"unicode/utf8"

	"github.com/retrytop/retrytop/model"
)

// MaxTextLen is the length in bytes at which Sanitize cuts text.
const MaxTextLen = 512

// Sanitize makes untrusted text (label values, help, error messages) safe to
// print on a terminal or in a log line, capped at MaxTextLen bytes.
// See SanitizeN.
func Sanitize(s string) string { return SanitizeN(s, MaxTextLen) }

// SanitizeN makes untrusted text safe to print:
//
//   - tab, CR, LF, NEL and the Unicode line and paragraph separators become
//     a space, so one message stays one line;
//   - every other C0 control, DEL and C1 control (ESC among them, so no
//     terminal escape sequence survives) is written as \xNN;
//   - characters that reorder or hide text (model.InvisibleFormat:
//     bidirectional controls, zero-width characters, the byte-order mark)
//     are written as \uNNNN, so text cannot reorder what follows it on
//     screen;
//   - each byte of invalid UTF-8 becomes U+FFFD.
//
// The result is at most limit bytes long (limit <= 0: no cap); text cut short
// ends in "…". Text that needs no change is returned as is, without
// allocating.
func SanitizeN(s string, limit int) string {
	if limit <= 0 {
		limit = int(^uint(0) >> 1)
	}
	if len(s) <= limit && isPlainASCII(s) {
		return s
	}
	const ellipsis = "…"
	var b strings.Builder
	b.Grow(min(len(s), limit) + len(ellipsis))
	fit := -1 // length of b at the last piece boundary that leaves room for the ellipsis
	var esc [10]byte
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		piece := esc[:0]
		switch {
		case r == utf8.RuneError && size <= 1:
			piece = append(piece, "\uFFFD"...)
		case r == '\t' || r == '\n' || r == '\r' || r == 0x85 || r == 0x2028 || r == 0x2029:
			piece = append(piece, ' ')
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			piece = append(piece, '\\', 'x', hexDigit(byte(r)>>4), hexDigit(byte(r)&0xf))
		case model.InvisibleFormat(r):
			piece = append(piece, '\\', 'u',
				hexDigit(byte(r>>12)&0xf), hexDigit(byte(r>>8)&0xf),
				hexDigit(byte(r>>4)&0xf), hexDigit(byte(r)&0xf))
		default:
			piece = append(piece, s[i:i+size]...)
		}
		i += size
		if b.Len()+len(piece) > limit {
			out := b.String()
			if limit < len(ellipsis) {
				return out // no room for the ellipsis: as much as fits
			}
			return out[:max(fit, 0)] + ellipsis
		}
		b.Write(piece)
		if b.Len() <= limit-len(ellipsis) {
			fit = b.Len()
		}
	}
	return b.String()
}

func isPlainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

func hexDigit(b byte) byte { return "0123456789abcdef"[b&0xf] }
