// Package safetext is the one sanitiser for untrusted text: anything a
// target, a recording, a config file or a Prometheus server sent (label
// values, help, error messages, reason phrases, target names).
//
// One rule makes such text harmless, and a mode says where it goes:
//
//   - tab, CR, LF, VT, FF, NEL and the Unicode line and paragraph
//     separators become a space, so one message stays one line;
//   - every other C0 control, DEL and C1 control (ESC among them, so no
//     terminal escape sequence survives) is written as \xNN;
//   - characters that reorder or hide text (Invisible: bidirectional
//     controls, zero-width characters, the byte-order mark, the soft
//     hyphen) are written as \uNNNN;
//   - each byte of invalid UTF-8 becomes U+FFFD.
//
// Hidden characters are shown, never deleted, so what a reader sees is
// what was sent. The modes:
//
//   - Terminal: the rule, capped at MaxTextLen bytes (TerminalN for
//     another cap): screens, logs, errors, plain-text reports.
//   - Markdown: the rule, then markdown's and HTML's active characters
//     escaped, so a label cannot open a link, a table cell or a tag.
//   - HTML: the rule, then HTML-escaped, for element text and attributes.
//   - HTMLAttr: the exact value HTML-escaped, hidden characters as numeric
//     character references: for attributes whose value must round-trip.
//   - JSON: applied to encoded JSON, hidden characters and C1 controls as
//     \u escapes: a JSON reader gets the exact string back, and a terminal
//     the JSON is piped to shows them instead of obeying them.
package safetext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// MaxTextLen is the length in bytes at which Terminal cuts text.
const MaxTextLen = 512

// Invisible reports the format characters that can reorder or hide text:
// bidirectional marks, embeddings, overrides and isolates, zero-width
// characters, the word joiner family, the byte-order mark, the Arabic
// letter mark and the soft hyphen.
func Invisible(r rune) bool {
	switch {
	case r >= 0x200b && r <= 0x200f, // zero width space .. right-to-left mark
		r >= 0x202a && r <= 0x202e, // embeddings and overrides
		r >= 0x2060 && r <= 0x2069, // word joiner .. isolates
		r == 0xfeff, r == 0x061c, r == 0x00ad:
		return true
	}
	return false
}

// Terminal makes s safe for a terminal cell or a log line, capped at
// MaxTextLen bytes. Text that needs no change is returned as is, without
// allocating.
func Terminal(s string) string { return TerminalN(s, MaxTextLen) }

// TerminalN is Terminal capped at limit bytes (limit <= 0: no cap); text cut
// short ends in "…".
func TerminalN(s string, limit int) string {
	if limit <= 0 {
		limit = int(^uint(0) >> 1)
	}
	if len(s) <= limit && plainASCII(s) {
		return s
	}
	const ellipsis = "…"
	var b strings.Builder
	b.Grow(min(len(s), limit) + len(ellipsis))
	fit := -1 // length of b at the last piece boundary that leaves room for the ellipsis
	var buf [10]byte
	for i := 0; i < len(s); {
		piece, size := visible(buf[:0], s[i:])
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

// visible appends to dst what the rule makes of the first character of s
// and returns it with the character's length in bytes.
func visible(dst []byte, s string) ([]byte, int) {
	r, size := utf8.DecodeRuneInString(s)
	switch {
	case r == utf8.RuneError && size <= 1:
		return append(dst, "\uFFFD"...), size
	case r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' || r == 0x85 || r == 0x2028 || r == 0x2029:
		return append(dst, ' '), size
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return append(dst, '\\', 'x', hexDigit(byte(r)>>4), hexDigit(byte(r))), size
	case Invisible(r):
		return append(dst, '\\', 'u', hexDigit(byte(r>>12)), hexDigit(byte(r>>8)), hexDigit(byte(r>>4)), hexDigit(byte(r))), size
	}
	return append(dst, s[:size]...), size
}

// uncapped applies the rule to all of s.
func uncapped(s string) string { return TerminalN(s, 0) }

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

// HTML makes s safe as HTML element text or a quoted attribute value.
func HTML(s string) string { return htmlEscaper.Replace(uncapped(s)) }

// HTMLAttr HTML-escapes the exact value of s, hidden characters (controls,
// Invisible, U+FFFD) as numeric character references, so the DOM gets the
// same string back and the file carries no raw bidi control (HTML reads
// &#x0; and the C1 references as other characters, as browsers do).
func HTMLAttr(s string) string {
	s = htmlEscaper.Replace(s)
	if !strings.ContainsFunc(s, hiddenInAttr) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if hiddenInAttr(r) {
			fmt.Fprintf(&b, "&#x%x;", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func hiddenInAttr(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == utf8.RuneError || Invisible(r)
}

var markdownEscaper = strings.NewReplacer("\\", `\\`, "|", `\|`, "`", "'", "<", "&lt;", ">", "&gt;", "&", "&amp;",
	"*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "#", `\#`)

// Markdown makes s safe inside a markdown paragraph or table cell.
func Markdown(s string) string { return markdownEscaper.Replace(uncapped(s)) }

// JSON rewrites, in encoded JSON, the characters that reorder or hide text
// (Invisible) and the C1 controls (U+009B is a CSI on some terminals) as \u
// escapes. They can only occur inside strings, where an escape means the
// same. b is returned as is when it holds none.
func JSON(b []byte) []byte {
	if !bytes.ContainsFunc(b, hiddenInJSON) {
		return b
	}
	out := make([]byte, 0, len(b)+64)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if hiddenInJSON(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// WriteJSON writes v as indented JSON (two spaces, a newline at the end)
// through JSON: what a verb's --format json prints.
func WriteJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(JSON(buf.Bytes()))
	return err
}

func hiddenInJSON(r rune) bool { return Invisible(r) || (r >= 0x80 && r <= 0x9f) }

func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

func hexDigit(b byte) byte { return "0123456789abcdef"[b&0xf] }
