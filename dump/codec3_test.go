package dump

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestParseNumCanonical: parseNum accepts exactly the tokens appendNum
// renders back byte for byte (it checks the spelling directly instead of
// rendering, for record's CPU), on a table of edge cases and on
// random tokens from the alphabet of numbers.
func TestParseNumCanonical(t *testing.T) {
	cases := map[string]bool{
		"0": true, "1": true, "-1": true, "10": true, "007": false, "-0": false, "0.0": true, "-0.0": false,
		"0.05": true, "00.5": false, "-0.5": true, "5.00": true, "1.": false, ".5": false, "1e+06": true,
		"1e6": false, "1e+6": false, "1e+006": false, "1e-00": false, "1e+00": true, "1e+100": true,
		"1e+0100": false, "1e+1000": true, "1e+10000": false, "1.5e-07": true, "123456789012345678": true,
		"1234567890123456789": false, "NaN": false, "+Inf": false, "+1": false, "1E+06": false, "": false, "-": false,
	}
	wideCases := map[string]bool{
		"0.0007900039999999995": true, "0.007133831000000001": true, "-0.0007900039999999995": true,
		"0.0000000000000000000001": true, "0.00000000000000000000001": false, "0.1234567890123456789": false,
		"123456789012345678": true, "1234567890123456789": false, "0.000": true, "1.5e-07": true,
	}
	for tok, want := range wideCases {
		n, ok := parseNumW([]byte(tok), true)
		if ok != want || (ok && string(appendNum(nil, n)) != tok) {
			t.Errorf("parseNumW(%q, wide) = %v (renders %q), want %v", tok, ok, appendNum(nil, n), want)
		}
	}
	for tok, want := range cases {
		n, ok := parseNum([]byte(tok))
		if ok != want {
			t.Errorf("parseNum(%q) = %v, want %v", tok, ok, want)
			continue
		}
		if ok {
			if got := appendNum(nil, n); string(got) != tok {
				t.Errorf("parseNum(%q) renders %q", tok, got)
			}
		}
	}
	// Random tokens: whatever parseNum accepts renders back exactly, and
	// whatever renders back exactly from a reading of digits, point and
	// exponent is accepted.
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "0123456789.-+e"
	for range 300000 {
		b := make([]byte, 1+rng.IntN(9+rng.IntN(2)*16)) // some long enough for the wide rule
		for i := range b {
			if rng.IntN(3) == 0 {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				b[i] = '0' + byte(rng.IntN(10))
			}
		}
		for _, wide := range []bool{false, true} {
			n, ok := parseNumW(b, wide)
			if ok && !bytes.Equal(appendNum(nil, n), b) {
				t.Fatalf("parseNumW(%q, %v) accepted; renders %q", b, wide, appendNum(nil, n))
			}
			if !ok {
				if m, ok2 := parseAnyNum(b, wide); ok2 && bytes.Equal(appendNum(nil, m), b) {
					t.Fatalf("parseNumW(%q, %v) refused a token that renders back exactly", b, wide)
				}
			}
		}
	}
}

// parseAnyNum reads -?D+(.D+)?(e[+-]D+)? without any spelling check, as
// the reference for TestParseNumCanonical: at most maxDigits digits, or,
// wide, maxDigits significant ones and maxFrac after the point.
func parseAnyNum(tok []byte, wide bool) (num, bool) {
	s := string(tok)
	var n num
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp, hasExp := strings.Cut(s, "e")
	ip, fp, hasPoint := strings.Cut(mant, ".")
	sig := len(strings.TrimLeft(ip+fp, "0"))
	if ip == "" || (hasPoint && fp == "") || (!wide && len(ip)+len(fp) > maxDigits) ||
		(wide && (len(ip) > maxDigits || sig > maxDigits || len(fp) > maxFrac)) {
		return n, false
	}
	var m int64
	for _, c := range ip + fp {
		if c < '0' || c > '9' {
			return n, false
		}
		m = m*10 + int64(c-'0')
	}
	if hasExp {
		if len(exp) < 2 || (exp[0] != '+' && exp[0] != '-') || len(exp) > 5 {
			return n, false
		}
		e := 0
		for _, c := range exp[1:] {
			if c < '0' || c > '9' {
				return n, false
			}
			e = e*10 + int(c-'0')
		}
		if exp[0] == '-' {
			e = -e
		}
		n.hasExp, n.exp = true, int16(e)
	}
	if neg {
		m = -m
	}
	n.m, n.f = m, uint8(len(fp))
	return n, true
}

// TestDeltaVersion3Paths writes, as the writer does, a target's scrapes
// through every path of a version 3 delta and decodes them: counters
// that grow steadily (the last growth predicts), histogram buckets that
// grow together (the slot before predicts), a series appearing and
// disappearing (the structure changes; kinds and costs follow the
// series), a counter reset, a value changing its spelling (shape), a
// slot whose kind changes and changes back. The decoder's state must be
// the encoder's after every frame, and each predictor must have been used.
func TestDeltaVersion3Paths(t *testing.T) {
	body := func(i int) []byte {
		var b strings.Builder
		reset := 0
		if i >= 20 {
			reset = 20
		}
		fmt.Fprintf(&b, "steady_total %d\n", 1000+(i-reset)*17)
		total := 500 + i*i*3
		for k := 1; k <= 8; k++ {
			fmt.Fprintf(&b, "h_bucket{le=\"%d\"} %d\n", k, total*k/8)
		}
		fmt.Fprintf(&b, "h_count %d\n", total)
		if i >= 5 && i < 12 {
			fmt.Fprintf(&b, "late_total{x=\"y\"} %d\n", (i-5)*4)
		}
		fmt.Fprintf(&b, "shape %s\n", []string{"1.5", "2", "1e+06", "0.001", "2"}[i%5])
		fmt.Fprintf(&b, "flappy %d\n", (i/3)%2)
		return []byte(b.String())
	}
	var base, cur, dec, next tokens
	used := map[int]int{}
	for i := 0; i < 30; i++ {
		b := body(i)
		tokenize(b, &cur)
		if i == 0 {
			tokenize(b, &dec)
			base, cur = cur, base
			continue
		}
		for k := range base.nums {
			_, sel := predict(base.nums[k], 0, 0)
			used[sel]++
		}
		d := encodeDelta(nil, &cur, &base, Version)
		if err := decodeDelta(d, &dec, &next, Version); err != nil {
			t.Fatalf("scrape %d: %v", i, err)
		}
		got, err := next.render(nil)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("scrape %d: decoded %q, %v; want %q", i, got, err, b)
		}
		if !sameState(&next, &cur) {
			t.Fatalf("scrape %d: the decoder's state differs from the encoder's", i)
		}
		base, cur = cur, base
		dec, next = next, dec
	}
	for sel := range numPredictors {
		if used[sel] == 0 && sel != 2 {
			t.Errorf("predictor %d was never chosen: %v", sel, used)
		}
	}
}

// TestVersionIsPerFile: a file's version is in its header and nowhere
// else, so a file cannot mix versions: the same version 3 frames under a
// version 2 header fail to decode with an error (the body checksum or the
// delta's own checks), never a wrong body.
func TestVersionIsPerFile(t *testing.T) {
	b := writeFixture(t, WriterOptions{KeyEvery: 8})
	if v := binary.LittleEndian.Uint16(b[8:10]); v != Version {
		t.Fatalf("a new file has version %d, want %d", v, Version)
	}
	r := openBytes(t, b)
	want := fixtureScrapes()
	for i := range want {
		if f, err := r.Frame(i); err != nil || !bytes.Equal(f.Body, want[i].body) {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	old := bytes.Clone(b)
	binary.LittleEndian.PutUint16(old[8:], 2)
	binary.LittleEndian.PutUint32(old[12:], crc32.Checksum(old[:12], castagnoli))
	r2 := openBytes(t, old)
	byTime := map[string][]byte{}
	for _, w := range want {
		byTime[w.target+" "+w.at.String()] = w.body
	}
	failed := len(want) - r2.Len() // frames left out: deltas whose base is not found
	for i := 0; i < r2.Len(); i++ {
		f, err := r2.Frame(i)
		if err != nil || f.Err != "" {
			if err != nil {
				failed++
			}
			continue
		}
		if w, ok := byTime[f.Target+" "+f.Time.String()]; !ok || !bytes.Equal(f.Body, w) {
			t.Fatalf("frame %d (%s at %v) decoded as version 2 to a wrong body", i, f.Target, f.Time)
		}
	}
	if failed == 0 {
		t.Fatal("version 3 frames read as version 2 all decoded: the test would not see a version mix")
	}
}

// TestReuseRowsEdges: the writer's tokenization of a body after another
// is tokenize's where runs of equal lines meet their edges: a last line
// with and without its newline, an identical body, a body cut short, an
// empty line, a line that differs only in its newline.
func TestReuseRowsEdges(t *testing.T) {
	cases := [][2]string{
		{"a 1\nb 2", "a 1\nb 2\nc 3\n"},
		{"a 1\nb 2\n", "a 1\nb 2"},
		{"a 1\nb 2\n", "a 1\nb 2\n"},
		{"a 1\nb 2\nc 3\n", "a 1\n"},
		{"a 1\n\nb 2\n", "a 1\n\nb 2\n\n"},
		{"a 1\nb 2", "a 1\nb 2"},
		{"# x\na 1\nb 2\n", "# x\na 1\nb 3\nc 4\n"},
		{"a 1\nb 2\n", "a 1b 2\n"},
		{"", "a 1\n"},
		{"a 1\n", ""},
		// A changed value after the same series (the one-value path).
		{"a 1\nb 2\n", "a 5\nb 2\n"},
		{"a 1\n", "a 2 17\n"},
		{"a 1 17\n", "a 2\n"},
		{"a 1", "a 2\n"},
		{"a 1\n", "a 2"},
		{"a 1\n", "a  2\n"},
		{"a 1\n", "a\t2\n"},
		{"a 1\n", "a NaN\n"},
		{"a NaN\n", "a 1\n"},
		{"a 1\n", "a 1.50\n"},
		{"a 1 # {x=\"y\"} 1\n", "a 2 # {x=\"y\"} 1\n"},
	}
	flagged := 0
	for _, c := range cases {
		var prev, got, want tokens
		tokenize([]byte(c[0]), &prev)
		same := tokenizeReuse([]byte(c[1]), &got, &prev, []byte(c[0]))
		tokenize([]byte(c[1]), &want)
		if !sameTokens(&got, &want) {
			t.Errorf("%q after %q: rows %v, want %v", c[1], c[0], got.rows, want.rows)
		}
		if same && !bytes.Equal(got.structure, prev.structure) {
			t.Errorf("%q after %q: said to keep the structure %q, has %q", c[1], c[0], prev.structure, got.structure)
		}
		flagged += b2i(same)
	}
	// "a 1\nb 2\n" again, "a 5\nb 2\n" after it, "a 1.50" after "a 1"...
	if flagged < 4 {
		t.Errorf("tokenizeReuse said %d times that the structure stayed, want 4 or more", flagged)
	}
}

// TestEmptyAndTinyBodies: version 3 leaves the zstd magic out of every
// payload; bodies that compress to almost nothing (empty, one byte,
// repeated bytes that need padding) still read back, as key and delta
// frames.
func TestEmptyAndTinyBodies(t *testing.T) {
	bodies := [][]byte{nil, []byte("x"), []byte("x 1\n"), nil, bytes.Repeat([]byte("a"), 1<<20), []byte("x 2\n"), []byte("x 2\n")}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1741057965, 0)
	for i, b := range bodies {
		if err := w.Append("t", at.Add(time.Duration(i)*time.Second), "text/plain", b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := openBytes(t, buf.Bytes())
	if r.Len() != len(bodies) || len(r.Problems()) != 0 {
		t.Fatalf("%d frames, problems %v", r.Len(), r.Problems())
	}
	deltas := 0
	for i, b := range bodies {
		if !r.Info(i).Key {
			deltas++
		}
		f, err := r.Frame(i)
		if err != nil || !bytes.Equal(f.Body, b) {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	if deltas == 0 {
		t.Fatal("no delta frame: the test would not see one fail")
	}
}

// TestWideNumbersAreSlots: version 3 takes a number with up to 18
// significant digits and 22 after the point as a slot (a latency sum
// like 0.0007900039999999995), so a body whose such values change keeps
// its structure; it reads back byte for byte through key and delta
// frames, and a version 2 file's key frames are still tokenized as their
// writer did (TestOlderVersionsRead).
func TestWideNumbersAreSlots(t *testing.T) {
	body := func(i int) []byte {
		return []byte(fmt.Sprintf("wait_seconds_sum %s\nwait_seconds_count %d\nx 1\n", ff(0.0007900039999999995+float64(i)*0.000413), 10+i))
	}
	var a, b tokens
	a.wide, b.wide = true, true
	tokenize(body(0), &a)
	tokenize(body(1), &b)
	if !bytes.Equal(a.structure, b.structure) || len(a.nums) != 3 {
		t.Fatalf("structures %q and %q, %d numbers: the sums should be slots", a.structure, b.structure, len(a.nums))
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterOptions{KeyEvery: 7})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1741057965, 0)
	for i := range 20 {
		if err := w.Append("t", at.Add(time.Duration(i)*time.Second), "text/plain", body(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := openBytes(t, buf.Bytes())
	for i := range 20 {
		if f, err := r.Frame(i); err != nil || !bytes.Equal(f.Body, body(i)) {
			t.Fatalf("frame %d: %q, %v", i, f.Body, err)
		}
	}
	for i := 19; i >= 0; i-- {
		r.dropState("t")
		if f, err := r.Frame(i); err != nil || !bytes.Equal(f.Body, body(i)) {
			t.Fatalf("frame %d from its key frame: %q, %v", i, f.Body, err)
		}
	}
}

// appendNumRef is appendNum as it was written first, with strconv: the
// reference TestAppendNumAsRef holds appendNum to.
func appendNumRef(dst []byte, n num) []byte {
	u := uint64(n.m)
	if n.m < 0 {
		dst = append(dst, '-')
		u = -u
	}
	var dbuf [24]byte
	d := strconv.AppendUint(dbuf[:0], u, 10)
	for len(d) < int(n.f)+1 && len(d) < len(dbuf) {
		d = append(d, 0)
		copy(d[1:], d)
		d[0] = '0'
	}
	f := int(n.f)
	if f > len(d) {
		f = len(d)
	}
	dst = append(dst, d[:len(d)-f]...)
	if f > 0 {
		dst = append(dst, '.')
		dst = append(dst, d[len(d)-f:]...)
	}
	if n.hasExp {
		dst = append(dst, 'e')
		e := int(n.exp)
		if e < 0 {
			dst = append(dst, '-')
			e = -e
		} else {
			dst = append(dst, '+')
		}
		if e < 10 {
			dst = append(dst, '0')
		}
		dst = strconv.AppendInt(dst, int64(e), 10)
	}
	return dst
}

// TestAppendNumAsRef: appendNum renders every shape as its first,
// strconv-based version did.
func TestAppendNumAsRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	nums := []num{{}, {m: -1}, {m: 5, f: 22}, {m: -999999999999999999, f: 22}, {m: 1, hasExp: true, exp: 0},
		{m: 15, f: 1, hasExp: true, exp: -7}, {m: 1, hasExp: true, exp: 1000}, {m: 1, hasExp: true, exp: -32768}, {m: 7, hasExp: true, exp: 99},
		{m: 1<<63 - 1}, {m: -1 << 63, f: 3}}
	for range 100000 {
		n := num{m: rng.Int64N(1 << (1 + rng.IntN(62))), f: uint8(rng.IntN(maxFrac + 1))}
		if rng.IntN(2) == 0 {
			n.m = -n.m
		}
		if rng.IntN(3) == 0 {
			n.hasExp, n.exp = true, int16(rng.IntN(2400)-1200)
		}
		nums = append(nums, n)
	}
	for _, n := range nums {
		if got, want := appendNum([]byte("x"), n), appendNumRef([]byte("x"), n); !bytes.Equal(got, want) {
			t.Fatalf("appendNum(%+v) = %q, want %q", n, got, want)
		}
	}
}
