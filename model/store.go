package model

import (
	"math"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"
)

// Point is one value of a flat series at a scrape time (Unix milliseconds).
type Point struct {
	T int64
	V float64
}

// Series is a copy of one flat series' retained history, oldest first.
// Scrapes at which the series was absent are left out, so a gap in Points is
// a gap in the data, never a zero.
type Series struct {
	Target string
	Name   string
	Labels Labels
	Type   MetricType
	Points []Point
	// Stale is true when the newest scrape of the target did not contain
	// the series: it disappeared (a restart, a removed dependency).
	Stale bool
}

// StoreConfig bounds a Store.
type StoreConfig struct {
	// History is the number of scrapes kept per target (default 900:
	// 15 minutes at 1 s).
	History int
	// MaxSeriesPerTarget caps distinct flat series per target (default
	// 20,000). Series beyond it are dropped and counted, never stored.
	MaxSeriesPerTarget int
	// MaxSeries caps distinct flat series across all targets: the store
	// never takes a new series while it holds this many. 0: the cap
	// follows MaxBytes. Series beyond it are dropped and counted like
	// those over MaxSeriesPerTarget.
	MaxSeries int
	// MaxBytes is the store's memory budget when MaxSeries is 0 (0:
	// DefaultMaxBytes of the process' memory limit, which --memory-limit
	// sets). The total cap is then what the budget holds at what a
	// series costs over the whole history: SeriesBytes until a chunk is
	// sealed, then what the sealed chunks measure (docs/limits.md), never
	// below MaxSeriesPerTarget.
	MaxBytes int64
	// FirstValueIsBaseline turns off reading a new series' first value as
	// an increase from 0 (see Append): Prometheus' own rule, for sources
	// that already account for it.
	FirstValueIsBaseline bool
	// KeepSeries keeps a series that was absent for the whole retained
	// history instead of forgetting it: a store that holds a bounded
	// window of a whole recording (analysis.WholeBuilder) then keeps the
	// identity, the total cap's count and the restart rule of a store that
	// holds it all. Its values outside the history are still gone.
	KeepSeries bool
	// Unsealed keeps every chunk of history as float32 and float64
	// values instead of sealing (compressing) those the scrapes have
	// moved past: for a short history each of whose values is written
	// once and read back once (analysis.WholeBuilder), where sealing and
	// opening again cost more CPU than the memory they save. A series
	// then holds History*4 bytes, History*8 once a value is not exact as
	// float32.
	Unsealed bool
}

// DefaultStoreConfig is 15 minutes at 1 s and 20,000 series per target;
// the total cap follows the memory budget (DefaultMaxBytes).
var DefaultStoreConfig = StoreConfig{History: 900, MaxSeriesPerTarget: 20000}

// Store keeps bounded history for many targets: per target, a ring of scrape
// times and, per series, a ring of values aligned with it. Memory per series
// is at most History*4 bytes while its values are exact as float32 (about a
// byte a value of a steady counter once its chunks are sealed; History*8
// from the first value that is not) plus its identity.
// It is safe for concurrent use.
type Store struct {
	mu      sync.RWMutex
	cfg     StoreConfig
	targets map[string]*targetHistory
	total   int // series held across targets
	// maxSeries is the total cap now: cfg.MaxSeries, or what budget
	// holds at the measured cost (updateCap).
	maxSeries int
	budget    int64 // bytes; 0 when cfg.MaxSeries is fixed
	// mem sums the targets' measures (targetHistory.mem); ident the
	// held series' identities (storedSeries.identBytes).
	mem     memMeasure
	ident   int64
	dropped int // series refused at the targets' newest scrapes
	// noSeriesCache makes every series a key lookup: the reference the
	// cache's tests compare against.
	noSeriesCache bool
	// noWalkBound makes SelectSince walk back from the range's start
	// instead of from the series' last scrape: the reference its tests
	// compare against.
	noWalkBound bool
	// noTiles gives every series a ring of its own instead of a tile
	// column: the reference the tiles' tests compare against.
	noTiles bool
	// noExportOrder makes Export find the series by the series map even
	// when the series cache lists them exactly: the reference its tests
	// compare against.
	noExportOrder bool
	// ret says who holds the store and whether it was retired
	// (store_retire.go).
	ret retirement
}

type targetHistory struct {
	times  []int64 // ring of scrape times
	next   int64   // index of the next scrape (monotonic); slot = idx % len(times)
	series map[string]*storedSeries
	// byName lists each name's series sorted by key (selectSince's
	// order), once Append or Load has returned; unsorted names the lists
	// a series was added to out of order or removed from since.
	byName   map[string][]*storedSeries
	unsorted []string
	dropped  int // series refused by the caps at the newest scrape
	// capped says what the caps refused at the newest scrape (zero: none).
	capped SeriesCap
	keyBuf []byte
	// start is the target's process start time at its newest scrape that
	// had one (0: never seen).
	start float64
	fresh []freshSeries // reused by Append while small
	// mem is what the target's values held when a chunk was last sealed.
	mem memMeasure
	// tiles hold the float32 rings of the target's series (ring).
	tiles []*ringTiles
	// orderExact says that order lists every series given a value at the
	// newest scrape once and no other, and stale the other series held:
	// Append sets it, Load (which clears order) unsets it. Export then
	// walks the two instead of the series map.
	orderExact bool
	stale      []*storedSeries
	// order is the series cache (Prometheus' scrape cache, by position):
	// order[i] says where the i-th flat series of the previous scrape
	// went: a stored series, or a refusal by the caps. A target exposes
	// the same series in the same order scrape after scrape, so Append
	// first checks the entry at the same position field by field, which
	// costs no hash and no key, and looks the key up only when that check
	// fails (a series appeared, left or moved).
	order []cacheSlot
}

// cacheSlot is the series cache's entry for one flat position.
type cacheSlot struct {
	ss *storedSeries // the series stored from here; nil when refused or none
	// rs, when ss is nil, is the sample the caps refused here: shared by
	// the flat series of one sample (a histogram's buckets, _count and
	// _sum), so that on a target over its cap the labels are compared
	// once a sample, not once a flat series, and then by pointer.
	rs *sampleID
	// extraVal and sfx are the refused flat series' le or quantile (as
	// bits: -0 and 0 are two keys) and suffix.
	extraBits uint64
	sfx       uint8
}

// sampleID is the identity of a sample: with a flat series' suffix and
// extra value it determines the series' key (flatRef.appendKey). Stored
// series made from the sample at once share it (storedSeries.sid), and so
// do the flat series of a sample the caps refused (cacheSlot.rs).
type sampleID struct {
	fam    string
	typ    MetricType
	labels Labels // the sample's, copied: the store's own, never written
}

// sameSample reports whether r's family and sample labels are rs's.
func (rs *sampleID) sameSample(r *flatRef) bool {
	if rs.typ != r.fam.Type || !sameString(rs.fam, r.fam.Name) || len(rs.labels) != len(r.sample.Labels) {
		return false
	}
	for i, l := range r.sample.Labels {
		if !sameString(rs.labels[i].Name, l.Name) || !sameString(rs.labels[i].Value, l.Value) {
			return false
		}
	}
	return true
}

// freshSeries is a series first seen at the scrape being appended.
type freshSeries struct {
	ss     *storedSeries
	sample *Sample
	suffix string // "", "_bucket", "_count" or "_sum"
	typ    MetricType
}

type storedSeries struct {
	// What a steady scrape reads and writes comes first, in one cache
	// line: the sample check (sid, sfx, extraVal), the ring's column,
	// lastSeen, and the family is compares by pointer. A histogram's flat
	// series proven by their sample then touch one line each, not three,
	// and a counter's two (the struct is two lines, whose size class
	// starts every object on a line; TestStoredSeriesLayout).

	// sid is the sample the series was made from, shared by the flat
	// series made from it at once (a histogram's buckets, _count and
	// _sum): once one of them is proven to be the scrape's sample, the
	// others are checked by pointer, suffix and extra value (nil: a
	// series loaded whole, or its family renamed by is).
	sid *sampleID
	// extraVal is the le or quantile of a bucket or quantile series, which
	// the series cache compares as a number instead of formatting it.
	extraVal float64
	ring     ring // values aligned with targetHistory.times; NaN = absent
	// lastSeen is the scrape index of the newest value (a target's
	// scrapes are counted in int64; 2^31 of them are 68 years at 1 s).
	lastSeen int32
	// fam and sfx are name's family name and suffix (flatRef.sfx) as the
	// newest scrape that matched gave them: a parser interns names, so
	// the series cache's check is then a pointer comparison (fam "" until
	// known).
	sfx uint8
	typ uint8 // a MetricType
	fam string

	// What is, the check of a series without a sample (counters, gauges),
	// reads besides lies in the second line.
	labels Labels
	key    string // identity within the target; also the stable sort order
	name   string
	_      [8]byte
}

// seen is the scrape index of the series' newest value.
func (ss *storedSeries) seen() int64 { return int64(ss.lastSeen) }

// sameKey reports whether r is ss by ss's sample: ss.sid proven to be r's
// family and sample labels (proven), and the same suffix and extra value,
// which with them make the key.
func (ss *storedSeries) sameKey(r *flatRef, proven *sampleID) bool {
	return ss.sid == proven && ss.sfx == r.sfx && (r.extra == "" || math.Float64bits(ss.extraVal) == math.Float64bits(r.extraVal))
}

// ring holds a series' values: as float32 while every value stored is
// one exactly (counts below 2^24, small gauges, NaN for absent), which
// halves the store, and as float64 from the first value that is not. It
// never rounds a value.
//
// An Append writes one value of every series of its target, so a
// series' float32 values live in a column of its target's ringTiles,
// beside the other series' values of the same scrapes: the writes of one
// scrape go to consecutive cache lines instead of one line (and one
// page) per series. A ring built whole (Load) keeps its own slice, as
// the one column of tiles of its own (ownRing), not in its target's
// list: one float32 form, so that storedSeries' first line holds what set
// and get read. A float64 ring is a wideRing, in chunks sealed like the
// tiles' (store_chunk.go).
type ring struct {
	tile *ringTiles // nil once float64
	col  int
	wide *wideRing
}

// tileSlots is how many consecutive scrapes of one series lie together in
// a tile: 16 float32, one cache line.
const tileSlots = 16

// ringTiles holds the float32 rings of up to cols series of one target:
// for each run of tileSlots slots, each column's tileSlots values, column
// after column, in chunks of chunkSlots slots (store_chunk.go). A chunk
// the target's scrapes have moved past is sealed (its columns encoded,
// a byte or less a value of a steady counter) when seals is set; the
// chunks being written stay float32. A column freed (its series
// forgotten or widened to float64) is reused by a new series.
type ringTiles struct {
	v       [][]float32 // per chunk: its values, nil while sealed
	packed  [][]byte    // per chunk: its sealed columns (nil and v nil: all absent)
	cleared [][]uint64  // per sealed chunk: columns made absent since sealing
	present []int32     // per sealed chunk: the values it held that were not absent
	slots   int         // the target's history
	cols    int
	used    int   // columns handed out, free ones included
	free    []int // freed columns
	seals   bool  // a target's tiles, sealed behind its scrapes
}

// at is the chunk of slot i and the index in it of column col's value.
func (t *ringTiles) at(col, i int) (int, int) {
	u := uint(i) // a slot is never negative: shifts, not signed division
	return int(u / chunkSlots), int((u%chunkSlots/tileSlots*uint(t.cols)+uint(col))*tileSlots + u%tileSlots)
}

// newColumn returns a ring in a column of th's tiles, every slot absent;
// want is how many series the scrape being appended may still create,
// which sizes a new set of tiles.
func (th *targetHistory) newColumn(want int, seals bool) ring {
	var t *ringTiles
	col := -1
	reused := false // a freed column: its old values are still there
	for _, x := range th.tiles {
		if n := len(x.free); n > 0 {
			t, col, reused = x, x.free[n-1], true
			x.free = x.free[:n-1]
			break
		}
		if x.used < x.cols {
			t, col = x, x.used
			x.used++
			break
		}
	}
	hist := len(th.times)
	if t == nil {
		// An eighth of the held series at least: a target whose series
		// arrive a few at a time gets few tiles, not one per arrival.
		// Every chunk starts absent and is made when first written.
		cols := min(max(want, 8, len(th.series)/8), 4096)
		t = &ringTiles{v: make([][]float32, chunks(hist)), slots: hist, cols: cols, used: 1, seals: seals}
		col = 0
		th.tiles = append(th.tiles, t)
	}
	if reused {
		t.clearCol(col)
	}
	return ring{tile: t, col: col}
}

// release gives r's tile column back (a series forgotten).
func (r *ring) release() {
	if t := r.tile; t != nil {
		if t.cols > 1 { // a target's tiles (newColumn makes 8 columns at least), not a ring of its own
			t.free = append(t.free, r.col)
		}
		r.tile = nil
	}
}

// newRing returns a ring of n absent values with its own slice.
func newRing(n int) ring {
	v := ringArrays.take(n)
	nan := float32(math.NaN())
	for i := range v {
		v[i] = nan
	}
	return ownRing(v)
}

// ownRing is a ring of its own over v: a column of tiles holding one, whose
// values lie in slot order (chunk c is v[c*chunkSlots:]), never sealed.
func ownRing(v []float32) ring {
	t := &ringTiles{v: make([][]float32, chunks(len(v))), slots: len(v), cols: 1, used: 1}
	for c := range t.v {
		t.v[c] = v[c*chunkSlots : c*chunkSlots+chunkLen(c, len(v))]
	}
	return ring{tile: t}
}

func (r *ring) get(i int) float64 {
	if t := r.tile; t != nil {
		c, k := t.at(r.col, i)
		if v := t.v[c]; v != nil {
			return float64(v[k])
		}
		var col [chunkSlots]float32
		n := chunkLen(c, t.slots)
		t.decodeCol(c, r.col, col[:n])
		return float64(col[i%chunkSlots])
	}
	return r.wide.get(i)
}

// setTile is set's common case, small enough to inline in Append's loop:
// a float32 value into an open chunk of a tile column. False when it did
// not store v (the ring is float64, the chunk sealed, or v is not exact
// as float32): then set does.
func (r *ring) setTile(i int, v float64) bool {
	t, f := r.tile, float32(v)
	if t == nil || float64(f) != v && v == v {
		return false
	}
	c, k := t.at(r.col, i)
	if t.v[c] == nil {
		return false
	}
	t.v[c][k] = f
	return true
}

func (r *ring) set(i int, v float64) {
	if r.wide == nil {
		t := r.tile
		if f := float32(v); float64(f) == v || v != v { // exact, or NaN (absent)
			c, k := t.at(r.col, i)
			t.open(c)
			t.v[c][k] = f
			return
		}
		w := &wideRing{v: make([][]float64, chunks(t.slots)), slots: t.slots}
		for c := range w.v {
			w.v[c] = make([]float64, chunkLen(c, t.slots))
			r.read(w.v[c], c*chunkSlots, t.slots)
		}
		r.release()
		r.wide = w
	}
	r.wide.set(i, v)
}

// read writes the ring's values from slot on into dst, wrapping at hist
// (the target's history): get of each slot, with the ring's form decided
// once and a tile's values read a run at a time, a sealed chunk's
// column decoded once.
func (r *ring) read(dst []float64, slot, hist int) {
	var col [chunkSlots]float32
	for len(dst) > 0 {
		seg := dst[:min(len(dst), hist-slot)]
		dst = dst[len(seg):]
		if t := r.tile; t == nil {
			r.wide.read(seg, slot)
		} else {
			for i := 0; i < len(seg); {
				s := slot + i
				c, k := t.at(r.col, s)
				n := min(chunkLen(c, t.slots)-s%chunkSlots, len(seg)-i) // what this chunk gives
				if v := t.v[c]; v == nil {
					t.decodeCol(c, r.col, col[:chunkLen(c, t.slots)])
					for j, x := range col[s%chunkSlots:][:n] {
						seg[i+j] = float64(x)
					}
				} else if t.cols == 1 { // a ring of its own: the values in slot order
					for j, x := range v[k : k+n] {
						seg[i+j] = float64(x)
					}
				} else {
					for end := i + n; i < end; {
						s := slot + i
						_, k := t.at(r.col, s)
						run := v[k:][:min(tileSlots-s%tileSlots, end-i)]
						for j, x := range run {
							seg[i+j] = float64(x)
						}
						i += len(run)
					}
					continue
				}
				i += n
			}
		}
		slot = 0
	}
}

// is reports whether r is this series: the same name, type and labels
// (le or quantile compared by value). It is the series cache's check, so
// it must never say yes to another series; it may say no to this one
// (a sample whose own labels hold the le it gets, say), which only costs
// the key lookup.
func (ss *storedSeries) is(r *flatRef) bool {
	fam := r.fam.Name
	if MetricType(ss.typ) != r.fam.Type {
		return false
	}
	if !sameString(ss.fam, fam) || ss.sfx != r.sfx {
		if len(ss.name) != len(fam)+len(r.suffix) || ss.name[:len(fam)] != fam || ss.name[len(fam):] != r.suffix {
			return false
		}
		if ss.sid != nil && ss.sid.fam != fam {
			ss.sid = nil // its suffix now pairs with another family: sameKey no longer holds
		}
		ss.fam, ss.sfx = fam, r.sfx // the same series: next time by pointer
	}
	ls := r.sample.Labels
	if r.extra == "" {
		if len(ss.labels) != len(ls) {
			return false
		}
		for i := range ls {
			// Strings the parser interned compare by pointer first.
			if !sameString(ss.labels[i].Name, ls[i].Name) || !sameString(ss.labels[i].Value, ls[i].Value) {
				return false
			}
		}
		return true
	}
	// ss.labels is ls with the extra label inserted in name order.
	if len(ss.labels) != len(ls)+1 || math.Float64bits(ss.extraVal) != math.Float64bits(r.extraVal) { // bits: -0 and 0 are two keys
		return false
	}
	j := 0
	for i := range ss.labels {
		l := ss.labels[i]
		if l.Name == r.extra {
			continue
		}
		if j == len(ls) || !sameString(l.Name, ls[j].Name) || !sameString(l.Value, ls[j].Value) {
			return false
		}
		j++
	}
	return j == len(ls)
}

// sameString is a == b, without a call when both are one string (a
// parser's interned names and label values).
func sameString(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// NewStore returns an empty store; zero fields of cfg take the defaults.
func NewStore(cfg StoreConfig) *Store {
	if cfg.History <= 0 {
		cfg.History = DefaultStoreConfig.History
	}
	if cfg.MaxSeriesPerTarget <= 0 {
		cfg.MaxSeriesPerTarget = DefaultStoreConfig.MaxSeriesPerTarget
	}
	st := &Store{cfg: cfg, targets: make(map[string]*targetHistory), maxSeries: cfg.MaxSeries}
	if cfg.MaxSeries <= 0 {
		st.budget = cfg.MaxBytes
		if st.budget <= 0 {
			// debug.SetMemoryLimit(-1) reads the limit without changing it.
			st.budget = DefaultMaxBytes(debug.SetMemoryLimit(-1))
		}
		st.updateCap()
	}
	return st
}

// Config returns the bounds the store was built with.
func (s *Store) Config() StoreConfig { return s.cfg }

// SeriesCap says what the store's series caps refused of a target's
// newest scrape and what the store holds after it: the numbers the
// series-cap banner and analyze's JSON (targets[].series_cap) show.
type SeriesCap struct {
	ByTarget int `json:"by_target_cap"` // refused: the target held PerTarget series
	ByTotal  int `json:"by_total_cap"`  // refused: the store held Total series across targets
	// PerTarget and Total are the caps (StoreConfig.MaxSeriesPerTarget
	// and MaxSeries).
	PerTarget int `json:"per_target_cap"`
	Total     int `json:"total_cap"`
	Kept      int `json:"kept"`       // series the store holds for the target
	StoreKept int `json:"store_kept"` // series the store holds across targets
}

// AppendResult says what one Append kept.
type AppendResult struct {
	Series int // series stored from the snapshot
	// Dropped is the series refused because the target is at its cap or
	// the store at its total cap; Cap says which and what is kept (zero
	// when nothing was refused).
	Dropped int
	Cap     SeriesCap
	// Seeded counts the new series given a 0 at the previous scrape.
	Seeded int
	// Restarted is true when the target restarted since its previous
	// scrape: its process start time moved or its counters reset together.
	Restarted bool
}

// Append adds one scrape. Scrapes of a target must arrive in time order;
// an older or equal timestamp than the newest stored is ignored so a
// replayed or duplicated frame can never reorder history.
//
// New series start at zero: emitters create a counter series on its first
// event (a new status code, outcome or upstream), so a counter, histogram
// or summary count series that a target already scraped did not have at its
// previous scrape was 0 then, and it is stored with a 0 at that scrape.
// Its first value is then an increase like any other instead of the
// baseline Prometheus takes it for (which loses a whole scrape interval of
// the series' events). Not when its first value may hold counts from
// before the previous scrape: the target restarted in between (its
// process_start_time_seconds moved, or most of its counters went down), or
// the snapshot or the sample says Baseline. A created timestamp after the
// previous scrape proves a series started at 0 since. Histogram and
// summary parts are seeded only with their whole sample (a new bucket of
// a known histogram is not new data).
func (s *Store) Append(snap *Snapshot) AppendResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	th := s.history(snap.Target)
	t := snap.Time.UnixMilli()
	if th.next > 0 && t <= th.times[(th.next-1)%int64(len(th.times))] {
		return AppendResult{}
	}
	idx := th.next
	slot := int(idx % int64(len(th.times)))
	th.times[slot] = t
	th.next++
	// prev is the slot of the target's previous scrape, -1 without one.
	prev := -1
	if idx > 0 && len(th.times) >= 2 && !s.cfg.FirstValueIsBaseline {
		prev = int((idx - 1) % int64(len(th.times)))
	}
	tl := s.storeScrape(th, snap, idx, slot, prev)
	res := tl.res
	res.Restarted = th.restarted(snap, &tl)
	if len(th.fresh) > 0 {
		res.Seeded = th.seed(prev, res.Restarted || snap.Baseline)
		if cap(th.fresh) > 64 {
			// A target's first scrape after a restart of retrytop makes
			// every series fresh: not kept for the few a scrape adds.
			th.fresh = nil
		}
	}
	// A series given a value at two positions (a family given twice) is
	// in order twice: Export then dedups with a map.
	th.orderExact = res.Series == tl.seen
	s.markMissing(th, idx, slot, tl.seen)
	s.noteCaps(th, &res, tl.byTotal)
	for _, t := range th.tiles {
		t.sealBehind(slot)
	}
	if slot%chunkSlots == 0 { // the scrapes just left a chunk
		m := memMeasure{series: int64(len(th.series))}
		for _, ss := range th.series {
			if w := ss.ring.wide; w != nil {
				if !s.cfg.Unsealed {
					w.sealBehind(slot)
				}
				m.addWide(w)
			}
		}
		for _, t := range th.tiles {
			m.addTiles(t)
		}
		s.mem.add(m, th.mem)
		th.mem = m
		s.updateCap()
	}
	th.sortNames()
	return res
}

// sortNames sorts the byName lists changed out of order, each once.
func (th *targetHistory) sortNames() {
	if len(th.unsorted) == 0 {
		return
	}
	slices.Sort(th.unsorted)
	for _, name := range slices.Compact(th.unsorted) {
		slices.SortFunc(th.byName[name], byStoreKey)
	}
	clear(th.unsorted)
	th.unsorted = th.unsorted[:0]
}

// byStoreKey orders series by key: byName's order, and SelectSince's.
func byStoreKey(a, b *storedSeries) int { return strings.Compare(a.key, b.key) }

// markUnsorted notes that name's byName list may be out of order: once
// for a run of marks of one name (a scrape's new series come by name).
func (th *targetHistory) markUnsorted(name string) {
	if n := len(th.unsorted); n == 0 || th.unsorted[n-1] != name {
		th.unsorted = append(th.unsorted, name)
	}
}

// history returns the target's history, made empty on its first scrape.
func (s *Store) history(target string) *targetHistory {
	th := s.targets[target]
	if th == nil {
		th = &targetHistory{
			times:  make([]int64, s.cfg.History),
			series: make(map[string]*storedSeries),
			byName: make(map[string][]*storedSeries),
		}
		s.targets[target] = th
		s.updateCap()
	}
	return th
}

// scrapeTally is what storeScrape counted of one scrape.
type scrapeTally struct {
	res            AppendResult // Series and Dropped
	counted, reset int          // counters with a positive previous value; those that went down
	seen           int          // distinct series given a value
	byTotal        int          // series refused because the store was full
}

// madeSample is the sample identity made last in a scrape, with the
// family and sample it was made for (targetHistory.sampleID).
type madeSample struct {
	id     *sampleID
	fam    *Family
	sample *Sample
}

// storeScrape stores the value of each of snap's flat series at slot idx
// of the target's rings (slot is idx's ring position, prev the previous
// scrape's or -1), finding its series through the series cache, else by
// key, else creating it within the caps.
func (s *Store) storeScrape(th *targetHistory, snap *Snapshot, idx int64, slot, prev int) scrapeTally {
	th.fresh = th.fresh[:0]
	var res AppendResult
	counted, reset := 0, 0 // counters with a positive previous value; those that went down
	pos, seen := 0, 0      // flat position in the scrape; distinct series given a value
	flat := -1             // the scrape's flat series, counted when a series is created
	created := 0           // series created by this scrape so far
	byTotal := 0           // series refused because the store was full
	full := func() bool { return len(th.series) >= s.cfg.MaxSeriesPerTarget || s.total >= s.maxSeries }
	// The sample identity last proven to be r's family and sample
	// (labels compared once a sample), and the one made last this scrape.
	var provenID *sampleID
	var provenFam *Family
	var provenSample *Sample
	var made madeSample
	// A loop, not eachFlat's callback: its counters stay in registers.
	it := storeIter{fams: snap.Families}
	for {
		// it.next, its buckets' case written out: next does not inline.
		if k := it.k; k < len(it.bk) {
			b := &it.bk[k]
			it.r.extraVal, it.r.value = b.UpperBound, b.Count
			it.k = k + 1
		} else if !it.step() {
			break
		}
		r := &it.r
		var ss *storedSeries
		var cs *cacheSlot
		if pos < len(th.order) && !s.noSeriesCache {
			cs = &th.order[pos]
			if c := cs.ss; c != nil {
				// A histogram's or summary's flat series by their sample:
				// its labels compared once, not once a flat series.
				if sid := c.sid; sid != nil {
					if sid == provenID && r.fam == provenFam && r.sample == provenSample || sid.sameSample(r) {
						provenID, provenFam, provenSample = sid, r.fam, r.sample
						if c.sameKey(r, sid) {
							ss = c
						}
					}
				}
				if ss == nil && c.is(r) {
					ss = c
				}
			} else if rs := cs.rs; rs != nil && cs.sfx == r.sfx && (r.extra == "" || cs.extraBits == math.Float64bits(r.extraVal)) &&
				(rs == provenID && r.fam == provenFam && r.sample == provenSample || rs.sameSample(r)) {
				// The same key as the series refused here at the previous
				// scrape (the suffix, the family's type and the extra
				// label's value, the family and the sample's labels).
				provenID, provenFam, provenSample = rs, r.fam, r.sample
				if created == 0 && full() {
					// Nothing was stored since that could be it: refused
					// again, with no key built. (Room made since, by this
					// target or another, sends it to the key lookup.)
					pos++
					res.Dropped++
					if len(th.series) < s.cfg.MaxSeriesPerTarget {
						byTotal++
					}
					continue
				}
			}
		}
		if ss == nil {
			th.keyBuf = r.appendKey(th.keyBuf[:0])
			ss = th.series[string(th.keyBuf)] // no allocation for the lookup
		}
		if pos == len(th.order) {
			th.order = append(th.order, cacheSlot{})
		}
		cs = &th.order[pos]
		if cs.ss != ss { // unchanged mostly: no pointer write (and its barrier)
			cs.ss = ss
		}
		pos++
		if ss == nil {
			if full() {
				res.Dropped++
				if len(th.series) < s.cfg.MaxSeriesPerTarget {
					byTotal++
				}
				th.rememberRefused(cs, r, &made)
				continue
			}
			created++
			if flat < 0 {
				flat = snap.SeriesCount()
			}
			ss = s.newSeries(th, r, flat-pos+1, &made)
			cs.ss = ss
			if prev >= 0 && r.startsAtZero() && !math.IsNaN(r.value) {
				th.fresh = append(th.fresh, freshSeries{ss: ss, sample: r.sample, suffix: r.suffix, typ: r.fam.Type})
			}
		} else if prev >= 0 && r.countsEvents() {
			if p := ss.ring.get(prev); p > 0 {
				counted++
				if r.value < p {
					reset++
				}
			}
		}
		if cs.rs != nil {
			cs.rs = nil
		}
		if !ss.ring.setTile(slot, r.value) {
			ss.ring.set(slot, r.value)
		}
		if ss.seen() != idx {
			seen++
		}
		ss.lastSeen = int32(idx)
		res.Series++
	}
	clear(th.order[pos:]) // no series kept alive by a longer scrape before
	th.order = th.order[:pos]
	return scrapeTally{res: res, counted: counted, reset: reset, seen: seen, byTotal: byTotal}
}

// rememberRefused remembers the series the caps refused at cs's position
// by its identity (no ring), so that a target over the cap does not pay a
// key per refused series per scrape; the flat series of one sample share
// it.
func (th *targetHistory) rememberRefused(cs *cacheSlot, r *flatRef, made *madeSample) {
	cs.rs, cs.sfx, cs.extraBits = th.sampleID(r, made), r.sfx, 0
	if r.extra != "" {
		cs.extraBits = math.Float64bits(r.extraVal)
	}
}

// newSeries creates and keeps r's series, whose key is in th.keyBuf. Its
// ring is a column of tiles for the left series this scrape may still
// create (this one included), within the caps' room.
func (s *Store) newSeries(th *targetHistory, r *flatRef, left int, made *madeSample) *storedSeries {
	fs := r.series()
	key := string(th.keyBuf)
	ss := &storedSeries{key: key, name: fs.Name, labels: append(Labels(nil), fs.Labels...), typ: uint8(fs.Type), extraVal: r.extraVal,
		fam: r.fam.Name, sfx: r.sfx, lastSeen: -1}
	if t := r.fam.Type; t == Histogram || t == Summary {
		ss.sid = th.sampleID(r, made)
	}
	if s.noTiles {
		ss.ring = newRing(len(th.times))
	} else {
		room := min(s.cfg.MaxSeriesPerTarget-len(th.series), s.maxSeries-s.total)
		ss.ring = th.newColumn(min(left, room), !s.cfg.Unsealed)
	}
	th.series[key] = ss
	s.total++
	s.ident += ss.identBytes()
	list := th.byName[fs.Name]
	if n := len(list); n > 0 && list[n-1].key > key {
		th.markUnsorted(fs.Name)
	}
	th.byName[fs.Name] = append(list, ss)
	return ss
}

// restarted reports whether the target restarted since its previous
// scrape: its process start time moved, or most of the counters with a
// positive previous value went down.
func (th *targetHistory) restarted(snap *Snapshot, tl *scrapeTally) bool {
	restarted := false
	if ps := snap.ProcessStartOf(); ps > 0 {
		// A second of slack: some exporters derive it from uptime.
		if th.start > 0 && math.Abs(ps-th.start) > 1 {
			restarted = true
		}
		th.start = ps
	}
	return restarted || tl.reset > 0 && 2*tl.reset > tl.counted
}

// markMissing gives the series missing from scrape idx (at slot) an
// explicit gap, and forgets those missing for the whole retained history
// so churn stays bounded. When every stored series got a value (seen of
// them) there is nothing to visit.
func (s *Store) markMissing(th *targetHistory, idx int64, slot, seen int) {
	clear(th.stale) // no forgotten series kept alive
	th.stale = th.stale[:0]
	if seen == len(th.series) {
		return
	}
	for key, ss := range th.series {
		if ss.seen() == idx {
			continue
		}
		ss.ring.set(slot, math.NaN())
		if idx-ss.seen() >= int64(len(th.times)) && !s.cfg.KeepSeries {
			delete(th.series, key)
			ss.ring.release()
			s.total--
			s.ident -= ss.identBytes()
			th.removeByName(ss)
			continue
		}
		th.stale = append(th.stale, ss)
	}
}

// sampleID returns the identity of r's sample: made's when it was made for
// the same family and sample (the flat series before r), else a new one,
// which becomes made's.
func (th *targetHistory) sampleID(r *flatRef, made *madeSample) *sampleID {
	if made.id == nil || r.fam != made.fam || r.sample != made.sample {
		made.id = &sampleID{fam: r.fam.Name, typ: r.fam.Type, labels: append(Labels(nil), r.sample.Labels...)}
		made.fam, made.sample = r.fam, r.sample
	}
	return made.id
}

// noteCaps records what the caps refused of the scrape just appended.
func (s *Store) noteCaps(th *targetHistory, res *AppendResult, byTotal int) {
	s.dropped += res.Dropped - th.dropped
	th.dropped = res.Dropped
	th.capped = SeriesCap{}
	if res.Dropped == 0 {
		return
	}
	th.capped = SeriesCap{
		ByTarget: res.Dropped - byTotal, ByTotal: byTotal,
		PerTarget: s.cfg.MaxSeriesPerTarget, Total: s.maxSeries,
		Kept: len(th.series), StoreKept: s.total,
	}
	res.Cap = th.capped
}

// seed gives the fresh series a 0 at the previous scrape (slot prev),
// unless notFromZero and no created timestamp says otherwise. It returns
// how many it seeded.
func (th *targetHistory) seed(prev int, notFromZero bool) int {
	prevMs := th.times[prev]
	// A histogram's or summary's parts go with its _count: seeded only
	// when the whole sample is new.
	var whole map[*Sample]bool
	for _, f := range th.fresh {
		if f.typ != Counter && f.suffix == "_count" {
			if whole == nil {
				whole = make(map[*Sample]bool)
			}
			whole[f.sample] = true
		}
	}
	n := 0
	for i, f := range th.fresh {
		th.fresh[i] = freshSeries{} // no pointers kept past the call
		if f.typ != Counter && !whole[f.sample] {
			continue
		}
		if (notFromZero || f.sample.Baseline) && f.sample.CreatedMs <= prevMs {
			continue
		}
		f.ss.ring.set(prev, 0)
		n++
	}
	return n
}

// startsAtZero reports whether the flat series counts from 0 when its
// series is created: counters, histogram parts, summary count and sum.
func (r *flatRef) startsAtZero() bool {
	switch r.fam.Type {
	case Counter, Histogram:
		return true
	case Summary:
		return r.extra == ""
	}
	return false
}

// countsEvents reports whether the flat series is one the restart rule
// watches: counters and the counts of histograms and summaries.
func (r *flatRef) countsEvents() bool {
	return r.fam.Type == Counter || r.sfx == 2 // _count
}

func (th *targetHistory) removeByName(ss *storedSeries) {
	list := th.byName[ss.name]
	for i, x := range list {
		if x == ss {
			list[i] = list[len(list)-1]
			list = list[:len(list)-1]
			break
		}
	}
	if len(list) == 0 {
		delete(th.byName, ss.name)
	} else {
		th.byName[ss.name] = list
		th.markUnsorted(ss.name)
	}
}

// Forget drops everything the store holds for target: a target that left
// the scrape set (discovery churn) would otherwise keep its history, and
// its rows, forever.
func (s *Store) Forget(target string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if th := s.targets[target]; th != nil {
		s.total -= len(th.series)
		s.dropped -= th.dropped
		for _, ss := range th.series {
			s.ident -= ss.identBytes()
		}
		s.mem.add(memMeasure{}, th.mem)
	}
	delete(s.targets, target)
	s.updateCap()
}

// Targets lists the targets that have at least one scrape, sorted.
func (s *Store) Targets() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.targets))
	for t := range s.targets {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// TargetStats describes what the store holds for one target.
type TargetStats struct {
	Scrapes       int // scrapes retained
	Series        int // distinct series retained
	DroppedSeries int // series refused by the caps at the newest scrape
	// Cap says which cap refused them and what the store holds (zero when
	// none was refused).
	Cap      SeriesCap
	NewestMs int64 // newest scrape time, 0 when none
	OldestMs int64 // oldest retained scrape time
}

// Stats returns what the store holds for target.
func (s *Store) Stats(target string) TargetStats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	th := s.targets[target]
	if th == nil || th.next == 0 {
		return TargetStats{}
	}
	times := th.orderedTimes()
	return TargetStats{
		Scrapes:       len(times),
		Series:        len(th.series),
		DroppedSeries: th.dropped,
		Cap:           th.capped,
		NewestMs:      times[len(times)-1],
		OldestMs:      times[0],
	}
}

// StoreTotals is what the store holds across targets.
type StoreTotals struct {
	Series    int // series held
	MaxSeries int // the total cap
	// Budget is the store's memory budget (0: MaxSeries is fixed), and
	// SeriesBytes what a series costs over the whole history as the cap
	// takes it (Store.seriesCost).
	Budget, SeriesBytes int64
	// Dropped is the series refused at each target's newest scrape,
	// summed; ByTotal the part of it refused by the total cap.
	Dropped, ByTotal int
}

// Totals returns what the store holds across targets.
func (s *Store) Totals() StoreTotals {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := StoreTotals{Series: s.total, MaxSeries: s.maxSeries, Budget: s.budget}
	if s.budget > 0 {
		out.SeriesBytes = s.seriesCost()
	}
	for _, th := range s.targets {
		out.Dropped += th.dropped
		out.ByTotal += th.capped.ByTotal
	}
	return out
}

// Times returns the retained scrape times of target, oldest first.
func (s *Store) Times(target string) []int64 { return s.TimesSince(target, math.MinInt64) }

// TimesSince returns the retained scrape times of target from the last one
// at or before sinceMs (or the oldest retained), oldest first: the same
// range SelectSince returns points for.
func (s *Store) TimesSince(target string, sinceMs int64) []int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	th := s.targets[target]
	if th == nil {
		return nil
	}
	from, n := th.rangeSince(sinceMs)
	out := make([]int64, 0, n)
	for i := from; i < from+int64(n); i++ {
		out = append(out, th.times[i%int64(len(th.times))])
	}
	return out
}

func (th *targetHistory) orderedTimes() []int64 {
	from, n := th.rangeSince(math.MinInt64)
	out := make([]int64, n)
	for i := range out {
		out[i] = th.times[(from+int64(i))%int64(len(th.times))]
	}
	return out
}

func (th *targetHistory) retained() int {
	if th.next < int64(len(th.times)) {
		return int(th.next)
	}
	return len(th.times)
}

// rangeSince returns the scrape index of the last retained scrape at or
// before sinceMs (the oldest retained when none is) and how many scrapes
// from there to the newest.
func (th *targetHistory) rangeSince(sinceMs int64) (from int64, n int) {
	kept := th.retained()
	oldest := th.next - int64(kept)
	// Binary search over the retained scrapes, which are in time order.
	lo, hi := 0, kept // first retained position with time > sinceMs
	for lo < hi {
		mid := (lo + hi) / 2
		if th.times[(oldest+int64(mid))%int64(len(th.times))] > sinceMs {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	start := lo - 1
	if start < 0 {
		start = 0
	}
	return oldest + int64(start), kept - start
}

// Select copies the retained history of target's series named name whose
// labels satisfy match (nil matches all), in a stable order.
func (s *Store) Select(target, name string, match func(Labels) bool) []Series {
	return s.SelectSince(target, name, match, math.MinInt64)
}

// SelectSince is Select restricted to the scrapes TimesSince(target,
// sinceMs) returns, plus, for a series absent at the first of them, its
// newest earlier sample: a window and the sample just before it, which is
// all a rate over the window needs.
func (s *Store) SelectSince(target, name string, match func(Labels) bool, sinceMs int64) []Series {
	return s.selectSince(nil, target, name, match, sinceMs)
}

// SelectBuffer holds what SelectSinceInto hands out, reused from one
// Reset to the next: a reader that selects a target's series, reads them
// and lets them go before the next target (analysis.FrameCache, a frame
// at a time) allocates nothing once the buffer has grown to its largest
// target. The zero value is ready; it is not safe for concurrent use.
type SelectBuffer struct {
	series []Series
	points []Point
	vals   []float64
	// most is the most points a selection between two Resets took over
	// the last selectBufferPeriod Resets.
	most, resets int
}

// selectBufferPeriod is how many Resets make a period: an array more
// than twice what the selections of a whole period took is cut to that
// at its end, so within two periods of the last large selection. A
// frame selecting a new row's whole timeline (300 scrapes of every
// series of its target) should not leave watch holding that array while
// its frames read 60.
const selectBufferPeriod = 64

// Reset lets everything the buffer handed out go: none of it may be read
// after.
func (b *SelectBuffer) Reset() {
	clear(b.series) // no labels kept alive by a series nobody reads
	b.most = max(b.most, len(b.points))
	b.series, b.points = b.series[:0], b.points[:0]
	if b.resets++; b.resets == selectBufferPeriod {
		if cap(b.points) > 2*b.most {
			b.points = make([]Point, 0, b.most+b.most/8)
		}
		b.most, b.resets = 0, 0
	}
}

// SelectSinceInto is SelectSince with the series and their points in b,
// valid until b.Reset. Each series' Points has no room beyond its
// length, so appending to it copies.
func (s *Store) SelectSinceInto(b *SelectBuffer, target, name string, match func(Labels) bool, sinceMs int64) []Series {
	return s.selectSince(b, target, name, match, sinceMs)
}

// selectSince is SelectSince, into b when it is not nil, else into fresh
// slices (a series' points an array of their own).
func (s *Store) selectSince(b *SelectBuffer, target, name string, match func(Labels) bool, sinceMs int64) []Series {
	s.mu.RLock()
	defer s.mu.RUnlock()
	th := s.targets[target]
	if th == nil {
		return nil
	}
	list := th.byName[name]
	from, n := th.rangeSince(sinceMs)
	var (
		out    []Series
		vals   []float64
		points []Point
	)
	first := 0
	if b != nil {
		first = len(b.series)
		out, vals, points = b.series, b.vals, b.points
	} else {
		out = make([]Series, 0, len(list))
	}
	for _, ss := range list {
		if match != nil && !match(ss.labels) {
			continue
		}
		var pts []Point
		p0 := len(points)
		if b != nil {
			pts = points
		} else {
			pts = make([]Point, 0, n+1)
		}
		// The range's values read a run at a time (a sealed chunk's
		// column decoded once), then the absent ones left out.
		if cap(vals) < n {
			vals = make([]float64, n)
		}
		ss.ring.read(vals[:n], int(from%int64(len(th.times))), len(th.times))
		// A series absent at the first scrape of the range still needs its
		// newest earlier sample: it is where an increase starts from. Every
		// scrape after the series' last left it absent (Append's gap; Load
		// refuses a value after the last scrape), so the walk starts at
		// lastSeen: a stale series costs one step, not one per scrape
		// since it left.
		if n == 0 || math.IsNaN(vals[0]) {
			start := from - 1
			if ss.seen() < start && !s.noWalkBound {
				start = ss.seen()
			}
			for i := start; i >= th.next-int64(th.retained()); i-- {
				slot := i % int64(len(th.times))
				if v := ss.ring.get(int(slot)); !math.IsNaN(v) {
					pts = append(pts, Point{T: th.times[slot], V: v})
					break
				}
			}
		}
		slot := from % int64(len(th.times))
		for _, v := range vals[:n] {
			if !math.IsNaN(v) {
				pts = append(pts, Point{T: th.times[slot], V: v})
			}
			if slot++; slot == int64(len(th.times)) {
				slot = 0
			}
		}
		if b != nil {
			// The series' points are the end of the buffer's array (a new
			// one when it grew: the series before keep the old).
			points = pts
			pts = pts[p0:len(pts):len(pts)]
		}
		out = append(out, Series{Target: target, Name: name, Labels: ss.labels, Type: MetricType(ss.typ), Points: pts, Stale: ss.seen() != th.next-1})
	}
	if b != nil {
		b.series, b.vals, b.points = out, vals, points
		out = out[first:len(out):len(out)]
	}
	// In key order: byName's.
	return out
}

// Names lists the series names retained for target, sorted.
func (s *Store) Names(target string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	th := s.targets[target]
	if th == nil {
		return nil
	}
	out := make([]string, 0, len(th.byName))
	for n := range th.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
