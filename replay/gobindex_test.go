package replay

// The seek index file's format before round 5 (a gob of these mirrors),
// kept only as the anchor of BenchmarkReopenSeek: the product neither
// writes nor reads it (its cache files carry another version and name).

import (
	"bufio"
	"bytes"
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

const gobIndexVersion = 1

var gobMagic = [8]byte{'R', 'T', 'I', 'D', 'X', 0, 0, gobIndexVersion}

func gobRefuse(format string, args ...any) error {
	return fmt.Errorf(format, args...)
}

// gobIndex is the index as written: exported mirrors of index and tlog
// (the builder's own state is not kept; the open chunk is sealed first).
type gobIndex struct {
	Entries int
	Next    []int64
	Status  []gobStatus
	Errs    map[int]string
	Targets []gobTarget
}

// gobStatus is a TargetStatus whose times are entries of the recording
// (the status after entry i was scraped at entry i; its last success is
// an earlier entry, or -1), so they come back exactly as the recording
// gives them.
type gobStatus struct {
	S           model.TargetStatus
	LastSuccess int
}

type gobTarget struct {
	Name    string
	Entries []int32
	Times   []int64
	Meta    []gobMeta
	Series  []gobSeries
	Chunks  []gobChunk
}

type gobMeta struct {
	Start   float64
	Dropped int
	Cap     model.SeriesCap
}

type gobSeries struct {
	Key, Name  string
	Labels     model.Labels
	Type       model.MetricType
	Extra      float64
	Born, Died int64
	Seed       float64
}

type gobChunk struct {
	IDs  []int32
	Off  []uint32
	Data []byte
}

// gobIndex is the index as written (under p.index.mu); it shares the
// index's slices.
func (p *Player) gobIndexOf() (*gobIndex, error) {
	x := &p.index
	n := p.rec.Len()
	if x.done != n || x.stopped {
		return nil, ErrIndexNotDone
	}
	f := &gobIndex{Entries: n, Next: x.next, Errs: map[int]string{}}
	for i, err := range x.errs {
		f.Errs[i] = err.Error()
	}
	lastOK := map[string]int{}
	f.Status = make([]gobStatus, n)
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
		f.Status[i] = gobStatus{S: s, LastSuccess: succ}
	}
	for _, name := range p.rec.Targets() {
		l := x.targets[name]
		if l == nil {
			continue
		}
		if int64(len(l.times)) > l.open.first {
			return nil, ErrIndexNotDone // not finished: its open chunk is not sealed
		}
		t := gobTarget{Name: name, Entries: l.entries, Times: l.times}
		t.Meta = make([]gobMeta, len(l.meta))
		for k, m := range l.meta {
			t.Meta[k] = gobMeta{Start: m.start, Dropped: m.dropped, Cap: m.capped}
		}
		t.Series = make([]gobSeries, len(l.series))
		for k, s := range l.series {
			t.Series[k] = gobSeries{Key: s.key, Name: s.name, Labels: s.labels, Type: s.typ, Extra: s.extra, Born: s.born, Died: s.died, Seed: s.seed}
		}
		t.Chunks = make([]gobChunk, len(l.chunks))
		for k, c := range l.chunks {
			t.Chunks[k] = gobChunk{IDs: c.ids, Off: c.off, Data: c.data}
		}
		f.Targets = append(f.Targets, t)
	}
	if len(f.Targets) != len(x.targets) {
		return nil, errors.New("replay: the index holds a target the recording does not list")
	}
	return f, nil
}

// writeGobFile writes the header (magic, key, length, checksum) and f.
func writeGobFile(w io.Writer, f *gobIndex, key [32]byte) error {
	var payload bytes.Buffer
	if err := gob.NewEncoder(&payload).Encode(f); err != nil {
		return err
	}
	var hdr [indexHeaderLen]byte
	copy(hdr[:8], gobMagic[:])
	copy(hdr[8:40], key[:])
	binary.LittleEndian.PutUint64(hdr[40:48], uint64(payload.Len()))
	binary.LittleEndian.PutUint32(hdr[48:52], crc32.Checksum(payload.Bytes(), castagnoli))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := payload.WriteTo(w)
	return err
}

// ReadIndex reads an index WriteIndex wrote under key from r, of size
// bytes, checks it against the recording and, when every check passes,
// makes it the player's seek index. Call it before BuildIndex (which
// then is not needed) and before any seek; an error (an
// *IndexFileError when the file was refused) leaves the player as it was.
func (p *Player) readGobIndex(r io.ReaderAt, size int64, key [32]byte) error {
	if size < indexHeaderLen {
		return gobRefuse("truncated (%d bytes)", size)
	}
	var hdr [indexHeaderLen]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return err
	}
	if !bytes.Equal(hdr[:7], gobMagic[:7]) {
		return gobRefuse("not a retrytop seek index")
	}
	if hdr[7] != gobIndexVersion {
		return gobRefuse("index format version %d, not %d", hdr[7], gobIndexVersion)
	}
	if k := p.indexKey(key); !bytes.Equal(hdr[8:40], k[:]) {
		return gobRefuse("made for another recording, dialects or store configuration")
	}
	n := binary.LittleEndian.Uint64(hdr[40:48])
	if n != uint64(size-indexHeaderLen) {
		return gobRefuse("%d bytes of index, the header says %d (truncated or extended)", size-indexHeaderLen, n)
	}
	// The checksum first, over the whole payload, so that no byte is
	// decoded before it is known to be what was written.
	sum := crc32.New(castagnoli)
	if _, err := io.Copy(sum, io.NewSectionReader(r, indexHeaderLen, int64(n))); err != nil {
		return err
	}
	if sum.Sum32() != binary.LittleEndian.Uint32(hdr[48:52]) {
		return gobRefuse("checksum mismatch (corrupt)")
	}
	var f gobIndex
	if err := gob.NewDecoder(bufio.NewReader(io.NewSectionReader(r, indexHeaderLen, int64(n)))).Decode(&f); err != nil {
		return gobRefuse("undecodable: %v", err)
	}
	x, err := p.fromGob(&f)
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

// fromGob checks f against the recording and builds the index from it.
// Every check guards a read a seek makes: an entry, a scrape index, a
// chunk's offsets, a column's bytes, a series' id.
func (p *Player) fromGob(f *gobIndex) (*index, error) {
	n := p.rec.Len()
	if f.Entries != n || len(f.Next) != n || len(f.Status) != n {
		return nil, gobRefuse("%d entries, the recording has %d", f.Entries, n)
	}
	x := &index{done: n, next: f.Next, status: make([]model.TargetStatus, n), targets: map[string]*tlog{}}
	owner := make([]int32, n) // entry -> target + 1
	for ti := range f.Targets {
		t := &f.Targets[ti]
		if _, dup := x.targets[t.Name]; dup {
			return nil, gobRefuse("target %q twice", t.Name)
		}
		scrapes := int64(len(t.Times))
		if len(t.Meta) != len(t.Times) {
			return nil, gobRefuse("target %q: %d scrape records for %d scrapes", t.Name, len(t.Meta), len(t.Times))
		}
		if want := (scrapes + chunkLen - 1) / chunkLen; int64(len(t.Chunks)) != want {
			return nil, gobRefuse("target %q: %d chunks for %d scrapes", t.Name, len(t.Chunks), scrapes)
		}
		prevNext := int64(0)
		for k, e := range t.Entries {
			if e < 0 || int(e) >= n || (k > 0 && e <= t.Entries[k-1]) || owner[e] != 0 || p.rec.Target(int(e)) != t.Name {
				return nil, gobRefuse("target %q: entry %d is not one of its entries in order", t.Name, e)
			}
			owner[e] = int32(ti + 1)
			if nx := f.Next[e]; nx < prevNext || nx > scrapes {
				return nil, gobRefuse("target %q: entry %d holds %d scrapes", t.Name, e, nx)
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
				return nil, gobRefuse("target %q: series %d lives from scrape %d to %d of %d", t.Name, k, s.Born, s.Died, scrapes)
			}
			l.series[k] = seriesMeta{key: s.Key, name: s.Name, labels: s.Labels, typ: s.Type, extra: s.Extra,
				born: s.Born, died: s.Died, seed: s.Seed, pos: -1, seen: -1}
			x.bytes += int64(160 + len(s.Key) + len(s.Name))
		}
		l.chunks = make([]chunk, len(t.Chunks))
		for c := range t.Chunks {
			ch := &t.Chunks[c]
			if err := gobCheckChunk(ch, len(t.Series)); err != nil {
				return nil, gobRefuse("target %q, chunk %d: %v", t.Name, c, err)
			}
			if id := missingColumn(l.series, ch.IDs, c); id >= 0 {
				return nil, gobRefuse("target %q, chunk %d: series %d has no column", t.Name, c, id)
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
			return nil, gobRefuse("entry %d belongs to no target", i)
		}
		fs := &f.Status[i]
		target := p.rec.Target(i)
		if fs.S.Name != target {
			return nil, gobRefuse("entry %d: the status of %q, not %q", i, fs.S.Name, target)
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
			return nil, gobRefuse("entry %d: last success at entry %d, not %d", i, fs.LastSuccess, succ)
		}
		s := fs.S
		s.LastScrape, s.LastSuccess = p.rec.Time(i), timeAt(p, succ)
		x.status[i] = s
	}
	for i, msg := range f.Errs {
		if i < 0 || i >= n {
			return nil, gobRefuse("an error at entry %d of %d", i, n)
		}
		if x.errs == nil {
			x.errs = map[int]error{}
		}
		x.errs[i] = errors.New(msg)
	}
	return x, nil
}

// gobCheckChunk checks a chunk's ids and offsets and that each column
// decodes within its bytes (decodeColumn does not check).
func gobCheckChunk(ch *gobChunk, series int) error {
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
