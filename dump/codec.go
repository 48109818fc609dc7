package dump

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/retrytop/retrytop/expo"
)

// The body codec: a lossless transform of an exposition body into its
// structure (the text with every sample value and timestamp cut out) and
// its numbers, so that a frame can be stored as the difference from the
// previous frame of its target. See docs/dump-format.md, "Delta frames".

// Structure bytes: slotMark stands for one number; escMark escapes a
// literal slotMark or escMark byte of the body.
const (
	slotMark = 0x00
	escMark  = 0x01
)

// maxDigits bounds the mantissa digits of a number stored as a slot; longer
// numbers stay in the structure as text.
const maxDigits = 18

// maxFrac bounds the digits after the point of a version 3 slot, which
// counts only significant digits against maxDigits: a sum of latencies
// like 0.0007900039999999995 (16 significant digits, 19 after the point)
// was text to version 2, so every scrape changed the structure of the
// demo's bodies (recorded in real time: most of its bytes). appendNum
// renders up to 23 digits.
const maxFrac = 22

// num is one number of a body as written: m·10^(exp-f), rendered as the
// decimal digits of m with f of them after the point, then "e±XX" when
// hasExp. Only numbers that render back to exactly their text are slots.
type num struct {
	m      int64
	exp    int16
	f      uint8
	hasExp bool
	// d is how much m grew at the last delta frame (0 after a key frame
	// or a change of shape): the next value is predicted as m+d.
	d int64
	// Version 3 (docs/dump-format.md): k is the slot's kind at its last
	// delta frame, the prediction of its next kind; cost is how well each
	// of the predictors did on it lately (predict), lower is better. Both
	// are 0 after a key frame.
	k    uint8
	cost [numPredictors]uint16
}

func (n num) sameValue(o num) bool { return n.m == o.m && n.sameShape(o) }

func (n num) scale() int { return int(n.exp) - int(n.f) }

func (n num) sameShape(o num) bool { return n.f == o.f && n.hasExp == o.hasExp && n.exp == o.exp }

// parseNum reads tok as a slot number: -?D+(.D+)?(e[+-]DD+)?, in the one
// spelling appendNum renders (no leading zeros, two or more exponent digits).
func parseNum(tok []byte) (num, bool) { return parseNumW(tok, false) }

// parseNumW is parseNum; wide (version 3) takes up to maxDigits
// significant digits and maxFrac after the point, where version 1 and 2
// took maxDigits digits in all.
func parseNumW(tok []byte, wide bool) (num, bool) {
	n, i, ok := parseNumPrefix(tok, wide)
	return n, ok && i == len(tok)
}

// parseNumPrefix reads a slot number at the start of b as parseNumW reads
// a token, and returns how many bytes it took: b is a slot number followed
// by b[i:] when ok. The writer's tokenizer reads a value up to its line's
// end this way without finding the end first.
func parseNumPrefix(tok []byte, wide bool) (num, int, bool) {
	var n num
	i := 0
	neg := false
	if i < len(tok) && tok[i] == '-' {
		neg = true
		i++
	}
	var m uint64
	start := i
	for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
		m = m*10 + uint64(tok[i]-'0')
		i++
	}
	digits := i - start
	if digits == 0 || digits > maxDigits {
		return n, i, false
	}
	// lead: zeros before the first significant digit. An integer part
	// with a leading zero other than "0" itself is refused below, so only
	// "0" has one that counts.
	lead := 0
	if tok[start] == '0' && (digits == 1 || m == 0) {
		lead = digits
	}
	intDigits := digits
	if i < len(tok) && tok[i] == '.' {
		i++
		fs := i
		for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' && digits-lead <= maxDigits {
			m = m*10 + uint64(tok[i]-'0')
			if m == 0 {
				lead++
			}
			digits++
			i++
		}
		if i == fs || (!wide && digits > maxDigits) || (wide && (digits-lead > maxDigits || i-fs > maxFrac)) {
			return n, i, false
		}
		n.f = uint8(i - fs)
	}
	if i < len(tok) && tok[i] == 'e' {
		i++
		if i >= len(tok) || (tok[i] != '+' && tok[i] != '-') {
			return n, i, false
		}
		eneg := tok[i] == '-'
		i++
		es := i
		e := 0
		for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' && i-es < 4 {
			e = e*10 + int(tok[i]-'0')
			i++
		}
		// appendNum writes two digits below 100 (e+05), no leading zero
		// above, and +00 for zero.
		if nd := i - es; nd < 2 || (nd > 2 && tok[es] == '0') || (eneg && e == 0) {
			return n, i, false
		}
		if eneg {
			e = -e
		}
		n.hasExp, n.exp = true, int16(e)
	}
	// Only the canonical spelling is a slot: "007" and "-0" stay text.
	// appendNum writes the digits after the point as they are and the
	// integer part without leading zeros: no round trip is needed
	// (TestParseNumCanonical holds this to one).
	if (intDigits > 1 && tok[start] == '0') || (neg && m == 0) {
		return n, i, false
	}
	n.m = int64(m)
	if neg {
		n.m = -n.m
	}
	return n, i, true
}

// numsCheck is a version 5 delta frame's checksum: of its numbers, slot
// by slot, each as appendNum renders it (its digits and its shape), XORed
// with the CRC-32C of its structure when the frame has one of its own (a
// delta that keeps its base's has its base's, checked with the base). A
// reader that checks it knows the frame's tokens, and so the body they
// render (by construction: only numbers whose text renders back exactly
// are slots), without rendering it. One multiplication a slot on the
// chain: a changed number always changes the 64-bit sum, and its fold to
// 32 bits misses a damaged frame one time in 2^32.
func numsCheck(nums []num) uint32 {
	const k1, k2 = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F
	h := uint64(len(nums)) * k1
	for i := range nums {
		n := &nums[i]
		s := uint64(n.f)
		if n.hasExp {
			s |= 0x100 | uint64(uint16(n.exp))<<16
		}
		h = (h ^ (uint64(n.m) + s*k2)) * k1
	}
	h ^= h >> 29
	h *= k2
	return uint32(h ^ h>>32)
}

// float is the float64 strconv.ParseFloat reads from n's text, when it
// can be had without the text (expo.ExactDecimal, as the text parser
// reads it). ok is false otherwise.
func (n num) float() (float64, bool) {
	k := -int(n.f)
	if n.hasExp { // as appendNum renders it
		k += int(n.exp)
	}
	return expo.ExactDecimal(n.m, k)
}

// appendNum renders n: written backwards into a buffer and appended
// once (three appends and strconv's were a fifth of rendering a frame).
func appendNum(dst []byte, n num) []byte {
	var buf [56]byte // a sign, 20 digits, a point, 23 after it, e-XXXXX
	i := len(buf)
	if n.hasExp {
		e, sign := int(n.exp), byte('+')
		if e < 0 {
			e, sign = -e, '-'
		}
		d := 0
		for e > 0 || d < 2 { // two digits at least: e+05
			i--
			buf[i] = byte('0' + e%10)
			e /= 10
			d++
		}
		i -= 2
		buf[i], buf[i+1] = 'e', sign
	}
	u := uint64(n.m)
	if n.m < 0 {
		u = -u
	}
	if f := int(n.f); f > 0 {
		for range min(f, maxFrac+1) { // a shape's f is at most maxFrac
			i--
			buf[i] = byte('0' + u%10)
			u /= 10
		}
		i--
		buf[i] = '.'
	}
	for {
		i--
		buf[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	if n.m < 0 {
		i--
		buf[i] = '-'
	}
	return append(dst, buf[i:]...)
}

// tokens is a body split into structure and numbers.
type tokens struct {
	structure []byte
	nums      []num
	// lines maps a line of the structure to its first slot; built on
	// demand when a later frame's structure differs from this one.
	lines map[string]int32
	// rows are the body's lines as tokenize cut them: what the writer's
	// next tokenization reuses (tokenizeReuse).
	rows []row
	// wide: numbers are read as format version 3 reads them (parseNumW);
	// a reader tokenizes a key frame as its file's writer did.
	wide bool
	// shapes and ints: encodeDelta's scratch.
	shapes, ints []byte
	// spare: the writer's structure buffer while its structure is the
	// previous body's (tokenizeReuse): never written into while shared.
	spare []byte
}

// row is one line of a tokenized body: where it starts in the body, the
// length of its series (name and labels; 0: not a sample line), and
// where it starts in the structure and where its series text ends there;
// its length in the body and the structure (newline included) and its
// first number.
type row struct {
	start, series, sstart, send int32
	blen, slen, num             int32
	// tail: the line is its series, a blank and one slot, then a
	// newline (2) or the body's end (1); 0 otherwise. The next body's
	// line at this place is read on this pattern without looking at the
	// structure.
	tail uint8
}

// tailKind is row.tail for the structure s after a sample line's series.
func tailKind(s []byte) uint8 {
	if len(s) >= 2 && s[0] == ' ' && s[1] == slotMark {
		if len(s) == 2 {
			return 1
		}
		if len(s) == 3 && s[2] == '\n' {
			return 2
		}
	}
	return 0
}

// maxSlotsPerLine: the value and the timestamp of a sample line.
const maxSlotsPerLine = 2

// tokenize splits body into t (reusing t's buffers). Only sample lines
// have slots: the value and an optional timestamp after the series name
// and labels. Comments, blank lines and anything unusual stay text.
func tokenize(body []byte, t *tokens) { tokenizeReuse(body, t, nil, nil) }

// tokenizeReuse is tokenize, taking from prev (the tokens of prevBody,
// the target's previous body) the structure of every line whose series is
// the same as the previous body's line at the same place: a steady target
// repeats its series from scrape to scrape, so only the numbers are read
// again. The result is exactly tokenize's (TestTokenizeReuse, FuzzCodec):
// a line is reused only when its series bytes are equal and followed by
// the blank that ends a series either way. It reports whether t's
// structure is prev's byte for byte (every line's structure was its
// previous line's), which encodeDelta then need not compare.
func tokenizeReuse(body []byte, t, prev *tokens, prevBody []byte) bool {
	return tokenizeEncode(body, t, prev, prevBody, nil)
}

// tokenizeEncode is tokenizeReuse that also codes the delta of body on
// prev (its base) into enc as it reads, when enc is not nil (fused.go).
// When it returns true (the structure is prev's), enc.finish gives
// encodeDeltaSame's bytes and state; otherwise enc is void and
// encodeDeltaSame must code t.
func tokenizeEncode(body []byte, t, prev *tokens, prevBody []byte, enc *slotEncoder) bool {
	if enc != nil {
		enc.reset()
	}
	t.clearFor(prev)
	// pending: every row so far has the structure of prev's row at the
	// same place, so t.structure is not written yet; it is prev's up to
	// the current row (pendingLen), copied at once when a line differs or
	// at the end instead of line by line.
	pending := prev != nil
	for off := 0; off < len(body); {
		if pending && enc != nil && enc.on {
			enc.catchUp(t, prev, len(t.nums))
			if off = enc.fastLines(body, off, t, prev, prevBody); off >= len(body) {
				break
			}
		}
		if prev != nil && len(t.rows) < len(prev.rows) {
			p := &prev.rows[len(t.rows)]
			// The commonest line: the series, one blank and a value, as the
			// previous line at this place was. Its structure is that line's
			// whole (series, " ", the slot and the newline when both have
			// one); parseNumPrefix takes no blank, so a timestamp cannot
			// hide behind the value.
			if n := int(p.series); p.tail != 0 && off+n < len(body) && body[off+n] == ' ' && int(p.start+p.blen) <= len(prevBody) &&
				bytes.Equal(body[off:off+n], prevBody[p.start:int(p.start)+n]) {
				nl := p.tail == 2
				v, l, ok := scanNum(body[off+n+1:], t.wide)
				if e := off + n + 1 + l; ok && ((nl && e < len(body) && body[e] == '\n') || (!nl && e == len(body))) {
					next := e + b2i(nl)
					if int(p.num) < len(prev.nums) && v.sameValue(prev.nums[p.num]) {
						// The value as well (one spelling per number): the line
						// is the previous one, and a run of equal lines may
						// start here.
						if m := t.reuseRows(body, off, prev, prevBody, pending); m > 0 {
							off += m
							continue
						}
					}
					r := row{start: int32(off), series: int32(n), blen: int32(next - off), num: int32(len(t.nums)), slen: p.slen, tail: p.tail}
					if pending {
						r.sstart, r.send = p.sstart, p.send
						if enc != nil && enc.on {
							if p.num == r.num {
								// Slot r.num is the base's slot r.num: code it now.
								enc.catchUp(t, prev, int(r.num))
								enc.slot(&v, &prev.nums[r.num])
								enc.done++
							} else {
								enc.on = false
							}
						}
					} else {
						r.sstart = int32(len(t.structure))
						r.send = r.sstart + (p.send - p.sstart)
						t.structure = append(t.structure, prev.structure[p.sstart:p.sstart+p.slen]...)
					}
					t.nums = append(t.nums, v)
					t.rows = append(t.rows, r)
					off = next
					continue
				}
			}
			if n := t.reuseRows(body, off, prev, prevBody, pending); n > 0 {
				off += n
				continue
			}
		}
		if pending {
			t.structure = append(t.structure, prev.structure[:t.pendingLen(prev)]...)
			pending = false
			if enc != nil {
				enc.on = false
			}
		}
		off = t.tokenizeLineAt(body, off, prev, prevBody)
	}
	return t.endPending(prev, pending)
}

// clearFor empties t for the tokens of a body that follows prev's (nil:
// none), keeping its buffers.
func (t *tokens) clearFor(prev *tokens) {
	if prev != nil && sameArray(t.structure, prev.structure) {
		// prev shares the structure t had (endPending): t writes into
		// the buffer prev set aside instead.
		t.structure, prev.spare = prev.spare, nil
	}
	t.structure = t.structure[:0]
	t.nums = t.nums[:0]
	t.lines = nil
	t.rows = t.rows[:0]
}

// pendingLen is the length of prev's structure up to t's next row: what
// t's structure is while tokenizeEncode leaves it pending.
func (t *tokens) pendingLen(prev *tokens) int32 {
	if k := len(t.rows); k < len(prev.rows) {
		return prev.rows[k].sstart
	}
	return int32(len(prev.structure))
}

// endPending ends tokenizeEncode's body: t's structure, if still pending,
// is prev's up to its last row. When every row was prev's, the whole
// structure is shared rather than copied (100 KB a frame of a
// 2,016-series target), t's own buffer set aside for the next body
// (clearFor), and endPending reports true.
func (t *tokens) endPending(prev *tokens, pending bool) bool {
	if !pending {
		return false
	}
	if len(t.rows) == len(prev.rows) {
		t.spare, t.structure = t.structure[:0], prev.structure
		return true
	}
	t.structure = append(t.structure, prev.structure[:t.pendingLen(prev)]...)
	return false
}

// tokenizeLineAt appends the line of body at off, which the fast paths of
// tokenizeEncode did not take, and returns where the next line starts.
// The numbers of a line with prev's series at the same row are read
// alone, its structure taken from prev's row.
func (t *tokens) tokenizeLineAt(body []byte, off int, prev *tokens, prevBody []byte) int {
	end, next := lineAt(body, off)
	line := body[off:end]
	r := row{start: int32(off), sstart: int32(len(t.structure)), blen: int32(next - off), num: int32(len(t.nums))}
	if k := len(t.rows); prev != nil && k < len(prev.rows) {
		p := prev.rows[k]
		if n := int(p.series); n > 0 && n < len(line) && (line[n] == ' ' || line[n] == '\t') && int(p.start)+n <= len(prevBody) &&
			bytes.Equal(line[:n], prevBody[p.start:int(p.start)+n]) {
			// The same series, its numbers otherwise.
			t.structure = append(t.structure, prev.structure[p.sstart:p.send]...)
			r.series, r.send = int32(n), int32(len(t.structure))
			t.lineNumbers(line, n)
			if next > end {
				t.structure = append(t.structure, '\n')
			}
			r.slen = int32(len(t.structure)) - r.sstart
			r.tail = tailKind(t.structure[r.send:])
			t.rows = append(t.rows, r)
			return next
		}
	}
	r.series, r.send = tokenizeLine(line, t)
	if next > end {
		t.structure = append(t.structure, '\n')
	}
	r.slen = int32(len(t.structure)) - r.sstart
	if r.series > 0 {
		r.tail = tailKind(t.structure[r.send:])
	}
	t.rows = append(t.rows, r)
	return next
}

// reuseRows appends the lines of body from off that are, byte for byte
// and newline included, the previous body's lines from the same row on
// (the same bytes tokenize the same): most lines of a steady target,
// whose values did not change. It compares the bodies a word at a time
// and copies the structure (unless pending: tokenizeReuse copies it
// later), numbers and rows of the run of lines at once. It returns how
// many bytes of body it took (0: the next line differs). The numbers keep
// the previous frame's growths, kinds and costs, which the next
// encodeDelta (or a key frame) sets before anything reads them.
func (t *tokens) reuseRows(body []byte, off int, prev *tokens, prevBody []byte, pending bool) int {
	k0 := len(t.rows)
	p0 := prev.rows[k0]
	if int(p0.start+p0.blen) > len(prevBody) || off+int(p0.blen) > len(body) ||
		!bytes.Equal(body[off:off+int(p0.blen)], prevBody[p0.start:p0.start+p0.blen]) {
		return 0 // the next line differs: no run (the common case when values change)
	}
	same := commonPrefix(body[off:], prevBody[p0.start:])
	k := k0
	for k < len(prev.rows) && int(prev.rows[k].start-p0.start+prev.rows[k].blen) <= same {
		k++
	}
	if k > k0 && k == len(prev.rows) {
		if r := prev.rows[k-1]; (r.blen == 0 || prevBody[r.start+r.blen-1] != '\n') && off+int(r.start-p0.start+r.blen) != len(body) {
			k-- // the previous body's last line has no newline; this one goes on
		}
	}
	if k == k0 {
		return 0
	}
	last := prev.rows[k-1]
	ds := int32(0)
	if !pending {
		ds = int32(len(t.structure)) - p0.sstart
		t.structure = append(t.structure, prev.structure[p0.sstart:last.sstart+last.slen]...)
	}
	dn := int32(len(t.nums)) - p0.num
	db := int32(off) - p0.start
	nn := int32(len(prev.nums))
	if k < len(prev.rows) {
		nn = prev.rows[k].num
	}
	t.nums = append(t.nums, prev.nums[p0.num:nn]...)
	t.rows = append(t.rows, prev.rows[k0:k]...)
	for i := range t.rows[k0:] {
		r := &t.rows[k0+i]
		r.start += db
		r.sstart += ds
		if r.series > 0 {
			r.send += ds
		}
		r.num += dn
	}
	return int(last.start - p0.start + last.blen)
}

// commonPrefix returns the length of the longest common prefix of a and
// b: blocks compared with bytes.Equal (vectorised), then the first block
// that differs eight bytes at a time.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	const block = 256
	i := 0
	for i+block <= n && bytes.Equal(a[i:i+block], b[i:i+block]) {
		i += block
	}
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// tokenizeLine appends one line; it returns the length of its series (0
// when it is not a sample line) and where the series text ends in the
// structure.
func tokenizeLine(line []byte, t *tokens) (int32, int32) {
	i := seriesEnd(line)
	if i <= 0 {
		t.appendText(line)
		return 0, 0
	}
	t.appendText(line[:i])
	send := int32(len(t.structure))
	t.lineNumbers(line, i)
	return int32(i), send
}

// lineNumbers appends the rest of a sample line from i, the end of its
// series: the value and timestamp as slots where they are numbers.
func (t *tokens) lineNumbers(line []byte, i int) {
	slots := 0
	for i < len(line) && slots < maxSlotsPerLine {
		j := i
		for j < len(line) && (line[j] == ' ' || line[j] == '\t') {
			j++
		}
		if j == i || j == len(line) {
			break
		}
		k := j
		for k < len(line) && line[k] != ' ' && line[k] != '\t' {
			k++
		}
		n, ok := parseNumW(line[j:k], t.wide)
		if !ok {
			break
		}
		t.appendText(line[i:j])
		t.structure = append(t.structure, slotMark)
		t.nums = append(t.nums, n)
		slots++
		i = k
	}
	t.appendText(line[i:])
}

// Stop tables of seriesEnd: the bytes that end a run of the name, of the
// labels outside a quoted value and inside one. One table lookup per byte
// instead of a chain of comparisons: seriesEnd was a sixth of encoding a
// frame.
var nameStop, labelStop, quoteStop [256]bool

func init() {
	for _, c := range []byte{'{', ' ', '\t', '"'} {
		nameStop[c] = true
	}
	labelStop['"'], labelStop['}'] = true, true
	quoteStop['"'], quoteStop['\\'] = true, true
}

// seriesEnd returns where the series (name and labels) of a sample line
// ends, or 0 when the line is not a sample line.
func seriesEnd(line []byte) int {
	if len(line) == 0 || line[0] == '#' || line[0] == ' ' || line[0] == '\t' {
		return 0
	}
	i := 0
	for i < len(line) && !nameStop[line[i]] {
		i++
	}
	if i < len(line) && line[i] == '"' {
		return 0 // a quoted name outside braces: leave it alone
	}
	if i < len(line) && line[i] == '{' {
		for i++; i < len(line); i++ {
			for i < len(line) && !labelStop[line[i]] {
				i++
			}
			if i == len(line) {
				return 0
			}
			if line[i] == '}' {
				return i + 1
			}
			// A quoted value: up to its closing quote, escapes skipped.
			for i++; i < len(line); i++ {
				for i < len(line) && !quoteStop[line[i]] {
					i++
				}
				if i == len(line) || line[i] == '"' {
					break
				}
				i++ // the escaped byte
			}
			if i >= len(line) {
				return 0
			}
		}
		return 0
	}
	return i
}

// indexMark returns the index of the first slotMark or escMark byte of
// s, or -1. It tests eight bytes at a time for a byte below 2 (the marks
// are 0 and 1): a line of a body has a slot every few dozen bytes, and
// bytes.IndexAny, which builds its byte set on every call, was a fifth of
// decoding.
func indexMark(s []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(s[i:])
		// A byte below 2 borrows into its high bit; a borrow only moves to
		// higher bytes, so the lowest flagged byte is exact.
		if m := (x - 2*ones) &^ x & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(s); i++ {
		if s[i] <= escMark {
			return i
		}
	}
	return -1
}

// appendText appends body bytes to the structure, escaping the marks.
func (t *tokens) appendText(b []byte) {
	for len(b) > 0 {
		k := indexMark(b)
		if k < 0 {
			t.structure = append(t.structure, b...)
			return
		}
		t.structure = append(t.structure, b[:k]...)
		t.structure = append(t.structure, escMark, b[k])
		b = b[k+1:]
	}
}

// render writes the body t stands for.
func (t *tokens) render(dst []byte) ([]byte, error) { return t.renderMax(dst, math.MaxInt) }

// errRenderLimit: the body would be longer than the frame declares.
var errRenderLimit = errors.New("the decoded body is longer than the frame says")

// renderMax writes the body t stands for, failing once it passes limit
// bytes: a damaged delta cannot make the reader render past the body size
// its frame declared (and the reader checked against the file).
func (t *tokens) renderMax(dst []byte, limit int) ([]byte, error) {
	dst, _, err := t.renderSlots(dst, nil, false, limit)
	return dst, err
}

// renderOffs is renderMax, appending each slot's start and end offset
// in dst (from dst's start) to offs.
func (t *tokens) renderOffs(dst []byte, offs []int32, limit int) ([]byte, []int32, error) {
	return t.renderSlots(dst, offs, true, limit)
}

// renderSlots is renderMax, with each slot's offsets appended to offs
// when withOffs.
func (t *tokens) renderSlots(dst []byte, offs []int32, withOffs bool, limit int) ([]byte, []int32, error) {
	s := t.structure
	slot := 0
	start := len(dst)
	for len(s) > 0 {
		if len(dst)-start > limit {
			return dst, offs, errRenderLimit
		}
		k := indexMark(s)
		if k < 0 {
			dst = append(dst, s...)
			break
		}
		dst = append(dst, s[:k]...)
		if s[k] == escMark {
			if k+1 >= len(s) {
				return dst, offs, errors.New("structure ends inside an escape")
			}
			dst = append(dst, s[k+1])
			s = s[k+2:]
			continue
		}
		if slot >= len(t.nums) {
			return dst, offs, errors.New("more slots than numbers")
		}
		if withOffs {
			offs = append(offs, int32(len(dst)-start))
		}
		dst = appendNum(dst, t.nums[slot])
		if withOffs {
			offs = append(offs, int32(len(dst)-start))
		}
		slot++
		s = s[k+1:]
	}
	if slot != len(t.nums) {
		return dst, offs, errors.New("fewer slots than numbers")
	}
	if len(dst)-start > limit {
		return dst, offs, errRenderLimit
	}
	return dst, offs, nil
}

// renderFrom renders cur, whose structure is base's, from base's rendered
// body prev and its slots' offsets: the text between the slots whose
// number changed is copied in runs, only the changed numbers rendered
// (render scanned the whole structure for slot marks and rendered every
// number; on a frame of 2,016 series most numbers of a busy target
// change, few of a quiet one). dst must not share prev's buffer.
func renderFrom(dst []byte, offs []int32, prev []byte, poffs []int32, base, cur *tokens, limit int) ([]byte, []int32, error) {
	start := len(dst)
	from := int32(0) // prev's bytes before from are in dst
	shift := int32(0)
	for i := range cur.nums {
		c, b := &cur.nums[i], &base.nums[i]
		s, e := poffs[2*i], poffs[2*i+1]
		if s < from || e < s || int(e) > len(prev) {
			return dst, offs, errors.New("bad slot offsets")
		}
		if c.m == b.m && c.sameShape(*b) {
			offs = append(offs, s+shift, e+shift)
			continue
		}
		dst = append(dst, prev[from:s]...)
		ns := int32(len(dst) - start)
		dst = appendNum(dst, *c)
		ne := int32(len(dst) - start)
		offs = append(offs, ns, ne)
		shift = ne - e
		from = e
		if len(dst)-start > limit {
			return dst, offs, errRenderLimit
		}
	}
	dst = append(dst, prev[from:]...)
	if len(dst)-start > limit {
		return dst, offs, errRenderLimit
	}
	return dst, offs, nil
}

// countSlots counts the slots of a structure (escapes skipped).
func countSlots(s []byte) int {
	if bytes.IndexByte(s, escMark) < 0 {
		return bytes.Count(s, []byte{slotMark})
	}
	n := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case escMark:
			i++
		case slotMark:
			n++
		}
	}
	return n
}

// lineIndex maps each line of the structure (newline included) to the
// index of its first slot; lines without slots are left out, and of equal
// lines the first counts.
func (t *tokens) lineIndex() map[string]int32 {
	if t.lines != nil {
		return t.lines
	}
	t.lines = make(map[string]int32)
	forLines(t.structure, func(line []byte, first int) {
		if _, dup := t.lines[string(line)]; !dup {
			t.lines[string(line)] = int32(first)
		}
	})
	return t.lines
}

// lineAt returns where the line of b at off ends (at its newline, or at
// len(b) without one) and where the next line starts.
func lineAt(b []byte, off int) (end, next int) {
	i := bytes.IndexByte(b[off:], '\n')
	if i < 0 {
		return len(b), len(b)
	}
	return off + i, off + i + 1
}

// forLines calls fn for every line of structure s that has a slot, with
// the index of its first slot.
func forLines(s []byte, fn func(line []byte, first int)) {
	slot := 0
	for off := 0; off < len(s); {
		end := bytes.IndexByte(s[off:], '\n')
		next := len(s)
		if end >= 0 {
			next = off + end + 1
		}
		line := s[off:next]
		n := countSlots(line)
		if n > 0 {
			fn(line, slot)
		}
		slot += n
		off = next
	}
}

// The predictors of a version 3 slot of the base's shape: the value that
// grew as it did at its last delta (counters grow steadily), or as the
// slot before it in this frame did (the buckets of a histogram grow
// together), or by the trend of the two slots before it (cumulative
// buckets of an evenly spread histogram). Encoder and decoder keep how
// well each did per slot (the bits of its residuals, decaying by 1/8 per
// frame) and use the best; a challenger must halve the cost of the one
// before it, so a slot does not flip between predictors on noise.
const numPredictors = 3

// predict returns the predictions for a slot whose base is b, given the
// growths of the two slots before it in this frame (g1 the nearer), and
// which to use.
func predict(b num, g1, g2 int64) ([numPredictors]int64, int) {
	p := [numPredictors]int64{b.m + b.d, b.m + g1, b.m + 2*g1 - g2}
	best := 0
	for k := 1; k < numPredictors; k++ {
		if 2*uint32(b.cost[k]) < uint32(b.cost[best]) {
			best = k
		}
	}
	return p, best
}

// learn sets c's predictor costs from its base's after the slot took the
// value m.
func (c *num) learn(b num, m int64, p [numPredictors]int64) {
	// Written out for the three predictors: the loop's own counting was
	// a third of this, which runs for every changed slot of every frame.
	c.cost[0] = b.cost[0] - b.cost[0]>>3 + residualBits(m-p[0])
	c.cost[1] = b.cost[1] - b.cost[1]>>3 + residualBits(m-p[1])
	c.cost[2] = b.cost[2] - b.cost[2]>>3 + residualBits(m-p[2])
}

// residualBits is a prediction's cost: 16 per bit of the residual r.
func residualBits(r int64) uint16 {
	if r < 0 {
		r = -r // MinInt64 stays negative: 64 bits below, as it should
	}
	return uint16(bits.Len64(uint64(r))) * 16
}

// Slot kinds of a delta frame.
const (
	slotSame    = 0 // the base's number, unchanged
	slotDelta   = 1 // the base's shape; ints: m - base.m
	slotReshape = 2 // shapes: a new shape; ints: the difference at the finer scale
	slotAbs     = 3 // shapes: the shape; ints: m (no usable base)
)

// pow10 holds 10^0..10^18.
var pow10 = func() [19]int64 {
	var p [19]int64
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// rescale returns m·10^k when it fits comfortably in an int64.
func rescale(m int64, k int) (int64, bool) {
	if k < 0 || k > 18 {
		return 0, false
	}
	if k == 0 {
		return m, true
	}
	lim := (int64(1) << 61) / pow10[k]
	if m > lim || m < -lim {
		return 0, false
	}
	return m * pow10[k], true
}

// encodeDelta writes cur as a difference from base into dst in format
// version v (2 or 3): flags, the structure when it differs from the
// base's, then per slot a kind, the shapes and the integers. It sets
// cur's growths (num.d), and in version 3 its kinds and predictor costs,
// for the next delta.
func encodeDelta(dst []byte, cur, base *tokens, v uint16) []byte {
	return encodeDeltaSame(dst, cur, base, v, bytes.Equal(cur.structure, base.structure))
}

// encodeDeltaSame is encodeDelta when the caller knows whether the
// structures are equal (tokenizeReuse tells the writer).
func encodeDeltaSame(dst []byte, cur, base *tokens, v uint16, same bool) []byte {
	dst, kinds := appendDeltaHead(dst, cur, same)
	// cur's scratch: a fresh slice grown to a few KB every frame was most
	// of what the writer allocated.
	shapes, ints := cur.shapes[:0], cur.ints[:0]
	defer func() { cur.shapes, cur.ints = shapes, ints }()
	align := baseAlignment(cur, base, len(cur.nums), same)
	v3 := v >= 3
	var g1, g2 int64 // version 3: the growths of the two slots before
	for i := range cur.nums {
		bi := i
		if !same {
			bi = align(i)
		}
		// c and cn are the same number: c for its value and shape, which
		// stay; cn for the state this delta sets. (A copy per slot was a
		// seventh of encodeDelta.)
		cn := &cur.nums[i]
		c := cn
		if b := (*num)(nil); v3 && bi >= 0 {
			b = &base.nums[bi]
			if !c.sameShape(*b) {
				goto general
			}
			m := c.m
			if g1 == 0 && g2 == 0 && b.d == 0 && b.m == m {
				// The commonest slot: unchanged, after slots that did not
				// grow, and it did not grow at its last delta either.
				// Every prediction is its value: the residuals are 0.
				cn.d, cn.k = 0, slotSame
				for k := range cn.cost {
					cn.cost[k] = b.cost[k] - b.cost[k]>>3
				}
				dst[kinds+i] = slotSame ^ b.k
				continue
			}
			// The base's shape: the general case's v3 branch below, on
			// the base slot in place rather than a copy of it (the copy
			// and predict's array were a third of encodeDelta on a target
			// whose every counter grows). TestWriterWritesVersion4Fixture
			// and FuzzCodec hold it to the same bytes and state.
			p, sel := predict(*b, g1, g2)
			kind := byte(slotSame)
			if m != b.m {
				kind = slotDelta
				ints = binary.AppendVarint(ints, m-p[sel])
			}
			growth := m - b.m
			cn.learn(*b, m, p)
			dst[kinds+i] = kind ^ b.k
			cn.d, cn.k = growth, kind
			g2, g1 = g1, growth
			continue
		}
	general:
		cn.d, cn.k, cn.cost = 0, 0, [numPredictors]uint16{}
		kind := byte(slotAbs)
		pk := byte(slotAbs) // version 3: the kind predicted (the base slot's last)
		var growth int64
		switch {
		case bi < 0:
			shapes = appendShape(shapes, *c)
			ints = binary.AppendVarint(ints, c.m)
		case v3 && c.sameShape(base.nums[bi]):
			b := base.nums[bi]
			pk = b.k
			p, sel := predict(b, g1, g2)
			if c.m == b.m {
				kind = slotSame
			} else {
				kind = slotDelta
				ints = binary.AppendVarint(ints, c.m-p[sel])
			}
			growth = c.m - b.m
			cn.d = growth
			cn.learn(b, c.m, p)
		case c.sameValue(base.nums[bi]):
			kind = slotSame
		case c.sameShape(base.nums[bi]):
			// Counters grow at a steady rate: code the difference from
			// the base plus its last growth.
			b := base.nums[bi]
			kind = slotDelta
			ints = binary.AppendVarint(ints, c.m-b.m-b.d)
			cn.d = c.m - b.m
		default:
			b := base.nums[bi]
			pk = b.k
			t := min(c.scale(), b.scale())
			cm, ok1 := rescale(c.m, c.scale()-t)
			bm, ok2 := rescale(b.m, b.scale()-t)
			shapes = appendShape(shapes, *c)
			if ok1 && ok2 {
				kind = slotReshape
				ints = binary.AppendVarint(ints, cm-bm)
			} else {
				ints = binary.AppendVarint(ints, c.m)
			}
		}
		if v3 {
			// Most slots do what they did at the last frame: a kind is
			// stored as its difference from that, mostly 0.
			cn.k = kind
			kind ^= pk
			g2, g1 = g1, growth
		}
		dst[kinds+i] = kind
	}
	dst = binary.AppendUvarint(dst, uint64(len(shapes)))
	dst = append(dst, shapes...)
	return append(dst, ints...)
}

// appendDeltaHead appends the start of a delta of cur: its flags, its
// structure unless the same as the base's, and its count of slots, then
// room for the slots' kinds, which start at the offset returned.
func appendDeltaHead(dst []byte, cur *tokens, same bool) ([]byte, int) {
	flags := uint64(0)
	if same {
		flags |= 1
	}
	dst = binary.AppendUvarint(dst, flags)
	if !same {
		dst = binary.AppendUvarint(dst, uint64(len(cur.structure)))
		dst = append(dst, cur.structure...)
	}
	n := len(cur.nums)
	dst = binary.AppendUvarint(dst, uint64(n))
	kinds := len(dst)
	return append(dst, make([]byte, n)...), kinds
}

// encodeSame is encodeDelta(dst, cur, t, v) for a cur equal to t (the
// target served the same body again), without the copy: t's slots take
// the state encodeDelta would give cur's. Every slot is unchanged, so its
// kind is slotSame (stored XOR its last kind), its growth and those of
// the slots before it 0, and of its predictions only the first (its last
// growth again) can miss. TestEncodeSame holds it to encodeDelta.
func encodeSame(dst []byte, t *tokens) []byte {
	dst = binary.AppendUvarint(dst, 1) // the structure is the base's
	dst = binary.AppendUvarint(dst, uint64(len(t.nums)))
	for i := range t.nums {
		n := &t.nums[i]
		dst = append(dst, slotSame^n.k)
		var miss uint16
		if n.d != 0 {
			r := -n.d // the first prediction's residual, as learn takes it
			if r < 0 {
				r = -r
			}
			miss = uint16(bits.Len64(uint64(r))) * 16
		}
		n.cost[0] = n.cost[0] - n.cost[0]>>3 + miss
		n.cost[1] -= n.cost[1] >> 3
		n.cost[2] -= n.cost[2] >> 3
		n.d, n.k = 0, slotSame
	}
	return binary.AppendUvarint(dst, 0) // no shapes, no integers
}

// appendSteadyDelta is encodeSame's output for n slots that were all
// unchanged at the last frame too: every kind 0.
func appendSteadyDelta(dst []byte, n int) []byte {
	dst = binary.AppendUvarint(dst, 1)
	dst = binary.AppendUvarint(dst, uint64(n))
	dst = append(dst, make([]byte, n)...)
	return binary.AppendUvarint(dst, 0)
}

// decayCosts applies times the decay encodeSame gives the costs of a
// slot that did not grow: the state of times more frames like that
// (TestDecayCosts). A cost below 8 no longer decays, so a long quiet
// stretch costs at most some 70 steps per cost.
func (t *tokens) decayCosts(times int) {
	if times <= 0 {
		return
	}
	for i := range t.nums {
		c := &t.nums[i].cost
		for k := range c {
			for j := 0; j < times && c[k] >= 8; j++ {
				c[k] -= c[k] >> 3
			}
		}
	}
}

// baseAlignment returns, for slot i of cur, the slot of base it is
// compared with, or -1. With equal structures slots align one to one;
// otherwise a slot is compared with the same slot of the base's line with
// exactly the same text (the same series).
func baseAlignment(cur, base *tokens, n int, same bool) func(int) int {
	if same {
		return func(i int) int { return i }
	}
	if len(base.nums) == 0 {
		return func(int) int { return -1 }
	}
	m := alignmentMap(cur, base, n)
	return func(i int) int {
		if i >= len(m) {
			return -1
		}
		return int(m[i])
	}
}

// alignmentMap is baseAlignment of structures that differ, as a slice:
// slot i of cur is compared with slot m[i] of base, none when -1.
func alignmentMap(cur, base *tokens, n int) []int32 {
	idx := base.lineIndex()
	m := make([]int32, n)
	for i := range m {
		m[i] = -1
	}
	forLines(cur.structure, func(line []byte, first int) {
		if b, ok := idx[string(line)]; ok {
			for k := 0; first+k < len(m) && int(b)+k < len(base.nums) && k < countSlots(line); k++ {
				m[first+k] = b + int32(k)
			}
		}
	})
	return m
}

func appendShape(dst []byte, n num) []byte {
	b := n.f
	if n.hasExp {
		b |= 0x80
	}
	dst = append(dst, b)
	if n.hasExp {
		dst = binary.AppendVarint(dst, int64(n.exp))
	}
	return dst
}

// decodeDelta rebuilds into cur the tokens that src (an encodeDelta
// output of format version v) describes against base. cur's structure
// may come back shared with base's (equal structures); anything that
// writes into a structure must not write into a shared one (tokenize
// writes only into a reader's dead scratch, decodeDelta checks).
func decodeDelta(src []byte, base, cur *tokens, v uint16) error {
	same, kinds, shapes, ints, err := deltaParts(src, base, cur)
	if err != nil {
		return err
	}
	n := uint64(len(kinds))
	// Each number is written in place, field by field: built on the
	// stack and appended, a slot was copied twice, the second copy
	// reading back what narrower stores had just written.
	if cap(cur.nums) < int(n) {
		cur.nums = make([]num, n)
	}
	nums := cur.nums[:n]
	cur.nums = nums[:0] // until every slot is decoded
	bn := base.nums
	var amap []int32 // slot -> base slot when the structures differ
	if !same && len(bn) > 0 {
		amap = alignmentMap(cur, base, int(n))
	}
	v3 := v >= 3
	if same && v3 && len(bn) == len(nums) {
		err = decodeSame(nums, kinds, bn, &shapes, &ints)
	} else {
		err = decodeAligned(nums, kinds, bn, amap, same, v3, &shapes, &ints)
	}
	if err != nil {
		return err
	}
	return deltaTail(cur, nums, &shapes, &ints)
}

// decodeAligned is decodeDelta's loop for any delta: slot i's base is
// base slot i when same, else amap's (none past it, or past bn).
func decodeAligned(nums []num, kinds []byte, bn []num, amap []int32, same, v3 bool, shapes, ints *byteReader) error {
	var g1, g2 int64
	for i := range nums {
		k := kinds[i]
		bi := -1
		switch {
		case same:
			bi = i
		case i < len(amap):
			bi = int(amap[i])
		}
		if bi >= len(bn) {
			bi = -1
		}
		if v3 {
			pk := byte(slotAbs)
			if bi >= 0 {
				pk = bn[bi].k
			}
			k ^= pk
		}
		if k != slotAbs && bi < 0 {
			return fmt.Errorf("delta: slot %d has no base", i)
		}
		c := &nums[i]
		var growth int64
		switch k {
		case slotSame, slotDelta:
			b := &bn[bi]
			bm, bd := b.m, b.d
			c.exp, c.f, c.hasExp, c.k = b.exp, b.f, b.hasExp, 0
			if !v3 {
				var d int64
				if k == slotDelta {
					d = bd + ints.varint()
				}
				c.m, c.d, c.cost = bm+d, d, [numPredictors]uint16{}
				break
			}
			// predict and learn, written out on the fields.
			bc := b.cost
			p0, p1, p2 := bm+bd, bm+g1, bm+2*g1-g2
			m := bm
			if k == slotDelta {
				best, p := 0, p0
				if 2*uint32(bc[1]) < uint32(bc[0]) {
					best, p = 1, p1
				}
				if 2*uint32(bc[2]) < uint32(bc[best]) {
					p = p2
				}
				m = p + ints.varint()
			}
			growth = m - bm
			c.m, c.d = m, growth
			c.cost[0] = bc[0] - bc[0]>>3 + residualBits(m-p0)
			c.cost[1] = bc[1] - bc[1]>>3 + residualBits(m-p1)
			c.cost[2] = bc[2] - bc[2]>>3 + residualBits(m-p2)
		case slotReshape, slotAbs:
			var b *num // slotAbs has none
			if k == slotReshape {
				b = &bn[bi]
			}
			sh, ok := decodeShaped(b, shapes, ints)
			if !ok {
				return fmt.Errorf("delta: slot %d: bad rescale", i)
			}
			*c = sh
		default:
			return fmt.Errorf("delta: slot %d: unknown kind %d", i, k)
		}
		if v3 {
			c.k = k
			g2, g1 = g1, growth
		}
	}
	return nil
}

// deltaTail ends a delta's decoding: cur has its numbers, and the
// shapes and integers must have been read exactly.
func deltaTail(cur *tokens, nums []num, shapes, ints *byteReader) error {
	cur.nums = nums
	if shapes.err != nil {
		return shapes.err
	}
	if ints.err != nil {
		return ints.err
	}
	if ints.left() != 0 || shapes.left() != 0 {
		return errors.New("delta: trailing bytes")
	}
	return nil
}

// decodeSame is decodeDelta's loop for the common delta, version 3 or
// later with its base's structure: slot i's base is base slot i, so no
// slot lacks one. It decodes what the general loop does, with the
// residuals of one byte read in place (a call a slot was a fifth of
// decoding); both write predict and learn out on the fields, as a call
// to learn (not inlined) a slot would cost.
func decodeSame(nums []num, kinds []byte, bn []num, shapes, ints *byteReader) error {
	bn = bn[:len(nums)]
	kinds = kinds[:len(nums)]
	var g1, g2 int64
	for i := range nums {
		b := &bn[i]
		k := kinds[i] ^ b.k
		c := &nums[i]
		var growth int64
		switch k {
		case slotSame, slotDelta:
			bm, bd := b.m, b.d
			c.exp, c.f, c.hasExp = b.exp, b.f, b.hasExp
			bc := b.cost
			p0, p1, p2 := bm+bd, bm+g1, bm+2*g1-g2
			m := bm
			if k == slotDelta {
				best, p := 0, p0
				if 2*uint32(bc[1]) < uint32(bc[0]) {
					best, p = 1, p1
				}
				if 2*uint32(bc[2]) < uint32(bc[best]) {
					p = p2
				}
				var d int64
				if j := ints.i; uint(j) < uint(len(ints.b)) && ints.b[j] < 0x80 {
					x := ints.b[j]
					ints.i = j + 1
					d = int64(x>>1) ^ -int64(x&1)
				} else {
					d = ints.varint()
				}
				m = p + d
			}
			growth = m - bm
			c.m, c.d = m, growth
			c.cost[0] = bc[0] - bc[0]>>3 + residualBits(m-p0)
			c.cost[1] = bc[1] - bc[1]>>3 + residualBits(m-p1)
			c.cost[2] = bc[2] - bc[2]>>3 + residualBits(m-p2)
		case slotReshape, slotAbs:
			if k == slotAbs {
				b = nil
			}
			sh, ok := decodeShaped(b, shapes, ints)
			if !ok {
				return fmt.Errorf("delta: slot %d: bad rescale", i)
			}
			*c = sh
		default:
			return fmt.Errorf("delta: slot %d: unknown kind %d", i, k)
		}
		c.k = k
		g2, g1 = g1, growth
	}
	return nil
}

// decodeShaped reads a slot that takes a new shape: slotReshape against
// its base b (the difference at the finer of the two scales), or
// slotAbs (b nil: the number itself). false when the base cannot be
// rescaled.
func decodeShaped(b *num, shapes, ints *byteReader) (num, bool) {
	sh := shapes.shape()
	d := ints.varint()
	if b == nil {
		sh.m = d
		return sh, true
	}
	t := min(sh.scale(), b.scale())
	bm, ok := rescale(b.m, b.scale()-t)
	if !ok || sh.scale()-t > 18 {
		return num{}, false
	}
	sh.m = (d + bm) / pow10[sh.scale()-t]
	return sh, true
}

// deltaParts reads a delta's head: cur's structure (same: its base's,
// shared), then a kind a slot, the shapes and the integers.
func deltaParts(src []byte, base, cur *tokens) (same bool, kinds []byte, shapes, ints byteReader, err error) {
	r := byteReader{b: src}
	same = r.uvarint()&1 != 0 // the flags
	cur.lines = nil
	if same {
		// The base's structure, shared rather than copied (a copy of
		// 100-odd KB a frame was a fifth of decoding); so is its line
		// index, which depends on the structure only.
		cur.structure, cur.lines = base.structure, base.lines
	} else {
		n := r.uvarint()
		s := r.bytes(n)
		if sameArray(cur.structure, base.structure) {
			cur.structure = nil // shared with the base: never written into
		}
		cur.structure = append(cur.structure[:0], s...)
	}
	n := r.uvarint()
	if r.err != nil {
		return same, nil, shapes, ints, r.err
	}
	want := len(base.nums)
	if !same {
		want = countSlots(cur.structure)
	}
	if uint64(want) != n {
		return same, nil, shapes, ints, fmt.Errorf("delta: %d numbers for %d slots", n, want)
	}
	kinds = r.bytes(n)
	shapes = byteReader{b: r.bytes(r.uvarint())}
	ints = byteReader{b: r.rest()}
	return same, kinds, shapes, ints, r.err
}

// sameArray reports whether a and b share their backing array (a
// decoded structure may be its base's: decodeDelta).
func sameArray(a, b []byte) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:cap(a)][cap(a)-1] == &b[:cap(b)][cap(b)-1]
}

// byteReader reads varints and byte strings, remembering the first error.
// It advances an offset, not the slice: a reader lives in its caller's
// frame and its methods take a pointer, so re-slicing b wrote a pointer
// through it, which costs a write barrier per read while the collector
// marks (a twentieth of analyze's instructions, decoding deltas).
type byteReader struct {
	b   []byte
	i   int // the next byte to read
	err error
}

var errShort = errors.New("truncated data")

func (r *byteReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.i = len(r.b)
}

// left is how many bytes are still to read.
func (r *byteReader) left() int { return len(r.b) - r.i }

// reset makes b the bytes to read.
func (r *byteReader) reset(b []byte) { r.b, r.i = b, 0 }

func (r *byteReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b[r.i:])
	if n <= 0 {
		r.fail(errShort)
		return 0
	}
	r.i += n
	return v
}

// varint reads a zig-zag varint; decodeSame reads one of a byte itself.
func (r *byteReader) varint() int64 {
	v, n := binary.Varint(r.b[r.i:])
	if n <= 0 {
		r.fail(errShort)
		return 0
	}
	r.i += n
	return v
}

func (r *byteReader) byte() byte {
	if r.i >= len(r.b) {
		r.fail(errShort)
		return 0
	}
	c := r.b[r.i]
	r.i++
	return c
}

func (r *byteReader) bytes(n uint64) []byte {
	if n > uint64(r.left()) {
		r.fail(errShort)
		return nil
	}
	s := r.b[r.i : r.i+int(n) : r.i+int(n)]
	r.i += int(n)
	return s
}

func (r *byteReader) rest() []byte {
	s := r.b[r.i:]
	r.i = len(r.b)
	return s
}

func (r *byteReader) shape() num {
	b := r.byte()
	n := num{f: b & 0x7f, hasExp: b&0x80 != 0}
	if n.f > maxFrac {
		r.fail(errors.New("bad number shape"))
	}
	if n.hasExp {
		e := r.varint()
		if e > 9999 || e < -9999 {
			r.fail(errors.New("bad exponent"))
		}
		n.exp = int16(e)
	}
	return n
}
