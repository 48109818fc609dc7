package dump

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// commentBomb builds a key frame's zstd payload whose body is "#", n-2
// bytes of 'a' and "\n": one comment line, written by hand as raw and RLE
// blocks (4 bytes per 128 KiB), the way a hostile file packs 255 MiB into
// a few KB. It returns the payload and the body's CRC, computed in chunks
// so that the test itself never holds the body.
func commentBomb(n int) ([]byte, uint32) {
	const block = 128 << 10
	p := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xa0} // magic; single segment, 4-byte content size
	p = binary.LittleEndian.AppendUint32(p, uint32(n))
	hdr := func(last bool, typ, size int) {
		v := size<<3 | typ<<1
		if last {
			v |= 1
		}
		p = append(p, byte(v), byte(v>>8), byte(v>>16))
	}
	hdr(false, 0, 1) // raw "#"
	p = append(p, '#')
	for left := n - 2; left > 0; left -= block {
		hdr(false, 1, min(left, block)) // RLE 'a'
		p = append(p, 'a')
	}
	hdr(true, 0, 1) // raw "\n"
	p = append(p, '\n')

	crc := crc32.Update(0, castagnoli, []byte{'#'})
	chunk := bytes.Repeat([]byte{'a'}, 1<<20)
	for left := n - 2; left > 0; left -= len(chunk) {
		crc = crc32.Update(crc, castagnoli, chunk[:min(left, len(chunk))])
	}
	return p, crc32.Update(crc, castagnoli, []byte{'\n'})
}

// bombDump is a version 1 dump (the file was one) of frames key
// frames of target "hostile", each a comment body of n bytes; pad pads
// each payload as the writer does (then the frames are honest).
func bombDump(frames, n int, pad bool) []byte {
	payload, crc := commentBomb(n)
	if pad {
		payload = padPayload(payload, 0, n)
	}
	b := appendFileHeader(nil)
	binary.LittleEndian.PutUint16(b[8:], 1)
	binary.LittleEndian.PutUint32(b[12:], crc32.Checksum(b[:12], castagnoli))
	for i := range frames {
		b = appendFrame(b, &meta{kind: kindKey, timeNs: time.Unix(1741057965+int64(i), 0).UnixNano(), target: "hostile",
			contentType: "text/plain; version=0.0.4", bodyLen: uint64(n), bodyCRC: crc, payload: payload})
	}
	return b
}

// TestHugeDeclaredBodyRefusedBeforeAllocating is a crafted dump:
// three 255 MiB comment bodies in a file of a few KB, which made analyze
// allocate 4.8 GB. The reader refuses each frame at Open, with the file
// and offset, and allocates in all about what the file holds.
func TestHugeDeclaredBodyRefusedBeforeAllocating(t *testing.T) {
	const n = 255 << 20
	data := bombDump(3, n, false)
	path := filepath.Join(t.TempDir(), "bomb.rtd")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("crafted dump: %d bytes, 3 frames declaring %d bytes each", len(data), n)

	// The bound: Open reads the file once through its window (at most the
	// file's size here), builds an index entry per frame and two zstd
	// decoders' fixed state (measured at about 0.2 MiB); 1 MiB covers the
	// latter with room, and is 1/255 of one declared body.
	bound := uint64(len(data)) + 1<<20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rec, err := OpenRecording(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < rec.Len(); i++ {
		_, _ = rec.Snapshot(i)
	}
	problems := rec.Problems()
	runtime.ReadMemStats(&after)
	rec.Close()
	if got := after.TotalAlloc - before.TotalAlloc; got > bound {
		t.Errorf("opening and reading the crafted dump allocated %d bytes, over the bound %d", got, bound)
	} else {
		t.Logf("allocated %d bytes (bound %d)", after.TotalAlloc-before.TotalAlloc, bound)
	}
	if rec.Len() != 0 {
		t.Errorf("%d readable frames, want 0", rec.Len())
	}
	if len(problems) != 3 {
		t.Fatalf("%d problems, want one per frame: %v", len(problems), problems)
	}
	off := int64(headerSize)
	for _, p := range problems {
		msg := p.Error()
		for _, want := range []string{path + ": offset ", "declares a body of 267386880 bytes", "refused before decoding"} {
			if !strings.Contains(msg, want) {
				t.Errorf("problem %q does not say %q", msg, want)
			}
		}
		if got := p.(*Problem).Offset; got != off {
			t.Errorf("problem at offset %d, want the frame's %d", got, off)
		}
		off += p.(*Problem).Len
	}
}

// TestPaddedHighRatioBodyReads: the same kind of body, honest in size
// (1 MiB, past the 64 KiB floor and 1:1024), reads back byte for byte once
// padded as the writer pads it; unpadded it is refused. So the bound, not
// the crafting, is what refuses the frames above.
func TestPaddedHighRatioBodyReads(t *testing.T) {
	const n = 1 << 20
	for _, pad := range []bool{false, true} {
		r := openBytes(t, bombDump(1, n, pad))
		if pad != (r.Len() == 1) {
			t.Fatalf("pad %v: %d readable frames, problems %v", pad, r.Len(), r.Problems())
		}
		if !pad {
			continue
		}
		f, err := r.Frame(0)
		if err != nil {
			t.Fatal(err)
		}
		want := append(append([]byte{'#'}, bytes.Repeat([]byte{'a'}, n-2)...), '\n')
		if !bytes.Equal(f.Body, want) {
			t.Fatalf("decoded %d bytes, not the body", len(f.Body))
		}
	}
}

// TestWriterPadsRepeatedBodies: the writer's own output passes the
// reader's bound, key frames and deltas, for bodies that compress far
// past 1:1024 and grow (the bound of a delta adds to its base's).
func TestWriterPadsRepeatedBodies(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterOptions{KeyEvery: 4})
	if err != nil {
		t.Fatal(err)
	}
	var bodies [][]byte
	at := time.Unix(1741057965, 0)
	for i := range 10 {
		// A body of repeated lines that doubles every frame: deltas with a
		// new structure that zstd packs into a few bytes.
		b := []byte(strings.Repeat("x_total 1\n", 10000<<(i%4)))
		bodies = append(bodies, b)
		if err := w.Append("t", at.Add(time.Duration(i)*time.Second), "text/plain", b); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	r := openBytes(t, buf.Bytes())
	if len(r.Problems()) != 0 || r.Len() != len(bodies) {
		t.Fatalf("%d frames of %d readable, problems %v", r.Len(), len(bodies), r.Problems())
	}
	for i, want := range bodies {
		f, err := r.Frame(i)
		if err != nil || !bytes.Equal(f.Body, want) {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
}
