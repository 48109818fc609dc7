package expo

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// refValue is parseValue's contract: strconv.ParseFloat, except the
// hex-float and underscore forms, which expfmt refuses.
func refValue(s string) (float64, bool) {
	if strings.ContainsAny(s, "pP_xX") {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

func sameBits(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
}

// TestParseValue holds parseValue (and valueAt, which reads the value off
// a line) to strconv bit for bit: integers, short and long decimals,
// exponents, NaN, infinities, -0, the largest and the subnormal values,
// the edge of 2^53 where the decimal fast path must give up, and garbage
// (hex floats, underscores, lone signs and dots) refused.
func TestParseValue(t *testing.T) {
	cases := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0", 0, true}, {"7", 7, true}, {"-7", -7, true}, {"+7", 7, true}, {"007", 7, true},
		{"-0", math.Copysign(0, -1), true}, {"-0.0", math.Copysign(0, -1), true}, {"+0", 0, true},
		{"1234567890123456789", 1234567890123456789, true}, // 19 digits, above 2^53: strconv's
		{"12345678901234567890", 12345678901234567890, true},
		{"9007199254740991", 9007199254740991, true}, // 2^53-1: the fast path's last
		{"9007199254740993", 9007199254740992, true}, // 2^53+1 rounds to even
		{"0.5", 0.5, true}, {"1.", 1, true}, {".5", 0.5, true}, {"-.5", -0.5, true}, {"12345.5", 12345.5, true},
		{"0.1", 0.1, true}, {"0.30000000000000004", 0.30000000000000004, true},
		{"3.141592653589793", 3.141592653589793, true}, {"0.000001", 1e-6, true},
		{"0.0000000000000000000001", 1e-22, true}, {"123456789.123456789", 123456789.123456789, true},
		{"1e3", 1000, true}, {"1E3", 1000, true}, {"1.5e-05", 1.5e-05, true}, {"-2.5E+10", -2.5e10, true},
		{"1e308", 1e308, true}, {"1.7976931348623157e308", math.MaxFloat64, true},
		{"4.9e-324", 5e-324, true}, {"2.2250738585072011e-308", 2.2250738585072011e-308, true},
		{"NaN", math.NaN(), true}, {"nan", math.NaN(), true}, {"+Inf", math.Inf(1), true},
		{"-Inf", math.Inf(-1), true}, {"Inf", math.Inf(1), true}, {"inf", math.Inf(1), true},
		{"1e309", 0, false}, // out of range: strconv's error
		{"", 0, false}, {"-", 0, false}, {"+", 0, false}, {".", 0, false}, {"-.", 0, false},
		{"1e", 0, false}, {"1e+", 0, false}, {"1..2", 0, false}, {"1.2.3", 0, false}, {"--1", 0, false},
		{"0x10", 0, false}, {"0x1p-2", 0, false}, {"0X1P3", 0, false}, {"1p5", 0, false},
		{"1_000", 0, false}, {"0b101", 0, false}, {"0o17", 0, false}, {"12a", 0, false}, {"1 ", 0, false},
	}
	for _, c := range cases {
		if rv, rok := refValue(c.in); rok != c.ok || (rok && !sameBits(rv, c.want)) {
			t.Fatalf("table %q: strconv gives %v, %v; the table says %v, %v", c.in, rv, rok, c.want, c.ok)
		}
		got, ok := parseValue([]byte(c.in))
		if ok != c.ok || (ok && !sameBits(got, c.want)) {
			t.Errorf("parseValue(%q) = %v (bits %x), %v; want %v (bits %x), %v",
				c.in, got, math.Float64bits(got), ok, c.want, math.Float64bits(c.want), c.ok)
		}
		if strings.ContainsAny(c.in, " \t") {
			continue
		}
		// valueAt reads the same value off a line, ended by a blank or
		// the end of the line.
		for _, tail := range []string{"", " 1700000000000", "\t"} {
			l := []byte("x " + c.in + tail)
			v, end, ok := valueAt(l, 2)
			if ok != c.ok || (ok && (!sameBits(v, c.want) || end != 2+len(c.in))) {
				t.Errorf("valueAt(%q) = %v, %d, %v; want %v, %d, %v", l, v, end, ok, c.want, 2+len(c.in), c.ok)
			}
		}
	}
}

// TestParseValueRandom compares parseValue with strconv on random strings
// of digits, signs, dots, exponents and the forms expfmt refuses, and on
// random float64s printed every way strconv prints them.
func TestParseValueRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 2026))
	const alphabet = "0123456789012345678901234567890123456789..--++eE_xpI"
	check := func(s string) {
		want, wok := refValue(s)
		got, ok := parseValue([]byte(s))
		if ok != wok || (ok && !sameBits(got, want)) {
			t.Fatalf("parseValue(%q) = %v, %v; strconv %v, %v", s, got, ok, want, wok)
		}
	}
	for range 200000 {
		b := make([]byte, 1+rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		check(string(b))
	}
	for range 50000 {
		v := math.Float64frombits(rng.Uint64())
		if rng.IntN(2) == 0 {
			v = float64(rng.Int64N(1<<60)) / pow10[rng.IntN(len(pow10))]
		}
		for _, f := range []byte{'f', 'g', 'e'} {
			check(strconv.FormatFloat(v, f, -1, 64))
			check(strconv.FormatFloat(v, f, rng.IntN(20), 64))
		}
	}
}
