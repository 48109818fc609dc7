package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/retrytop/retrytop/model"
)

// Absent values print as "-", never 0 (docs/analyze-json.md: null).
const absent = "-"

// fmtSig prints v with three significant digits at most, without
// exponent for the magnitudes signals have.
func fmtSig(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	a := math.Abs(v)
	var s string
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 0.01:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	// 2 rather than 2.00: counts and whole rates read as such.
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

func fmtRate(v float64) string { return fmtSig(v) + "/s" }
func fmtAmp(v float64) string  { return strconv.FormatFloat(v, 'f', 2, 64) + "x" }
func fmtPct(v float64) string  { return strconv.FormatFloat(v*100, 'f', 1, 64) + "%" }
func fmtCount(v float64) string {
	if math.IsInf(v, 1) {
		return "unlimited"
	}
	return fmtSig(v)
}

// fmtSec prints seconds in the unit that reads best.
func fmtSec(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsInf(v, 0) || math.IsNaN(v):
		return fmtSig(v)
	case a == 0:
		return "0s"
	case a < 1e-3:
		return fmtSig(v*1e6) + "µs"
	case a < 1:
		return fmtSig(v*1e3) + "ms"
	}
	// 5s, 1.25s: whole seconds are common (phases are whole bins).
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) + "s"
}

// fmtVal applies f to a present value and prints absent as "-".
func fmtVal(v model.Value, f func(float64) string) string {
	if !v.OK {
		return absent
	}
	return f(v.V)
}

// jsonNum is the value as analyze --format json writes it: a number, or
// the strings of non-finite values, or null.
func jsonNum(v model.Value) string {
	switch {
	case !v.OK:
		return "null"
	case math.IsInf(v.V, 1):
		return "+Inf"
	case math.IsInf(v.V, -1):
		return "-Inf"
	case math.IsNaN(v.V):
		return "NaN"
	}
	return strconv.FormatFloat(v.V, 'g', -1, 64)
}

// clock prints a data time as UTC wall-clock time.
func clock(t time.Time) string { return t.UTC().Format("15:04:05") }

func unixTime(s float64) time.Time { return time.UnixMilli(int64(math.Round(s * 1000))).UTC() }

// safeText makes a target's string harmless wherever it is shown: C0 and
// C1 controls and the characters that reorder or hide text (bidi
// overrides, zero-width marks) become visible \u escapes, so a label
// cannot flip the words around it or hide part of itself. HTML
// escaping is separate (esc).
func safeText(s string) string {
	if !strings.ContainsFunc(s, hiddenRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if hiddenRune(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func hiddenRune(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0xfffd || model.InvisibleFormat(r)
}

// esc is safeText, HTML-escaped: for every string from a target.
func esc(s string) string { return xmlEscape(safeText(s)) }

// attr escapes a JSON path for an attribute the reader never sees: the
// value must stay exact (the DOM gets the same string back), yet the
// file must not carry a raw bidi control, so hidden characters become
// numeric character references.
func attr(s string) string {
	s = xmlEscape(s)
	if !strings.ContainsFunc(s, hiddenRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if hiddenRune(r) {
			fmt.Fprintf(&b, "&#x%x;", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
