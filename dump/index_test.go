package dump

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// sameIndex fails unless a and b index the same frames (every FrameInfo),
// decode them to the same frames or the same errors, and list the same
// problems.
func sameIndex(t *testing.T, what string, a, b *Reader) {
	t.Helper()
	if a.Len() != b.Len() {
		t.Fatalf("%s: %d frames, scanning finds %d", what, a.Len(), b.Len())
	}
	if !reflect.DeepEqual(a.Targets(), b.Targets()) {
		t.Fatalf("%s: targets %v, scanning finds %v", what, a.Targets(), b.Targets())
	}
	for i := 0; i < a.Len(); i++ {
		if a.Info(i) != b.Info(i) {
			t.Fatalf("%s: frame %d: %+v, scanning finds %+v", what, i, a.Info(i), b.Info(i))
		}
		fa, ea := a.Frame(i)
		fb, eb := b.Frame(i)
		if (ea == nil) != (eb == nil) || !reflect.DeepEqual(fa, fb) {
			t.Fatalf("%s: frame %d decodes differently: %v / %v", what, i, ea, eb)
		}
	}
	pa, pb := a.Problems(), b.Problems()
	if len(pa) != len(pb) {
		t.Fatalf("%s: problems %v, scanning finds %v", what, pa, pb)
	}
	for i := range pa {
		if pa[i].Error() != pb[i].Error() {
			t.Fatalf("%s: problem %q, scanning finds %q", what, pa[i], pb[i])
		}
	}
}

func scanBytes(t testing.TB, b []byte) *Reader {
	t.Helper()
	r, err := newReaderScan(bytes.NewReader(b), int64(len(b)), "test.rtd", true)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestIndexMatchesScan: a dump with index frames (every 7 frames and at
// Close) opens from them to exactly what reading every frame gives, cut
// at every offset too (a recorder killed anywhere: the frames after the
// last index frame are scanned, a torn tail reported alike).
func TestIndexMatchesScan(t *testing.T) {
	full, recs := buildDump(t, WriterOptions{KeyEvery: 5, IndexEvery: 7}, []string{"app", "client", "db"}, 12)
	r := openBytes(t, full)
	if !r.Indexed() || len(r.Notes()) != 0 {
		t.Fatalf("indexed %v, notes %v: want the index frames read", r.Indexed(), r.Notes())
	}
	if r.Len() != len(recs) {
		t.Fatalf("%d frames, want %d", r.Len(), len(recs))
	}
	for i := 0; i < r.Len(); i++ {
		if f, err := r.Frame(i); err != nil || !sameFrame(f, recs[i]) {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	sameIndex(t, "whole", r, scanBytes(t, full))
	indexedCuts := 0
	for cut := headerSize; cut <= len(full); cut++ {
		b := full[:cut]
		a := openBytes(t, b)
		if a.Indexed() {
			indexedCuts++
		}
		sameIndex(t, "cut", a, scanBytes(t, b))
	}
	if indexedCuts == 0 {
		t.Fatal("no cut was read through an index frame")
	}
}

// TestDamagedIndexedFrame: a frame the index lists is checked when it is
// decoded: damage to it is an error naming the file and its offset, for it
// and the deltas on it; every other frame comes back intact.
func TestDamagedIndexedFrame(t *testing.T) {
	full, recs := buildDump(t, WriterOptions{KeyEvery: 4}, []string{"app", "client"}, 8)
	intact := openBytes(t, full)
	for k := 0; k < intact.Len(); k++ {
		e := intact.entries[intact.order[k]]
		bad := bytes.Clone(full)
		bad[e.info.Offset+int64(e.info.Size)-1] ^= 0x5a // the payload's last byte
		r := openBytes(t, bad)
		if !r.Indexed() || len(r.Problems()) != 0 {
			t.Fatalf("frame %d: indexed %v, problems %v", k, r.Indexed(), r.Problems())
		}
		for i := 0; i < r.Len(); i++ {
			f, err := r.Frame(i)
			depends := false
			for j := r.order[i]; j >= 0; j = r.entries[j].base {
				if j == intact.order[k] {
					depends = true
				}
			}
			switch {
			case depends && err == nil:
				t.Fatalf("damage to frame %d: frame %d decoded", k, i)
			case depends:
				var p *Problem
				if !errors.As(err, &p) || p.File != "test.rtd" || !strings.Contains(err.Error(), "checksum mismatch") {
					t.Fatalf("damage to frame %d: frame %d: %v", k, i, err)
				}
			case err != nil || !sameFrame(f, recs[i]):
				t.Fatalf("damage to frame %d: frame %d: %v", k, i, err)
			}
		}
	}
}

// TestDamagedIndex: damage to the last index frame makes the reader use
// the one before and scan the rest (reporting the damage as a scan does);
// damage to an earlier one, or bytes put in the middle, make it scan the
// whole file and say so once. Either way the result is the scan's.
func TestDamagedIndex(t *testing.T) {
	full, _ := buildDump(t, WriterOptions{KeyEvery: 4, IndexEvery: 5}, []string{"app", "client"}, 8)
	spans := frameSpans(openBytes(t, full))
	last := spans[len(spans)-1][1] // the last index frame starts there
	firstEnd := int64(-1)          // the first index frame ends there
	for i := 1; i < len(spans) && firstEnd < 0; i++ {
		if spans[i][0] != spans[i-1][1] {
			firstEnd = spans[i][0]
		}
	}
	tailStart := -1 // the first frame after the index frame before the last
	for i := 1; i < len(spans); i++ {
		if spans[i][0] != spans[i-1][1] && spans[i][0] < last {
			tailStart = i
		}
	}
	var inserted []byte
	inserted = append(inserted, full[:spans[3][0]]...)
	inserted = append(inserted, "junk"...)
	inserted = append(inserted, full[spans[3][0]:]...)
	for _, tc := range []struct {
		name    string
		b       []byte
		indexed bool
		note    string
	}{
		{"last index frame's checksum", flip(full, int(last)+20), true, ""},
		{"first index frame's footer, checksum fixed", fixChecksums(flip(full, int(firstEnd)-1)), false, "index is damaged"},
		{"bytes put in", inserted, false, "index is damaged"},
		// The frames after the index frame before it are scanned, the
		// first of them damaged: the deltas after it must not link to the
		// base the index listed (version 4 reads that base's checksum).
		{"last index frame's checksum and the frame after the one before", flip(flip(full, int(last)+20), int(spans[tailStart][0])+13), true, ""},
	} {
		a := openBytes(t, tc.b)
		if a.Indexed() != tc.indexed || (tc.note == "") != (len(a.Notes()) == 0) ||
			(tc.note != "" && (len(a.Notes()) != 1 || !strings.Contains(a.Notes()[0], tc.note) || !strings.Contains(a.Notes()[0], "test.rtd"))) {
			t.Errorf("%s: indexed %v, notes %v, want indexed %v and a note saying %q", tc.name, a.Indexed(), a.Notes(), tc.indexed, tc.note)
		}
		sameIndex(t, tc.name, a, scanBytes(t, tc.b))
	}
}

func flip(b []byte, at int) []byte {
	c := bytes.Clone(b)
	c[at] ^= 0x5a
	return c
}

// TestVersion1StillReads: a dump written before index frames (version 1,
// testdata/v1.rtd: see version_test.go) reads by scanning, and says so
// once.
func TestVersion1StillReads(t *testing.T) {
	full, err := os.ReadFile(filepath.Join("testdata", "v1.rtd"))
	if err != nil {
		t.Fatal(err)
	}
	recs := fixtureScrapes()
	r := openBytes(t, full)
	if r.Indexed() || len(r.Notes()) != 1 || !strings.Contains(r.Notes()[0], "format version 1 has no index") {
		t.Fatalf("indexed %v, notes %v", r.Indexed(), r.Notes())
	}
	if r.Len() != len(recs) {
		t.Fatalf("%d frames, want %d", r.Len(), len(recs))
	}
	for i := range recs {
		if f, err := r.Frame(i); err != nil || !bytes.Equal(f.Body, recs[i].body) || f.Err != recs[i].err {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
}
