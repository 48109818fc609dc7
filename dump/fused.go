package dump

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// The writer's one pass over a changed body: tokenizeEncode reads a line
// and codes its number against the previous body's slot at once, instead
// of writing every slot out for encodeDeltaSame to read back
// (docs/performance.md, "Record and the dump codec"). The bytes and slot state are encodeDeltaSame's
// for version 4 with equal structures (TestTokenizeEncode,
// FuzzTokenizeEncode); a body whose structure differs is coded by
// encodeDeltaSame as before.

// slotEncoder holds the delta being coded while tokenizeEncode reads a
// body: the slots coded so far against the base's slots of the same index
// (valid while every line so far kept its previous line's structure).
type slotEncoder struct {
	on   bool // the slots so far align with the base's one to one
	done int  // slots coded
	// g1, g2: the growths of the two slots before the next (predict).
	g1, g2              int64
	kinds, shapes, ints []byte
}

func (e *slotEncoder) reset() {
	e.on, e.done, e.g1, e.g2 = true, 0, 0, 0
	e.kinds, e.shapes, e.ints = e.kinds[:0], e.shapes[:0], e.ints[:0]
}

// slot codes c against its base b in version 4 (v >= 3) with equal
// structures, as encodeDeltaSame does, and sets c's growth, kind and
// costs for the next delta.
func (e *slotEncoder) slot(c, b *num) {
	if c.f != b.f || c.hasExp != b.hasExp || c.exp != b.exp {
		// encodeDeltaSame's general case with a base of another shape.
		c.d, c.k, c.cost = 0, 0, [numPredictors]uint16{}
		kind := byte(slotAbs)
		t := min(c.scale(), b.scale())
		cm, ok1 := rescale(c.m, c.scale()-t)
		bm, ok2 := rescale(b.m, b.scale()-t)
		e.shapes = appendShape(e.shapes, *c)
		if ok1 && ok2 {
			kind = slotReshape
			e.ints = binary.AppendVarint(e.ints, cm-bm)
		} else {
			e.ints = binary.AppendVarint(e.ints, c.m)
		}
		c.k = kind
		e.kinds = append(e.kinds, kind^b.k)
		e.g2, e.g1 = e.g1, 0
		return
	}
	m, bm := c.m, b.m
	g1, g2 := e.g1, e.g2
	// predict and learn written out: the predictions, the one chosen (a
	// challenger must halve the cost of the one before it) and each
	// one's cost, decayed by 1/8 plus 16 per bit of its residual.
	p0, p1, p2 := bm+b.d, bm+g1, bm+2*g1-g2
	sel, best := p0, b.cost[0]
	if 2*uint32(b.cost[1]) < uint32(best) {
		sel, best = p1, b.cost[1]
	}
	if 2*uint32(b.cost[2]) < uint32(best) {
		sel = p2
	}
	kind := byte(slotSame)
	if m != bm {
		kind = slotDelta
		e.ints = binary.AppendVarint(e.ints, m-sel)
	}
	c.cost[0] = b.cost[0] - b.cost[0]>>3 + residualBits(m-p0)
	c.cost[1] = b.cost[1] - b.cost[1]>>3 + residualBits(m-p1)
	c.cost[2] = b.cost[2] - b.cost[2]>>3 + residualBits(m-p2)
	c.d, c.k = m-bm, kind
	e.kinds = append(e.kinds, kind^b.k)
	e.g2, e.g1 = g1, m-bm
}

// catchUp codes t's slots from e.done up to n against base's of the same
// index: the slots tokenizeEncode took in runs of unchanged lines.
func (e *slotEncoder) catchUp(t, base *tokens, n int) {
	for ; e.done < n; e.done++ {
		e.slot(&t.nums[e.done], &base.nums[e.done])
	}
}

// finish appends the delta: encodeDeltaSame's layout with the structure
// the base's (flags 1), every slot of t coded.
func (e *slotEncoder) finish(dst []byte, t, base *tokens) []byte {
	e.catchUp(t, base, len(t.nums))
	dst = binary.AppendUvarint(dst, 1)
	dst = binary.AppendUvarint(dst, uint64(len(t.nums)))
	dst = append(dst, e.kinds...)
	dst = binary.AppendUvarint(dst, uint64(len(e.shapes)))
	dst = append(dst, e.shapes...)
	return append(dst, e.ints...)
}

// scanNum is parseNumPrefix(b, wide) read for the commonest value first:
// a canonical non-negative integer of at most maxDigits digits, not
// followed by a point or an exponent.
func scanNum(b []byte, wide bool) (num, int, bool) {
	var m uint64
	i := 0
	for i < len(b) && i <= maxDigits {
		c := b[i] - '0'
		if c > 9 {
			break
		}
		m = m*10 + uint64(c)
		i++
	}
	if i == 0 || i > maxDigits || (i > 1 && b[0] == '0') || (i < len(b) && (b[i] == '.' || b[i] == 'e')) {
		return parseNumPrefix(b, wide)
	}
	return num{m: int64(m)}, i, true
}

// fastLines reads, from off, the lines of body that are the commonest of
// a changing target, and codes their numbers at once: the previous body's
// line at the same place has the form series, blank, one slot and a
// newline (or the body's end), this line has the same series and, as its
// value, a slot number of the shape of the base's (an integer read here,
// anything else by parseNumPrefix). It stops at the
// first line of any other kind, and at the second unchanged value in a
// row (a run reuseRows copies at once), where tokenizeEncode reads on,
// and returns where it stopped. t's slots so far must be coded
// (enc.done == len(t.nums)) and align with prev's (pending, enc.on).
// This loop is most of an Append of a target whose every counter grows:
// it writes rows, numbers, kinds and integers by index into room made
// first, and a row is its previous row with its place in the body moved.
func (enc *slotEncoder) fastLines(body []byte, off int, t, prev *tokens, prevBody []byte) int {
	k0, s0 := len(t.rows), len(t.nums)
	prows, pnums := prev.rows, prev.nums
	if k0 >= len(prows) || s0 >= len(pnums) || len(enc.kinds) != s0 {
		return off
	}
	t.rows = slices.Grow(t.rows, len(prows)-k0)
	t.nums = slices.Grow(t.nums, len(pnums)-s0)
	enc.kinds = slices.Grow(enc.kinds, len(pnums)-s0)
	enc.ints = slices.Grow(enc.ints, binary.MaxVarintLen64*(len(pnums)-s0))
	// The lines left, each with one slot: every slice from here is
	// indexed by x < nl (one bound, fewer registers).
	nl := min(len(prows)-k0, len(pnums)-s0)
	rows, nums, kinds := t.rows[k0:k0+nl], t.nums[s0:s0+nl], enc.kinds[s0:s0+nl]
	prows, pnums = prows[k0:k0+nl], pnums[s0:s0+nl]
	ints, w := enc.ints[:cap(enc.ints)], len(enc.ints)
	g1, g2 := enc.g1, enc.g2
	wide := t.wide
	same := false // the last line's value was its previous one's
	x := 0
	for ; x < nl; x++ {
		p := &prows[x]
		n := int(p.series)
		if p.tail == 0 || int(p.num) != s0+x || off+n >= len(body) || body[off+n] != ' ' ||
			int(p.start)+n > len(prevBody) || string(body[off:off+n]) != string(prevBody[p.start:int(p.start)+n]) {
			break
		}
		j := off + n + 1
		// scanDigits written out for a value of one to seven digits: a
		// call here costs the loop its registers (Go keeps none across
		// a call).
		var u uint64
		d := 0
		if j+8 <= len(body) {
			y := binary.LittleEndian.Uint64(body[j:])
			d = bits.TrailingZeros64(((y&0xF0F0F0F0F0F0F0F0)|((y+0x0606060606060606)&0xF0F0F0F0F0F0F0F0)>>4)^0x3333333333333333) >> 3
			if d > 0 && d < 8 {
				v := (y - 0x3030303030303030) << (64 - 8*d)
				v = (v & 0x0F0F0F0F0F0F0F0F) * 2561 >> 8
				v = (v & 0x00FF00FF00FF00FF) * 6553601 >> 16
				u = (v & 0x0000FFFF0000FFFF) * 42949672960001 >> 32
			} else if d == 8 {
				u, d = scanDigits(body[j:])
			}
		} else {
			u, d = scanDigits(body[j:])
		}
		i := j + d
		m := int64(u)
		var f uint8
		var hasExp bool
		var exp int16
		if d == 0 || d > maxDigits || (d > 1 && body[j] == '0') || (i < len(body) && (body[i] == '.' || body[i] == 'e')) {
			// Not a plain integer: a fraction, an exponent, a sign, or
			// no number (parseNumPrefix says).
			v, l, ok := parseNumPrefix(body[j:], wide)
			if !ok {
				break
			}
			i, m, f, hasExp, exp = j+l, v.m, v.f, v.hasExp, v.exp
		}
		if p.tail == 2 {
			if i >= len(body) || body[i] != '\n' {
				break // a point, an exponent, a timestamp or more
			}
			i++
		} else if i != len(body) {
			break
		}
		b := &pnums[x]
		bm := b.m
		if b.f != f || b.hasExp != hasExp || b.exp != exp || (m == bm && same) {
			// Another shape, or the second unchanged line in a row: a run
			// of equal lines may start, which reuseRows takes at once.
			break
		}
		same = m == bm
		// slot's coding of a value of the base's shape.
		p0, p1, p2 := bm+b.d, bm+g1, bm+2*g1-g2
		kind := byte(slotSame)
		if !same {
			sel, best := p0, b.cost[0]
			if 2*uint32(b.cost[1]) < uint32(best) {
				sel, best = p1, b.cost[1]
			}
			if 2*uint32(b.cost[2]) < uint32(best) {
				sel = p2
			}
			r := m - sel
			ux := uint64(r<<1) ^ uint64(r>>63) // binary.AppendVarint's zigzag
			for ux >= 0x80 {
				ints[w] = byte(ux) | 0x80
				ux >>= 7
				w++
			}
			ints[w] = byte(ux)
			w++
			kind = slotDelta
		}
		kinds[x] = kind ^ b.k
		// Field by field in place: a composite value went through the
		// stack twice.
		c := &nums[x]
		c.m, c.exp, c.f, c.hasExp, c.d, c.k = m, exp, f, hasExp, m-bm, kind
		c.cost[0] = b.cost[0] - b.cost[0]>>3 + residualBits(m-p0)
		c.cost[1] = b.cost[1] - b.cost[1]>>3 + residualBits(m-p1)
		c.cost[2] = b.cost[2] - b.cost[2]>>3 + residualBits(m-p2)
		g2, g1 = g1, m-bm
		r := &rows[x]
		*r = *p
		r.start, r.blen = int32(off), int32(i-off)
		off = i
	}
	t.rows, t.nums = t.rows[:k0+x], t.nums[:s0+x]
	enc.kinds, enc.ints = enc.kinds[:s0+x], ints[:w]
	enc.g1, enc.g2 = g1, g2
	enc.done = s0 + x
	return off
}

// scanDigits reads the decimal digits at the start of b, up to
// maxDigits+1 of them (more is too many either way): their value and
// count. Eight bytes at a time: a value of a few digits costs one load
// and a few multiplications instead of a loop per digit.
func scanDigits(b []byte) (uint64, int) {
	if len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		// A byte is a digit when its high nibble is 3 and adding 6 keeps
		// it so. A digit carries nothing into the byte above, so the
		// lowest non-digit byte is found exactly.
		nd := ((x & 0xF0F0F0F0F0F0F0F0) | ((x+0x0606060606060606)&0xF0F0F0F0F0F0F0F0)>>4) ^ 0x3333333333333333
		n := bits.TrailingZeros64(nd) >> 3
		if n == 0 {
			return 0, 0
		}
		// The digits to the top bytes (zeros before them), the first the
		// lowest, then combined in pairs, fours and eights.
		v := (x - 0x3030303030303030) << (64 - 8*n)
		v = (v & 0x0F0F0F0F0F0F0F0F) * 2561 >> 8
		v = (v & 0x00FF00FF00FF00FF) * 6553601 >> 16
		v = (v & 0x0000FFFF0000FFFF) * 42949672960001 >> 32
		if n < 8 {
			return v, n
		}
		i := 8
		for i < len(b) && i <= maxDigits {
			c := b[i] - '0'
			if c > 9 {
				break
			}
			v = v*10 + uint64(c)
			i++
		}
		return v, i
	}
	var v uint64
	i := 0
	for i < len(b) {
		c := b[i] - '0'
		if c > 9 {
			break
		}
		v = v*10 + uint64(c)
		i++
	}
	return v, i
}
