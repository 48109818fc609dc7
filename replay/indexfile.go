package replay

// The seek index on disk: a finished index is written once (WriteIndex)
// and read back on the next open (ReadIndex) instead of being rebuilt,
// which costs what parsing the whole recording costs. The file is never
// trusted: its key (the recording, the dialects, the store's
// configuration and this format's version), its length and its checksum
// must match, and then every offset, count and entry it holds is checked
// against the recording before a seek may read it. A file that fails any
// check is refused with an error saying why, and the index is built as
// before.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"time"

	"github.com/retrytop/retrytop/model"
)

// IndexFileVersion is the version of the index file's format and of what
// the index holds; a file of another version is refused.
const IndexFileVersion = 1

var indexMagic = [8]byte{'R', 'T', 'I', 'D', 'X', 0, 0, IndexFileVersion}

// indexHeader: magic, key (32 bytes), payload length (8), CRC-32C of the
// payload (4).
const indexHeaderLen = 8 + 32 + 8 + 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrIndexNotDone is WriteIndex's error when the index does not cover the
// whole recording (still building, or stopped at its budget).
var ErrIndexNotDone = errors.New("replay: the seek index is not complete")

// fileIndex is the index as written: exported mirrors of index and tlog
// (the builder's own state is not kept; the open chunk is sealed first).
type fileIndex struct {
	Entries int
	Next    []int64
	Status  []fileStatus
	Errs    map[int]string
	Targets []fileTarget
}

// fileStatus is a TargetStatus whose times are entries of the recording
// (the status after entry i was scraped at entry i; its last success is
// an earlier entry, or -1), so they come back exactly as the recording
// gives them.
type fileStatus struct {
	S           model.TargetStatus
	LastSuccess int
}

type fileTarget struct {
	Name    string
	Entries []int32
	Times   []int64
	Meta    []fileMeta
	Series  []fileSeries
	Chunks  []fileChunk
}

type fileMeta struct {
	Start   float64
	Dropped int
	Cap     model.SeriesCap
}

type fileSeries struct {
	Key, Name  string
	Labels     model.Labels
	Type       model.MetricType
	Extra      float64
	Born, Died int64
	Seed       float64
}

type fileChunk struct {
	IDs  []int32
	Off  []uint32
	Data []byte
}

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
// index covers the whole recording.
func (p *Player) WriteIndex(w io.Writer, key [32]byte) error {
	p.index.mu.RLock()
	defer p.index.mu.RUnlock()
	f, err := p.fileIndex()
	if err != nil {
		return err
	}
	return writeIndexFile(w, f, p.indexKey(key))
}

// fileIndex is the index as written (under p.index.mu); it shares the
// index's slices.
func (p *Player) fileIndex() (*fileIndex, error) {
	x := &p.index
	n := p.rec.Len()
	if x.done != n || x.stopped {
		return nil, ErrIndexNotDone
	}
	f := &fileIndex{Entries: n, Next: x.next, Errs: map[int]string{}}
	for i, err := range x.errs {
		f.Errs[i] = err.Error()
	}
	lastOK := map[string]int{}
	f.Status = make([]fileStatus, n)
	for i := 0; i < n; i++ {
		s := x.status[i]
		target := p.rec.Target(i)
		succ, ok := lastOK[target]
		if !ok {
			succ = -1
		}
		if s.Up {
			succ = i
			lastOK[target] = i
		}
		// Only what comes back exactly is written.
		if !s.LastScrape.Equal(p.rec.Time(i)) || (succ < 0) != s.LastSuccess.IsZero() || (succ >= 0 && !s.LastSuccess.Equal(p.rec.Time(succ))) {
			return nil, fmt.Errorf("replay: index entry %d: its status' times are not the recording's", i)
		}
		s.LastScrape, s.LastSuccess = time.Time{}, time.Time{} // set from the entries when read
		f.Status[i] = fileStatus{S: s, LastSuccess: succ}
	}
	for _, name := range p.rec.Targets() {
		l := x.targets[name]
		if l == nil {
			continue
		}
		if int64(len(l.times)) > l.open.first {
			return nil, ErrIndexNotDone // not finished: its open chunk is not sealed
		}
		t := fileTarget{Name: name, Entries: l.entries, Times: l.times}
		t.Meta = make([]fileMeta, len(l.meta))
		for k, m := range l.meta {
			t.Meta[k] = fileMeta{Start: m.start, Dropped: m.dropped, Cap: m.capped}
		}
		t.Series = make([]fileSeries, len(l.series))
		for k, s := range l.series {
			t.Series[k] = fileSeries{Key: s.key, Name: s.name, Labels: s.labels, Type: s.typ, Extra: s.extra, Born: s.born, Died: s.died, Seed: s.seed}
		}
		t.Chunks = make([]fileChunk, len(l.chunks))
		for k, c := range l.chunks {
			t.Chunks[k] = fileChunk{IDs: c.ids, Off: c.off, Data: c.data}
		}
		f.Targets = append(f.Targets, t)
	}
	if len(f.Targets) != len(x.targets) {
		return nil, errors.New("replay: the index holds a target the recording does not list")
	}
	return f, nil
}

// writeIndexFile writes the header (magic, key, length, checksum) and f.
func writeIndexFile(w io.Writer, f *fileIndex, key [32]byte) error {
	var payload bytes.Buffer
	if err := gob.NewEncoder(&payload).Encode(f); err != nil {
		return err
	}
	var hdr [indexHeaderLen]byte
	copy(hdr[:8], indexMagic[:])
	copy(hdr[8:40], key[:])
	binary.LittleEndian.PutUint64(hdr[40:48], uint64(payload.Len()))
	binary.LittleEndian.PutUint32(hdr[48:52], crc32.Checksum(payload.Bytes(), castagnoli))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := payload.WriteTo(w)
	return err
}

// IndexFileError says why an index file was refused.
type IndexFileError struct{ Reason string }

func (e *IndexFileError) Error() string { return e.Reason }

func refuse(format string, args ...any) error {
	return &IndexFileError{Reason: fmt.Sprintf(format, args...)}
}

// ReadIndex reads an index WriteIndex wrote under key from r, of size
// bytes, checks it against the recording and, when every check passes,
// makes it the player's seek index. Call it before BuildIndex (which
// then is not needed) and before any seek; an error (an
// *IndexFileError when the file was refused) leaves the player as it was.
func (p *Player) ReadIndex(r io.ReaderAt, size int64, key [32]byte) error {
	if size < indexHeaderLen {
		return refuse("truncated (%d bytes)", size)
	}
	var hdr [indexHeaderLen]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return err
	}
	if !bytes.Equal(hdr[:7], indexMagic[:7]) {
		return refuse("not a retrytop seek index")
	}
	if hdr[7] != IndexFileVersion {
		return refuse("index format version %d, not %d", hdr[7], IndexFileVersion)
	}
	if k := p.indexKey(key); !bytes.Equal(hdr[8:40], k[:]) {
		return refuse("made for another recording, dialects or store configuration")
	}
	n := binary.LittleEndian.Uint64(hdr[40:48])
	if n != uint64(size-indexHeaderLen) {
		return refuse("%d bytes of index, the header says %d (truncated or extended)", size-indexHeaderLen, n)
	}
	// The checksum first, over the whole payload, so that no byte is
	// decoded before it is known to be what was written.
	sum := crc32.New(castagnoli)
	if _, err := io.Copy(sum, io.NewSectionReader(r, indexHeaderLen, int64(n))); err != nil {
		return err
	}
	if sum.Sum32() != binary.LittleEndian.Uint32(hdr[48:52]) {
		return refuse("checksum mismatch (corrupt)")
	}
	var f fileIndex
	if err := gob.NewDecoder(bufio.NewReader(io.NewSectionReader(r, indexHeaderLen, int64(n)))).Decode(&f); err != nil {
		return refuse("undecodable: %v", err)
	}
	x, err := p.fromFile(&f)
	if err != nil {
		return err
	}
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

// fromFile checks f against the recording and builds the index from it.
// Every check guards a read a seek makes: an entry, a scrape index, a
// chunk's offsets, a column's bytes, a series' id.
func (p *Player) fromFile(f *fileIndex) (*index, error) {
	n := p.rec.Len()
	if f.Entries != n || len(f.Next) != n || len(f.Status) != n {
		return nil, refuse("%d entries, the recording has %d", f.Entries, n)
	}
	x := &index{done: n, next: f.Next, status: make([]model.TargetStatus, n), targets: map[string]*tlog{}}
	owner := make([]int32, n) // entry -> target + 1
	for ti := range f.Targets {
		t := &f.Targets[ti]
		if _, dup := x.targets[t.Name]; dup {
			return nil, refuse("target %q twice", t.Name)
		}
		scrapes := int64(len(t.Times))
		if len(t.Meta) != len(t.Times) {
			return nil, refuse("target %q: %d scrape records for %d scrapes", t.Name, len(t.Meta), len(t.Times))
		}
		if want := (scrapes + chunkLen - 1) / chunkLen; int64(len(t.Chunks)) != want {
			return nil, refuse("target %q: %d chunks for %d scrapes", t.Name, len(t.Chunks), scrapes)
		}
		prevNext := int64(0)
		for k, e := range t.Entries {
			if e < 0 || int(e) >= n || (k > 0 && e <= t.Entries[k-1]) || owner[e] != 0 || p.rec.Target(int(e)) != t.Name {
				return nil, refuse("target %q: entry %d is not one of its entries in order", t.Name, e)
			}
			owner[e] = int32(ti + 1)
			if nx := f.Next[e]; nx < prevNext || nx > scrapes {
				return nil, refuse("target %q: entry %d holds %d scrapes", t.Name, e, nx)
			} else {
				prevNext = nx
			}
		}
		l := &tlog{entries: t.Entries, times: t.Times, open: openChunk{first: int64(len(t.Chunks)) * chunkLen}}
		l.meta = make([]scrapeMeta, len(t.Meta))
		for k, m := range t.Meta {
			l.meta[k] = scrapeMeta{start: m.Start, dropped: m.Dropped, capped: m.Cap}
		}
		l.series = make([]seriesMeta, len(t.Series))
		for k, s := range t.Series {
			if s.Born < 0 || s.Born >= scrapes || (s.Died != -1 && (s.Died <= s.Born || s.Died > scrapes)) {
				return nil, refuse("target %q: series %d lives from scrape %d to %d of %d", t.Name, k, s.Born, s.Died, scrapes)
			}
			l.series[k] = seriesMeta{key: s.Key, name: s.Name, labels: s.Labels, typ: s.Type, extra: s.Extra,
				born: s.Born, died: s.Died, seed: s.Seed, pos: -1, seen: -1}
			x.bytes += int64(160 + len(s.Key) + len(s.Name))
		}
		l.chunks = make([]chunk, len(t.Chunks))
		for c := range t.Chunks {
			ch := &t.Chunks[c]
			if err := checkChunk(ch, len(t.Series)); err != nil {
				return nil, refuse("target %q, chunk %d: %v", t.Name, c, err)
			}
			// Every series alive in the chunk has its column there (history
			// reads it without looking).
			lo, hi := int64(c)*chunkLen, int64(c+1)*chunkLen
			j := 0
			for id := range l.series {
				s := &l.series[id]
				if s.born >= hi || (s.died >= 0 && s.died <= lo) {
					continue
				}
				for j < len(ch.IDs) && ch.IDs[j] < int32(id) {
					j++
				}
				if j == len(ch.IDs) || ch.IDs[j] != int32(id) {
					return nil, refuse("target %q, chunk %d: series %d has no column", t.Name, c, id)
				}
			}
			l.chunks[c] = chunk{ids: ch.IDs, off: ch.Off, data: ch.Data}
			x.bytes += int64(len(ch.Data) + 8*len(ch.IDs) + 64)
		}
		x.bytes += int64(len(t.Entries))*(4+8+200) + scrapes*(8+64)
		x.targets[t.Name] = l
	}
	lastOK := map[string]int{}
	for i := 0; i < n; i++ {
		if owner[i] == 0 {
			return nil, refuse("entry %d belongs to no target", i)
		}
		fs := &f.Status[i]
		target := p.rec.Target(i)
		if fs.S.Name != target {
			return nil, refuse("entry %d: the status of %q, not %q", i, fs.S.Name, target)
		}
		succ, ok := lastOK[target]
		if !ok {
			succ = -1
		}
		if fs.S.Up {
			succ = i
			lastOK[target] = i
		}
		if fs.LastSuccess != succ {
			return nil, refuse("entry %d: last success at entry %d, not %d", i, fs.LastSuccess, succ)
		}
		s := fs.S
		s.LastScrape, s.LastSuccess = p.rec.Time(i), timeAt(p, succ)
		x.status[i] = s
	}
	for i, msg := range f.Errs {
		if i < 0 || i >= n {
			return nil, refuse("an error at entry %d of %d", i, n)
		}
		if x.errs == nil {
			x.errs = map[int]error{}
		}
		x.errs[i] = errors.New(msg)
	}
	return x, nil
}

// timeAt is entry i's time, or the zero time for -1 (never).
func timeAt(p *Player, i int) time.Time {
	if i < 0 {
		return time.Time{}
	}
	return p.rec.Time(i)
}

// checkChunk checks a chunk's ids and offsets and that each column
// decodes within its bytes (decodeColumn does not check).
func checkChunk(ch *fileChunk, series int) error {
	if len(ch.Off) != len(ch.IDs)+1 || ch.Off[0] != 0 || int(ch.Off[len(ch.IDs)]) != len(ch.Data) {
		return errors.New("offsets do not match the columns")
	}
	for k, id := range ch.IDs {
		if id < 0 || int(id) >= series || (k > 0 && id <= ch.IDs[k-1]) {
			return errors.New("series ids out of order or range")
		}
		if ch.Off[k+1] < ch.Off[k] {
			return errors.New("offsets out of order")
		}
		if err := checkColumn(ch.Data[ch.Off[k]:ch.Off[k+1]]); err != nil {
			return errors.New("column " + strconv.Itoa(k) + ": " + err.Error())
		}
	}
	return nil
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
	case flags&colRaw != 0:
		if len(b) != 8*chunkLen {
			return errors.New("wrong length")
		}
	case flags&colSmall != 0:
		_, n := binary.Uvarint(b)
		if n <= 0 || len(b) != n+chunkLen-1 {
			return errors.New("wrong length")
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
