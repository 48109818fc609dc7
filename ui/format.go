package ui

import (
	"math"
	"strconv"
	"time"

	"github.com/retrytop/retrytop/internal/celltext"
	"github.com/retrytop/retrytop/model"
)

// absentText is how every absent value is shown: never as 0.
const absentText = celltext.Absent

// appendNum and the others below are celltext's, under the names the
// views use: analyze's tables (package report) print values alike.
func appendNum(dst []byte, v float64) []byte { return celltext.AppendNum(dst, v) }

func appendRate(dst []byte, v model.Value) []byte { return celltext.AppendRate(dst, v) }

func appendPct(dst []byte, v model.Value) []byte { return celltext.AppendPct(dst, v) }

func appendAmp(dst []byte, v model.Value) []byte { return celltext.AppendAmp(dst, v) }

// appendAmpShort writes an amplification in at most three columns, for
// per-bin labels: 1.7, 12, 99+.
func appendAmpShort(dst []byte, v model.Value) []byte {
	if !v.OK() || math.IsNaN(v.V()) {
		return append(dst, absentText...)
	}
	switch a := v.V(); {
	case a < 9.95:
		return strconv.AppendFloat(dst, a, 'f', 1, 64)
	case a < 99.5:
		return strconv.AppendFloat(dst, a, 'f', 0, 64)
	}
	return append(dst, "99+"...)
}

func appendSeconds(dst []byte, v model.Value, micro string) []byte {
	return celltext.AppendSeconds(dst, v, micro)
}

// appendBound writes a histogram bucket upper bound without trailing
// zeros: 1ms, 2.5ms, 250ms, 1s, 2.5s, +Inf.
func appendBound(dst []byte, ub float64, micro string) []byte {
	switch {
	case math.IsInf(ub, 1):
		return append(dst, "+Inf"...)
	case ub <= 0:
		return strconv.AppendFloat(dst, ub, 'g', 4, 64)
	case ub < 0.001:
		dst = strconv.AppendFloat(dst, roundSig(ub*1e6), 'f', -1, 64)
		return append(dst, micro...)
	case ub < 1:
		dst = strconv.AppendFloat(dst, roundSig(ub*1e3), 'f', -1, 64)
		return append(dst, "ms"...)
	}
	dst = strconv.AppendFloat(dst, roundSig(ub), 'f', -1, 64)
	return append(dst, 's')
}

// roundSig rounds to three significant digits (bounds like 0.0025 are not
// exact in binary).
func roundSig(v float64) float64 {
	if v == 0 {
		return 0
	}
	e := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*e) / e
}

func appendGauge(dst []byte, v model.Value) []byte { return celltext.AppendGauge(dst, v) }

// appendCount writes an observation count: 0, 12, 999, 1.2k, 45k, 1.2M.
func appendCount(dst []byte, c float64) []byte {
	if c < 0 || math.IsNaN(c) {
		return append(dst, absentText...)
	}
	if c < 999.5 {
		return strconv.AppendFloat(dst, c, 'f', 0, 64)
	}
	return appendNum(dst, c)
}

// appendAge writes a duration in whole seconds: <1s, 12s, 3m04s, 2h03m.
func appendAge(dst []byte, d time.Duration) []byte {
	if d < time.Second {
		return append(dst, "<1s"...)
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		dst = strconv.AppendInt(dst, s, 10)
		return append(dst, 's')
	case s < 3600:
		dst = strconv.AppendInt(dst, s/60, 10)
		dst = append(dst, 'm')
		return append2(dst, s%60, 's')
	}
	dst = strconv.AppendInt(dst, s/3600, 10)
	dst = append(dst, 'h')
	return append2(dst, (s%3600)/60, 'm')
}

func append2(dst []byte, v int64, unit byte) []byte {
	if v < 10 {
		dst = append(dst, '0')
	}
	dst = strconv.AppendInt(dst, v, 10)
	return append(dst, unit)
}

func windowLabel(d time.Duration) string { return celltext.WindowLabel(d) }
