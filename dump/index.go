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
	tid     uint64 // version 4: the target's number in the file
	timeNs  int64
	base    uint64
	ct      string
	bodyLen uint64
	bodyCRC uint32
	payLen  int
}

// appendIndexFrame appends an index frame at file offset at listing
// entries (in file order, all before at); prev is the offset of the
// previous index frame, 0 for none. It writes format version 4:
//
//	payload = prev uvarint | first uvarint (offset of the first entry)
//	          | zstd frame of: targets: count uvarint, (tid uvarint, uvarint length, bytes)*
//	                         | content types: count uvarint, (uvarint length, bytes)*
//	                         | count uvarint | entry*
//	          | frame size uint32 | "RTIX"
//	entry   = gap uvarint (bytes since the previous entry's end) | size uvarint
//	          | kind byte | target uvarint (into targets) | time varint (indexTime)
//	          | content type uvarint, body length uvarint (key frames)
//	          | body length varint, from the target's previous body in this frame (delta frames)
//
// Versions 2 and 3 also listed a delta's base, every frame's body
// checksum and payload length (parseIndex reads them): the reader
// derives the base and the payload length from the rest, and takes the
// checksum from the frame when it first decodes it. Those, and the times
// from the previous entry's, were 11 of the 20 bytes an entry took on the
// demo recorded in real time.
func appendIndexFrame(dst []byte, prev int64, entries []indexEntry, enc *zstd.Encoder) []byte {
	var head, p []byte
	head = binary.AppendUvarint(head, uint64(prev))
	first := int64(0)
	if len(entries) > 0 {
		first = entries[0].off
	}
	head = binary.AppendUvarint(head, uint64(first))
	tid, cid := map[string]uint64{}, map[string]uint64{}
	var tlist []indexEntry
	var cnames []string
	for _, e := range entries {
		if _, ok := tid[e.target]; !ok {
			tid[e.target] = uint64(len(tlist))
			tlist = append(tlist, e)
		}
		if _, ok := cid[e.ct]; !ok && e.kind == kindKey {
			cid[e.ct] = uint64(len(cnames))
			cnames = append(cnames, e.ct)
		}
	}
	p = binary.AppendUvarint(p, uint64(len(tlist)))
	for _, e := range tlist {
		p = binary.AppendUvarint(p, e.tid)
		p = binary.AppendUvarint(p, uint64(len(e.target)))
		p = append(p, e.target...)
	}
	p = binary.AppendUvarint(p, uint64(len(cnames)))
	for _, s := range cnames {
		p = binary.AppendUvarint(p, uint64(len(s)))
		p = append(p, s...)
	}
	p = binary.AppendUvarint(p, uint64(len(entries)))
	end := first
	it := newIndexTimes(len(tlist))
	for _, e := range entries {
		t := tid[e.target]
		p = binary.AppendUvarint(p, uint64(e.off-end))
		p = binary.AppendUvarint(p, uint64(e.size))
		p = append(p, e.kind)
		p = binary.AppendUvarint(p, t)
		p = binary.AppendVarint(p, e.timeNs-it.predict(t))
		it.seen(t, e.timeNs)
		switch e.kind {
		case kindKey:
			p = binary.AppendUvarint(p, cid[e.ct])
			p = binary.AppendUvarint(p, e.bodyLen)
			it.lens[t] = e.bodyLen
		case kindDelta:
			p = binary.AppendVarint(p, int64(e.bodyLen)-int64(it.lens[t]))
			it.lens[t] = e.bodyLen
		}
		end = e.off + e.size
	}
	p = enc.EncodeAll(p, head)
	p = append(p, 0, 0, 0, 0)
	p = append(p, indexFooter...)
	start := len(dst)
	dst = appendFrame(dst, &meta{kind: kindIndex, timeNs: it.last, payload: p})
	frame := dst[start:]
	binary.LittleEndian.PutUint32(frame[len(frame)-8:], uint32(len(frame)))
	binary.LittleEndian.PutUint32(frame[8:], crc32.Checksum(frame[frameHeaderSize:], castagnoli))
	return dst
}

// indexTimes predicts a version 4 index entry's time: a target listed
// before in the same index frame is predicted at its last time plus its
// last step (predictStep), others at the previous entry's time (the
// first entry's at 0: absolute). Scrapes interleave, so the previous
// entry's time left the random part of two targets' phases in every
// entry; the target's own step leaves its jitter.
type indexTimes struct {
	last  int64
	times []int64
	steps []int64
	have  []bool
	lens  []uint64 // the target's last body length in this frame
}

func newIndexTimes(n int) *indexTimes {
	return &indexTimes{times: make([]int64, n), steps: make([]int64, n), have: make([]bool, n), lens: make([]uint64, n)}
}

func (it *indexTimes) predict(t uint64) int64 {
	if !it.have[t] {
		return it.last
	}
	return it.times[t] + predictStep(it.steps[t])
}

func (it *indexTimes) seen(t uint64, ns int64) {
	if it.have[t] {
		it.steps[t] = ns - it.times[t]
	}
	it.have[t], it.times[t], it.last = true, ns, ns
}

// parseIndex decodes an index frame's payload. Everything is checked
// against the payload's length, so a damaged index cannot make it
// allocate more than a few times the payload.
// dec, when not nil, decompresses the entries (version 3 and later).
// Version 4 entries come without base, body checksum and payload length
// (appendIndexFrame); Reader.add derives the first and the last.
func parseIndex(p []byte, dec *zstd.Decoder, v uint16) (prev int64, entries []indexEntry, err error) {
	if len(p) < 8 || string(p[len(p)-4:]) != indexFooter {
		return 0, nil, errors.New("index frame without its footer")
	}
	ip := indexParser{r: byteReader{b: p[:len(p)-8]}, v: v}
	r := &ip.r
	prev = int64(r.uvarint())
	first := r.uvarint()
	if dec != nil && r.err == nil {
		// Entries compress about 3:1; the bound keeps a hostile frame
		// from making the reader allocate much more than it stores.
		limit := 32*r.left() + 64<<10
		b, derr := dec.DecodeAll(r.rest(), make([]byte, 0, limit))
		if derr != nil {
			return 0, nil, fmt.Errorf("index: decompressing: %w", derr)
		}
		r.reset(b)
	}
	if err := ip.readLists(); err != nil {
		return 0, nil, err
	}
	n := r.uvarint()
	minEntry := uint64(8) // versions 2-3: 4 bytes of checksum and 4 more at least
	if v >= 4 {
		minEntry = 5 // gap, size, kind, target, time
	}
	if n > uint64(r.left())/minEntry {
		return 0, nil, errors.New("index: bad entry count")
	}
	if r.err != nil || first > 1<<62 || prev < 0 {
		return 0, nil, errors.New("index: truncated header")
	}
	entries = make([]indexEntry, 0, n)
	ip.end = int64(first)
	ip.it = newIndexTimes(len(ip.lists[0]))
	for range n {
		e, err := ip.entry()
		if err != nil {
			return 0, nil, err
		}
		entries = append(entries, e)
	}
	if r.left() != 0 {
		return 0, nil, errors.New("index: trailing bytes")
	}
	return prev, entries, nil
}

// indexParser reads the lists and entries of an index frame of format
// version v.
type indexParser struct {
	r     byteReader
	v     uint16
	lists [2][]string // the targets, the content types
	tids  []uint64    // version 4: the targets' numbers
	it    *indexTimes
	// end is where the previous entry's frame ends, lastNs its time.
	end, lastNs int64
}

// readLists reads the targets (with their numbers from version 4 on) and
// the content types.
func (ip *indexParser) readLists() error {
	r := &ip.r
	for k := range ip.lists {
		n := r.uvarint()
		if n > uint64(r.left()) {
			return errors.New("index: bad count")
		}
		for range n {
			if k == 0 && ip.v >= 4 {
				tid := r.uvarint()
				if tid > maxTID {
					return errors.New("index: bad target number")
				}
				ip.tids = append(ip.tids, tid)
			}
			l := r.uvarint()
			if l > maxTargetLen {
				return errors.New("index: name too long")
			}
			ip.lists[k] = append(ip.lists[k], string(r.bytes(l)))
		}
	}
	return nil
}

// entry reads the next entry.
func (ip *indexParser) entry() (indexEntry, error) {
	r, v := &ip.r, ip.v
	var e indexEntry
	gap, size := r.uvarint(), r.uvarint()
	if gap > 1<<40 || size > maxFrameSize+frameHeaderSize || size < frameHeaderSize {
		return e, errors.New("index: bad frame offset or size")
	}
	e.off, e.size = ip.end+int64(gap), int64(size)
	e.kind = r.byte()
	t := r.uvarint()
	if t >= uint64(len(ip.lists[0])) {
		return e, errors.New("index: bad target")
	}
	e.target = ip.lists[0][t]
	if v >= 4 {
		e.tid = ip.tids[t]
		e.timeNs = ip.it.predict(t) + r.varint()
		ip.it.seen(t, e.timeNs)
	} else {
		e.timeNs = ip.lastNs + r.varint()
	}
	switch e.kind {
	case kindDelta:
		if v < 4 {
			e.base = r.uvarint()
		}
	case kindKey:
		c := r.uvarint()
		if c >= uint64(len(ip.lists[1])) {
			return e, errors.New("index: bad content type")
		}
		e.ct = ip.lists[1][c]
	case kindError:
	default:
		return e, fmt.Errorf("index: frame kind %d", e.kind)
	}
	var err error
	if v >= 4 {
		err = ip.bodyLength(&e, t)
	} else {
		err = ip.bodyChecksum(&e, size)
	}
	if err != nil {
		return e, err
	}
	ip.end, ip.lastNs = e.off+e.size, e.timeNs
	return e, nil
}

// bodyLength reads a version 4 entry's body length (of target t: a
// delta's is its difference from the target's last); the payload's
// length comes from the frame's header.
func (ip *indexParser) bodyLength(e *indexEntry, t uint64) error {
	r := &ip.r
	switch e.kind {
	case kindKey:
		e.bodyLen = r.uvarint()
		ip.it.lens[t] = e.bodyLen
	case kindDelta:
		d := r.varint()
		l := int64(ip.it.lens[t]) + d
		if l < 0 || l > MaxBodySize || d < -MaxBodySize || d > MaxBodySize {
			return errors.New("index: bad body length")
		}
		e.bodyLen = uint64(l)
		ip.it.lens[t] = e.bodyLen
	}
	e.payLen = -1 // Reader.add derives it from the frame's header
	if r.err != nil {
		return fmt.Errorf("index: %w", r.err)
	}
	return nil
}

// bodyChecksum reads a version 2-3 entry's body length, body checksum and
// payload length (at most the frame's size).
func (ip *indexParser) bodyChecksum(e *indexEntry, size uint64) error {
	r := &ip.r
	e.bodyLen = r.uvarint()
	if c := r.bytes(4); len(c) == 4 {
		e.bodyCRC = binary.LittleEndian.Uint32(c)
	}
	pl := r.uvarint()
	if r.err != nil {
		return fmt.Errorf("index: %w", r.err)
	}
	if pl > size || e.bodyLen > MaxBodySize {
		return errors.New("index: bad payload or body length")
	}
	e.payLen = int(pl)
	return nil
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
		prev, entries, err := parseIndex(m.payload, dec, r.version)
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
	total := 0
	for _, entries := range chain {
		total += len(entries)
	}
	// Every entry is appended below: grown once, not by doubling (the
	// copies were most of opening the hour dump from its index).
	r.entries = append(make([]entry, 0, len(r.entries)+total+64), r.entries...)
	for k := len(chain) - 1; k >= 0; k-- {
		for _, e := range chain[k] {
			if err := r.add(ix, e.off, e.size, &meta{kind: e.kind, timeNs: e.timeNs, base: e.base, target: e.target,
				contentType: e.ct, bodyLen: e.bodyLen, bodyCRC: e.bodyCRC, tid: e.tid}, e.payLen, false); err != nil {
				return 0, fmt.Errorf("index frame at offset %d: %w", ends[k], err)
			}
		}
	}
	return lastEnd, nil
}

// framePayload returns entry j's payload, read into buf. An entry the
// index listed has not had its frame checked yet: the whole frame is read
// and checked against its checksum and the index first.
func (r *Reader) framePayload(j int32, buf []byte) ([]byte, error) {
	e := &r.entries[j]
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
	m, err := parseMetaV(f[frameHeaderSize:], r.version)
	if err != nil {
		return nil, fmt.Errorf("damaged frame: %w", err)
	}
	if r.version >= 4 {
		if !r.agrees4(j, &m) {
			return nil, errors.New("the frame disagrees with the index")
		}
		r.learnCRC(j, m.bodyCRC)
		return m.payload, nil
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

// agrees4 reports whether version 4 frame m, read at entry j's offset,
// is the frame the index listed there: for a delta, its link to its base
// (decoded before it, so its checksum is known), step and body length.
func (r *Reader) agrees4(j int32, m *meta) bool {
	e := &r.entries[j]
	if m.kind != kindDelta && m.kind != kindKey && m.kind != kindError ||
		(m.kind == kindKey) != e.info.Key || (m.kind == kindError) != e.info.Failed ||
		m.tid != uint64(e.tid) || len(m.payload) != int(e.payLen) {
		return false
	}
	if m.kind != kindDelta {
		return m.timeNs == e.info.Time.UnixNano() && m.target == e.info.Target &&
			int(m.bodyLen) == e.info.BodyLen && m.contentType == e.ct
	}
	if e.base < 0 {
		return false
	}
	b := &r.entries[e.base]
	crc, ok := r.crcOf(e.base)
	return ok && m.timeNs == baseLink(crc) && m.stepRes == e.step-predictStep(b.step) &&
		m.lenDiff == int64(e.info.BodyLen)-int64(b.info.BodyLen)
}
