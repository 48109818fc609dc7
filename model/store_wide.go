package model

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// wideRing is a series' ring once a value was not exact as float32: its
// float64 values in chunks of chunkSlots slots, those the target's
// scrapes have moved past sealed (each value XORed with the previous one
// and kept as its nonzero bytes), as ringTiles seals its chunks.
type wideRing struct {
	v      [][]float64 // per chunk: its values, nil while sealed
	packed [][]byte    // per chunk: its sealed values
	slots  int         // the target's history
}

// wideOf is a wideRing holding vals, the value at slot at first (a
// rotated copy), none of it sealed.
func wideOf(vals []float64, at int) ring {
	n := len(vals)
	w := &wideRing{v: make([][]float64, chunks(n)), slots: n}
	for c := range w.v {
		w.v[c] = wideChunks.take(chunkLen(c, n))
	}
	for k, v := range vals {
		i := (at + k) % n
		w.v[i/chunkSlots][i%chunkSlots] = v
	}
	return ring{wide: w}
}

func (w *wideRing) get(i int) float64 {
	c := i / chunkSlots
	if v := w.v[c]; v != nil {
		return v[i%chunkSlots]
	}
	var col [chunkSlots]float64
	decodeWide(w.packed[c], col[:chunkLen(c, w.slots)])
	return col[i%chunkSlots]
}

func (w *wideRing) set(i int, x float64) {
	c := i / chunkSlots
	if w.v[c] == nil {
		v := make([]float64, chunkLen(c, w.slots))
		decodeWide(w.packed[c], v)
		w.v[c], w.packed[c] = v, nil
	}
	w.v[c][i%chunkSlots] = x
}

// read writes the values from slot on into dst, up to the end of the
// history at most.
func (w *wideRing) read(dst []float64, slot int) {
	var col [chunkSlots]float64
	for i := 0; i < len(dst); {
		s := slot + i
		c := s / chunkSlots
		n := min(chunkLen(c, w.slots)-s%chunkSlots, len(dst)-i)
		v := w.v[c]
		if v == nil {
			v = col[:chunkLen(c, w.slots)]
			decodeWide(w.packed[c], v)
		}
		copy(dst[i:i+n], v[s%chunkSlots:])
		i += n
	}
}

// sealBehind seals every open chunk but slot's.
func (w *wideRing) sealBehind(slot int) {
	cur := slot / chunkSlots
	for c, v := range w.v {
		if v == nil || c == cur {
			continue
		}
		if w.packed == nil {
			w.packed = make([][]byte, len(w.v))
		}
		w.packed[c] = encodeWide(make([]byte, 0, 8*len(v)+1), v)
		w.packed[c] = append([]byte(nil), w.packed[c]...) // exact size
		w.v[c] = nil
	}
}

// Tokens of a float64 chunk: 0x00-0x3f a run of 1-64 values equal to the
// previous one (bits and all), 0x40-0x7f 1-64 absent, 0x80-0xbf a value
// XORed with the previous (NaN skipped) as bits 3-5 its leading zero
// bytes and bits 0-2 its trailing ones, the bytes between following;
// tokPlain first: the float64s as they are.
const (
	wideSame = 0x00
	wideNaN  = 0x40
	wideXOR  = 0x80
)

// encodeWide appends vals' encoding to dst, or vals as they are behind
// tokPlain when that is shorter.
func encodeWide(dst []byte, vals []float64) []byte {
	at := len(dst)
	var prev uint64
	run := -1
	for _, f := range vals {
		if f != f {
			dst, run = appendRun(dst, run, wideNaN)
			continue
		}
		b := math.Float64bits(f)
		x := b ^ prev
		prev = b
		if x == 0 {
			dst, run = appendRun(dst, run, wideSame)
			continue
		}
		run = -1
		lz, tz := bits.LeadingZeros64(x)/8, bits.TrailingZeros64(x)/8
		dst = append(dst, wideXOR|byte(lz)<<3|byte(tz))
		for k := tz; k < 8-lz; k++ {
			dst = append(dst, byte(x>>(8*k)))
		}
	}
	if len(dst)-at > 1+8*len(vals) {
		dst = append(dst[:at], tokPlain)
		for _, f := range vals {
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
		}
	}
	return dst
}

// decodeWide decodes encodeWide's bytes into dst, exactly as long as the
// values encoded.
func decodeWide(src []byte, dst []float64) {
	if len(src) > 0 && src[0] == tokPlain {
		for i := range dst {
			dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(src[1+8*i:]))
		}
		return
	}
	var prev uint64
	nan := math.NaN()
	i := 0
	for p := 0; p < len(src) && i < len(dst); {
		b := src[p]
		p++
		switch {
		case b < wideNaN:
			for range int(b-wideSame) + 1 {
				dst[i] = math.Float64frombits(prev)
				i++
			}
		case b < wideXOR:
			for range int(b-wideNaN) + 1 {
				dst[i] = nan
				i++
			}
		default:
			lz, tz := int(b>>3&7), int(b&7)
			var x uint64
			for k := tz; k < 8-lz; k++ {
				x |= uint64(src[p]) << (8 * k)
				p++
			}
			prev ^= x
			dst[i] = math.Float64frombits(prev)
			i++
		}
	}
}
