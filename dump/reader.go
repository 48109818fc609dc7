package dump

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Frame is one scrape of one target as recorded: the body exactly as the
// target served it, its Content-Type and the scrape time.
type Frame struct {
	Target      string
	Time        time.Time
	ContentType string
	Body        []byte
	// Err is the error of a failed scrape (no body), "" otherwise.
	Err string
}

// FrameInfo is one entry of a Reader's index.
type FrameInfo struct {
	Offset  int64 // where the frame starts in the file
	Size    int   // its stored size, header included
	Target  string
	Time    time.Time
	Key     bool // a key frame (decodable alone)
	Failed  bool // a failed scrape: no body, an error
	BodyLen int  // the decoded body's size
}

// Problem is damage found in a dump: a frame that was skipped, or a torn
// tail. The reader goes on after it with the next intact frame.
type Problem struct {
	File   string
	Offset int64 // where the damage starts
	Len    int64 // how many bytes were skipped
	Torn   bool  // an incomplete last frame: the recorder stopped while writing it
	Msg    string
}

func (p *Problem) Error() string {
	if p.File != "" {
		return fmt.Sprintf("%s: offset %d: %s", p.File, p.Offset, p.Msg)
	}
	return fmt.Sprintf("dump: offset %d: %s", p.Offset, p.Msg)
}

// Reader reads a dump through its index. Open builds the index by reading
// every frame header once (checksums included); frames are then decoded on
// demand, in any order. It is safe for concurrent use.
type Reader struct {
	renders int // bodies rendered (renderChecked): the tests'
	name    string
	ra      io.ReaderAt
	closer  io.Closer
	size    int64

	entries  []entry // file order
	order    []int32 // indexes into entries of decodable frames, in time order
	targets  []string
	problems []error
	notes    []string // how the index was built, when not from index frames
	version  uint16   // the file's format version: how its delta frames are coded
	indexed  bool     // from the file's index frames
	scanOnly bool

	mu       sync.Mutex
	dec      *zstd.Decoder
	dictDec  *zstd.Decoder
	states   map[string]*decodeState
	payload  []byte
	scratch  []byte
	magicBuf []byte
	// crcs holds the body checksums this reader learned of frames a
	// version 4 index listed (which does not list them): crc | 1<<32 once
	// the frame was read. Per reader, not in the shared entries, so that
	// clones decode at the same time without a race.
	crcs []uint64
}

type entry struct {
	info   FrameInfo
	ct     string
	base   int32 // index of the base frame; -1 for a key frame
	crc    uint32
	payOff int64
	payLen int32
	// checked: the frame's checksum was verified when indexing (a frame
	// an index frame listed is checked when first decoded).
	checked bool
	bound   int64 // the largest body the frame may declare (frameBound)
	bad     bool  // undecodable: its base is damaged, or it declares more than it could hold
	// Version 4: the target's number in the file, a delta's step from its
	// base (0 for a key frame: predictStep's input for the next), and
	// whether crc is known for a frame an index listed (read at Open as
	// the base of a frame scanned after the index).
	tid      uint32
	step     int64
	crcKnown bool
}

// decodeState is the newest decoded frame of a target: what a following
// delta frame needs.
type decodeState struct {
	idx       int32
	cur, next tokens
	// steps is how many frames the last decode applied, and same whether
	// the last of them kept its base's structure: then next holds the
	// base's tokens, and the base's rendered body (body, bodyIdx) is
	// rendered again with only the changed numbers (renderFrom).
	steps int
	same  bool
	// body is the body of entry bodyIdx (-1: none) as rendered, and offs
	// its slots' start and end offsets; nbody and noffs are the buffers
	// of the next render.
	bodyIdx     int32
	body, nbody []byte
	offs, noffs []int32
	lent        bool // body was returned as it is (frameLent): never written again
}

// Open opens a dump file and builds its index. Damage does not fail Open:
// it is listed by Problems, and every intact frame stays readable. Open
// fails only when the file is not a dump or cannot be read.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	r, err := newReader(f, fi.Size(), path)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.closer = f
	return r, nil
}

// NewReader reads a dump of size bytes from ra; name labels its problems.
func NewReader(ra io.ReaderAt, size int64, name string) (*Reader, error) {
	return newReader(ra, size, name)
}

func newReader(ra io.ReaderAt, size int64, name string) (*Reader, error) {
	return newReaderScan(ra, size, name, false)
}

// newReaderScan is newReader; scanOnly ignores index frames (the tests
// compare both ways of indexing).
func newReaderScan(ra io.ReaderAt, size int64, name string, scanOnly bool) (*Reader, error) {
	r := &Reader{name: name, ra: ra, size: size, states: make(map[string]*decodeState), scanOnly: scanOnly}
	var hdr [headerSize]byte
	if size < headerSize {
		if size > 0 {
			if _, err := ra.ReadAt(hdr[:size], 0); err != nil && err != io.EOF {
				return nil, err
			}
			if !bytes.HasPrefix([]byte(magic), hdr[:min(int(size), len(magic))]) {
				return nil, fmt.Errorf("not a retrytop dump (no %q header)", magic)
			}
		}
		return nil, fmt.Errorf("not a retrytop dump: %d bytes, shorter than its header", size)
	}
	if _, err := ra.ReadAt(hdr[:], 0); err != nil && err != io.EOF {
		return nil, err
	}
	if err := checkFileHeader(hdr[:]); err != nil {
		return nil, err
	}
	version := binary.LittleEndian.Uint16(hdr[8:10])
	r.version = version
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxBodySize*4),
		zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		return nil, err
	}
	r.dec = dec
	if err := r.scan(version); err != nil {
		return nil, err
	}
	return r, nil
}

// window is a read buffer over the file for the index scan.
type window struct {
	ra   io.ReaderAt
	size int64
	off  int64
	buf  []byte
	min  int // bytes read at least at a time (0: windowSize)
}

const windowSize = 4 << 20

// get returns the file's bytes [off, off+n), n clipped to the file's end.
func (w *window) get(off int64, n int) ([]byte, error) {
	if off+int64(n) > w.size {
		n = int(w.size - off)
	}
	if n <= 0 {
		return nil, nil
	}
	if off >= w.off && off+int64(n) <= w.off+int64(len(w.buf)) {
		return w.buf[off-w.off : off-w.off+int64(n)], nil
	}
	want := max(n, windowSize)
	if w.min > 0 {
		want = max(n, w.min)
	}
	if off+int64(want) > w.size {
		want = int(w.size - off)
	}
	if cap(w.buf) < want {
		w.buf = make([]byte, want)
	}
	w.buf = w.buf[:want]
	m, err := w.ra.ReadAt(w.buf, off)
	if m < want {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		w.buf = w.buf[:0]
		return nil, err
	}
	w.off = off
	return w.buf[:n], nil
}

// errIncomplete: the frame runs past the end of the file.
var errIncomplete = errors.New("incomplete frame")

// frameAt validates the frame at off: its total size and metadata, or why
// it is not a frame.
func (r *Reader) frameAt(w *window, off int64) (int64, meta, error) {
	h, err := w.get(off, frameHeaderSize)
	if err != nil {
		return 0, meta{}, err
	}
	if len(h) < frameHeaderSize {
		if bytes.HasPrefix(syncMark[:], h[:min(len(h), len(syncMark))]) {
			return 0, meta{}, errIncomplete
		}
		return 0, meta{}, errors.New("no frame sync marker")
	}
	if !bytes.Equal(h[:4], syncMark[:]) {
		return 0, meta{}, errors.New("no frame sync marker")
	}
	n := int64(binary.LittleEndian.Uint32(h[4:8]))
	sum := binary.LittleEndian.Uint32(h[8:12])
	if n > maxFrameSize {
		return 0, meta{}, fmt.Errorf("frame length %d exceeds the limit", n)
	}
	if off+frameHeaderSize+n > r.size {
		return 0, meta{}, errIncomplete
	}
	body, err := w.get(off+frameHeaderSize, int(n))
	if err != nil {
		return 0, meta{}, err
	}
	if crc32.Checksum(body, castagnoli) != sum {
		return 0, meta{}, errors.New("checksum mismatch")
	}
	m, err := parseMetaV(body, r.version)
	if err != nil {
		return 0, meta{}, err
	}
	return frameHeaderSize + n, m, nil
}

// resync finds the next valid frame after off, or -1.
func (r *Reader) resync(w *window, off int64) (int64, error) {
	for pos := off; pos < r.size; {
		chunk, err := w.get(pos, 1<<20)
		if err != nil {
			return -1, err
		}
		i := bytes.Index(chunk, syncMark[:])
		if i < 0 {
			if len(chunk) < len(syncMark) {
				return -1, nil
			}
			pos += int64(len(chunk) - len(syncMark) + 1)
			continue
		}
		cand := pos + int64(i)
		if _, _, err := r.frameAt(w, cand); err == nil {
			return cand, nil
		}
		pos = cand + 1
	}
	return -1, nil
}

func (r *Reader) problem(off, n int64, torn bool, format string, args ...any) {
	r.problems = append(r.problems, &Problem{File: r.name, Offset: off, Len: n, Torn: torn, Msg: fmt.Sprintf(format, args...)})
}

// indexer is the state of building the index: the newest frame of a
// target at a time (a delta names its base by time) and the targets' names.
type indexer struct {
	byTime  map[targetTime]int32
	newest  map[string]int32 // a target's newest frame with a body: a version 3 delta's base
	targets map[string]string
	tids    map[uint64]string // version 4: target numbers to names, from key and error frames and index frames
	scratch []byte
}

func newIndexer() *indexer {
	return &indexer{byTime: make(map[targetTime]int32), newest: make(map[string]int32), targets: make(map[string]string),
		tids: make(map[uint64]string)}
}

type targetTime struct {
	target string
	ns     int64
}

// add appends the frame at off (n bytes, its header m, a payload of
// payLen bytes) to the index; checked says its checksum was verified (it
// was read; else an index frame listed it). An error says an index frame
// lists a frame that cannot be (the file is then scanned).
func (r *Reader) add(ix *indexer, off, n int64, m *meta, payLen int, checked bool) error {
	if r.version >= 4 {
		return r.add4(ix, off, n, m, payLen, checked)
	}
	t, ok := ix.targets[m.target]
	if !ok {
		t = m.target
		ix.targets[t] = t
	}
	e := entry{
		info: FrameInfo{Offset: off, Size: int(n), Target: t, Time: time.Unix(0, m.timeNs), Key: m.kind == kindKey,
			Failed: m.kind == kindError, BodyLen: int(m.bodyLen)},
		ct: m.contentType, base: -1, crc: m.bodyCRC,
		payOff: off + n - int64(payLen), payLen: int32(payLen), checked: checked,
	}
	switch {
	case m.kind == kindDelta && checked && r.version >= 3:
		// A version 3 delta read from its frame holds, instead of its
		// time, a link to its base (baseLink): its base is the target's
		// newest frame when the link matches, and its time that frame's
		// plus base. A frame lost in between leaves the delta without a
		// base, as a version 2 delta whose base time is missing.
		e.base = -2
		if bi, ok := ix.newest[t]; ok && m.base <= 1<<62 && m.timeNs == baseLink(r.entries[bi].crc) {
			e.base, e.ct = bi, r.entries[bi].ct
			e.info.Time = time.Unix(0, r.entries[bi].info.Time.UnixNano()+int64(m.base))
		}
	case m.kind == kindDelta:
		e.base = -2
		if bi, ok := ix.byTime[targetTime{t, m.timeNs - int64(m.base)}]; ok && m.base <= 1<<62 {
			e.base, e.ct = bi, r.entries[bi].ct
		}
	}
	if m.kind != kindError {
		ix.byTime[targetTime{t, e.info.Time.UnixNano()}] = int32(len(r.entries))
		ix.newest[t] = int32(len(r.entries))
		r.checkBound(&e, payLen)
	}
	r.entries = append(r.entries, e)
	return nil
}

// add4 is add for format version 4. A delta frame read from the file
// names its target by number (learnt from the target's key frames) and
// stores its step and body length against its base's, the target's
// newest frame with a body; one listed by an index frame has its time and
// body length there, and the payload length is what its header, derived
// from them, leaves of its size.
func (r *Reader) add4(ix *indexer, off, n int64, m *meta, payLen int, checked bool) error {
	name := m.target
	if m.kind == kindDelta && checked {
		name = ix.tids[m.tid]
	} else {
		ix.tids[m.tid] = name
	}
	e := entry{
		info: FrameInfo{Offset: off, Size: int(n), Time: time.Unix(0, m.timeNs), Key: m.kind == kindKey,
			Failed: m.kind == kindError, BodyLen: int(m.bodyLen)},
		ct: m.contentType, base: -1, crc: m.bodyCRC, checked: checked, tid: uint32(m.tid),
	}
	if name == "" {
		// A delta whose target's key frames were all lost: no base.
		e.info.Target, e.base = fmt.Sprintf("#%d", m.tid), -2
	} else {
		t, ok := ix.targets[name]
		if !ok {
			t = name
			ix.targets[t] = t
		}
		e.info.Target = t
	}
	if m.kind == kindDelta && name != "" {
		e.base = -2
		bi, ok := ix.newest[name]
		switch {
		case ok && checked:
			b := &r.entries[bi]
			step := predictStep(b.step) + m.stepRes
			l := int64(b.info.BodyLen) + m.lenDiff
			crc, known := r.crcOf(bi)
			if !known {
				crc, known = r.readCRC(bi)
			}
			// A frame lost in between leaves the link unmatched (as in
			// version 3); a step or length out of range is damage.
			if known && step > 0 && step <= 1<<62 && l >= 0 && l <= MaxBodySize && m.timeNs == baseLink(crc) {
				e.base, e.ct, e.step = bi, b.ct, step
				e.info.Time = time.Unix(0, b.info.Time.UnixNano()+step)
				e.info.BodyLen = int(l)
			}
		case ok:
			b := &r.entries[bi]
			step := m.timeNs - b.info.Time.UnixNano()
			if step <= 0 || step > 1<<62 {
				return fmt.Errorf("a delta frame at offset %d is not after its base", off)
			}
			e.base, e.ct, e.step = bi, b.ct, step
			m4 := meta{kind: kindDelta, tid: m.tid, stepRes: step - predictStep(b.step), lenDiff: int64(m.bodyLen) - int64(b.info.BodyLen)}
			ix.scratch = appendMeta(ix.scratch[:0], &m4, 4)
			payLen = int(n) - frameHeaderSize - len(ix.scratch)
		default:
			if !checked {
				return fmt.Errorf("a delta frame at offset %d has no base", off)
			}
		}
	}
	if !checked && m.kind != kindDelta {
		ix.scratch = appendMeta(ix.scratch[:0], m, 4)
		payLen = int(n) - frameHeaderSize - len(ix.scratch)
	}
	if payLen < 0 {
		return fmt.Errorf("the frame at offset %d is shorter than its header", off)
	}
	e.payOff, e.payLen = off+n-int64(payLen), int32(payLen)
	if m.kind != kindError && name != "" {
		ix.newest[name] = int32(len(r.entries))
		r.checkBound(&e, payLen)
	}
	r.entries = append(r.entries, e)
	return nil
}

// crcOf returns entry i's body checksum, when known: always for a frame
// read at Open and for files before version 4 (their index lists it),
// else once this reader has read the frame.
func (r *Reader) crcOf(i int32) (uint32, bool) {
	if e := &r.entries[i]; e.checked || e.crcKnown || r.version < 4 {
		return e.crc, true
	}
	if int(i) < len(r.crcs) && r.crcs[i]>>32 != 0 {
		return uint32(r.crcs[i]), true
	}
	return 0, false
}

// readCRC reads, at Open, the body checksum of entry i, a frame an index
// frame listed: the base of the first delta of its target scanned after
// the last index frame (a recorder killed before writing the next), so
// that the delta's link is checked as a scan checks it. false: the frame
// is damaged or is not what the index says.
func (r *Reader) readCRC(i int32) (uint32, bool) {
	e := &r.entries[i]
	f := make([]byte, e.info.Size)
	if n, _ := r.ra.ReadAt(f, e.info.Offset); n < len(f) || !bytes.Equal(f[:4], syncMark[:]) ||
		int(binary.LittleEndian.Uint32(f[4:8])) != len(f)-frameHeaderSize ||
		crc32.Checksum(f[frameHeaderSize:], castagnoli) != binary.LittleEndian.Uint32(f[8:12]) {
		return 0, false
	}
	m, err := parseMetaV(f[frameHeaderSize:], r.version)
	if err != nil || (m.kind == kindKey) != e.info.Key || m.kind == kindError || m.tid != uint64(e.tid) || len(m.payload) != int(e.payLen) {
		return 0, false
	}
	e.crc, e.crcKnown = m.bodyCRC, true
	return e.crc, true
}

// learnCRC records entry i's body checksum, read from its frame.
func (r *Reader) learnCRC(i int32, crc uint32) {
	if len(r.crcs) < len(r.entries) {
		r.crcs = append(r.crcs, make([]uint64, len(r.entries)-len(r.crcs))...)
	}
	r.crcs[i] = uint64(crc) | 1<<32
}

// scan builds the index: from the file's index frames when it has them
// (version 2), then by reading every frame after the last of them.
func (r *Reader) scan(version uint16) error {
	w := &window{ra: r.ra, size: r.size, off: -1}
	ix := newIndexer()
	from := int64(headerSize)
	if version >= 2 && !r.scanOnly && r.size > headerSize { // an empty recording has nothing to index
		// Index frames are read one by one: small reads, not the scan's.
		iw := &window{ra: r.ra, size: r.size, off: -1, min: 64 << 10}
		if last := r.findLastIndex(iw); last < 0 {
			r.notes = append(r.notes, fmt.Sprintf("%s: no index frame (the recorder stopped before writing one): indexed by reading every frame", r.name))
		} else if end, err := r.loadIndex(iw, ix, last); err != nil {
			r.notes = append(r.notes, fmt.Sprintf("%s: the index is damaged (%v): indexed by reading every frame", r.name, err))
			r.entries, r.problems = nil, nil
			ix = newIndexer()
		} else {
			from = end
			r.indexed = true
		}
	} else if version < 2 {
		r.notes = append(r.notes, fmt.Sprintf("%s: format version %d has no index: indexed by reading every frame (a new recording has one)", r.name, version))
	}
	if err := r.scanFrom(w, ix, from); err != nil {
		return err
	}
	r.resolveBases()
	r.targets = make([]string, 0, len(ix.targets))
	for t := range ix.targets {
		r.targets = append(r.targets, t)
	}
	sort.Strings(r.targets)
	return nil
}

// scanFrom indexes the frames from off to the end by reading each.
func (r *Reader) scanFrom(w *window, ix *indexer, off int64) error {
	for off < r.size {
		n, m, err := r.frameAt(w, off)
		if err == nil {
			if m.kind != kindIndex {
				_ = r.add(ix, off, n, &m, len(m.payload), true) // a checked frame is never refused
			}
			off += n
			continue
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || (err != nil && !errors.Is(err, errIncomplete) && isIOError(err)) {
			return fmt.Errorf("reading at offset %d: %w", off, err)
		}
		next, rerr := r.resync(w, off+1)
		if rerr != nil {
			return fmt.Errorf("reading at offset %d: %w", off, rerr)
		}
		if next < 0 {
			if errors.Is(err, errIncomplete) {
				r.problem(off, r.size-off, true, "torn tail: the last %d bytes are an incomplete frame (the recorder stopped while writing it); ignored", r.size-off)
			} else {
				r.problem(off, r.size-off, false, "damaged data to the end of the file (%d bytes): %v; ignored", r.size-off, err)
			}
			break
		}
		r.problem(off, next-off, false, "damaged frame (%v): skipped %d bytes, resumed at the next frame at offset %d", err, next-off, next)
		off = next
	}
	return nil
}

// checkBound refuses, before anything is allocated for it, a frame that
// declares a larger body than its stored bytes could honestly hold
// (frameBound): it is marked bad, with a problem naming its offset, and
// the deltas on it are skipped with it.
func (r *Reader) checkBound(e *entry, payLen int) {
	switch {
	case e.base == -1:
		e.bound = frameBound(0, payLen)
	case e.base >= 0:
		e.bound = frameBound(r.entries[e.base].bound, payLen)
	default:
		return // no base: skipped in resolveBases
	}
	if int64(e.info.BodyLen) > e.bound {
		e.bad = true
		r.problem(e.info.Offset, int64(e.info.Size), false,
			"frame of target %q declares a body of %d bytes, more than its %d stored bytes can hold (at most %d: 1:%d, docs/dump-format.md); refused before decoding",
			e.info.Target, e.info.BodyLen, payLen, e.bound, maxRatio)
	}
}

// isIOError tells read failures from damaged content.
func isIOError(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe)
}

// resolveBases marks the deltas whose base is missing or damaged and sorts
// the decodable frames by time.
func (r *Reader) resolveBases() {
	type lost struct {
		target string
		root   int64 // offset of the missing base
		first  int64
		n      int
	}
	var losses []*lost
	rootOf := make(map[int32]*lost)
	for i := range r.entries {
		e := &r.entries[i]
		if e.base == -1 {
			continue
		}
		var l *lost
		switch {
		case e.base == -2:
			l = &lost{target: e.info.Target, first: e.info.Offset}
			losses = append(losses, l)
		case r.entries[e.base].bad:
			if l = rootOf[e.base]; l == nil { // its base was refused (checkBound)
				l = &lost{target: e.info.Target, first: e.info.Offset}
				losses = append(losses, l)
			}
		}
		if l != nil {
			e.bad = true
			l.n++
			rootOf[int32(i)] = l
		}
	}
	for _, l := range losses {
		r.problem(l.first, 0, false, "%d frame(s) of target %q from here on skipped: they are deltas of a damaged or missing frame, and cannot be decoded up to the target's next key frame", l.n, l.target)
	}
	r.order = make([]int32, 0, len(r.entries))
	for i := range r.entries {
		if !r.entries[i].bad {
			r.order = append(r.order, int32(i))
		}
	}
	sort.SliceStable(r.order, func(a, b int) bool {
		return r.entries[r.order[a]].info.Time.Before(r.entries[r.order[b]].info.Time)
	})
}

// Problems lists the damage found while indexing, in file order: each is
// a *Problem naming its offset. Frames after a damaged one are still read.
func (r *Reader) Problems() []error {
	out := make([]error, len(r.problems))
	copy(out, r.problems)
	sort.SliceStable(out, func(i, j int) bool { return out[i].(*Problem).Offset < out[j].(*Problem).Offset })
	return out
}

// Notes says how the index was built when the file had no usable index
// frames (a version 1 file, a recording killed before its first index
// frame, a damaged index): one line, for the user, or none.
func (r *Reader) Notes() []string { return r.notes }

// Indexed reports whether the index came from the file's index frames.
func (r *Reader) Indexed() bool { return r.indexed }

// Len is the number of readable frames.
func (r *Reader) Len() int { return len(r.order) }

// Info returns the i-th readable frame's index entry, in time order.
func (r *Reader) Info(i int) FrameInfo { return r.entries[r.order[i]].info }

// Targets lists the targets of the dump, sorted.
func (r *Reader) Targets() []string { return r.targets }

// Size is the dump's size in bytes.
func (r *Reader) Size() int64 { return r.size }

// Start and End are the times of the first and last readable frames (zero
// when there are none).
func (r *Reader) Start() time.Time {
	if len(r.order) == 0 {
		return time.Time{}
	}
	return r.Info(0).Time
}

// End is the time of the last readable frame.
func (r *Reader) End() time.Time {
	if len(r.order) == 0 {
		return time.Time{}
	}
	return r.Info(len(r.order) - 1).Time
}

// Search returns the index of the first frame at or after t (Len() when
// none is).
func (r *Reader) Search(t time.Time) int {
	return sort.Search(len(r.order), func(i int) bool { return !r.Info(i).Time.Before(t) })
}

// Frame decodes the i-th frame in time order. The body is a fresh slice.
// A frame stored as a delta decodes its key frame and the deltas between;
// reading forward reuses the previous frame of the target, so a full read
// in order decodes every frame once.
func (r *Reader) Frame(i int) (Frame, error) {
	var f Frame
	err := r.frameLent(i, func(lf *lentFrame) error {
		f = lf.Frame
		f.Body = bytes.Clone(lf.Body)
		return nil
	}, func(ff Frame) { f = ff })
	return f, err
}

// lentFrame is a decoded frame as the reader holds it, lent to a
// function of frameLent for the time of the call: Body is the reader's
// buffer (not to be written or kept), offs its slots' start and end
// offsets, structure its structure (not to be written or kept).
type lentFrame struct {
	Frame
	idx  int32 // its entry
	base int32 // its base's entry (-1: a key frame)
	// sameBase: the structure is the base's by construction, the frame a
	// delta that kept it and was decoded right from the base.
	sameBase  bool
	offs      []int32
	structure []byte
	// nums and, when sameBase, baseNums: the frame's numbers and its
	// base's, slot by slot (not to be written or kept).
	nums, baseNums []num
	// rendered: Body and offs are set. A frame lent unrendered
	// (frameLentTokens) has them set by render.
	rendered bool
	r        *Reader
	st       *decodeState
	e        *entry
}

// render sets f's Body and offs, rendering them from its checked tokens
// when it was lent without them.
func (f *lentFrame) render() error {
	if f.rendered {
		return nil
	}
	body, err := f.r.renderChecked(f.st, f.idx, f.e)
	if err != nil {
		return err
	}
	f.Body, f.offs, f.rendered = body, f.st.offs, true
	return nil
}

// frameLent decodes the i-th frame as Frame does, under the reader's
// lock, and calls fn with it lent (a failed scrape goes to failed
// instead). fn's error is returned as it is.
func (r *Reader) frameLent(i int, fn func(*lentFrame) error, failed func(Frame)) error {
	return r.frameLentMode(i, false, fn, failed)
}

// frameLentTokens is frameLent lending the frame unrendered (no Body, no
// offs) when decoding checked its tokens (checkedTokens: version 5): a
// reader of its numbers renders it (lentFrame.render) only if it needs
// the text.
func (r *Reader) frameLentTokens(i int, fn func(*lentFrame) error, failed func(Frame)) error {
	return r.frameLentMode(i, r.checkedTokens(), fn, failed)
}

func (r *Reader) frameLentMode(i int, tokens bool, fn func(*lentFrame) error, failed func(Frame)) error {
	if i < 0 || i >= len(r.order) {
		return fmt.Errorf("dump: frame %d out of range [0, %d)", i, len(r.order))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	idx := r.order[i]
	e := &r.entries[idx]
	if e.info.Failed {
		msg, err := r.framePayload(idx, make([]byte, e.info.Size))
		if err != nil {
			return &Problem{File: r.name, Offset: e.info.Offset, Msg: err.Error()}
		}
		failed(Frame{Target: e.info.Target, Time: e.info.Time, Err: string(msg)})
		return nil
	}
	st, err := r.decode(idx)
	if err != nil {
		r.dropState(e.info.Target)
		return &Problem{File: r.name, Offset: e.info.Offset, Msg: fmt.Sprintf("frame of target %q cannot be decoded: %v", e.info.Target, err)}
	}
	lf := &lentFrame{
		Frame: Frame{Target: e.info.Target, Time: e.info.Time, ContentType: e.ct},
		idx:   idx, base: e.base, sameBase: st.steps == 1 && st.same && e.base >= 0,
		structure: st.cur.structure, nums: st.cur.nums,
		r: r, st: st, e: e,
	}
	if lf.sameBase {
		lf.baseNums = st.next.nums // apply swapped them: next holds the base's
	}
	if !tokens {
		if err := lf.render(); err != nil {
			return err
		}
	}
	return fn(lf)
}

// renderChecked renders entry idx, which st holds decoded, and checks it
// against the frame's length and, unless decoding checked its tokens,
// its checksum.
func (r *Reader) renderChecked(st *decodeState, idx int32, e *entry) ([]byte, error) {
	r.renders++
	body, err := st.render(idx, e)
	if err == nil && len(body) != e.info.BodyLen {
		err = fmt.Errorf("decoded %d bytes, the frame says %d", len(body), e.info.BodyLen)
	}
	if crc, _ := r.crcOf(idx); err == nil && !r.checkedTokens() && crc32.Checksum(body, castagnoli) != crc {
		err = errors.New("the decoded body does not match its checksum")
	}
	if err != nil {
		r.dropState(e.info.Target)
		return nil, &Problem{File: r.name, Offset: e.info.Offset, Msg: fmt.Sprintf("frame of target %q cannot be decoded: %v", e.info.Target, err)}
	}
	return body, nil
}

func (r *Reader) dropState(target string) { delete(r.states, target) }

// checkedTokens reports whether decoding checks every frame's tokens
// (version 5: a key frame's body and a delta's numbers against the
// frame's checksum, in apply), so that a body rendered from them is the
// body written, by construction, and need not be checked again.
func (r *Reader) checkedTokens() bool { return r.version >= 5 }

// decode brings the target's state to entry idx: from the cached state when
// it is on idx's chain, else from the chain's key frame.
func (r *Reader) decode(idx int32) (*decodeState, error) {
	e := &r.entries[idx]
	st := r.states[e.info.Target]
	if st == nil {
		st = &decodeState{idx: -1, bodyIdx: -1}
		r.states[e.info.Target] = st
	}
	st.steps = 0
	var chain []int32
	for j := idx; ; j = r.entries[j].base {
		if j == st.idx {
			break
		}
		chain = append(chain, j)
		if r.entries[j].base < 0 {
			break
		}
	}
	for k := len(chain) - 1; k >= 0; k-- {
		if err := r.apply(st, chain[k]); err != nil {
			st.idx = -1
			return nil, err
		}
	}
	return st, nil
}

// apply decodes entry j on top of st (which holds j's base for a delta).
func (r *Reader) apply(st *decodeState, j int32) error {
	e := &r.entries[j]
	if cap(r.payload) < e.info.Size {
		r.payload = make([]byte, e.info.Size)
	}
	p, err := r.framePayload(j, r.payload[:cap(r.payload)])
	if err != nil {
		return err
	}

	if e.base < 0 {
		body, err := r.dec.DecodeAll(r.withMagic(p), make([]byte, 0, e.info.BodyLen))
		if err != nil {
			return fmt.Errorf("decompressing: %w", err)
		}
		if len(body) != e.info.BodyLen {
			return fmt.Errorf("decoded %d bytes, the frame says %d", len(body), e.info.BodyLen)
		}
		if crc, _ := r.crcOf(j); r.version >= 5 && crc32.Checksum(body, castagnoli) != crc {
			// Checked here, not once rendered: a version 5 frame is
			// read without rendering (checkedTokens).
			return errors.New("the decoded body does not match its checksum")
		}
		st.cur.wide = r.version >= 3 // as the file's writer tokenized it
		tokenize(body, &st.cur)
		st.idx, st.same = j, false
		st.steps++
		return nil
	}
	br := byteReader{b: p}
	id := br.uvarint()
	if br.err != nil || id > 1<<32-1 {
		return errors.New("bad dictionary id")
	}
	dec := r.dec
	if id != 0 {
		var err error
		if dec, err = r.dictDecoder(uint32(id), st.cur.structure); err != nil {
			return err
		}
	}
	// A delta is never much larger than its body: bound what a damaged
	// frame can make the decoder produce.
	limit := 4*e.info.BodyLen + 1024
	if cap(r.scratch) < limit {
		r.scratch = make([]byte, 0, limit)
	}
	delta, err := dec.DecodeAll(r.withMagic(br.rest()), r.scratch[:0:limit])
	if err != nil {
		return fmt.Errorf("decompressing: %w", err)
	}
	if err := decodeDelta(delta, &st.cur, &st.next, r.version); err != nil {
		return err
	}
	if r.version >= 5 {
		sum := numsCheck(st.next.nums)
		if delta[0]&1 == 0 { // a structure of its own
			sum ^= crc32.Checksum(st.next.structure, castagnoli)
		}
		if crc, _ := r.crcOf(j); sum != crc {
			return errors.New("the decoded numbers do not match the frame's checksum")
		}
	}
	st.cur, st.next = st.next, st.cur
	st.idx, st.same = j, len(delta) > 0 && delta[0]&1 != 0 // flags bit 0: the base's structure
	st.steps++
	return nil
}

// render returns entry idx's body, which st holds decoded, in a buffer
// of st's (st.body, its slots' offsets in st.offs) valid until the next
// render. When st rendered the base of idx just before and idx kept its
// structure, only the numbers that changed are rendered again, the text
// between them copied from the base's body by the slots' offsets
// (renderFrom); a frame read twice is rendered once. The caller checks
// the body against its length and checksum.
func (st *decodeState) render(idx int32, e *entry) ([]byte, error) {
	if st.steps == 0 && st.bodyIdx == idx {
		return st.body, nil
	}
	limit := e.info.BodyLen
	var err error
	if !renderWhole && st.steps == 1 && st.same && st.bodyIdx >= 0 && st.bodyIdx == e.base &&
		len(st.next.nums) == len(st.cur.nums) && len(st.offs) == 2*len(st.cur.nums) {
		st.nbody, st.noffs, err = renderFrom(st.nbody[:0], st.noffs[:0], st.body, st.offs, &st.next, &st.cur, limit)
	} else {
		st.nbody, st.noffs, err = st.cur.renderOffs(st.nbody[:0], st.noffs[:0], limit)
	}
	if err != nil {
		st.bodyIdx = -1
		return nil, err
	}
	st.body, st.nbody = st.nbody, st.body
	st.offs, st.noffs = st.noffs, st.offs
	st.bodyIdx = idx
	return st.body, nil
}

// renderWhole makes every frame render whole (BenchmarkDecode's anchor).
var renderWhole = false

// withMagic returns a zstd payload with the magic a version 3 writer left
// out (stripMagic) put back, in a buffer of the reader's.
func (r *Reader) withMagic(p []byte) []byte {
	if r.version < 3 {
		return p
	}
	r.magicBuf = append(append(r.magicBuf[:0], zstdMagic[:]...), p...)
	return r.magicBuf
}

func (r *Reader) dictDecoder(id uint32, dict []byte) (*zstd.Decoder, error) {
	if r.dictDec == nil {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxBodySize*4),
			zstd.WithDecodeAllCapLimit(true), zstd.WithDecoderDictRaw(id, dict))
		if err != nil {
			return nil, err
		}
		r.dictDec = d
		return d, nil
	}
	if err := r.dictDec.ResetWithOptions(nil, zstd.WithDecoderDictDelete(), zstd.WithDecoderDictRaw(id, dict)); err != nil {
		return nil, err
	}
	return r.dictDec, nil
}

// Clone returns a reader of the same dump that shares the index but
// decodes on its own: for a second reader going through the dump at the
// same time (each keeps its targets' newest decoded frames). Closing a
// clone does not close the file.
func (r *Reader) Clone() (*Reader, error) {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxBodySize*4),
		zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		return nil, err
	}
	return &Reader{name: r.name, ra: r.ra, size: r.size, entries: r.entries, order: r.order, targets: r.targets,
		problems: r.problems, notes: r.notes, indexed: r.indexed, version: r.version, dec: dec, states: make(map[string]*decodeState)}, nil
}

// Close releases the file.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dec != nil {
		r.dec.Close()
	}
	if r.dictDec != nil {
		r.dictDec.Close()
	}
	if r.closer != nil {
		return r.closer.Close()
	}
	return nil
}
