package report

import (
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
	if !v.OK() {
		return absent
	}
	return f(v.V())
}

// jsonNum is the value as analyze --format json writes it: a number, or
// the strings of non-finite values, or null.
func jsonNum(v model.Value) string {
	switch {
	case !v.OK():
		return "null"
	case math.IsInf(v.V(), 1):
		return "+Inf"
	case math.IsInf(v.V(), -1):
		return "-Inf"
	case math.IsNaN(v.V()):
		return "NaN"
	}
	return strconv.FormatFloat(v.V(), 'g', -1, 64)
}

// clock prints a data time as UTC wall-clock time.
func clock(t time.Time) string { return t.UTC().Format("15:04:05") }

func unixTime(s float64) time.Time { return time.UnixMilli(int64(math.Round(s * 1000))).UTC() }

// fmtWhole prints a count of operations, rounded to a whole one.
func fmtWhole(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
