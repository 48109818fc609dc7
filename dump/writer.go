package dump

import (
	"bytes"
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

// DefaultKeyEvery is how many frames of a target at most follow one key
// frame: 240 (four minutes at 1 s). Key frames take 10-50 times a delta
// frame; fewer of them save space, more make seeking and a damaged frame
// cheaper. It was 120 before the index (format version 2) made seeking
// read only what a window needs (docs/performance.md, "Decisions": 120
// costs the demo 0.04 B/sample more).
const DefaultKeyEvery = 240

// WriterOptions tune a Writer. The zero value is usable.
type WriterOptions struct {
	// KeyEvery: at most this many frames of one target are stored as
	// deltas before a key frame (default DefaultKeyEvery). A key frame
	// bounds what seeking must decode and what damage to one frame loses.
	// 1 makes every frame a key frame.
	KeyEvery int
	// Sync calls fsync after every frame (slow; a frame written without
	// it survives the recorder being killed, not a power cut). Close
	// always syncs.
	Sync bool
	// Level is the zstd level (default zstd.SpeedFastest: on the deltas
	// of version 3 it is within 2 % of SpeedDefault's size, either way,
	// at less CPU; docs/performance.md).
	Level zstd.EncoderLevel
	// IndexEvery: an index frame lists the frames written since the
	// previous one every this many frames and at Close (default
	// DefaultIndexEvery); negative writes none, as version 1 did (tests of
	// the scan).
	IndexEvery int
}

// TargetStats is what a Writer wrote for one target.
type TargetStats struct {
	Target    string
	Frames    int    // frames written
	KeyFrames int    // of which key frames
	Failed    int    // of which failed scrapes (AppendError)
	Bytes     int64  // bytes written, frame headers included
	BodyBytes int64  // bytes of the bodies as scraped
	Errors    int    // frames that could not be written
	LastError string // the newest write error
}

// Stats is what a Writer wrote so far.
type Stats struct {
	Frames    int
	Bytes     int64 // file size, header included
	BodyBytes int64
	Errors    int // failed writes, index frames included
	// Lost counts the scrapes that could not be written (their frames are
	// missing from the dump), FirstLost and LastLost their times.
	Lost                int
	FirstLost, LastLost time.Time
	Targets             []TargetStats // sorted by target
}

// Writer appends scrapes to a dump. It is safe for concurrent use: the
// scraper calls Append from one goroutine per target.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	f       *os.File // when writing to a file: truncated back after a failed write
	off     int64
	opts    WriterOptions
	enc     *zstd.Encoder
	dictEnc *zstd.Encoder
	dictID  uint32
	targets map[string]*writerTarget
	stats   Stats
	buf     []byte
	delta   []byte
	closed  bool
	err     error        // a failure that leaves the file unusable
	pending []indexEntry // frames written since the last index frame
	lastIdx int64        // offset of the last index frame (0: none yet)
	ntids   uint64       // target numbers given so far (version 4: a delta names its target by number)
}

type writerTarget struct {
	stats    TargetStats
	have     bool        // prev holds the newest frame written
	prev     tokens      // its tokens: the base of the next delta
	prevBody []byte      // its body: what tokenizeReuse compares lines with
	cur      tokens      // scratch
	enc      slotEncoder // the delta of cur on prev, coded as cur is read (tokenizeEncode)
	ct       string
	sinceKey int
	keySize  int
	lastNs   int64
	lastCRC  uint32 // checksum of the newest frame (its header's): a delta's link to it (baseLink)
	lastSum  uint32 // numsCheck of the newest frame's numbers
	bound    int64  // frameBound of the newest frame: what a delta on it may declare
	tid      uint64 // the target's number in the file
	lastStep int64  // the newest frame's step from its base (0: a key frame): predictStep's input
	lastLen  uint64 // the newest frame's body length
	// lastDelta is the newest delta compressed without a dictionary and
	// lastZ its compression (zstd magic stripped): a delta equal to it is
	// not compressed again.
	lastDelta, lastZ []byte
	// steady: the newest frame was the previous body again (encodeSame):
	// every slot of prev has growth 0 and kind slotSame. owed: the frames
	// since whose decay of the predictor costs (decayCosts) prev's slots
	// have not had yet.
	steady bool
	owed   int
}

func (w *Writer) newWriterTarget(target string) *writerTarget {
	t := &writerTarget{stats: TargetStats{Target: target}, tid: w.ntids}
	w.ntids++
	t.cur.wide, t.prev.wide = true, true // version 3's numbers (parseNumW), as the reader tokenizes them
	return t
}

// Create creates a dump file at path, refusing to overwrite an existing
// file unless overwrite is set.
func Create(path string, overwrite bool, opts WriterOptions) (*Writer, error) {
	flag := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if overwrite {
		flag = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	w, err := newWriter(f, f, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// NewWriter writes a dump to w, starting with the file header.
func NewWriter(w io.Writer, opts WriterOptions) (*Writer, error) {
	return newWriter(w, nil, opts)
}

func newWriter(w io.Writer, f *os.File, opts WriterOptions) (*Writer, error) {
	if opts.KeyEvery <= 0 {
		opts.KeyEvery = DefaultKeyEvery
	}
	if opts.Level == 0 {
		opts.Level = zstd.SpeedFastest
	}
	if opts.IndexEvery == 0 {
		opts.IndexEvery = DefaultIndexEvery
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(opts.Level), zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(false), zstd.WithWindowSize(1<<20), zstd.WithLowerEncoderMem(true))
	if err != nil {
		return nil, err
	}
	dw := &Writer{w: w, f: f, opts: opts, enc: enc, targets: make(map[string]*writerTarget)}
	hdr := appendFileHeader(nil)
	if _, err := w.Write(hdr); err != nil {
		return nil, fmt.Errorf("dump: writing the header: %w", err)
	}
	dw.off = int64(len(hdr))
	dw.stats.Bytes = dw.off
	return dw, nil
}

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("dump: writer closed")

// Append stores one scrape of target taken at at: body as served, with its
// Content-Type. body is not retained. An error (a full disk, say) is
// returned at once; the frame is then not in the dump, the file stays
// readable, and later appends are tried again.
func (w *Writer) Append(target string, at time.Time, contentType string, body []byte) error {
	if target == "" || len(target) > maxTargetLen {
		return fmt.Errorf("dump: target name must be 1 to %d bytes", maxTargetLen)
	}
	if len(contentType) > maxContentTypeLen {
		contentType = contentType[:maxContentTypeLen]
	}
	if len(body) > MaxBodySize {
		return fmt.Errorf("dump: body of %d bytes exceeds the limit of %d", len(body), MaxBodySize)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	t := w.targets[target]
	if t == nil {
		t = w.newWriterTarget(target)
		w.targets[target] = t
	}
	f := appendingFrame{
		m:    meta{timeNs: at.UnixNano(), target: target, contentType: contentType, bodyLen: uint64(len(body)), tid: t.tid},
		ct:   contentType,
		body: body,
	}
	t.tokenize(&f)
	f.key = !t.have || t.ct != contentType || t.sinceKey+1 >= w.opts.KeyEvery || f.m.timeNs <= t.lastNs
	if !f.key {
		if err := w.deltaFrame(t, &f); err != nil {
			return err
		}
	}
	if f.key {
		w.keyFrame(t, &f)
	}
	if err := w.writeFrame(t, &f.m); err != nil {
		return err
	}
	w.advance(t, &f)
	w.indexIfDue()
	return nil
}

// appendingFrame is the frame Append makes of one body, as its phases
// fill it in.
type appendingFrame struct {
	m    meta
	ct   string // the body's content type
	body []byte
	// same: the body is the previous frame's again; sameStruct: it was
	// tokenized and its delta coded as it was read (tokenizeEncode).
	same, sameStruct bool
	// sum is numsCheck of the body's numbers, once summed.
	sum    uint32
	summed bool
	tok    *tokens // the body's tokens: the previous frame's when same, else the scratch set
	key    bool    // a key frame, not a delta
}

// tokenize reads f's body into the target's tokens. A target that
// served the same bytes again (a quiet service between two scrapes) costs
// one comparison: its tokens, the sum of its numbers and its previous
// body are the last frame's, and only the slots' state moves on
// (encodeSame). The frame's checksum is set by deltaFrame or keyFrame.
func (t *writerTarget) tokenize(f *appendingFrame) {
	f.same, f.tok = t.have && bytes.Equal(f.body, t.prevBody), &t.cur
	if f.same {
		f.tok, f.sum, f.summed = &t.prev, t.lastSum, true
		return
	}
	t.prev.decayCosts(t.owed) // before anything reads the slots
	t.owed, t.steady = 0, false
	f.sameStruct = tokenizeEncode(f.body, &t.cur, &t.prev, t.prevBody, &t.enc)
}

// deltaFrame makes f a delta frame on the target's previous frame, or
// sets f.key when a key frame should be written instead: a delta that
// saves little is not worth its dependency.
func (w *Writer) deltaFrame(t *writerTarget, f *appendingFrame) error {
	m := &f.m
	w.delta = t.encodeDelta(w.delta[:0], f)
	m.bodyCRC = f.numsSum()
	if w.delta[0]&1 == 0 { // a structure of its own
		m.bodyCRC ^= crc32.Checksum(f.tok.structure, castagnoli)
	}
	m.kind, m.base = kindDelta, uint64(m.timeNs-t.lastNs)
	m.stepRes = int64(m.base) - predictStep(t.lastStep)
	m.lenDiff = int64(len(f.body)) - int64(t.lastLen)
	m.contentType = "" // a delta has its base's
	var dictID uint32
	enc := w.enc
	if w.delta[0]&1 == 0 { // structure changed: compress against the base's
		w.dictID++
		if w.dictID == 0 {
			w.dictID = 1
		}
		dictID = w.dictID
		var err error
		if enc, err = w.dictEncoder(dictID, t.prev.structure); err != nil {
			return fmt.Errorf("dump: %w", err)
		}
	}
	m.payload = appendUvarint(nil, uint64(dictID))
	if dictID == 0 && bytes.Equal(w.delta, t.lastDelta) {
		// The delta of the last frame again (a steady target: every
		// slot as it was, as at the last frame): so is its
		// compression, which depends on nothing else.
		m.payload = append(m.payload, t.lastZ...)
	} else {
		z := stripMagic(enc.EncodeAll(w.delta, m.payload), len(m.payload))
		t.lastDelta, t.lastZ = t.lastDelta[:0], t.lastZ[:0]
		if dictID == 0 {
			t.lastDelta, t.lastZ = append(t.lastDelta, w.delta...), append(t.lastZ, z[len(m.payload):]...)
		}
		m.payload = z
	}
	m.payload = padPayload(m.payload, t.bound, len(f.body))
	f.key = len(m.payload) > t.keySize/2 && t.keySize > 0
	return nil
}

// numsSum is numsCheck of f's numbers, summed once.
func (f *appendingFrame) numsSum() uint32 {
	if !f.summed {
		f.sum, f.summed = numsCheck(f.tok.nums), true
	}
	return f.sum
}

// encodeDelta appends to dst the delta of f's body on the target's
// previous frame.
func (t *writerTarget) encodeDelta(dst []byte, f *appendingFrame) []byte {
	switch {
	case f.same && t.steady:
		// Every slot was unchanged at the last frame already: the
		// delta is all kinds 0, and what it changes in the slots is
		// their costs' decay, owed until a frame differs (a quiet
		// target: encodeSame's pass over every slot was a quarter of
		// such an Append).
		t.owed++
		return appendSteadyDelta(dst, len(t.prev.nums))
	case f.same:
		t.steady = true
		return encodeSame(dst, &t.prev)
	case f.sameStruct:
		// Coded while tokenized: encodeDeltaSame's bytes and state.
		return t.enc.finish(dst, &t.cur, &t.prev)
	default:
		return encodeDeltaSame(dst, &t.cur, &t.prev, Version, bytes.Equal(t.cur.structure, t.prev.structure))
	}
}

// keyFrame makes f a key frame.
func (w *Writer) keyFrame(t *writerTarget, f *appendingFrame) {
	m := &f.m
	m.kind, m.base, m.contentType = kindKey, 0, f.ct
	m.bodyCRC = crc32.Checksum(f.body, castagnoli)
	m.payload = padPayload(stripMagic(w.enc.EncodeAll(f.body, nil), 0), 0, len(f.body))
	// A reader starts from the key frame's own tokens: no growths,
	// kinds or predictor costs.
	for i := range f.tok.nums {
		n := &f.tok.nums[i]
		n.d, n.k, n.cost = 0, 0, [numPredictors]uint16{}
	}
	t.owed, t.steady = 0, false
}

// writeFrame writes m, in w.buf, to the file, counting a failure.
func (w *Writer) writeFrame(t *writerTarget, m *meta) error {
	stored := *m
	if m.kind == kindDelta {
		stored.timeNs = baseLink(t.lastCRC) // the time is the base's plus m.base
	}
	w.buf = appendFrame(w.buf[:0], &stored)
	if err := w.write(w.buf); err != nil {
		t.stats.Errors++
		t.stats.LastError = err.Error()
		w.stats.Errors++
		w.lose(time.Unix(0, m.timeNs))
		t.have = false // the next frame of this target is a key frame
		return err
	}
	if w.opts.Sync && w.f != nil {
		if err := w.f.Sync(); err != nil {
			return fmt.Errorf("dump: sync: %w", err)
		}
	}
	return nil
}

// advance makes f, just written (w.buf), the target's newest frame, and
// lists and counts it.
func (w *Writer) advance(t *writerTarget, f *appendingFrame) {
	m, body := &f.m, f.body
	t.lastSum = f.numsSum() // the next frame's, if its body is this one again; before f.tok moves
	if !f.same {
		t.prev, t.cur = t.cur, t.prev
		t.prev.lines = nil
		t.prevBody = append(t.prevBody[:0], body...)
	}
	t.have, t.ct, t.lastNs, t.lastCRC, t.lastLen = true, f.ct, m.timeNs, m.bodyCRC, uint64(len(body))
	t.lastStep = int64(m.base) // 0 for a key frame
	if f.key {
		t.bound = frameBound(0, len(m.payload))
		t.sinceKey, t.keySize = 0, len(m.payload)
		t.stats.KeyFrames++
	} else {
		t.bound = frameBound(t.bound, len(m.payload))
		t.sinceKey++
	}
	n := int64(len(w.buf))
	w.listed(m, n)
	t.stats.Frames++
	t.stats.Bytes += n
	t.stats.BodyBytes += int64(len(body))
	w.stats.Frames++
	w.stats.BodyBytes += int64(len(body))
}

// listed records a frame just written (n bytes at w.off) for the next
// index frame and moves w.off past it.
func (w *Writer) listed(m *meta, n int64) {
	if w.opts.IndexEvery > 0 {
		w.pending = append(w.pending, indexEntry{off: w.off, size: n, kind: m.kind, target: m.target, tid: m.tid, timeNs: m.timeNs,
			base: m.base, ct: m.contentType, bodyLen: m.bodyLen, bodyCRC: m.bodyCRC, payLen: len(m.payload)})
	}
	w.off += n
	w.stats.Bytes = w.off
}

// indexIfDue writes an index frame when IndexEvery frames wait for one.
// A failure is counted, not returned: the frame itself was written, and
// the next index frame lists the frames this one would have.
func (w *Writer) indexIfDue() {
	if w.opts.IndexEvery > 0 && len(w.pending) >= w.opts.IndexEvery {
		_ = w.writeIndex()
	}
}

// writeIndex writes an index frame of the pending frames. On a failed
// write they stay pending (the file was cut back to the last whole frame).
func (w *Writer) writeIndex() error {
	if len(w.pending) == 0 {
		return nil
	}
	w.buf = appendIndexFrame(w.buf[:0], w.lastIdx, w.pending, w.enc)
	if err := w.write(w.buf); err != nil {
		w.stats.Errors++
		return err
	}
	w.lastIdx = w.off
	w.off += int64(len(w.buf))
	w.stats.Bytes = w.off
	w.pending = w.pending[:0]
	return nil
}

// zstdMagic starts every zstd frame. A version 3 frame's payload leaves it
// out of its (first) zstd frame and the reader puts it back: 4 bytes of
// every frame, 3 % of a small target's delta frame with its header.
var zstdMagic = [4]byte{0x28, 0xb5, 0x2f, 0xfd}

// stripMagic removes the zstd magic at p[at:].
func stripMagic(p []byte, at int) []byte {
	if len(p) >= at+4 && [4]byte(p[at:at+4]) == zstdMagic {
		return append(p[:at], p[at+4:]...)
	}
	return p
}

func appendUvarint(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// dictEncoder returns the encoder primed with a base structure.
func (w *Writer) dictEncoder(id uint32, dict []byte) (*zstd.Encoder, error) {
	if w.dictEnc == nil {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(w.opts.Level), zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderCRC(false), zstd.WithWindowSize(8<<20), zstd.WithEncoderDictRaw(id, dict))
		if err != nil {
			return nil, err
		}
		w.dictEnc = enc
		return enc, nil
	}
	if err := w.dictEnc.ResetWithOptions(nil, zstd.WithEncoderDictRaw(id, dict)); err != nil {
		return nil, err
	}
	return w.dictEnc, nil
}

// write writes one frame whole or, failing that, takes back what part of
// it reached the file.
func (w *Writer) write(b []byte) error {
	n, err := w.w.Write(b)
	if err == nil {
		return nil
	}
	err = fmt.Errorf("dump: write: %w", err)
	if n > 0 {
		if w.f == nil {
			w.err = fmt.Errorf("%w (a partial frame was written; the dump ends there)", err)
			return w.err
		}
		if terr := w.f.Truncate(w.off); terr != nil {
			// The reader skips the torn frame and resyncs on the next.
			w.off += int64(n)
			return err
		}
		if _, serr := w.f.Seek(w.off, io.SeekStart); serr != nil {
			w.err = fmt.Errorf("%w; seeking back: %v", err, serr)
			return w.err
		}
	}
	return err
}

// AppendError stores a failed scrape of target at at: the error text
// (sanitised by the caller), so that a replay shows the target down as
// the live view did. It does not change how the target's next body is
// stored.
func (w *Writer) AppendError(target string, at time.Time, msg string) error {
	if target == "" || len(target) > maxTargetLen {
		return fmt.Errorf("dump: target name must be 1 to %d bytes", maxTargetLen)
	}
	if len(msg) > maxErrorLen {
		msg = msg[:maxErrorLen]
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	t := w.targets[target]
	if t == nil {
		t = w.newWriterTarget(target)
		w.targets[target] = t
	}
	m := meta{kind: kindError, timeNs: at.UnixNano(), target: target, tid: t.tid, payload: []byte(msg)}
	w.buf = appendFrame(w.buf[:0], &m)
	if err := w.write(w.buf); err != nil {
		t.stats.Errors++
		t.stats.LastError = err.Error()
		w.stats.Errors++
		w.lose(at)
		return err
	}
	n := int64(len(w.buf))
	w.listed(&m, n)
	t.stats.Frames++
	t.stats.Failed++
	t.stats.Bytes += n
	w.stats.Frames++
	w.indexIfDue()
	return nil
}

// Hook returns a function for scrape.Options.OnScrape that records every
// scrape (AppendError for a failed one). Write errors are reported to onErr
// once per burst, not once per frame: the first failed write as a
// *WriteError, and the first successful write after a burst as a
// *WriteError with Recovered set and the burst's count and times. The
// recording goes on with the next scrape.
func (w *Writer) Hook(onErr func(error)) func(target string, at time.Time, body []byte, contentType string, err error) {
	var mu sync.Mutex
	var burst *WriteError
	return func(target string, at time.Time, body []byte, contentType string, err error) {
		var werr error
		if err != nil {
			werr = w.AppendError(target, at, err.Error())
		} else {
			werr = w.Append(target, at, contentType, body)
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case werr != nil && burst == nil:
			burst = &WriteError{Err: werr, Lost: 1, From: at, To: at}
			if onErr != nil {
				onErr(burst)
			}
		case werr != nil:
			burst.Lost++
			burst.To, burst.Err = at, werr
		case burst != nil:
			done := *burst
			done.Recovered, burst = true, nil
			if onErr != nil {
				onErr(&done)
			}
		}
	}
}

// WriteError is a burst of scrapes that could not be written: its first
// failure, or (Recovered) its end, with how many were lost and when.
type WriteError struct {
	Err       error // the newest write error
	Lost      int
	From, To  time.Time
	Recovered bool
}

func (e *WriteError) Error() string {
	if e.Recovered {
		return fmt.Sprintf("writing again; %d scrape(s) lost from %s to %s (%v)", e.Lost,
			e.From.UTC().Format("15:04:05"), e.To.UTC().Format("15:04:05"), e.Err)
	}
	return fmt.Sprintf("%v; scrapes are lost until a write succeeds", e.Err)
}

func (e *WriteError) Unwrap() error { return e.Err }

// lose counts a scrape that could not be written, under w.mu.
func (w *Writer) lose(at time.Time) {
	w.stats.Lost++
	if w.stats.FirstLost.IsZero() {
		w.stats.FirstLost = at
	}
	w.stats.LastLost = at
}

// Stats returns what was written so far.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	s.Targets = make([]TargetStats, 0, len(w.targets))
	for _, t := range w.targets {
		s.Targets = append(s.Targets, t.stats)
	}
	sort.Slice(s.Targets, func(i, j int) bool { return s.Targets[i].Target < s.Targets[j].Target })
	return s
}

// Close syncs and closes the file (when Create opened it). Appends after
// Close fail with ErrClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	ierr := w.writeIndex()
	w.enc.Close()
	if w.dictEnc != nil {
		w.dictEnc.Close()
	}
	if w.f != nil {
		serr := w.f.Sync()
		cerr := w.f.Close()
		if serr != nil {
			return fmt.Errorf("dump: sync: %w", serr)
		}
		if cerr != nil {
			return fmt.Errorf("dump: close: %w", cerr)
		}
	}
	return ierr
}
