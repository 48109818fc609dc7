package dump

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
)

// encodeChain codes a run of bodies as the writer does (tokenizeEncode,
// then the fused delta or encodeDeltaSame) and as the two passes did
// (tokenizeReuse, encodeDelta), each from its own tokens, and fails at the
// first body where the delta bytes, the tokens or the slot state differ.
// It returns how many deltas were coded in the one pass.
func encodeChain(t *testing.T, bodies [][]byte) int {
	t.Helper()
	var fprev, fcur, rprev, rcur tokens
	fprev.wide, fcur.wide, rprev.wide, rcur.wide = true, true, true, true
	var enc slotEncoder
	var prevBody []byte
	fused := 0
	for i, body := range bodies {
		same := tokenizeEncode(body, &fcur, &fprev, prevBody, &enc)
		var got []byte
		if i > 0 && same {
			got = enc.finish(nil, &fcur, &fprev)
			fused++
		} else if i > 0 {
			got = encodeDeltaSame(nil, &fcur, &fprev, Version, bytes.Equal(fcur.structure, fprev.structure))
		}
		tokenizeReuse(body, &rcur, &rprev, prevBody)
		var want []byte
		if i > 0 {
			want = encodeDelta(nil, &rcur, &rprev, Version)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("body %d: the one pass coded %x, the two passes %x\nbody: %q", i, got, want, body)
		}
		if !sameTokens(&fcur, &rcur) || (i > 0 && !sameState(&fcur, &rcur)) {
			t.Fatalf("body %d: the one pass left other tokens or slot state than the two passes\nbody: %q", i, body)
		}
		if i == 0 {
			// A key frame: no growths, kinds or costs (as the writer
			// clears them), the same in both.
			for k := range fcur.nums {
				fcur.nums[k].d, fcur.nums[k].k, fcur.nums[k].cost = 0, 0, [numPredictors]uint16{}
				rcur.nums[k].d, rcur.nums[k].k, rcur.nums[k].cost = 0, 0, [numPredictors]uint16{}
			}
		}
		fprev, fcur = fcur, fprev
		rprev, rcur = rcur, rprev
		prevBody = append(prevBody[:0], body...)
	}
	return fused
}

// TestTokenizeEncode: the writer's one pass (tokenizeEncode and the fused
// delta) codes the bytes and leaves the slot state of the two passes it
// replaces, on generated Envoy bodies whose counters grow (each predictor
// wins somewhere: steady growth, histogram buckets, resets) with lines
// of every kind fastLines leaves to the general path: unchanged values
// (runs), floats, a value turning float and back, negative and long
// integers, leading zeros, timestamps, a last line without a newline, a
// series added and a label changed (the structure differs: coded by
// encodeDeltaSame).
func TestTokenizeEncode(t *testing.T) {
	g := newGenTarget(11, 120)
	var bodies [][]byte
	for i := range 60 {
		body := g.body()
		long := "1234567890123456789"[:10+i%9] // 10 to 18 digits
		if i == 50 {
			long = "1234567890123456789" // too many digits: text
		}
		zero := []string{"0", "7"}[i%2]
		if i == 10 {
			zero = "007" // a leading zero: text
		}
		ts := 1700000000000 + int64(i/10) // a timestamp: a line fastLines leaves
		c := strconv.FormatFloat(1.5+float64(i)*0.25, 'f', -1, 64)
		if i%7 == 3 {
			c = "4e+01" // another shape
		}
		body = fmt.Appendf(body, "a_total %d\nb_gauge %d\nc_float %s\nd_neg %d\ne_long %s\nf_zero %s\ng_ts %d %d\n",
			1000+7*i, 5-i%3, c, -3*i, long, zero, i/10, ts)
		switch i {
		case 20:
			body = append([]byte("new_series{x=\"1\"} 5\n"), body...)
		case 30:
			body = append(body, "last_line 42"...) // no newline at the end
		case 40:
			body = bytes.Replace(body, []byte("svc_1\""), []byte("svc_1b\""), 1)
		}
		if i%9 == 5 {
			bodies = append(bodies, bodies[len(bodies)-1]) // the same body again: every value unchanged
		}
		bodies = append(bodies, body)
		g.step()
	}
	if n := encodeChain(t, bodies); n < 30 {
		t.Errorf("%d of %d deltas coded in one pass, want 30 or more (the bodies whose structure stayed)", n, len(bodies)-1)
	}
}

// FuzzTokenizeEncode: the one pass is the two passes on any three
// bodies in a row.
func FuzzTokenizeEncode(f *testing.F) {
	f.Add([]byte("x 1\ny 2\n"), []byte("x 3\ny 2\n"), []byte("x 6\ny 9"))
	f.Add([]byte("x{a=\"1\"} 10\nx{a=\"2\"} 20\n"), []byte("x{a=\"1\"} 11\nx{a=\"2\"} 2.5\n"), []byte("x{a=\"1\"} 012\nx{a=\"2\"} 25\n"))
	f.Add([]byte("x 99999999\ny 1e+06\n"), []byte("x 100000000\ny 2e+06\n"), []byte("x 123456789012345678\ny 3e+06\n"))
	f.Add([]byte("x 5 100\n"), []byte("x 6 101\n"), []byte("x -7 102\n"))
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		encodeChain(t, [][]byte{a, b, c, b, a})
	})
}

// TestScanDigits: scanDigits reads what a loop over the digits reads, for
// every length of digits from 0 to 20 followed by every kind of byte, and
// for inputs shorter than a word.
func TestScanDigits(t *testing.T) {
	digits := "98765432109876543210"
	for n := 0; n <= len(digits); n++ {
		for _, tail := range []string{"", "\n", " ", ".", "e", "/", ":", "\x00", "\xff", "0123456789"} {
			b := []byte(digits[:n] + tail)
			wantV, wantN := uint64(0), 0
			for wantN < len(b) && wantN <= maxDigits && b[wantN] >= '0' && b[wantN] <= '9' {
				wantV = wantV*10 + uint64(b[wantN]-'0')
				wantN++
			}
			v, k := scanDigits(b)
			if k > maxDigits {
				// Too many digits: the count says so, the value is not used.
				if wantN <= maxDigits {
					t.Errorf("scanDigits(%q) = %d digits, want %d", b, k, wantN)
				}
				continue
			}
			if v != wantV || k != wantN {
				t.Errorf("scanDigits(%q) = %d, %d; want %d, %d", b, v, k, wantV, wantN)
			}
		}
	}
}
