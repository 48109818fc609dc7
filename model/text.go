package model

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
