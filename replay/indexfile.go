package replay

// The seek index on disk: a finished index is written once (WriteIndex)
// and read back on the next open (ReadIndex) instead of being rebuilt,
// which costs what parsing the whole recording costs. The file is never
// trusted: its key (the recording, the dialects, the store's
// configuration and this format's version), its length, its size bound
// and its checksum must match, and then every count, offset and entry it
// holds is checked against the recording before a seek may read it. A
// file that fails any check is refused with an error saying why and at
// which byte, and the index is built as before.
//
// The format is this package's own (docs/performance.md, "Replay seek
// and the index"): a table of the distinct strings, then the index in
// varints, the two compressed with zstd, so that reading it allocates
// about the payload's size: the payload is decompressed into one buffer
// of the length the header announces (and accepts, before reading more),
// the chunks' columns stay in it (no copy), the strings are slices of
// one string, and each target's ids, offsets, labels and series come in
// one slice each. Every count is checked against the bytes left before
// anything is allocated for it, so whatever a file holds its reader
// allocates at most 16 times its payload's announced size (a string of
// the table or a label in every byte or two, 16 or 32 bytes each),
// besides what the recording's length decides.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/model"
)

// IndexFileVersion is the version of the index file's format and of what
// the index holds; a file of another version is refused (and IndexCache
// names its files after it, so older ones are never opened).
//
// 1: a gob of the index. 2: the format below. 3: the same, its payload
// compressed with zstd. 4: fractional columns as differences of their
// bits, not 8 bytes a value.
const IndexFileVersion = 4

var indexMagic = [8]byte{'R', 'T', 'I', 'D', 'X', 0, 0, IndexFileVersion}

// indexHeader: magic, key (32 bytes), the length of the stored
// (compressed) payload (8), the CRC-32C of the stored payload (4), the
// payload's length once decompressed (8).
const indexHeaderLen = 8 + 32 + 8 + 4 + 8

// MaxIndexFile bounds the files ReadIndex reads (IndexCache's default
// MaxBytes: larger ones are never written), before anything is read.
const MaxIndexFile = 2 << 30

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrIndexNotDone is WriteIndex's error when the index does not cover the
// whole recording (still building, or stopped at its budget).
var ErrIndexNotDone = errors.New("replay: the seek index is not complete")

// indexKey mixes what else decides the index's content into the caller's
// key: the store's configuration (its caps refuse series) and the format.
func (p *Player) indexKey(key [32]byte) [32]byte {
	h := sha256.New()
	h.Write(key[:])
	fmt.Fprintf(h, "\nindex v%d\nstore %+v\nentries %d\n", IndexFileVersion, p.opts.Store, p.rec.Len())
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// finish seals every target's open chunk once the whole recording is
// logged, and drops the builder's maps: the index is read-only from here,
// and whole chunks are what a file holds.
func (x *index) finish() {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, l := range x.targets {
		if int64(len(l.times)) > l.open.first {
			x.bytes += l.seal()
		}
		l.alive, l.order = nil, nil
	}
}

// WriteIndex writes the finished seek index to w, under key (what the
// recording and its dialects are; see IndexKey). It fails unless the
// index covers the whole recording, and when the file would be larger
// than a reader with the player's options accepts.
func (p *Player) WriteIndex(w io.Writer, key [32]byte) error {
	p.index.mu.RLock()
	defer p.index.mu.RUnlock()
	x := &p.index
	if n := p.rec.Len(); x.done != n || x.stopped {
		return ErrIndexNotDone
	}
	table, body, err := encodeIndex(x, p.rec)
	if err != nil {
		return err
	}
	size := int64(len(table) + len(body))
	if lim := p.maxIndexPayload(); size > lim {
		return fmt.Errorf("replay: the index file would hold %d MB, over the %d MB a reader accepts", size>>20, lim>>20)
	}
	return writeIndexFile(w, table, body, p.indexKey(key))
}

// The payload is compressed at zstd's fastest level, which decompresses
// in a fraction of reading it: the integer columns, a byte or two a
// value, repeat from series to series (61 MB of them are 14 MB on the
// 1-hour dump; slower levels gain 1 MB); fractions, differences of
// their bits, hardly compress (14 MB).
var indexEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))

// maxIndexPayload is the largest payload ReadIndex accepts: MaxIndexFile,
// and the index's memory budget (the index read holds at least its
// file's bytes; an index the budget stopped is never written).
func (p *Player) maxIndexPayload() int64 {
	lim := int64(MaxIndexFile - indexHeaderLen)
	if b := indexBudget(p.opts.IndexMemory); b > 0 {
		// The budget is checked before each entry is added, so a finished
		// index may exceed it by its last entry and the sealing of the
		// open chunks: a 64-scrape chunk of every series of one target at
		// most, well under a quarter of any budget that held it.
		lim = min(lim, b+b/4)
	}
	return lim
}

// writeIndexFile writes the header (magic, key, lengths, checksum) and
// the payload, the string table and the body, compressed.
func writeIndexFile(w io.Writer, table, body []byte, key [32]byte) error {
	stored := indexEncoder.EncodeAll(body, indexEncoder.EncodeAll(table, nil)) // two frames, read as one
	var hdr [indexHeaderLen]byte
	copy(hdr[:8], indexMagic[:])
	copy(hdr[8:40], key[:])
	binary.LittleEndian.PutUint64(hdr[40:48], uint64(len(stored)))
	binary.LittleEndian.PutUint32(hdr[48:52], crc32.Checksum(stored, castagnoli))
	binary.LittleEndian.PutUint64(hdr[52:60], uint64(len(table)+len(body)))
	for _, b := range [][]byte{hdr[:], stored} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// The payload, all integers varints (u: unsigned, s: zigzag), strings
// as u indexes into the table, floats as 8 bytes little-endian:
//
//	table:  u count, u length of each, then their bytes
//	body:   u entries, u targets, each target's name, u length and log,
//	        each entry, the errors
//	log:    u entries, their u differences (the first from -1);
//	        u scrapes, their times as s differences (the first from 0);
//	        each scrape's start, u dropped, its cap; u labels in all;
//	        u series, each: key, name, u labels, each label's name and
//	        value, s type, extra, u born, u died+1, seed; then its
//	        ceil(scrapes/64) chunks, after u ids in all: each chunk's
//	        u ids, their u differences (the first from -1), each column's
//	        u length, the columns
//	cap:    u 0 (none), or 1 then s of each of SeriesCap's six fields
//	entry:  u scrapes of its target logged, its status: u flags (1: up,
//	        2: Dialects not nil), s scrapes, failures, series, dropped,
//	        scrape duration, last error, URL, layer, dialect, service,
//	        name source, u dialects, each one, its cap. Its name, last
//	        scrape and last success are the recording's (checked when
//	        written, set when read).
//	errors: u count, each: u entry difference (the first from -1), text

// encoder writes a body and gathers its string table.
type encoder struct {
	b    []byte
	strs map[string]uint64
	list []string
}

func (e *encoder) u(v uint64)  { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) s(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) f(v float64) { e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v)) }
func (e *encoder) str(v string) {
	id, ok := e.strs[v]
	if !ok {
		id = uint64(len(e.list))
		e.strs[v] = id
		e.list = append(e.list, v)
	}
	e.u(id)
}

func (e *encoder) cap(c *model.SeriesCap) {
	if c == nil {
		e.u(0)
		return
	}
	e.u(1)
	for _, v := range [...]int{c.ByTarget, c.ByTotal, c.PerTarget, c.Total, c.Kept, c.StoreKept} {
		e.s(int64(v))
	}
}

// encodeIndex encodes x, finished, for rec: the string table and the
// body.
func encodeIndex(x *index, rec dump.Recording) (table, body []byte, err error) {
	e := &encoder{strs: map[string]uint64{}, b: make([]byte, 0, x.bytes/2)}
	e.u(uint64(x.done))
	names, err := indexedTargets(x, rec)
	if err != nil {
		return nil, nil, err
	}
	e.u(uint64(len(names)))
	body, sec := e.b, []byte(nil)
	for _, name := range names {
		l := x.targets[name]
		if int64(len(l.times)) > l.open.first || len(l.chunks) != (len(l.times)+chunkLen-1)/chunkLen {
			return nil, nil, ErrIndexNotDone // not finished: its open chunk is not sealed
		}
		// The target's log, then its name and length before it in the
		// body: a reader finds every target's log first and decodes them
		// in parallel.
		e.b = sec[:0]
		e.targetLog(l)
		sec = e.b
		e.b = body
		e.str(name)
		e.u(uint64(len(sec)))
		body = append(e.b, sec...)
	}
	e.b = body
	if err := e.statuses(x, rec); err != nil {
		return nil, nil, err
	}
	e.entryErrors(x)
	return e.table(), e.b, nil
}

// indexedTargets returns the targets of x in the recording's order.
func indexedTargets(x *index, rec dump.Recording) ([]string, error) {
	var names []string
	for _, name := range rec.Targets() {
		if x.targets[name] != nil {
			names = append(names, name)
		}
	}
	if len(names) != len(x.targets) {
		return nil, errors.New("replay: the index holds a target the recording does not list")
	}
	return names, nil
}

// targetLog writes a target's log: its entries, scrapes, series and
// chunks.
func (e *encoder) targetLog(l *tlog) {
	e.u(uint64(len(l.entries)))
	prev := int64(-1)
	for _, en := range l.entries {
		e.u(uint64(int64(en) - prev))
		prev = int64(en)
	}
	e.u(uint64(len(l.times)))
	prev = 0
	for _, t := range l.times {
		e.s(t - prev)
		prev = t
	}
	for _, m := range l.meta {
		e.f(m.start)
		e.u(uint64(m.dropped))
		if m.capped == (model.SeriesCap{}) {
			e.cap(nil)
		} else {
			e.cap(&m.capped)
		}
	}
	e.series(l.series)
	e.chunks(l.chunks)
}

// series writes the series' labels in all, then each series.
func (e *encoder) series(series []seriesMeta) {
	labels := 0
	for k := range series {
		labels += len(series[k].labels)
	}
	e.u(uint64(labels))
	e.u(uint64(len(series)))
	for k := range series {
		s := &series[k]
		e.str(s.key)
		e.str(s.name)
		e.u(uint64(len(s.labels)))
		for _, lb := range s.labels {
			e.str(lb.Name)
			e.str(lb.Value)
		}
		e.s(int64(s.typ))
		e.f(s.extra)
		e.u(uint64(s.born))
		e.u(uint64(s.died + 1))
		e.f(s.seed)
	}
}

// chunks writes the chunks' ids in all, then each chunk: its ids, its
// columns' lengths and its columns.
func (e *encoder) chunks(chunks []chunk) {
	ids := 0
	for c := range chunks {
		ids += len(chunks[c].ids)
	}
	e.u(uint64(ids))
	for c := range chunks {
		ch := &chunks[c]
		e.u(uint64(len(ch.ids)))
		prev := int64(-1)
		for _, id := range ch.ids {
			e.u(uint64(int64(id) - prev))
			prev = int64(id)
		}
		for k := range ch.ids {
			e.u(uint64(ch.off[k+1] - ch.off[k]))
		}
		e.b = append(e.b, ch.data[:ch.off[len(ch.ids)]]...)
	}
}

// statuses writes each entry's scrapes logged and status, after checking
// that its name and times are the recording's, which are left out.
func (e *encoder) statuses(x *index, rec dump.Recording) error {
	lastOK := map[string]int{}
	for i := 0; i < x.done; i++ {
		s := &x.status[i]
		target := rec.Target(i)
		succ, ok := lastOK[target]
		if !ok {
			succ = -1
		}
		if s.Up {
			succ = i
			lastOK[target] = i
		}
		// Only what comes back exactly is left out.
		if s.Name != target || !s.LastScrape.Equal(rec.Time(i)) || (succ < 0) != s.LastSuccess.IsZero() || (succ >= 0 && !s.LastSuccess.Equal(rec.Time(succ))) {
			return fmt.Errorf("replay: index entry %d: its status' name or times are not the recording's", i)
		}
		e.u(uint64(x.next[i]))
		var flags uint64
		if s.Up {
			flags |= 1
		}
		if s.Dialects != nil {
			flags |= 2
		}
		e.u(flags)
		for _, v := range [...]int64{int64(s.Scrapes), int64(s.Failures), int64(s.Series), int64(s.DroppedSeries), int64(s.ScrapeDuration)} {
			e.s(v)
		}
		for _, v := range [...]string{s.LastError, s.URL, s.Layer, s.Dialect, s.Service, s.NameSource} {
			e.str(v)
		}
		e.u(uint64(len(s.Dialects)))
		for _, d := range s.Dialects {
			e.str(d)
		}
		e.cap(s.SeriesCap)
	}
	return nil
}

// entryErrors writes the entries' errors in entry order.
func (e *encoder) entryErrors(x *index) {
	errs := make([]int, 0, len(x.errs))
	for i := range x.errs {
		errs = append(errs, i)
	}
	sortInts(errs)
	e.u(uint64(len(errs)))
	prev := -1
	for _, i := range errs {
		e.u(uint64(i - prev))
		prev = i
		e.str(x.errs[i].Error())
	}
}

// table returns the string table of what e wrote.
func (e *encoder) table() []byte {
	t := &encoder{}
	t.u(uint64(len(e.list)))
	size := 0
	for _, s := range e.list {
		t.u(uint64(len(s)))
		size += len(s)
	}
	t.b = append(make([]byte, 0, len(t.b)+size), t.b...)
	for _, s := range e.list {
		t.b = append(t.b, s...)
	}
	return t.b
}

func sortInts(v []int) {
	// Few errors (entries whose body did not parse): insertion sort.
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}

// IndexFileError says why an index file was refused, and where: Offset
// is the byte of the file the check failed at, or with Payload the byte
// of the decompressed payload.
type IndexFileError struct {
	Offset  int64
	Payload bool
	Reason  string
}

func (e *IndexFileError) Error() string {
	of := ""
	if e.Payload {
		of = " of the decompressed index"
	}
	return "at byte " + strconv.FormatInt(e.Offset, 10) + of + ": " + e.Reason
}

func refuseAt(off int64, format string, args ...any) error {
	return &IndexFileError{Offset: off, Reason: fmt.Sprintf(format, args...)}
}

func refusePayload(off int64, format string, args ...any) error {
	return &IndexFileError{Offset: off, Payload: true, Reason: fmt.Sprintf(format, args...)}
}

// ReadIndex reads an index WriteIndex wrote under key from r, of size
// bytes, checks it against the recording and, when every check passes,
// makes it the player's seek index. Call it before BuildIndex (which
// then is not needed) and before any seek; an error (an
// *IndexFileError when the file was refused) leaves the player as it was.
func (p *Player) ReadIndex(r io.ReaderAt, size int64, key [32]byte) error {
	f, err := p.readIndexFile(r, size, &key)
	if err != nil {
		return err
	}
	return p.installIndex(f, key)
}

// indexFile is a file's header and payload, its checksum verified.
type indexFile struct {
	hdr     [indexHeaderLen]byte
	payload []byte
}

// readIndexFile reads and checks a file's header (against key too when
// it is given: a stale file is refused before its payload is read) and
// its payload's checksum; IndexWithCache reads it while the key is being
// computed.
func (p *Player) readIndexFile(r io.ReaderAt, size int64, key *[32]byte) (*indexFile, error) {
	if size < indexHeaderLen {
		return nil, refuseAt(max(size, 0), "truncated (%d bytes, shorter than the header)", size)
	}
	f := &indexFile{}
	hdr := f.hdr[:]
	if _, err := r.ReadAt(hdr, 0); err != nil {
		return nil, err
	}
	if !bytes.Equal(hdr[:7], indexMagic[:7]) {
		return nil, refuseAt(0, "not a retrytop seek index")
	}
	if hdr[7] != IndexFileVersion {
		return nil, refuseAt(7, "index format version %d, not %d", hdr[7], IndexFileVersion)
	}
	if key != nil {
		if err := p.checkKey(f, *key); err != nil {
			return nil, err
		}
	}
	n := binary.LittleEndian.Uint64(hdr[40:48])
	if n != uint64(size-indexHeaderLen) {
		return nil, refuseAt(40, "%d bytes of index, the header says %d (truncated or extended)", size-indexHeaderLen, n)
	}
	lim := p.maxIndexPayload()
	if int64(n) > lim {
		return nil, refuseAt(40, "%d MB of index, over the %d MB this replay accepts", n>>20, lim>>20)
	}
	raw := binary.LittleEndian.Uint64(hdr[52:60])
	if raw > uint64(lim) {
		return nil, refuseAt(52, "%d MB of index once decompressed, over the %d MB this replay accepts", raw>>20, lim>>20)
	}
	stored := make([]byte, n)
	if _, err := r.ReadAt(stored, indexHeaderLen); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		return nil, err
	}
	// The checksum first, over the whole payload, so that no byte is
	// decompressed or decoded before it is known to be what was written.
	if crc32.Checksum(stored, castagnoli) != binary.LittleEndian.Uint32(hdr[48:52]) {
		return nil, refuseAt(48, "checksum mismatch (corrupt)")
	}
	// Into a buffer of the announced size, by a decoder that refuses to
	// make more than that or 1 MiB (its window too, which a small frame
	// declares at 1 KiB or more): what decompressing allocates is bounded
	// by the header's checks.
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(max(raw, 1<<20)))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	f.payload, err = dec.DecodeAll(stored, make([]byte, 0, raw))
	if err == nil && uint64(len(f.payload)) != raw {
		err = fmt.Errorf("%d bytes, the header says %d", len(f.payload), raw)
	}
	if err != nil {
		return nil, refuseAt(indexHeaderLen, "decompressing: %v", err)
	}
	return f, nil
}

func (p *Player) checkKey(f *indexFile, key [32]byte) error {
	if k := p.indexKey(key); !bytes.Equal(f.hdr[8:40], k[:]) {
		return refuseAt(8, "made for another recording, dialects or store configuration")
	}
	return nil
}

// installIndex checks f's key, decodes and checks its payload and makes
// it the player's seek index.
func (p *Player) installIndex(f *indexFile, key [32]byte) error {
	if err := p.checkKey(f, key); err != nil {
		return err
	}
	x, err := p.decodeIndex(f.payload)
	if err != nil {
		return err
	}
	return p.install(x)
}

// install makes x, decoded and checked, the player's seek index.
func (p *Player) install(x *index) error {
	p.index.mu.Lock()
	defer p.index.mu.Unlock()
	if p.index.started {
		return errors.New("replay: ReadIndex after BuildIndex")
	}
	p.index.started = true
	p.index.done, p.index.bytes, p.index.next, p.index.status, p.index.errs, p.index.targets =
		x.done, x.bytes, x.next, x.status, x.errs, x.targets
	p.notify() // the progress badge
	return nil
}

// decoder reads a payload; its first error sticks (every read after it
// gives zero), and names the file's byte it happened at.
type decoder struct {
	b    []byte
	at   int
	err  error
	strs []string
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = refusePayload(int64(d.at), format, args...)
	}
}

func (d *decoder) u() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.at:])
	if n <= 0 {
		d.fail("bad or cut varint")
		return 0
	}
	d.at += n
	return v
}

func (d *decoder) s() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.at:])
	if n <= 0 {
		d.fail("bad or cut varint")
		return 0
	}
	d.at += n
	return v
}

// int is an s that must fit an int.
func (d *decoder) int() int {
	v := d.s()
	if v != int64(int(v)) {
		d.fail("%d does not fit an int", v)
		return 0
	}
	return int(v)
}

func (d *decoder) f() float64 {
	if d.err != nil {
		return 0
	}
	if len(d.b)-d.at < 8 {
		d.fail("cut float")
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.at:]))
	d.at += 8
	return v
}

// count reads a count of things each written in at least per bytes, and
// refuses one the bytes left cannot hold: what is allocated for a count
// is bounded by the file's size.
func (d *decoder) count(what string, per int) int {
	at := d.at
	v := d.u()
	if d.err == nil && v > uint64((len(d.b)-d.at)/per) {
		d.at = at
		d.fail("%d %s, more than the %d bytes left hold", v, what, len(d.b)-d.at)
		return 0
	}
	return int(v)
}

func (d *decoder) str() string {
	at := d.at
	v := d.u()
	if d.err == nil && v >= uint64(len(d.strs)) {
		d.at = at
		d.fail("string %d of %d", v, len(d.strs))
		return ""
	}
	if d.err != nil {
		return ""
	}
	return d.strs[v]
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b)-d.at < n {
		d.fail("%d bytes of columns, %d left", n, len(d.b)-d.at)
		return nil
	}
	b := d.b[d.at : d.at+n : d.at+n]
	d.at += n
	return b
}

func (d *decoder) cap() *model.SeriesCap {
	switch d.u() {
	case 0:
		return nil
	case 1:
		return &model.SeriesCap{ByTarget: d.int(), ByTotal: d.int(), PerTarget: d.int(), Total: d.int(), Kept: d.int(), StoreKept: d.int()}
	}
	d.fail("unknown cap")
	return nil
}

// decodeIndex decodes a payload and checks it against the recording:
// every check guards a read a seek makes (an entry, a scrape index, a
// chunk's columns, a series' id).
func (p *Player) decodeIndex(payload []byte) (*index, error) {
	d := &decoder{b: payload}
	if err := d.readTable(); err != nil {
		return nil, err
	}
	n := p.rec.Len()
	at := d.at
	if v := d.u(); d.err != nil {
		return nil, d.err
	} else if v != uint64(n) {
		return nil, refusePayload(int64(at), "%d entries, the recording has %d", v, n)
	}
	x := &index{done: n, next: make([]int64, n), status: make([]model.TargetStatus, n), targets: map[string]*tlog{}}
	owner := make([]int32, n) // entry -> target + 1
	if err := p.decodeTargets(d, x, owner); err != nil {
		return nil, err
	}
	if err := p.decodeStatuses(d, x, owner); err != nil {
		return nil, err
	}
	if err := d.entryErrors(x); err != nil {
		return nil, err
	}
	if d.err == nil && d.at != len(d.b) {
		d.fail("%d bytes after the index", len(d.b)-d.at)
	}
	if d.err != nil {
		return nil, d.err
	}
	return x, nil
}

// readTable reads the string table: one string holds them all.
func (d *decoder) readTable() error {
	ns := d.count("strings", 1)
	from, total := d.at, 0
	for k := 0; k < ns && d.err == nil; k++ {
		total += int(d.u())
		if total < 0 || total > len(d.b)-d.at {
			d.fail("strings of %d bytes, more than the bytes left", total)
		}
	}
	all := string(d.bytes(total))
	if d.err != nil {
		return d.err
	}
	d.strs = make([]string, ns)
	end := d.at
	d.at = from
	for k := range d.strs {
		n := int(d.u()) // read and checked above
		d.strs[k], all = all[:n], all[n:]
	}
	d.at = end
	return nil
}

// logSection is where one target's log lies in the body, and what
// decoding it gave.
type logSection struct {
	name       string
	start, end int
	l          *tlog
	bytes      int64
	err        error
}

// decodeTargets decodes the targets' logs into x, marking their entries
// in owner. The logs are found first, then decoded in parallel: their
// entries are disjoint once their names are (an entry is marked only by
// the target the recording says it belongs to).
func (p *Player) decodeTargets(d *decoder, x *index, owner []int32) error {
	nt := d.count("targets", 3)
	secs := make([]logSection, 0, nt)
	for ti := 0; ti < nt && d.err == nil; ti++ {
		at := d.at
		name := d.str()
		if _, dup := x.targets[name]; dup && d.err == nil {
			return refusePayload(int64(at), "target %q twice", name)
		}
		x.targets[name] = nil
		ln := d.count("bytes of a target's log", 1)
		secs = append(secs, logSection{name: name, start: d.at, end: d.at + ln})
		d.at += ln
	}
	if d.err != nil {
		return d.err
	}
	var wg sync.WaitGroup
	workers := min(max(runtime.GOMAXPROCS(0), 1), len(secs))
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for k := w; k < len(secs); k += workers {
				sc := &secs[k]
				sd := &decoder{b: d.b[:sc.end], at: sc.start, strs: d.strs}
				sc.l, sc.bytes, sc.err = p.decodeTarget(sd, sc.name, int32(k+1), owner)
				if sc.err == nil && sd.at != sc.end {
					sd.fail("target %q: %d bytes after its log", sc.name, sc.end-sd.at)
					sc.err = sd.err
				}
			}
		})
	}
	wg.Wait()
	for k := range secs {
		if secs[k].err != nil {
			return secs[k].err
		}
		x.targets[secs[k].name] = secs[k].l
		x.bytes += secs[k].bytes
	}
	return nil
}

// decodeStatuses decodes each entry's scrapes logged and status; its
// name and times are the recording's. An error of d's is left in d.
func (p *Player) decodeStatuses(d *decoder, x *index, owner []int32) error {
	lastOK := map[string]int{}
	for i := 0; i < x.done && d.err == nil; i++ {
		at := d.at
		if owner[i] == 0 {
			return refusePayload(int64(at), "entry %d belongs to no target", i)
		}
		target := p.rec.Target(i)
		l := x.targets[target]
		nx := d.u()
		x.next[i] = int64(nx)
		if nx > uint64(len(l.times)) || (i > 0 && x.next[i] < x.nextBefore(l, i)) {
			d.at = at
			d.fail("target %q: entry %d holds %d scrapes", target, i, nx)
			break
		}
		s := &x.status[i]
		flags := d.u()
		if flags&^3 != 0 {
			d.fail("unknown status flags %#x", flags)
			break
		}
		s.Name, s.Up = target, flags&1 != 0
		s.Scrapes, s.Failures, s.Series, s.DroppedSeries = d.int(), d.int(), d.int(), d.int()
		s.ScrapeDuration = time.Duration(d.s())
		s.LastError, s.URL, s.Layer, s.Dialect, s.Service, s.NameSource = d.str(), d.str(), d.str(), d.str(), d.str(), d.str()
		if nd := d.count("dialects", 1); nd > 0 || flags&2 != 0 {
			s.Dialects = make([]string, nd)
			for k := range s.Dialects {
				s.Dialects[k] = d.str()
			}
		}
		s.SeriesCap = d.cap()
		succ, ok := lastOK[target]
		if !ok {
			succ = -1
		}
		if s.Up {
			succ = i
			lastOK[target] = i
		}
		s.LastScrape, s.LastSuccess = p.rec.Time(i), timeAt(p, succ)
	}
	return nil
}

// entryErrors decodes the entries' errors into x. An error of d's is
// left in d.
func (d *decoder) entryErrors(x *index) error {
	ne := d.count("errors", 2)
	prev := -1
	for k := 0; k < ne && d.err == nil; k++ {
		at := d.at
		i := int64(prev) + int64(d.u())
		if d.err == nil && (i <= int64(prev) || i >= int64(x.done)) {
			return refusePayload(int64(at), "an error at entry %d of %d", i, x.done)
		}
		prev = int(i)
		msg := d.str()
		if x.errs == nil {
			x.errs = map[int]error{}
		}
		x.errs[prev] = errors.New(msg)
	}
	return nil
}

// nextBefore is what target l's entry before i (if any) holds; entries'
// scrape counts never go down.
func (x *index) nextBefore(l *tlog, i int) int64 {
	k := l.entryPos(i)
	if k <= 0 {
		return 0
	}
	return x.next[l.entries[k-1]]
}

// entryPos is the position of entry i among l's entries.
func (l *tlog) entryPos(i int) int {
	lo, hi := 0, len(l.entries)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int(l.entries[m]) < i {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// decodeTarget decodes one target's log (its name read) and marks its
// entries in owner.
func (p *Player) decodeTarget(d *decoder, name string, mark int32, owner []int32) (*tlog, int64, error) {
	l, size, err := p.decodeLog(d, name, mark, owner)
	if err == nil {
		err = d.err
	}
	return l, size, err
}

// decodeLog is decodeTarget but for d's error.
func (p *Player) decodeLog(d *decoder, name string, mark int32, owner []int32) (*tlog, int64, error) {
	l := &tlog{}
	if err := p.decodeEntries(d, l, name, mark, owner); err != nil {
		return nil, 0, err
	}
	if err := d.scrapes(l, name); err != nil {
		return nil, 0, err
	}
	seriesSize, err := d.series(l, name)
	if err != nil {
		return nil, 0, err
	}
	chunksSize, err := d.chunks(l, name)
	if err != nil {
		return nil, 0, err
	}
	l.open = openChunk{first: int64(len(l.chunks)) * chunkLen}
	size := seriesSize + chunksSize + int64(len(l.entries))*(4+8+200) + int64(len(l.times))*(8+64)
	return l, size, d.err
}

// decodeEntries decodes target name's entries, marking each in owner.
func (p *Player) decodeEntries(d *decoder, l *tlog, name string, mark int32, owner []int32) error {
	n := len(owner)
	ne := d.count("entries", 1)
	l.entries = make([]int32, ne)
	prev := int64(-1)
	for k := range l.entries {
		at := d.at
		e := prev + int64(d.u())
		if d.err != nil {
			return d.err
		}
		if e <= prev || e >= int64(n) || p.rec.Target(int(e)) != name || owner[e] != 0 { // the target first: another goroutine marks other targets' entries
			return refusePayload(int64(at), "target %q: entry %d is not one of its entries in order", name, e)
		}
		owner[e] = mark
		l.entries[k] = int32(e)
		prev = e
	}
	return nil
}

// scrapes decodes a target's scrape times and what each scrape's store
// append said. An error past the times is left in d.
func (d *decoder) scrapes(l *tlog, name string) error {
	scrapes := d.count("scrapes", 11) // a time, a start, a dropped count, a cap
	l.times = make([]int64, scrapes)
	var t int64
	for k := range l.times {
		at := d.at
		dt := d.s()
		if d.err == nil && k > 0 && dt <= 0 {
			return refusePayload(int64(at), "target %q: scrape %d not after the one before", name, k) // the store's order
		}
		t += dt
		l.times[k] = t
	}
	l.meta = make([]scrapeMeta, scrapes)
	for k := range l.meta {
		m := &l.meta[k]
		m.start = d.f()
		m.dropped = int(d.u())
		if m.dropped < 0 {
			d.fail("dropped %d", m.dropped)
		}
		if c := d.cap(); c != nil {
			m.capped = *c
		}
	}
	return nil
}

// series decodes a target's series, each living within its scrapes and
// alone with its key at a time; it returns what they hold, roughly. An
// error past them (labels unused) is left in d.
func (d *decoder) series(l *tlog, name string) (int64, error) {
	scrapes := int64(len(l.times))
	nl := d.count("labels", 2)
	ns := d.count("series", 22) // key, name, labels, type, born, died: a byte each at least; extra, seed: 8
	// The labels' bytes and the series' bytes both lie after here: each
	// count alone fitting is not enough (a file could claim both in the
	// same bytes, 2x16 + 22x5 times what it holds).
	if d.err == nil && 2*int64(nl)+22*int64(ns) > int64(len(d.b)-d.at) {
		d.fail("target %q: %d labels and %d series, more than the %d bytes left hold", name, nl, ns, len(d.b)-d.at)
		return 0, d.err
	}
	var size int64
	labels := make(model.Labels, nl)
	l.series = make([]seriesMeta, ns)
	byKey := make(map[string]int32, ns)
	for k := range l.series {
		at := d.at
		s := &l.series[k]
		s.key, s.name = d.str(), d.str()
		nl := int(d.u())
		if nl < 0 || nl > len(labels) {
			d.fail("series %d: %d labels, %d left", k, nl, len(labels))
			return 0, d.err
		}
		s.labels, labels = labels[:nl:nl], labels[nl:]
		for j := range s.labels {
			s.labels[j] = model.Label{Name: d.str(), Value: d.str()}
		}
		s.typ = model.MetricType(d.int())
		if d.err == nil && (s.typ < model.Untyped || s.typ > model.Summary) {
			d.fail("series %d: metric type %d", k, s.typ)
		}
		s.extra = d.f()
		s.born = int64(d.u())
		s.died = int64(d.u()) - 1
		s.seed = d.f()
		s.pos, s.seen = -1, -1
		if d.err != nil {
			return 0, d.err
		}
		if s.born < 0 || s.born >= scrapes || (s.died != -1 && (s.died <= s.born || s.died > scrapes)) {
			return 0, refusePayload(int64(at), "target %q: series %d lives from scrape %d to %d of %d", name, k, s.born, s.died, scrapes)
		}
		// One series per key at a time, as the store holds them: ids are in
		// birth order, so the key's series before this one died first.
		if prev, ok := byKey[s.key]; ok {
			if d := l.series[prev].died; d < 0 || d > s.born {
				return 0, refusePayload(int64(at), "target %q: series %d and %d hold one key at once", name, prev, k)
			}
		}
		byKey[s.key] = int32(k)
		size += int64(160 + len(s.key) + len(s.name))
	}
	if len(labels) != 0 {
		d.fail("target %q: %d labels unused", name, len(labels))
	}
	return size, nil
}

// chunks decodes a target's chunks: each one's series ids, in order and
// range, and their columns, each checked, one for every series alive in
// the chunk. It returns what they hold, roughly. An error past them (ids
// unused) is left in d.
func (d *decoder) chunks(l *tlog, name string) (int64, error) {
	chunks := (int64(len(l.times)) + chunkLen - 1) / chunkLen
	nids := d.count("column ids", 2)
	if d.err != nil {
		return 0, d.err
	}
	var size int64
	ids := make([]int32, nids)
	offs := make([]uint32, 0, nids+int(chunks))
	l.chunks = make([]chunk, chunks)
	for c := range l.chunks {
		at := d.at
		k := d.count("columns", 2)
		if k > len(ids) {
			d.fail("target %q, chunk %d: %d columns, %d ids left", name, c, k, len(ids))
		}
		if d.err != nil {
			return 0, d.err
		}
		ch := &l.chunks[c]
		ch.ids, ids = ids[:k:k], ids[k:]
		prev := int64(-1)
		for j := range ch.ids {
			id := prev + int64(d.u())
			if d.err == nil && (id <= prev || id >= int64(len(l.series))) {
				return 0, refusePayload(int64(at), "target %q, chunk %d: series ids out of order or range", name, c)
			}
			ch.ids[j] = int32(id)
			prev = id
		}
		var err error
		if offs, err = d.columns(ch, offs, name, c); err != nil {
			return 0, err
		}
		if id := missingColumn(l.series, ch.ids, c); id >= 0 {
			return 0, refusePayload(int64(at), "target %q, chunk %d: series %d has no column", name, c, id)
		}
		size += int64(len(ch.data) + 8*len(ch.ids) + 64)
	}
	if len(ids) != 0 {
		d.fail("target %q: %d column ids unused", name, len(ids))
	}
	return size, nil
}

// columns decodes the columns' lengths and bytes of chunk c (its ids
// read), their offsets appended to offs, which it returns, and checks
// each column.
func (d *decoder) columns(ch *chunk, offs []uint32, name string, c int) ([]uint32, error) {
	start := len(offs)
	offs = append(offs, 0)
	var off uint64
	for range ch.ids {
		off += d.u()
		if off > uint64(len(d.b)) {
			d.fail("target %q, chunk %d: columns longer than the file", name, c)
			return offs, d.err
		}
		offs = append(offs, uint32(off))
	}
	ch.off = offs[start:len(offs):len(offs)]
	colAt := d.at
	ch.data = d.bytes(int(off))
	if d.err != nil {
		return offs, d.err
	}
	for j := range ch.ids {
		if err := checkColumn(ch.data[ch.off[j]:ch.off[j+1]]); err != nil {
			return offs, refusePayload(int64(colAt)+int64(ch.off[j]), "target %q, chunk %d, column %d: %v", name, c, j, err)
		}
	}
	return offs, nil
}

// timeAt is entry i's time, or the zero time for -1 (never).
func timeAt(p *Player, i int) time.Time {
	if i < 0 {
		return time.Time{}
	}
	return p.rec.Time(i)
}

// checkColumn checks that b is exactly one column as encodeColumn writes
// it.
func checkColumn(b []byte) error {
	if len(b) == 0 {
		return errors.New("empty")
	}
	flags := b[0]
	b = b[1:]
	if flags&^(colRaw|colPresence|colSmall|colF32) != 0 || (flags&colRaw != 0 && flags&colSmall != 0) {
		return errors.New("unknown flags")
	}
	if flags&colPresence != 0 {
		if len(b) < 8 {
			return errors.New("short presence")
		}
		b = b[8:]
	}
	switch {
	case flags&colSmall != 0:
		_, n := binary.Uvarint(b)
		if n <= 0 || len(b) != n+chunkLen-1 {
			return errors.New("wrong length")
		}
	case len(b) == chunkLen:
		// Every difference in one byte (the usual column the small
		// encoding did not take: one with a NaN): no byte continues.
		for k := 0; k < chunkLen; k += 8 {
			if binary.LittleEndian.Uint64(b[k:])&0x8080808080808080 != 0 {
				return errors.New("bad varint")
			}
		}
	default:
		for s := 0; s < chunkLen; s++ {
			_, n := binary.Uvarint(b)
			if n <= 0 {
				return errors.New("bad varint")
			}
			b = b[n:]
		}
		if len(b) != 0 {
			return errors.New("trailing bytes")
		}
	}
	return nil
}

// missingColumn is the first series alive in chunk c that has no column
// among its ids (sorted), or -1: history reads every live series' column
// without looking, so an index file missing one is refused.
func missingColumn(series []seriesMeta, ids []int32, c int) int {
	lo, hi := int64(c)*chunkLen, int64(c+1)*chunkLen
	j := 0
	for id := range series {
		s := &series[id]
		if s.born >= hi || (s.died >= 0 && s.died <= lo) {
			continue
		}
		for j < len(ids) && ids[j] < int32(id) {
			j++
		}
		if j == len(ids) || ids[j] != int32(id) {
			return id
		}
	}
	return -1
}
