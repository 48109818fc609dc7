package dump

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytop/retrytop/expo"
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

// FuzzSnapshotValues: a body and five more of its structure with other
// numbers (from the seed), written as one target's frames, read back
// through the recording's value maps (version 5: without rendering what
// the maps read), directly and under a wrapper, with and without a
// filter: each snapshot must be the parse of the frame's text.
func FuzzSnapshotValues(f *testing.F) {
	g := newValGen(3)
	for i := range 6 {
		f.Add(g.body(), uint64(i))
	}
	f.Add([]byte("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 3\nh_count 3\nh_sum 2.5e+01\nx 17.000000000000004 1700000000000\n"), uint64(7))
	f.Fuzz(func(t *testing.T, body []byte, seed uint64) {
		if len(body) > 1<<14 {
			return
		}
		var base tokens
		base.wide = true
		tokenize(body, &base)
		rng := rand.New(rand.NewPCG(seed, 5))
		var buf bytes.Buffer
		w, err := NewWriter(&buf, WriterOptions{KeyEvery: 4})
		if err != nil {
			t.Fatal(err)
		}
		at := time.Unix(1741057965, 0)
		for i := range 6 {
			next := base
			next.nums = append([]num(nil), base.nums...)
			for k := range next.nums {
				n := &next.nums[k]
				switch rng.IntN(5) {
				case 0, 1: // unchanged
				case 2:
					n.m += int64(rng.IntN(1000))
				case 3:
					n.m = int64(rng.Uint64() >> 10) // past 2^53: strconv's reading
				default:
					n.m, n.f, n.hasExp, n.exp = int64(rng.IntN(100)), uint8(rng.IntN(3)), false, 0
				}
				if n.m == 0 && n.f == 0 {
					n.hasExp = false
				}
			}
			b, err := next.render(nil)
			if i == 0 {
				b, err = body, nil
			}
			if err != nil {
				return
			}
			if err := w.Append("t", at.Add(time.Duration(i)*time.Second), "text/plain", b); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		data := buf.Bytes()
		ref := openBytes(t, data)
		for _, filter := range []func(string) bool{nil, valFilter} {
			for _, d := range []*dumpRecording{
				newDumpRecording(openBytes(t, data), expo.ExpfmtParser{}, filter),
				newWrappedRecording(openBytes(t, data), func(p expo.Parser) expo.Parser { return &wrapParser{inner: p} }, filter, new(atomic.Int64), expo.NewLineCaches(0)),
			} {
				for i := 0; i < d.Len(); i++ {
					got, gerr := d.Snapshot(i)
					want, werr := refSnapshot(ref, i, filter)
					compareSnapshots(t, fmt.Sprintf("entry %d", i), got, want, gerr, werr)
				}
			}
		}
	})
}
