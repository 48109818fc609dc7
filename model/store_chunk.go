package model

import (
	"encoding/binary"
	"math"
)

// chunkSlots is how many consecutive slots of a target's history form one
// chunk of its tiles: the unit a tile set seals (compresses) once the
// target's scrapes have moved past it, and opens again (decodes to
// float32) when they come back to it. A multiple of tileSlots.
const chunkSlots = 64

// chunkLen is the number of slots of chunk c of a history of slots.
func chunkLen(c, slots int) int { return min(chunkSlots, slots-c*chunkSlots) }

// chunks is the number of chunks of a history of slots.
func chunks(slots int) int { return (slots + chunkSlots - 1) / chunkSlots }

// open makes chunk c of t float32 again: its sealed values decoded, a
// column cleared since sealing absent, a chunk never written all absent.
func (t *ringTiles) open(c int) {
	if t.v[c] != nil {
		return
	}
	n := chunkLen(c, t.slots)
	v := make([]float32, (n+tileSlots-1)/tileSlots*tileSlots*t.cols)
	nan := float32(math.NaN())
	if t.packed == nil || t.packed[c] == nil {
		for i := range v {
			v[i] = nan
		}
		t.v[c] = v
		return
	}
	var col [chunkSlots]float32
	for k := range t.cols {
		t.decodeCol(c, k, col[:n])
		for u, x := range col[:n] {
			v[local(t.cols, k, u)] = x
		}
	}
	t.v[c] = v
	t.packed[c], t.cleared[c] = nil, nil
}

// local is the index of column col's value at local slot u of a chunk of
// a tile set of cols columns.
func local(cols, col, u int) int {
	w := uint(u)
	return int((w/tileSlots*uint(cols)+uint(col))*tileSlots + w%tileSlots)
}

// seal encodes open chunk c of t column by column and drops its float32
// values. Each column's values are coded against the previous one
// (chunkenc-like, byte aligned): an integer after an integer as the
// change of its increase, runs of unchanged increases and of absent
// values as one byte, anything else as its float32 bits, so nothing is
// rounded.
func (t *ringTiles) seal(c int) {
	v := t.v[c]
	n := chunkLen(c, t.slots)
	var col [chunkSlots]float32
	out := make([]byte, 4*t.cols, 4*t.cols+t.cols*n/4)
	present := 0
	for k := range t.cols {
		for u := range n {
			f := v[local(t.cols, k, u)]
			col[u] = f
			if f == f {
				present++
			}
		}
		at := len(out)
		if out = encodeChunk(out, col[:n]); len(out)-at > 1+4*n {
			// Values the coding does not shrink (fractions, noise): kept
			// as they are, behind a byte that says so.
			out = append(out[:at], tokPlain)
			for _, f := range col[:n] {
				out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f))
			}
		}
		binary.LittleEndian.PutUint32(out[4*k:], uint32(len(out)))
	}
	if t.packed == nil {
		t.packed = make([][]byte, len(t.v))
		t.cleared = make([][]uint64, len(t.v))
		t.present = make([]int32, len(t.v))
	}
	t.present[c] = int32(present)
	t.packed[c] = append([]byte(nil), out...) // exact size
	t.v[c] = nil
}

// decodeCol writes column col of sealed chunk c into dst (chunkLen long).
func (t *ringTiles) decodeCol(c, col int, dst []float32) {
	var p []byte
	if t.packed != nil {
		p = t.packed[c]
	}
	if p == nil || t.cleared[c] != nil && t.cleared[c][col/64]&(1<<(col%64)) != 0 {
		nan := float32(math.NaN())
		for i := range dst {
			dst[i] = nan
		}
		return
	}
	from := 4 * t.cols
	if col > 0 {
		from = int(binary.LittleEndian.Uint32(p[4*(col-1):]))
	}
	src := p[from:binary.LittleEndian.Uint32(p[4*col:])]
	if len(src) > 0 && src[0] == tokPlain {
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[1+4*i:]))
		}
		return
	}
	decodeChunk(src, dst)
}

// clearCol makes column col absent at every slot, sealed chunks included.
func (t *ringTiles) clearCol(col int) {
	nan := float32(math.NaN())
	for c, v := range t.v {
		if v != nil {
			for u := range chunkLen(c, t.slots) {
				v[local(t.cols, col, u)] = nan
			}
			continue
		}
		if t.packed == nil || t.packed[c] == nil {
			continue
		}
		if t.cleared[c] == nil {
			t.cleared[c] = make([]uint64, (t.cols+63)/64)
		}
		t.cleared[c][col/64] |= 1 << (col % 64)
	}
}

// sealBehind seals every open chunk of t but slot's: Append's after each
// scrape, once the scrape's values and its seeds (written at the previous
// slot) are in, so the chunk the scrapes just left is written no more.
func (t *ringTiles) sealBehind(slot int) {
	if !t.seals {
		return
	}
	cur := slot / chunkSlots
	for c, v := range t.v {
		if v != nil && c != cur {
			t.seal(c)
		}
	}
}

// Tokens of a column's encoding.
const (
	tokRun    = 0x00 // 0x00-0x3f: 1-64 integers whose increase is the previous one's
	tokNaN    = 0x40 // 0x40-0x7f: 1-64 absent values
	tokDod    = 0x80 // 0x80-0xbf: an integer whose increase changed by -32..31 (zigzag)
	tokDod2   = 0xc0 // 0xc0-0xdf and a byte: the change, -4096..4095 (zigzag, 13 bits)
	tokRaw    = 0xe0 // then 4 bytes: the float32's bits
	tokDodVar = 0xe1 // then the change as a zigzag uvarint
	tokPlain  = 0xff // first of a column: its values' float32 bits follow
)

// asInt reports whether f is an integer that integer arithmetic keeps
// exactly (not -0, whose bits differ from 0's).
func asInt(f float32) (int64, bool) {
	// Within ±2^24 (NaN is not) an integer converts to int64 and back
	// unchanged and a fraction does not: no math.Trunc, which is a call
	// below GOAMD64=v2.
	if !(f >= -1<<24 && f <= 1<<24) {
		return 0, false
	}
	x := int64(f)
	if float32(x) != f || x == 0 && math.Float32bits(f) != 0 {
		return 0, false
	}
	return x, true
}

// encodeChunk appends vals' encoding to dst.
func encodeChunk(dst []byte, vals []float32) []byte {
	var prev, delta int64
	have := false
	run := -1 // index in dst of the open run token, -1 none
	for _, f := range vals {
		if f != f {
			dst, run = appendRun(dst, run, tokNaN)
			have = false
			continue
		}
		x, ok := asInt(f)
		if !ok || !have {
			dst = append(dst, tokRaw)
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(f))
			run, have, prev, delta = -1, ok, x, 0
			continue
		}
		d := x - prev
		dod := d - delta
		prev, delta = x, d
		switch {
		case dod == 0:
			dst, run = appendRun(dst, run, tokRun)
			continue
		case dod >= -32 && dod < 32:
			dst = append(dst, tokDod|byte(zigzag(dod)))
		case dod >= -4096 && dod < 4096:
			z := zigzag(dod)
			dst = append(dst, tokDod2|byte(z>>8), byte(z))
		default:
			dst = append(dst, tokDodVar)
			dst = binary.AppendUvarint(dst, zigzag(dod))
		}
		run = -1
	}
	return dst
}

// decodeChunk decodes encodeChunk's bytes into dst, which is exactly as
// long as the values encoded.
func decodeChunk(src []byte, dst []float32) {
	var prev, delta int64
	nan := float32(math.NaN())
	i := 0
	for p := 0; p < len(src) && i < len(dst); {
		b := src[p]
		p++
		switch {
		case b < tokNaN:
			for range int(b-tokRun) + 1 {
				prev += delta
				dst[i] = float32(prev)
				i++
			}
		case b < tokDod:
			for range int(b-tokNaN) + 1 {
				dst[i] = nan
				i++
			}
		case b < tokDod2:
			delta += unzigzag(uint64(b - tokDod))
			prev += delta
			dst[i] = float32(prev)
			i++
		case b < tokRaw:
			delta += unzigzag(uint64(b-tokDod2)<<8 | uint64(src[p]))
			p++
			prev += delta
			dst[i] = float32(prev)
			i++
		case b == tokRaw:
			f := math.Float32frombits(binary.LittleEndian.Uint32(src[p:]))
			p += 4
			prev, _ = asInt(f)
			delta = 0
			dst[i] = f
			i++
		default:
			u, k := binary.Uvarint(src[p:])
			p += k
			delta += unzigzag(u)
			prev += delta
			dst[i] = float32(prev)
			i++
		}
	}
}

// appendRun counts one more value in the run token of kind tok at
// dst[run] while it holds fewer than 64, else appends a new one; it
// returns dst and the run token's index.
func appendRun(dst []byte, run int, tok byte) ([]byte, int) {
	if run >= 0 && dst[run] >= tok && dst[run] < tok+0x3f {
		dst[run]++
		return dst, run
	}
	return append(dst, tok), len(dst)
}

func zigzag(x int64) uint64   { return uint64(x<<1) ^ uint64(x>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }
