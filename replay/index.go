package replay

// The seek index: BuildIndex plays the whole recording once, in the
// background, into a store of the player's configuration, as playing from
// the start would, and logs what the store holds after every scrape in
// column form (per target, chunks of chunkLen scrapes, one compact column
// per series). A seek then restores the store at any entry with
// model.Store.Load, without parsing, translating or appending a scrape,
// and playback after it goes on from the log. What the log holds depends
// on the dialects in use (a config's custom mappings), so it is built by
// the player that uses them, never written by record.

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"runtime"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// chunkLen is the scrapes of a chunk: a series' presence in a chunk is
// one uint64.
const chunkLen = 64

// ErrIndexBudget is BuildIndex's error when the index reached its memory
// budget: seeks past what it holds work as without an index.
var ErrIndexBudget = errors.New("replay: the seek index reached its memory budget")

// index is the log BuildIndex writes and seeks read.
type index struct {
	mu      sync.RWMutex
	done    int   // entries [0, done) are logged
	bytes   int64 // what the log holds, roughly
	stopped bool  // BuildIndex gave up: the budget, or the recording could not be read
	started bool  // BuildIndex runs once
	next    []int64
	status  []model.TargetStatus
	errs    map[int]error // entries whose error is not a recorded failed scrape
	targets map[string]*tlog
}

// tlog is one target's log.
type tlog struct {
	entries []int32      // the target's entries, in order
	times   []int64      // by scrape index
	meta    []scrapeMeta // by scrape index
	series  []seriesMeta // by id, ids in birth order
	chunks  []chunk      // chunk c: scrape indices [c*chunkLen, (c+1)*chunkLen)
	open    openChunk    // the chunk being filled (not in chunks)
	// builder only
	alive map[string]int32 // key -> id of the series held now
	order []int32          // ids in the order of the newest export
}

type scrapeMeta struct {
	start   float64
	dropped int
	capped  model.SeriesCap
}

type seriesMeta struct {
	key, name string
	labels    model.Labels
	typ       model.MetricType
	extra     float64
	born      int64   // the scrape that created it
	died      int64   // the scrape that forgot it (-1: held)
	seed      float64 // its value at born-1: the 0 a new series is seeded with, or NaN
	pos       int32   // builder: its column in the open chunk (-1: none)
	seen      int64   // builder: the newest scrape that listed it
}

// chunk is sealed: ids ascending, column k at data[off[k]:off[k+1]].
type chunk struct {
	ids  []int32
	off  []uint32
	data []byte
}

// openChunk holds its columns raw.
type openChunk struct {
	first int64 // its first scrape index
	ids   []int32
	cols  []column
}

type column struct {
	v       [chunkLen]float64
	present uint64
}

// IndexProgress says how far the seek index reaches: entries [0, done) of
// total are indexed; stopped when BuildIndex gave up before the end (its
// memory budget, most likely).
func (p *Player) IndexProgress() (done, total int, stopped bool) {
	p.index.mu.RLock()
	defer p.index.mu.RUnlock()
	return p.index.done, p.rec.Len(), p.index.stopped
}

// IndexBytes is what the seek index holds, roughly.
func (p *Player) IndexBytes() int64 {
	p.index.mu.RLock()
	defer p.index.mu.RUnlock()
	return p.index.bytes
}

// indexBudget is Options.IndexMemory resolved (0: half the process'
// memory limit, the share watch gives to scrapes in flight, which a
// replay has none of; 512 MiB without a limit).
func indexBudget(opt int64) int64 {
	if opt != 0 {
		return opt
	}
	lim := debug.SetMemoryLimit(-1)
	if lim <= 0 || lim == math.MaxInt64 {
		lim = 512 << 20
	}
	return lim / 2
}

// BuildIndex plays the recording from its start into a store of its own,
// as the player would, and logs what the store holds after every entry,
// so that seeks restore it. Run it in a goroutine: it takes about what
// playing the whole recording costs. It stops when ctx ends or the index
// reaches its budget (ErrIndexBudget); seeks work with what it logged.
func (p *Player) BuildIndex(ctx context.Context) error {
	budget := indexBudget(p.opts.IndexMemory)
	if budget < 0 {
		return nil
	}
	p.index.mu.Lock()
	started := p.index.started
	p.index.started = true
	p.index.mu.Unlock()
	if started {
		return errors.New("replay: BuildIndex called twice")
	}
	rec, err := p.rec.Fork() // not to disturb the playback's decoding
	if err != nil {
		p.index.mu.Lock()
		p.index.stopped = true
		p.index.mu.Unlock()
		return err
	}
	defer rec.Close()
	n := rec.Len()
	st := model.NewStore(p.opts.Store)
	percent := 0
	statuses := make(map[string]*model.TargetStatus)
	var expBuf model.ExportBuffer // the newest two scrapes of each entry, one at a time
	var tf Transform
	if p.opts.NewTransform != nil {
		tf = p.opts.NewTransform()
	}
	var stop error
	dump.EachParsed(rec, 0, n, tf, func(e dump.Parsed) bool {
		i, target := e.Index, e.Target
		if i%loadChunk == 0 && ctx.Err() != nil {
			stop = ctx.Err()
			return false
		}
		ts := statuses[target]
		if ts == nil {
			ts = &model.TargetStatus{Name: target}
			statuses[target] = ts
		}
		var res model.AppendResult
		if e.Err == nil {
			res = st.Append(e.Snap)
		}
		updateStatus(ts, e.At, e.Snap, e.Err, res)
		var exp model.TargetHistory
		if e.Err == nil {
			// The newest scrape and the one before, which holds the
			// zero a new series is seeded with.
			// Into one buffer: scrape keeps the store's keys, names
			// and labels of it, never its slices.
			exp = st.ExportReuse(target, p.index.nextOf(target)-1, &expBuf)
		}
		if !p.index.add(i, target, *ts, e.Err, exp, budget) {
			p.notify()
			stop = ErrIndexBudget
			return false
		}
		if pc := 100 * (i + 1) / n; pc != percent {
			percent = pc
			p.notify() // the progress badge
		}
		return true
	})
	if stop != nil {
		return stop
	}
	p.index.finish()
	return nil
}

// updateStatus is what one entry does to its target's status, as the
// scraper reports it.
func updateStatus(ts *model.TargetStatus, at time.Time, snap *model.Snapshot, err error, res model.AppendResult) {
	ts.Scrapes++
	ts.LastScrape = at
	if err != nil {
		ts.Up = false
		ts.Failures++
		ts.LastError = safetext.Terminal(err.Error())
		return
	}
	ts.Up = true
	ts.LastError = ""
	ts.LastSuccess = at
	ts.Series = snap.SeriesCount()
	ts.DroppedSeries = res.Dropped
	ts.SeriesCap = nil
	if res.Dropped > 0 {
		c := res.Cap // which cap, and what the store kept (the banner)
		ts.SeriesCap = &c
	}
}

// add logs entry i (its target's status after it and, when it was
// appended, the store's export of the target from the scrape before the
// newest). It returns false at the budget.
func (x *index) add(i int, target string, ts model.TargetStatus, err error, exp model.TargetHistory, budget int64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.bytes > budget {
		x.stopped = true
		return false
	}
	if i != x.done {
		panic("replay: index entries out of order") // BuildIndex adds them in order
	}
	if x.targets == nil {
		x.targets = make(map[string]*tlog)
	}
	l := x.targets[target]
	if l == nil {
		l = &tlog{alive: make(map[string]int32)}
		x.targets[target] = l
	}
	l.entries = append(l.entries, int32(i))
	x.bytes += 4 + 8 + 200 // an entry, its next and its status
	if err != nil {
		if _, scrape := err.(*dump.ScrapeError); !scrape {
			if x.errs == nil {
				x.errs = make(map[int]error)
			}
			x.errs[i] = err
		}
	}
	x.status = append(x.status, ts)
	if exp.Next > int64(len(l.times)) {
		x.bytes += l.scrape(exp)
	}
	x.next = append(x.next, int64(len(l.times)))
	x.done++
	return true
}

// scrape logs the target's newest scrape from exp (its newest two
// scrapes) and returns the bytes it added.
func (l *tlog) scrape(exp model.TargetHistory) int64 {
	idx := exp.Next - 1
	k := len(exp.Times) - 1
	var added int64
	if idx >= l.open.first+chunkLen {
		added += l.seal()
	}
	l.times = append(l.times, exp.Times[k])
	l.meta = append(l.meta, scrapeMeta{start: exp.Start, dropped: exp.Dropped, capped: exp.Cap})
	added += 8 + 64
	slot := int(idx - l.open.first)
	for j := range exp.Series {
		sh := &exp.Series[j]
		var id int32 = -1
		// The same series at the same place as at the previous scrape
		// costs no map lookup (the store keeps a target's order).
		if j < len(l.order) {
			if c := l.order[j]; c >= 0 && l.series[c].died < 0 && l.series[c].key == sh.Key {
				id = c
			}
		}
		if id < 0 {
			if c, ok := l.alive[sh.Key]; ok {
				id = c
			} else {
				id = int32(len(l.series))
				seed := math.NaN()
				if k > 0 {
					seed = sh.Values[k-1]
				}
				l.series = append(l.series, seriesMeta{key: sh.Key, name: sh.Name, labels: sh.Labels, typ: sh.Type,
					extra: sh.Extra, born: idx, died: -1, seed: seed, pos: -1})
				l.alive[sh.Key] = id
				added += int64(160 + len(sh.Key) + len(sh.Name))
			}
		}
		if j < len(l.order) {
			l.order[j] = id
		} else {
			l.order = append(l.order, id)
		}
		m := &l.series[id]
		m.seen = idx
		if m.pos < 0 {
			added += int64(binary.Size(column{}))
			m.pos = int32(len(l.open.ids))
			l.open.ids = append(l.open.ids, id)
			l.open.cols = append(l.open.cols, column{})
			c := &l.open.cols[m.pos]
			for s := range c.v {
				c.v[s] = math.NaN()
			}
		}
		c := &l.open.cols[m.pos]
		c.v[slot] = sh.Values[k]
		if sh.LastSeen == idx {
			c.present |= 1 << slot
		}
	}
	l.order = l.order[:len(exp.Series)]
	if len(l.alive) > len(exp.Series) {
		// Some series were forgotten by this scrape.
		for key, id := range l.alive {
			if l.series[id].seen != idx {
				l.series[id].died = idx
				delete(l.alive, key)
			}
		}
	}
	return added
}

// seal encodes the open chunk and starts the next; it returns the bytes
// the encoded chunk holds.
func (l *tlog) seal() int64 {
	o := &l.open
	ord := make([]int, len(o.ids))
	for k := range ord {
		ord[k] = k
	}
	sort.Slice(ord, func(a, b int) bool { return o.ids[ord[a]] < o.ids[ord[b]] })
	c := chunk{ids: make([]int32, len(ord)), off: make([]uint32, len(ord)+1)}
	for k, at := range ord {
		c.ids[k] = o.ids[at]
		c.data = encodeColumn(c.data, &o.cols[at])
		c.off[k+1] = uint32(len(c.data))
		l.series[o.ids[at]].pos = -1
	}
	c.data = append([]byte(nil), c.data...) // no slack kept
	l.chunks = append(l.chunks, c)
	open := len(o.cols) * binary.Size(column{}) // counted when the columns were opened
	*o = openChunk{first: o.first + chunkLen, ids: o.ids[:0], cols: o.cols[:0]}
	return int64(len(c.data)+8*len(c.ids)+64) - int64(open)
}

// Column encoding: a flags byte, the presence bits when they are not
// "not NaN", then the values: integers (the usual counter) as zigzag
// varints of the difference from the previous number plus one, 0 for NaN;
// otherwise (colRaw) as zigzag varints of the difference between each
// value's IEEE bits and the previous slot's (the first from 0), every bit
// kept: a growing sum of fractions (a histogram's _sum) moves by a
// number of ulps far smaller than its 8 bytes (5 bytes a value on the
// 1-hour dump's sums, where 8 took 19 MB of a 36 MB file compressed).
const (
	colRaw      = 1
	colPresence = 2
	colSmall    = 4 // integers, none NaN, every difference after the first one byte: decoded without branches
	colF32      = 8 // every value exact as a float32
)

func encodeColumn(dst []byte, c *column) []byte {
	var notNaN uint64
	integral, f32 := true, true
	for s, v := range c.v {
		if v == v {
			notNaN |= 1 << s
			f32 = f32 && float64(float32(v)) == v
			if v != math.Trunc(v) || math.Abs(v) > 1<<53 || (v == 0 && math.Signbit(v)) {
				integral = false
			}
		}
	}
	var flags byte
	if !integral {
		flags |= colRaw
	}
	if c.present != notNaN {
		flags |= colPresence
	}
	if f32 {
		flags |= colF32
	}
	dst = append(dst, flags)
	if flags&colPresence != 0 {
		dst = binary.LittleEndian.AppendUint64(dst, c.present)
	}
	if !integral {
		var prev int64
		for _, v := range c.v {
			b := int64(math.Float64bits(v))
			d := b - prev
			prev = b
			dst = binary.AppendUvarint(dst, uint64(d<<1^d>>63))
		}
		return dst
	}
	at := len(dst) - 1
	small := notNaN == ^uint64(0)
	var prev int64
	for k, v := range c.v {
		if v != v {
			dst = append(dst, 0)
			continue
		}
		d := int64(v) - prev
		prev = int64(v)
		u := uint64(d<<1^d>>63) + 1
		small = small && (k == 0 || u < 0x80)
		dst = binary.AppendUvarint(dst, u)
	}
	if small {
		dst[at] |= colSmall
	}
	return dst
}

// decodeColumn writes the values of slots [lo, hi) into out[:hi-lo] and
// returns the presence bits.
func decodeColumn[F float32 | float64](b []byte, lo, hi int, out []F) uint64 {
	flags := b[0]
	b = b[1:]
	var present uint64
	if flags&colPresence != 0 {
		present = binary.LittleEndian.Uint64(b)
		b = b[8:]
	}
	var notNaN uint64
	if flags&colRaw != 0 {
		var prev int64
		for s := 0; s < hi; s++ {
			u, n := binary.Uvarint(b)
			b = b[n:]
			prev += int64(u>>1) ^ -int64(u&1)
			if s < lo {
				continue
			}
			v := math.Float64frombits(uint64(prev))
			out[s-lo] = F(v)
			if v == v {
				notNaN |= 1 << s
			}
		}
		// Slots outside [lo, hi) do not matter to the caller's presence.
	} else if flags&colSmall != 0 {
		u, n := binary.Uvarint(b) // the first value, whole
		u--
		prev := int64(u>>1) ^ -int64(u&1)
		b = b[n-1 : n-1+hi] // b[s] is slot s's byte, s >= 1
		for s := 1; s < lo; s++ {
			u := uint64(b[s]) - 1
			prev += int64(u>>1) ^ -int64(u&1)
		}
		out = out[:hi-lo]
		if lo == 0 {
			out[0] = F(prev)
		}
		for s := max(lo, 1); s < hi; s++ {
			u := uint64(b[s]) - 1
			prev += int64(u>>1) ^ -int64(u&1)
			out[s-lo] = F(prev)
		}
		notNaN = ^uint64(0)
	} else {
		var prev int64
		i := 0
		for s := 0; s < hi; s++ {
			u := uint64(b[i])
			i++
			if u >= 0x80 { // a difference of more than 6 bits
				var n int
				u, n = binary.Uvarint(b[i-1:])
				i += n - 1
			}
			if u == 0 {
				if s >= lo {
					out[s-lo] = F(math.NaN())
				}
				continue
			}
			u--
			prev += int64(u>>1) ^ -int64(u&1)
			notNaN |= 1 << s
			if s >= lo {
				out[s-lo] = F(prev)
			}
		}
	}
	if flags&colPresence == 0 {
		present = notNaN
	}
	return present
}

// nextOf is the scrapes logged for target.
func (x *index) nextOf(target string) int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if l := x.targets[target]; l != nil {
		return int64(len(l.times))
	}
	return 0
}

// covers reports whether entries [0, end) are indexed.
func (x *index) covers(end int) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return end <= x.done
}

// lastOf returns the target's last entry before end (-1: none).
func (l *tlog) lastOf(end int) int {
	k := sort.Search(len(l.entries), func(k int) bool { return int(l.entries[k]) >= end })
	if k == 0 {
		return -1
	}
	return int(l.entries[k-1])
}

// history is the target's history of scrapes [from, next) and the series
// it held after scrape next-1, for model.Store.Load (under x.mu).
// The values live in buf, which the caller may reuse once Load is done.
// A series whose every value is exact as float32 (the usual counter) gets
// them as float32, the store's own form.
func (l *tlog) history(from, next int64, buf *histBuf) model.TargetHistory {
	idx := next - 1
	n := int(next - from)
	h := model.TargetHistory{Times: append([]int64(nil), l.times[from:next]...), Next: next}
	m := l.meta[idx]
	h.Start, h.Dropped, h.Cap = m.start, m.dropped, m.capped
	var alive []int32
	for id := range l.series {
		s := &l.series[id]
		if s.born <= idx && (s.died < 0 || s.died > idx) {
			alive = append(alive, int32(id))
		}
	}
	lo := max(from, 0)
	// Which series are float32 throughout: every column's flag (the open
	// chunk's values are looked at).
	is32 := make([]bool, len(alive))
	for k := range is32 {
		is32[k] = true
	}
	l.eachColumn(alive, lo, next, func(k int, first int64, s0, s1 int, enc []byte, open *column) {
		if !is32[k] {
			return
		}
		if enc != nil {
			is32[k] = enc[0]&colF32 != 0
			return
		}
		for _, v := range open.v[s0:s1] {
			if float64(float32(v)) != v && v == v {
				is32[k] = false
				return
			}
		}
	})
	n32 := 0
	for _, ok := range is32 {
		if ok {
			n32++
		}
	}
	buf.f32 = grow(buf.f32, n*n32)
	buf.f64 = grow(buf.f64, n*(len(alive)-n32))
	h.Series = make([]model.SeriesHistory, len(alive))
	o32, o64 := 0, 0
	for k, id := range alive {
		s := &l.series[id]
		h.Series[k] = model.SeriesHistory{Key: s.key, Name: s.name, Labels: s.labels, Type: s.typ, Extra: s.extra, LastSeen: -1}
		// The chunks hold every scrape from the chunk of its birth on;
		// before that it was absent.
		pre := max(0, min(int64(n), (s.born/chunkLen)*chunkLen-from))
		if is32[k] {
			vals := buf.f32[o32 : o32+n : o32+n]
			o32 += n
			nanFill(vals[:pre], s, from)
			h.Series[k].Values32 = vals
		} else {
			vals := buf.f64[o64 : o64+n : o64+n]
			o64 += n
			nanFill(vals[:pre], s, from)
			h.Series[k].Values = vals
		}
	}
	l.eachColumn(alive, lo, next, func(k int, first int64, s0, s1 int, enc []byte, open *column) {
		sh := &h.Series[k]
		m := &l.series[alive[k]]
		at := first + int64(s0) - from
		var present uint64
		if sh.Values32 != nil {
			out := sh.Values32[at:]
			if enc != nil {
				present = decodeColumn(enc, s0, s1, out)
			} else {
				for s := s0; s < s1; s++ {
					out[s-s0] = float32(open.v[s])
				}
				present = open.present
			}
			fillFrom(sh, m, first, s0, s1, present, out)
			return
		}
		out := sh.Values[at:]
		if enc != nil {
			present = decodeColumn(enc, s0, s1, out)
		} else {
			copy(out[:s1-s0], open.v[s0:s1])
			present = open.present
		}
		fillFrom(sh, m, first, s0, s1, present, out)
	})
	for k, id := range alive {
		if h.Series[k].LastSeen < 0 {
			// Seen before from: its newest value is older than the
			// scrapes asked for.
			h.Series[k].LastSeen = l.lastSeen(id, from)
		}
	}
	return h
}

// histBufs keep the restores' buffers from one seek to the next.
var histBufs sync.Pool // *histBuf

// histBuf holds a history's values between restores.
type histBuf struct {
	f64 []float64
	f32 []float32
}

func grow[F float32 | float64](b []F, n int) []F {
	if cap(b) < n {
		return make([]F, n)
	}
	return b[:n]
}

// nanFill sets vals (the scrapes from `from` before the chunk of the
// series' birth) absent, and the seed at born-1 when it is among them.
func nanFill[F float32 | float64](vals []F, s *seriesMeta, from int64) {
	for i := range vals {
		vals[i] = F(math.NaN())
	}
	if at := s.born - 1 - from; at >= 0 && at < int64(len(vals)) {
		vals[at] = F(s.seed)
	}
}

// eachColumn calls fn for every column of the alive series (ids
// ascending; k is the position in alive) in the chunks of scrapes
// [lo, next): enc is a sealed chunk's encoded column, open the open
// chunk's; s0, s1 the slots asked for within the chunk that starts at
// scrape first.
func (l *tlog) eachColumn(alive []int32, lo, next int64, fn func(k int, first int64, s0, s1 int, enc []byte, open *column)) {
	for c := lo / chunkLen; c*chunkLen < next; c++ {
		first := c * chunkLen
		s0, s1 := int(max(lo, first)-first), int(min(next, first+chunkLen)-first)
		if int(c) < len(l.chunks) {
			ch := &l.chunks[c]
			j := 0
			for k, id := range alive {
				for j < len(ch.ids) && ch.ids[j] < id {
					j++
				}
				if j == len(ch.ids) {
					break
				}
				if ch.ids[j] == id {
					fn(k, first, s0, s1, ch.data[ch.off[j]:ch.off[j+1]], nil)
				}
			}
			continue
		}
		for k, id := range alive {
			if pos := l.series[id].pos; pos >= 0 {
				fn(k, first, s0, s1, nil, &l.open.cols[pos])
			}
		}
	}
}

// fillFrom puts back what a column holds as absent before the series
// was born (NaN, and the seed at born-1) and notes the newest scrape that
// listed it.
func fillFrom[F float32 | float64](sh *model.SeriesHistory, m *seriesMeta, first int64, s0, s1 int, present uint64, out []F) {
	for s := s0; s < s1 && first+int64(s) < m.born; s++ {
		out[s-s0] = F(math.NaN())
		if first+int64(s) == m.born-1 {
			out[s-s0] = F(m.seed)
		}
	}
	if m := present & (1<<s1 - 1) &^ (1<<s0 - 1); m != 0 {
		sh.LastSeen = first + int64(63-bits.LeadingZeros64(m))
	}
}

// lastSeen is the newest scrape before `before` that listed series id
// (its birth at least).
func (l *tlog) lastSeen(id int32, before int64) int64 {
	born := l.series[id].born
	for c := (before - 1) / chunkLen; c >= born/chunkLen && c >= 0; c-- {
		first := c * chunkLen
		s1 := int(min(before, first+chunkLen) - first)
		var present uint64
		if int(c) < len(l.chunks) {
			ch := &l.chunks[c]
			j := sort.Search(len(ch.ids), func(j int) bool { return ch.ids[j] >= id })
			if j == len(ch.ids) || ch.ids[j] != id {
				continue
			}
			var tmp [chunkLen]float64
			present = decodeColumn(ch.data[ch.off[j]:ch.off[j+1]], 0, s1, tmp[:])
		} else if pos := l.series[id].pos; pos >= 0 {
			present = l.open.cols[pos].present
		}
		if m := present & (1<<s1 - 1); m != 0 {
			return first + int64(63-bits.LeadingZeros64(m))
		}
	}
	return born
}

// restore builds the store and the statuses that playing entries [0, end)
// from the start builds; ok is false when the index does not reach end.
// tnext gets each stored target's scrape count.
func (x *index) restore(end int, cfg model.StoreConfig, targets []string) (st *model.Store, statuses map[string]*model.TargetStatus, tnext map[string]int64, lastErr error, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if end > x.done {
		return nil, nil, nil, nil, false
	}
	st = model.NewStore(cfg)
	hist := int64(st.Config().History)
	statuses = make(map[string]*model.TargetStatus)
	for _, t := range targets {
		statuses[t] = &model.TargetStatus{Name: t}
	}
	tnext = make(map[string]int64)
	type job struct {
		target string
		l      *tlog
		next   int64
	}
	var jobs []job
	for target, l := range x.targets {
		e := l.lastOf(end)
		if e < 0 {
			continue
		}
		ts := x.status[e]
		statuses[target] = &ts
		if next := x.next[e]; next > 0 {
			jobs = append(jobs, job{target, l, next})
			tnext[target] = next
		}
	}
	// Decoding runs on all cores; Load takes the store's lock.
	var wg sync.WaitGroup
	var failed sync.Once
	ok = true
	workers := max(runtime.GOMAXPROCS(0), 1)
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			buf, _ := histBufs.Get().(*histBuf)
			if buf == nil {
				buf = new(histBuf)
			}
			defer histBufs.Put(buf)
			for k := w; k < len(jobs); k += workers {
				j := jobs[k]
				if err := st.Load(j.target, j.l.history(max(0, j.next-hist), j.next, buf)); err != nil {
					failed.Do(func() { ok = false })
				}
			}
		})
	}
	wg.Wait()
	if !ok {
		return nil, nil, nil, nil, false
	}
	return st, statuses, tnext, x.newestErr(0, end), true
}

// newestErr is the error of the newest entry in [from, end) that had one
// that was not a recorded failed scrape (nil: none).
func (x *index) newestErr(from, end int) error {
	best := -1
	var out error
	for i, err := range x.errs {
		if i >= from && i < end && i > best {
			best, out = i, err
		}
	}
	return out
}

// forward brings st from entries [0, from) to [0, end): each target that
// has entries in between gets its new scrapes loaded (from its scrape
// before them, which holds the zero a new series is seeded with) and its
// status. ok is false when the index does not reach end or a load does
// not fit (the caller restores instead).
func (x *index) forward(from, end int, rec dump.Recording, st *model.Store, statuses map[string]model.TargetStatus, tnext map[string]int64) (lastErr error, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if end > x.done {
		return nil, false
	}
	hist := int64(st.Config().History)
	seen := map[string]bool{}
	for i := end - 1; i >= from; i-- {
		target := rec.Target(i)
		if seen[target] {
			continue
		}
		seen[target] = true
		l := x.targets[target]
		statuses[target] = x.status[i]
		next, held := x.next[i], tnext[target]
		if next == held {
			continue
		}
		lo := max(held-1, 0, next-hist)
		if held == 0 {
			lo = max(0, next-hist)
		}
		var buf histBuf
		if err := st.Load(target, l.history(lo, next, &buf)); err != nil {
			return nil, false
		}
		tnext[target] = next
	}
	return x.newestErr(from, end), true
}
