package replay

import (
	"math"
	"testing"
)

// TestColumnEncoding: encodeColumn and decodeColumn give back every
// value bit for bit (integers near the limits, -0, infinities, NaN,
// fractions) and the presence bits, for any slot range.
func TestColumnEncoding(t *testing.T) {
	var cols []column
	ints := column{}
	mixed := column{}
	for s := range chunkLen {
		ints.v[s] = float64(s*s*1000 - 1<<40)
		if s%9 == 0 {
			ints.v[s] = math.NaN()
		}
		mixed.v[s] = []float64{0.5, math.Copysign(0, -1), math.Inf(1), 1 << 53, 3, math.NaN()}[s%6]
		if s%6 != 5 {
			mixed.present |= 1 << s
		}
	}
	ints.present = 0
	for s := range chunkLen {
		if s%9 != 0 || s%2 == 0 {
			ints.present |= 1 << s // present NaN at even multiples of 9
		}
	}
	small := column{present: ^uint64(0)} // a counter: one byte a difference, none absent
	for s := range chunkLen {
		small.v[s] = float64(1e6 + s*37 - s%3*10)
	}
	// A histogram's _sum: fractions growing by less than 2^20 ulps a
	// scrape (its exponent does not change).
	sum := column{present: ^uint64(0)}
	sum.v[0] = 1e8 + 1.0/3
	for s := 1; s < chunkLen; s++ {
		sum.v[s] = math.Float64frombits(math.Float64bits(sum.v[s-1]) + uint64(s*s*s%(1<<20)))
	}
	cols = append(cols, ints, mixed, column{present: 0}, small, sum)
	for i := range cols[2].v {
		cols[2].v[i] = math.NaN()
	}
	for k, c := range cols {
		b := encodeColumn(nil, &c)
		if want := k == 3; (b[0]&colSmall != 0) != want {
			t.Errorf("column %d: small %v, want %v", k, b[0]&colSmall != 0, want)
		}
		// The sum's first value costs at most a 10-byte varint, each
		// difference under 2^20 ulps (21 bits zigzagged) 3 bytes.
		if k == 4 && len(b) > 1+10+3*(chunkLen-1) {
			t.Errorf("the sum's column takes %d bytes, want at most %d", len(b), 1+10+3*(chunkLen-1))
		}
		for _, r := range [][2]int{{0, chunkLen}, {5, 40}, {63, 64}, {0, 1}} {
			out := make([]float64, r[1]-r[0])
			present := decodeColumn(b, r[0], r[1], out)
			mask := (uint64(1)<<r[1] - 1) &^ (uint64(1)<<r[0] - 1) // 1<<64 is 0: all bits

			if present&mask != c.present&mask {
				t.Errorf("column %d %v: presence %x, want %x", k, r, present&mask, c.present&mask)
			}
			for s := r[0]; s < r[1]; s++ {
				if math.Float64bits(out[s-r[0]]) != math.Float64bits(c.v[s]) && !(math.IsNaN(out[s-r[0]]) && math.IsNaN(c.v[s])) {
					t.Fatalf("column %d %v slot %d: %v, want %v", k, r, s, out[s-r[0]], c.v[s])
				}
			}
		}
	}
}

// BenchmarkDecodeColumn: a counter's column (small increases).
func BenchmarkDecodeColumn(b *testing.B) {
	var c column
	for s := range chunkLen {
		c.v[s] = float64(1e6 + s*37)
		c.present |= 1 << s
	}
	enc := encodeColumn(nil, &c)
	out := make([]float64, chunkLen)
	b.SetBytes(chunkLen)
	for i := 0; i < b.N; i++ {
		decodeColumn(enc, 0, chunkLen, out)
	}
}
