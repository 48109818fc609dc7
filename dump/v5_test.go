package dump

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestNumsCheckSeesEveryNumber: changing any one number of a frame, its
// digits or its shape, changes numsCheck.
func TestNumsCheckSeesEveryNumber(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 5))
	nums := make([]num, 300)
	for i := range nums {
		nums[i] = num{m: rng.Int64N(1 << 40), f: uint8(rng.IntN(4))}
		if i%7 == 0 {
			nums[i].hasExp, nums[i].exp = true, int16(rng.IntN(40)-20)
		}
	}
	base := numsCheck(nums)
	if numsCheck(nums[:len(nums)-1]) == base {
		t.Fatal("a number fewer, the same check")
	}
	for i := range nums {
		for _, change := range []func(n *num){
			func(n *num) { n.m++ },
			func(n *num) { n.m ^= 1 << 39 },
			func(n *num) { n.m = -n.m - 1 },
			func(n *num) { n.f++ },
			func(n *num) { n.hasExp = !n.hasExp },
			func(n *num) { n.hasExp, n.exp = true, n.exp+1 },
		} {
			was := nums[i]
			change(&nums[i])
			if numsCheck(nums) == base {
				t.Fatalf("slot %d changed from %+v to %+v: the same check", i, was, nums[i])
			}
			nums[i] = was
		}
	}
	// What it ignores: a slot's prediction state.
	nums[3].d, nums[3].k, nums[3].cost = 5, 2, [numPredictors]uint16{1, 2, 3}
	if numsCheck(nums) != base {
		t.Fatal("the prediction state changed the check")
	}
}

// TestVersion5DeltaCheckedByNumbers: a version 5 delta frame's header
// holds numsCheck of its numbers (and its structure's CRC when it has one
// of its own), a key frame's the CRC of its body; a delta whose check
// does not match what it decodes to is not read, and neither are the
// frames after it that need it, while every other frame is.
func TestVersion5DeltaCheckedByNumbers(t *testing.T) {
	full, recs := buildDump(t, WriterOptions{KeyEvery: 6, IndexEvery: -1}, []string{"app", "db"}, 12)
	if v := binary.LittleEndian.Uint16(full[8:10]); v != 5 {
		t.Fatalf("version %d", v)
	}
	intact := openBytes(t, full)
	deltas, own := 0, 0
	for i := 0; i < intact.Len(); i++ {
		if _, err := intact.Frame(i); err != nil {
			t.Fatalf("intact frame %d: %v", i, err)
		}
		idx := intact.order[i]
		e := &intact.entries[idx]
		if e.info.Failed {
			continue
		}
		st := intact.states[e.info.Target]
		if st == nil || st.idx != idx {
			t.Fatalf("frame %d: the reader's state is not at it", i)
		}
		want := crc32.Checksum(recs[idx].body, castagnoli)
		if e.base >= 0 {
			deltas++
			want = numsCheck(st.cur.nums)
			if !st.same {
				own++
				want ^= crc32.Checksum(st.cur.structure, castagnoli)
			}
		}
		if got, _ := intact.crcOf(idx); got != want {
			t.Fatalf("frame %d (key %v): check %08x, want %08x", i, e.info.Key, got, want)
		}
	}
	if deltas < intact.Len()/2 || own == 0 {
		t.Fatalf("%d deltas of %d frames, %d with a structure of their own: want half and some", deltas, intact.Len(), own)
	}
	for i := 0; i < intact.Len(); i++ {
		idx := intact.order[i]
		e := &intact.entries[idx]
		if e.base < 0 || e.info.Failed {
			continue
		}
		// Flip the check's top bit (the link to it is its low 13 bits)
		// and seal the frame again: only the decode can tell.
		bad := bytes.Clone(full)
		at := e.info.Offset + int64(e.info.Size) - int64(e.payLen) - 4
		bad[at+3] ^= 0x80
		fr := bad[e.info.Offset : e.info.Offset+int64(e.info.Size)]
		binary.LittleEndian.PutUint32(fr[8:12], crc32.Checksum(fr[frameHeaderSize:], castagnoli))
		r := openBytes(t, bad)
		if r.Len() != intact.Len() {
			t.Fatalf("delta %d: %d frames listed, want %d", i, r.Len(), intact.Len())
		}
		_, err := r.Frame(i)
		if err == nil || !strings.Contains(err.Error(), "do not match the frame's checksum") {
			t.Fatalf("delta %d with a wrong check: %v", i, err)
		}
		for j := 0; j < r.Len(); j++ {
			if r.Info(j).Target != r.Info(i).Target {
				if f, err := r.Frame(j); err != nil || !bytes.Equal(f.Body, recs[r.order[j]].body) {
					t.Fatalf("delta %d damaged: frame %d of another target: %v", i, j, err)
				}
			}
		}
	}
}
