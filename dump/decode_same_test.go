package dump

import "testing"

// decodeBoth decodes a delta's slots with decodeSame and with the general
// loop over the same base, and fails t unless both give the same numbers
// (every field, the predictors' state included) and the same error.
func decodeBoth(t *testing.T, kinds []byte, bn []num, shapes, ints []byte) (nums []num, err error) {
	t.Helper()
	fast, slow := make([]num, len(bn)), make([]num, len(bn))
	fs, fi := byteReader{b: shapes}, byteReader{b: ints}
	ss, si := byteReader{b: shapes}, byteReader{b: ints}
	errFast := decodeSame(fast, kinds, bn, &fs, &fi)
	errSlow := decodeAligned(slow, kinds, bn, nil, true, true, &ss, &si)
	if (errFast == nil) != (errSlow == nil) || errFast != nil && errFast.Error() != errSlow.Error() {
		t.Fatalf("decodeSame error %v, the general loop's %v", errFast, errSlow)
	}
	if errFast != nil {
		return nil, errFast
	}
	var tf, ts tokens
	eFast, eSlow := deltaTail(&tf, fast, &fs, &fi), deltaTail(&ts, slow, &ss, &si)
	if (eFast == nil) != (eSlow == nil) || eFast != nil && eFast.Error() != eSlow.Error() {
		t.Fatalf("decodeSame ends with %v, the general loop with %v", eFast, eSlow)
	}
	for k := range fast {
		if fast[k] != slow[k] {
			t.Fatalf("slot %d: decodeSame %+v, the general loop %+v", k, fast[k], slow[k])
		}
	}
	return fast, eFast
}

// The loop for deltas of the same structure decodes a chain of the bench
// generator's frames (every counter changing, shapes changing now and
// then) as the general loop does, each frame the base of the next.
func TestDecodeSameAsAligned(t *testing.T) {
	g := newGenTarget(7, 600)
	var prev, cur tokens
	tokenize(g.body(), &prev)
	base := prev.nums
	reshaped := 0
	for i := 1; i < 120; i++ {
		g.step()
		tokenize(g.body(), &cur)
		d := encodeDelta(nil, &cur, &prev, Version)
		var parsedBase tokens
		parsedBase.nums, parsedBase.structure = base, prev.structure
		var out tokens
		same, kinds, shapes, ints, err := deltaParts(d, &parsedBase, &out)
		if err != nil || !same {
			t.Fatalf("frame %d: same %v, %v: the generator keeps its structure", i, same, err)
		}
		nums, err := decodeBoth(t, kinds, base, shapes.rest(), ints.rest())
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		for k := range nums {
			if !nums[k].sameValue(cur.nums[k]) {
				t.Fatalf("frame %d slot %d: decoded %+v, encoded %+v", i, k, nums[k], cur.nums[k])
			}
			if kinds[k]^base[k].k == slotReshape {
				reshaped++
			}
		}
		base = nums
		prev, cur = cur, prev
	}
	if reshaped == 0 {
		t.Error("no slot changed its shape: the test does not reach that case")
	}
}

// On any bytes, decodeSame fails as the general loop does, or decodes the
// same numbers.
func FuzzDecodeSame(f *testing.F) {
	g := newGenTarget(3, 60)
	var a, b tokens
	first := g.body() // the delta's base
	tokenize(first, &a)
	g.step()
	tokenize(g.body(), &b)
	d := encodeDelta(nil, &b, &a, Version)
	var out tokens
	_, kinds, shapes, ints, err := deltaParts(d, &a, &out)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(first, kinds, shapes.rest(), ints.rest())
	f.Add([]byte("x 1\ny 2.5 3\n"), []byte{1, 2, 3}, []byte{0, 1, 2}, []byte{0x80, 0x80})
	f.Fuzz(func(t *testing.T, body, kinds, shapes, ints []byte) {
		var base tokens
		tokenize(body, &base)
		if len(kinds) < len(base.nums) {
			return // deltaParts gives a kind a slot
		}
		// The base's last kinds, its growth and its predictors' costs from
		// the kinds' bytes, as a chain of deltas leaves them.
		for i := range base.nums {
			x := kinds[len(kinds)-1-i%len(kinds)]
			n := &base.nums[i]
			n.k, n.d = x>>6, int64(x)-100
			n.cost = [numPredictors]uint16{uint16(x) * 16, uint16(x&0x0f) * 64, uint16(x>>4) * 64}
		}
		decodeBoth(t, kinds[:len(base.nums)], base.nums, shapes, ints)
	})
}
