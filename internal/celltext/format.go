// Package celltext is the text of the cells the dashboard and analyze's
// tables share: signal values formatted to a few columns (absent is "-",
// never 0), the budget and chain lines, and untrusted text made safe for a
// terminal cell. The dashboard (ui) and analyze's writers (report) print a
// value alike because both print it through here.
package celltext

import (
	"math"
	"strconv"
	"time"

	"github.com/retrytop/retrytop/model"
)

// Absent is how every absent value is shown: never as 0.
const Absent = "-"

// DerivedMark follows a value a custom mapping derives from others rather
// than reads (docs/dialects.md, "Derived signals"), in the dashboard's
// rows and analyze's tables; a footnote says how.
const DerivedMark = "*"

// AppendNum writes a non-negative magnitude in at most five columns with
// about three significant digits: 0, <.01, 4.56, 45.6, 456, 4.56k, 45.6k...
func AppendNum(dst []byte, v float64) []byte {
	if math.IsNaN(v) {
		return append(dst, Absent...)
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

// AppendRate writes a per-second rate, or "-" when absent.
func AppendRate(dst []byte, v model.Value) []byte {
	if !v.OK() {
		return append(dst, Absent...)
	}
	return AppendNum(dst, v.V())
}

// AppendPct writes a 0..1 ratio as a percentage with one decimal,
// truncated so that 100% means exactly all; "-" when absent.
func AppendPct(dst []byte, v model.Value) []byte {
	if !v.OK() || math.IsNaN(v.V()) {
		return append(dst, Absent...)
	}
	p := v.V() * 100
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

// AppendAmp writes an amplification factor: 1.68x, 12.3x, 123x.
func AppendAmp(dst []byte, v model.Value) []byte {
	if !v.OK() || math.IsNaN(v.V()) {
		return append(dst, Absent...)
	}
	switch a := v.V(); {
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

// AppendSeconds writes a latency given in seconds: 850µs, 1.2ms, 45ms,
// 1.23s, 12.3s, 123s; "-" when absent.
func AppendSeconds(dst []byte, v model.Value, micro string) []byte {
	if !v.OK() || math.IsNaN(v.V()) {
		return append(dst, Absent...)
	}
	s := v.V()
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

// AppendGauge writes a gauge reading: whole numbers without decimals
// (12, 64), others like a rate; "-" when absent.
func AppendGauge(dst []byte, v model.Value) []byte {
	if !v.OK() || math.IsNaN(v.V()) {
		return append(dst, Absent...)
	}
	if v.V() == math.Trunc(v.V()) && math.Abs(v.V()) < 1e4 {
		return strconv.AppendInt(dst, int64(v.V()), 10)
	}
	return AppendNum(dst, v.V())
}

// WindowLabel names a window or bin: 10s, 1m, 15m, 1h, 90s.
func WindowLabel(d time.Duration) string {
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
