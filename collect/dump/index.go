package dump

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/klauspost/compress/zstd"
)

// Index frames (format version 2, docs/dump-format.md "Index frames"): the
// writer lists, every IndexEvery frames and when it closes, the frames
// written since its previous index frame, so that Open reads these lists
// instead of every frame of the file. A file that ends without one (the
// recorder was killed) is read from its last index frame on by scanning,
// one without any by scanning it all, as version 1 files are.

// DefaultIndexEvery is how many frames an index frame lists at most: a
// recorder killed mid-recording leaves at most that many to scan.
const DefaultIndexEvery = 4096

// indexFooter ends an index frame's payload: the frame's total size
// (uint32) and this mark, so that Open finds the last index frame of a
// closed file from its last 8 bytes.
const indexFooter = "RTIX"

// indexEntry is one frame as an index frame lists it.
type indexEntry struct {
	off     int64
	size    int64
	kind    byte
	target  string
	timeNs  int64
	base    uint64
	ct      string
	bodyLen uint64
	bodyCRC uint32
	payLen  int
}

// appendIndexFrame appends an index frame at file offset at listing
// entries (in file order, all before at); prev is the offset of the
// previous index frame, 0 for none.
//
//	payload = prev uvarint | first uvarint (offset of the first entry)
//	          | targets: count uvarint, (uvarint length, bytes)*
//	          | content types: count uvarint, (uvarint length, bytes)*
//	          | count uvarint | entry* | frame size uint32 | "RTIX"
//	entry   = gap uvarint (bytes since the previous entry's end) | size uvarint
//	          | kind byte | target uvarint (into targets) | time varint (ns, from the previous entry's)
//	          | base uvarint (delta frames) | content type uvarint (key frames)
//	          | body length uvarint | body crc32c uint32 | payload length uvarint
//
// In version 3 everything between first and the footer is a zstd frame
// (enc not nil): the entries repeat their sizes, kinds and times, and took
// about 19 bytes a frame, an eighth of a frame of a small target.
func appendIndexFrame(dst []byte, prev int64, entries []indexEntry, enc *zstd.Encoder) []byte {
	var head, p []byte
	head = binary.AppendUvarint(head, uint64(prev))
	first := int64(0)
	if len(entries) > 0 {
		first = entries[0].off
	}
	head = binary.AppendUvarint(head, uint64(first))
	tid, cid := map[string]uint64{}, map[string]uint64{}
	var tnames, cnames []string
	for _, e := range entries {
		if _, ok := tid[e.target]; !ok {
			tid[e.target] = uint64(len(tnames))
			tnames = append(tnames, e.target)
		}
		if _, ok := cid[e.ct]; !ok && e.kind == kindKey {
			cid[e.ct] = uint64(len(cnames))
			cnames = append(cnames, e.ct)
		}
	}
	for _, list := range [][]string{tnames, cnames} {
		p = binary.AppendUvarint(p, uint64(len(list)))
		for _, s := range list {
			p = binary.AppendUvarint(p, uint64(len(s)))
			p = append(p, s...)
		}
	}
	p = binary.AppendUvarint(p, uint64(len(entries)))
	end, lastNs := first, int64(0)
	for _, e := range entries {
		p = binary.AppendUvarint(p, uint64(e.off-end))
		p = binary.AppendUvarint(p, uint64(e.size))
		p = append(p, e.kind)
		p = binary.AppendUvarint(p, tid[e.target])
		p = binary.AppendVarint(p, e.timeNs-lastNs)
		switch e.kind {
		case kindDelta:
			p = binary.AppendUvarint(p, e.base)
		case kindKey:
			p = binary.AppendUvarint(p, cid[e.ct])
		}
		p = binary.AppendUvarint(p, e.bodyLen)
		p = binary.LittleEndian.AppendUint32(p, e.bodyCRC)
		p = binary.AppendUvarint(p, uint64(e.payLen))
		end, lastNs = e.off+e.size, e.timeNs
	}
	if enc != nil {
		p = enc.EncodeAll(p, head)
	} else {
		p = append(head, p...)
	}
	p = append(p, 0, 0, 0, 0)
	p = append(p, indexFooter...)
	start := len(dst)
	dst = appendFrame(dst, &meta{kind: kindIndex, timeNs: lastNs, payload: p})
	frame := dst[start:]
	binary.LittleEndian.PutUint32(frame[len(frame)-8:], uint32(len(frame)))
	binary.LittleEndian.PutUint32(frame[8:], crc32.Checksum(frame[frameHeaderSize:], castagnoli))
	return dst
}

// parseIndex decodes an index frame's payload. Everything is checked
// against the payload's length, so a damaged index cannot make it
// allocate more than a few times the payload.
// dec, when not nil, decompresses the entries (version 3).
func parseIndex(p []byte, dec *zstd.Decoder) (prev int64, entries []indexEntry, err error) {
	if len(p) < 8 || string(p[len(p)-4:]) != indexFooter {
		return 0, nil, errors.New("index frame without its footer")
	}
	r := byteReader{b: p[:len(p)-8]}
	prev = int64(r.uvarint())
	first := r.uvarint()
	if dec != nil && r.err == nil {
		// Entries compress about 3:1; the bound keeps a hostile frame
		// from making the reader allocate much more than it stores.
		limit := 32*len(r.b) + 64<<10
		b, derr := dec.DecodeAll(r.b, make([]byte, 0, limit))
		if derr != nil {
			return 0, nil, fmt.Errorf("index: decompressing: %w", derr)
		}
		r.b = b
	}
	var lists [2][]string
	for k := range lists {
		n := r.uvarint()
		if n > uint64(len(r.b)) {
			return 0, nil, errors.New("index: bad count")
		}
		for range n {
			l := r.uvarint()
			if l > maxTargetLen {
				return 0, nil, errors.New("index: name too long")
			}
			lists[k] = append(lists[k], string(r.bytes(l)))
		}
	}
	n := r.uvarint()
	if n > uint64(len(r.b))/8 {
		return 0, nil, errors.New("index: bad entry count")
	}
	if r.err != nil || first > 1<<62 || prev < 0 {
		return 0, nil, errors.New("index: truncated header")
	}
	entries = make([]indexEntry, 0, n)
	end, lastNs := int64(first), int64(0)
	for range n {
		var e indexEntry
		gap, size := r.uvarint(), r.uvarint()
		if gap > 1<<40 || size > maxFrameSize+frameHeaderSize || size < frameHeaderSize {
			return 0, nil, errors.New("index: bad frame offset or size")
		}
		e.off, e.size = end+int64(gap), int64(size)
		e.kind = r.byte()
		t := r.uvarint()
		if t >= uint64(len(lists[0])) {
			return 0, nil, errors.New("index: bad target")
		}
		e.target = lists[0][t]
		e.timeNs = lastNs + r.varint()
		switch e.kind {
		case kindDelta:
			e.base = r.uvarint()
		case kindKey:
			c := r.uvarint()
			if c >= uint64(len(lists[1])) {
				return 0, nil, errors.New("index: bad content type")
			}
			e.ct = lists[1][c]
		case kindError:
		default:
			return 0, nil, fmt.Errorf("index: frame kind %d", e.kind)
		}
		e.bodyLen = r.uvarint()
		if c := r.bytes(4); len(c) == 4 {
			e.bodyCRC = binary.LittleEndian.Uint32(c)
		}
		pl := r.uvarint()
		if r.err != nil {
			return 0, nil, fmt.Errorf("index: %w", r.err)
		}
		if pl > size || e.bodyLen > MaxBodySize {
			return 0, nil, errors.New("index: bad payload or body length")
		}
		e.payLen = int(pl)
		entries = append(entries, e)
		end, lastNs = e.off+e.size, e.timeNs
	}
	if len(r.b) != 0 {
		return 0, nil, errors.New("index: trailing bytes")
	}
	return prev, entries, nil
}

// findLastIndex returns the offset of the last index frame of the file,
// or -1: from the footer when the file ends with one, else by looking
// back from the end for a frame of kind 4.
func (r *Reader) findLastIndex(w *window) int64 {
	if tail, err := w.get(r.size-8, 8); err == nil && len(tail) == 8 && string(tail[4:]) == indexFooter {
		off := r.size - int64(binary.LittleEndian.Uint32(tail))
		if off >= headerSize {
			if n, m, err := r.frameAt(w, off); err == nil && m.kind == kindIndex && off+n == r.size {
				return off
			}
		}
	}
	const chunk = 1 << 20
	for end := r.size; end > headerSize; {
		lo := max(int64(headerSize), end-chunk)
		b, err := w.get(lo, int(end-lo))
		if err != nil {
			return -1
		}
		for i := len(b); ; {
			i = bytes.LastIndex(b[:i], syncMark[:])
			if i < 0 {
				break
			}
			if _, m, err := r.frameAt(w, lo+int64(i)); err == nil && m.kind == kindIndex {
				return lo + int64(i)
			}
			// frameAt may have moved the window: read the chunk again.
			if b, err = w.get(lo, int(end-lo)); err != nil {
				return -1
			}
		}
		if lo == headerSize {
			break
		}
		end = lo + int64(len(syncMark)) - 1 // a mark across the chunks' edge
	}
	return -1
}

// loadIndex reads the index frames ending with the one at last into r's
// index and returns where the frames after it start, or an error (the
// caller then scans the whole file).
func (r *Reader) loadIndex(w *window, ix *indexer, last int64) (int64, error) {
	var chain [][]indexEntry
	var ends []int64
	lastEnd := int64(0)
	for off := last; ; {
		n, m, err := r.frameAt(w, off)
		if err != nil || m.kind != kindIndex {
			return 0, fmt.Errorf("index frame at offset %d: %v", off, err)
		}
		if lastEnd == 0 {
			lastEnd = off + n
		}
		var dec *zstd.Decoder
		if r.version >= 3 {
			dec = r.dec
		}
		prev, entries, err := parseIndex(m.payload, dec)
		if err != nil {
			return 0, fmt.Errorf("index frame at offset %d: %w", off, err)
		}
		if len(entries) > 0 && entries[len(entries)-1].off+entries[len(entries)-1].size > off {
			return 0, fmt.Errorf("index frame at offset %d lists frames after itself", off)
		}
		chain = append(chain, entries)
		ends = append(ends, off)
		if prev == 0 {
			break
		}
		if prev >= off || prev < headerSize {
			return 0, fmt.Errorf("index frame at offset %d: bad previous index at %d", off, prev)
		}
		off = prev
	}
	// The writer lists every frame, back to back from the previous index
	// frame's end to this one's start: anything else (bytes cut out or
	// put in since) makes the index useless, and the file is scanned.
	from := int64(headerSize)
	for k := len(chain) - 1; k >= 0; k-- {
		for _, e := range chain[k] {
			if e.off != from {
				return 0, fmt.Errorf("index frame at offset %d: a frame listed at %d, not where the previous one ends (%d)", ends[k], e.off, from)
			}
			from = e.off + e.size
		}
		if from != ends[k] {
			return 0, fmt.Errorf("index frame at offset %d: its frames end at %d", ends[k], from)
		}
		n, _, err := r.frameAt(w, ends[k])
		if err != nil {
			return 0, err
		}
		from += n
	}
	for k := len(chain) - 1; k >= 0; k-- {
		for _, e := range chain[k] {
			r.add(ix, e.off, e.size, &meta{kind: e.kind, timeNs: e.timeNs, base: e.base, target: e.target,
				contentType: e.ct, bodyLen: e.bodyLen, bodyCRC: e.bodyCRC}, e.payLen, false)
		}
	}
	return lastEnd, nil
}

// framePayload returns entry e's payload, read into buf. An entry the
// index listed has not had its frame checked yet: the whole frame is read
// and checked against its checksum and the index first.
func (r *Reader) framePayload(e *entry, buf []byte) ([]byte, error) {
	if e.checked {
		p := buf[:e.payLen]
		if n, err := r.ra.ReadAt(p, e.payOff); n < len(p) {
			return nil, fmt.Errorf("reading: %w", err)
		}
		return p, nil
	}
	f := buf[:e.info.Size]
	if n, err := r.ra.ReadAt(f, e.info.Offset); n < len(f) {
		return nil, fmt.Errorf("reading: %w", err)
	}
	if !bytes.Equal(f[:4], syncMark[:]) || int(binary.LittleEndian.Uint32(f[4:8])) != len(f)-frameHeaderSize {
		return nil, errors.New("damaged frame: no frame where the index says")
	}
	if crc32.Checksum(f[frameHeaderSize:], castagnoli) != binary.LittleEndian.Uint32(f[8:12]) {
		return nil, errors.New("damaged frame (checksum mismatch)")
	}
	m, err := parseMeta(f[frameHeaderSize:])
	if err != nil {
		return nil, fmt.Errorf("damaged frame: %w", err)
	}
	want := e.info.Time.UnixNano()
	if m.kind == kindDelta && r.version >= 3 && e.base >= 0 {
		want = baseLink(r.entries[e.base].crc) // a version 3 delta stores its link, not its time
	}
	if m.timeNs != want || m.target != e.info.Target || int(m.bodyLen) != e.info.BodyLen ||
		m.bodyCRC != e.crc || len(m.payload) != int(e.payLen) || (m.kind == kindKey) != e.info.Key {
		return nil, errors.New("the frame disagrees with the index")
	}
	return m.payload, nil
}
