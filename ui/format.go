package ui

import (
	"math"
	"strconv"
	"time"

	"github.com/retrytop/retrytop/model"
)

// absentText is how every absent value is shown: never as 0.
const absentText = "-"

// appendNum writes a non-negative magnitude in at most five columns with
// about three significant digits: 0, <.01, 4.56, 45.6, 456, 4.56k, 45.6k...
func appendNum(dst []byte, v float64) []byte {
	if math.IsNaN(v) {
		return append(dst, absentText...)
	}
	if math.IsInf(v, 1) {
		return append(dst, "+Inf"...) // as Prometheus writes it, and JSON
	}
	if v < 0 {
		dst = append(dst, '-')
		v = -v
	}
	if math.IsInf(v, 0) {
		return append(dst, "Inf"...)
	}
	switch {
	case v == 0:
		return append(dst, '0')
	case v < 0.01:
		return append(dst, "<.01"...)
	case v < 9.995:
		return strconv.AppendFloat(dst, v, 'f', 2, 64)
	case v < 99.95:
		return strconv.AppendFloat(dst, v, 'f', 1, 64)
	case v < 999.5:
		return strconv.AppendFloat(dst, v, 'f', 0, 64)
	}
	units := "kMGT"
	for i := 0; i < len(units); i++ {
		v /= 1000
		if v < 999.5 || i == len(units)-1 {
			switch {
			case v < 9.995:
				dst = strconv.AppendFloat(dst, v, 'f', 2, 64)
			case v < 99.95:
				dst = strconv.AppendFloat(dst, v, 'f', 1, 64)
			default:
				dst = strconv.AppendFloat(dst, v, 'f', 0, 64)
			}
			return append(dst, units[i])
		}
	}
	return dst
}

// appendRate writes a per-second rate, or "-" when absent.
func appendRate(dst []byte, v model.Value) []byte {
	if !v.OK {
		return append(dst, absentText...)
	}
	return appendNum(dst, v.V)
}

// appendPct writes a 0..1 ratio as a percentage with one decimal,
// truncated so that 100% means exactly all; "-" when absent.
func appendPct(dst []byte, v model.Value) []byte {
	if !v.OK || math.IsNaN(v.V) {
		return append(dst, absentText...)
	}
	p := v.V * 100
	switch {
	case p >= 100:
		return append(dst, "100%"...)
	case p <= 0:
		return append(dst, "0%"...)
	case p < 0.1:
		return append(dst, "<0.1%"...)
	}
	p = math.Floor(p*10) / 10
	dst = strconv.AppendFloat(dst, p, 'f', 1, 64)
	return append(dst, '%')
}

// appendAmp writes an amplification factor: 1.68x, 12.3x, 123x.
func appendAmp(dst []byte, v model.Value) []byte {
	if !v.OK || math.IsNaN(v.V) {
		return append(dst, absentText...)
	}
	switch a := v.V; {
	case math.IsInf(a, 1):
		return append(dst, "+Inf"...)
	case math.IsInf(a, -1):
		return append(dst, "-Inf"...)
	case a < 9.995:
		dst = strconv.AppendFloat(dst, a, 'f', 2, 64)
	case a < 99.95:
		dst = strconv.AppendFloat(dst, a, 'f', 1, 64)
	default:
		dst = strconv.AppendFloat(dst, a, 'f', 0, 64)
	}
	return append(dst, 'x')
}

// appendAmpShort writes an amplification in at most three columns, for
// per-bin labels: 1.7, 12, 99+.
func appendAmpShort(dst []byte, v model.Value) []byte {
	if !v.OK || math.IsNaN(v.V) {
		return append(dst, absentText...)
	}
	switch a := v.V; {
	case a < 9.95:
		return strconv.AppendFloat(dst, a, 'f', 1, 64)
	case a < 99.5:
		return strconv.AppendFloat(dst, a, 'f', 0, 64)
	}
	return append(dst, "99+"...)
}

// appendSeconds writes a latency given in seconds: 850µs, 1.2ms, 45ms,
// 1.23s, 12.3s, 123s; "-" when absent.
func appendSeconds(dst []byte, v model.Value, micro string) []byte {
	if !v.OK || math.IsNaN(v.V) {
		return append(dst, absentText...)
	}
	s := v.V
	switch {
	case math.IsInf(s, 1):
		return append(dst, "+Inf"...)
	case s <= 0:
		return append(dst, '0')
	case s < 0.001:
		dst = strconv.AppendFloat(dst, s*1e6, 'f', 0, 64)
		return append(dst, micro...)
	case s < 0.00995:
		dst = strconv.AppendFloat(dst, s*1e3, 'f', 1, 64)
		return append(dst, "ms"...)
	case s < 0.9995:
		dst = strconv.AppendFloat(dst, s*1e3, 'f', 0, 64)
		return append(dst, "ms"...)
	case s < 9.995:
		dst = strconv.AppendFloat(dst, s, 'f', 2, 64)
	case s < 99.95:
		dst = strconv.AppendFloat(dst, s, 'f', 1, 64)
	default:
		dst = strconv.AppendFloat(dst, s, 'f', 0, 64)
	}
	return append(dst, 's')
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

// appendGauge writes a gauge reading: whole numbers without decimals
// (12, 64), others like a rate; "-" when absent.
func appendGauge(dst []byte, v model.Value) []byte {
	if !v.OK || math.IsNaN(v.V) {
		return append(dst, absentText...)
	}
	if v.V == math.Trunc(v.V) && math.Abs(v.V) < 1e4 {
		return strconv.AppendInt(dst, int64(v.V), 10)
	}
	return appendNum(dst, v.V)
}

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

// windowLabel names a window or bin: 10s, 1m, 15m, 1h, 90s.
func windowLabel(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d >= time.Minute && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d >= time.Second && d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}
