package model

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// TestChunkCodecRoundTrips: a column's encoding decodes to the same
// float32 bits (NaN as NaN) for integers, steady and jittered counters,
// runs longer than a token holds, gaps, -0, integers too large for
// integer arithmetic and fractions.
func TestChunkCodecRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	nan := float32(math.NaN())
	cases := map[string]func(i int) float32{
		"steady":   func(i int) float32 { return float32(1000 + 7*i) },
		"jitter":   func(i int) float32 { return float32(1000 + 7*i + rng.IntN(3)) },
		"big jump": func(i int) float32 { return float32(i * i * 997) },
		"mid jump": func(i int) float32 { return float32(1000*i + 3000*(i%3)) },
		"gaps": func(i int) float32 {
			if i%9 < 4 {
				return nan
			}
			return float32(i)
		},
		"absent":    func(int) float32 { return nan },
		"neg zero":  func(i int) float32 { return float32(math.Copysign(0, -1)) },
		"huge":      func(i int) float32 { return float32(1<<25) + float32(2*i) },
		"fractions": func(i int) float32 { return float32(i) / 3 },
		"negative":  func(i int) float32 { return float32(-5 * i) },
	}
	for name, gen := range cases {
		for _, n := range []int{1, 2, 63, 64, 65, 128} {
			vals := make([]float32, n)
			for i := range vals {
				vals[i] = gen(i)
			}
			enc := encodeChunk(nil, vals)
			got := make([]float32, n)
			decodeChunk(enc, got)
			for i := range vals {
				if math.Float32bits(got[i]) != math.Float32bits(vals[i]) && !(vals[i] != vals[i] && got[i] != got[i]) {
					t.Fatalf("%s, %d values: value %d is %v, want %v", name, n, i, got[i], vals[i])
				}
			}
		}
	}
}

// TestAsInt: asInt takes the integers within ±2^24 but -0, as the
// reference below (math.Trunc's) does, over edge values and random bits.
func TestAsInt(t *testing.T) {
	ref := func(f float32) (int64, bool) {
		x := float64(f)
		if x != math.Trunc(x) || math.Abs(x) > 1<<24 || x == 0 && math.Signbit(x) {
			return 0, false
		}
		return int64(x), true
	}
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, -0.5, 1 << 24, -1 << 24, 1<<24 + 2, -1<<24 - 2,
		16777215, 8388607.5, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32,
		-math.MaxFloat32, math.SmallestNonzeroFloat32, 1 << 62, -1 << 63}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		vals = append(vals, math.Float32frombits(rng.Uint32()), float32(rng.IntN(1<<26)-1<<25))
	}
	for _, f := range vals {
		gx, gok := asInt(f)
		wx, wok := ref(f)
		if gx != wx || gok != wok {
			t.Fatalf("asInt(%v) (bits %#x) = %d, %v; want %d, %v", f, math.Float32bits(f), gx, gok, wx, wok)
		}
	}
}

// TestChunkCodecSize: a steady counter costs a raw value and one byte per
// 64 values; one whose increase changes by less than 32 a byte a value,
// by less than 4,096 two.
func TestChunkCodecSize(t *testing.T) {
	steady, jitter := make([]float32, chunkSlots), make([]float32, chunkSlots)
	for i := range steady {
		steady[i] = float32(500 + 3*i)
		jitter[i] = float32(500 + 3*i + i%2)
	}
	// A raw value, one byte of change of its increase, then runs of up
	// to 64 unchanged increases, a byte each.
	if n, want := len(encodeChunk(nil, steady)), 5+1+(chunkSlots-2+63)/64; n != want {
		t.Errorf("steady counter: %d bytes, want %d", n, want)
	}
	if n, want := len(encodeChunk(nil, jitter)), 5+chunkSlots-1; n != want {
		t.Errorf("alternating increase: %d bytes, want %d", n, want)
	}
	for i := range jitter {
		jitter[i] = float32(500 + 300*i + 2000*(i%2))
	}
	if n, want := len(encodeChunk(nil, jitter)), 5+2+2*(chunkSlots-2); n != want { // raw, +2000, then ±4000
		t.Errorf("increase alternating by 4,000: %d bytes, want %d", n, want)
	}
}

// TestSealedChunksMatchOwnRings: a store whose chunks are sealed shows
// what one giving every series its own float32 ring shows, scrape after
// scrape, for columns the coding shrinks (counters, gaps) and columns it
// keeps plain (noisy quarters, exact as float32 but no integers).
func TestSealedChunksMatchOwnRings(t *testing.T) {
	const hist = 300 // three chunks, the last short
	tiled, own := NewStore(StoreConfig{History: hist}), NewStore(StoreConfig{History: hist})
	own.noTiles = true
	w := newChunkWorld(7, 8, false)
	for i := range 700 {
		snap := w.scrape(i)
		tiled.Append(snap)
		own.Append(snap)
		if i%7 == 0 || i > hist {
			if got, want := storeText(tiled), storeText(own); got != want {
				t.Fatalf("scrape %d:\nsealed\n%s\nown rings\n%s", i, got, want)
			}
		}
	}
	tiled.mu.RLock()
	defer tiled.mu.RUnlock()
	plain, packed := 0, 0
	for _, x := range tiled.targets["t"].tiles {
		for _, p := range x.packed {
			if p == nil {
				continue
			}
			packed++
			for k := range x.cols {
				from := 4 * x.cols
				if k > 0 {
					from = int(binary.LittleEndian.Uint32(p[4*(k-1):]))
				}
				if int(binary.LittleEndian.Uint32(p[4*k:])) > from && p[from] == tokPlain {
					plain++
				}
			}
		}
	}
	if packed == 0 || plain == 0 {
		t.Errorf("%d sealed chunks, %d plain columns: the world does not test them", packed, plain)
	}
}

// chunkWorld is a target whose columns the chunk codec both shrinks and
// keeps plain: 20 counters absent now and then, as many gauges of noisy
// quarters (exact as float32, no integers) and, with wide, a sum in
// halves past float32 (a float64 ring).
type chunkWorld struct {
	rng  *rand.Rand
	c    []float64
	sum  float64
	wide bool
}

func newChunkWorld(seed1, seed2 uint64, wide bool) *chunkWorld {
	return &chunkWorld{rng: rand.New(rand.NewPCG(seed1, seed2)), c: make([]float64, 20), sum: 1e7, wide: wide}
}

// scrape is the world's scrape i, a second after scrape i-1.
func (w *chunkWorld) scrape(i int) *Snapshot {
	fams := []Family{{Name: "c_total", Type: Counter}, {Name: "g", Type: Gauge}}
	for k := range w.c {
		w.c[k] += float64(w.rng.IntN(4 * (k + 1)))
		if (i+k)%37 < 3 {
			continue // absent now and then
		}
		fams[0].Samples = append(fams[0].Samples, Sample{Labels: LabelsFromPairs("k", strconv.Itoa(k)), Value: w.c[k]})
		fams[1].Samples = append(fams[1].Samples, Sample{Labels: LabelsFromPairs("k", strconv.Itoa(k)), Value: float64(w.rng.IntN(1<<20)) / 4})
	}
	if w.wide {
		w.sum += float64(w.rng.IntN(5000)) + 0.5
		fams = append(fams, Family{Name: "s", Type: Gauge, Samples: []Sample{{Value: w.sum}}})
	}
	return &Snapshot{Target: "t", Time: time.Unix(1_700_000_000, 0).Add(time.Duration(i) * time.Second), Families: fams}
}

// TestWideCodecRoundTrips: a float64 chunk decodes to the same bits (NaN
// as NaN) for sums in halves, noise, repeats, gaps and values of every
// sign and size.
func TestWideCodecRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	cases := map[string]func(i int) float64{
		"halves": func(i int) float64 { return float64(i*i*42) + 0.5 },
		"noise":  func(int) float64 { return rng.NormFloat64() * 1e6 },
		"repeat": func(i int) float64 { return float64(i/70) + 0.1 },
		"gaps": func(i int) float64 {
			if i%5 < 2 {
				return math.NaN()
			}
			return 0.1 * float64(i)
		},
		"extremes": func(i int) float64 {
			return []float64{math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, math.MaxFloat64, math.SmallestNonzeroFloat64, -1e-300}[i%7]
		},
	}
	for name, gen := range cases {
		for _, n := range []int{1, 2, 64, 65, 128} {
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = gen(i)
			}
			got := make([]float64, n)
			decodeWide(encodeWide(nil, vals), got)
			for i := range vals {
				if math.Float64bits(got[i]) != math.Float64bits(vals[i]) && !(math.IsNaN(vals[i]) && math.IsNaN(got[i])) {
					t.Fatalf("%s, %d values: value %d is %v, want %v", name, n, i, got[i], vals[i])
				}
			}
		}
	}
	halves := make([]float64, chunkSlots)
	for i := range halves {
		halves[i] = float64(5_000_000+i*4200) + 0.5
	}
	// Below 2^23 and in halves: the sign, exponent and top of the mantissa
	// repeat, the low 28 bits are zero; at most 4 bytes XORed a value.
	if n := len(encodeWide(nil, halves)); n > 9+4*(chunkSlots-1) {
		t.Errorf("a sum in halves: %d bytes for %d values", n, chunkSlots)
	}
}

// TestWideRingsSealed: float64 rings sealed behind the scrapes still give
// every value a scrape stored, and absent where none was.
func TestWideRingsSealed(t *testing.T) {
	const hist = 300
	st := NewStore(StoreConfig{History: hist})
	rng := rand.New(rand.NewPCG(11, 12))
	at := time.Unix(1_700_000_000, 0)
	type pt struct {
		i int
		v float64
	}
	want := map[string][]pt{}
	sum := 1e7 // halves not exact as float32 from the start
	for i := range 700 {
		sum += float64(rng.IntN(5000)) + 0.5
		vals := map[string]float64{"s": sum, "n": rng.NormFloat64()}
		var fams []Family
		for _, name := range []string{"s", "n"} {
			if (i/9)%4 == 3 && name == "n" {
				continue // absent for a while
			}
			fams = append(fams, Family{Name: name, Type: Gauge, Samples: []Sample{{Value: vals[name]}}})
			want[name] = append(want[name], pt{i, vals[name]})
		}
		st.Append(&Snapshot{Target: "t", Time: at.Add(time.Duration(i) * time.Second), Families: fams})
		if i%13 != 0 && i < 690 {
			continue
		}
		for _, name := range []string{"s", "n"} {
			var exp []Point
			for _, p := range want[name] {
				if p.i > i-hist {
					exp = append(exp, Point{T: at.Add(time.Duration(p.i) * time.Second).UnixMilli(), V: p.v})
				}
			}
			got := st.Select("t", name, nil)
			if len(got) != 1 || fmt.Sprint(got[0].Points) != fmt.Sprint(exp) {
				t.Fatalf("scrape %d, %s: got %v, want %v", i, name, got, exp)
			}
		}
	}
	st.mu.RLock()
	defer st.mu.RUnlock()
	for _, ss := range st.targets["t"].series {
		if w := ss.ring.wide; w == nil || w.packed == nil {
			t.Errorf("%s: no sealed float64 chunk: the world does not test them", ss.name)
		}
	}
}
