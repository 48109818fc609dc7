package model

import (
	"math"
	"unsafe"
)

// The store's budget: when StoreConfig.MaxSeries is 0, the total series
// cap is what MaxBytes holds at what a series costs over the whole
// history, measured from the sealed chunks (docs/limits.md).

// StoreShareEighths is the part of the process' memory limit, in eighths,
// the store's budget takes (five: the scrapes in flight may reserve half,
// but a reservation of a MiB or more must fit beside the live heap, the
// store's included, so the two shares never both fill; the rest goes to
// frames, parse caches and the runtime).
const StoreShareEighths = 5

// unlimitedMemory is the memory limit DefaultMaxBytes assumes when the
// process has none: the command's default --memory-limit.
const unlimitedMemory = 512 << 20

// seriesIdentityBytes is the least a series' identity is taken to cost
// (identBytes measures it: about 430 B for an Envoy series).
const seriesIdentityBytes = 400

// refusedBytes is what a series the caps refuse costs while it is
// offered: its series cache entry and a share of its sample's identity.
const refusedBytes = 64

// budgetMargin keeps back a part of the budget (1/budgetMargin) for what
// the measure does not see: values that will compress less than they
// did (a histogram's _sum turning float64 as it grows), the slack of
// small allocations.
const budgetMargin = 32

// DefaultMaxBytes is the store's budget in a process whose memory limit
// is memLimit bytes (<= 0 or math.MaxInt64, no limit: 512 MiB):
// StoreShareEighths of it.
func DefaultMaxBytes(memLimit int64) int64 {
	if memLimit <= 0 || memLimit == math.MaxInt64 {
		memLimit = unlimitedMemory
	}
	return memLimit / 8 * StoreShareEighths
}

// SeriesBytes is what one series is taken to cost at history scrapes
// before anything is measured: a ring of float32 values none of which
// compresses (counts are exact as float32), an eighth more for Go's size
// classes, and its identity. A series holding values that are not exact
// as float32 (a histogram's _sum) costs up to twice the ring.
func SeriesBytes(history int) int64 {
	return seriesIdentityBytes + valuesCost(history, memMeasure{})
}

// valuesCost is what one series' values cost at history scrapes by m,
// the store's measure. Unmeasured (no sealed chunk): a float32 ring and
// an eighth for size classes. Measured: the chunk being written open as
// float32 (float64 for the wide series' share), and every other slot at
// what a sealed value measures (m's sealed bytes over its sealed slots).
func valuesCost(history int, m memMeasure) int64 {
	if m.sealedSlots <= 0 || m.series <= 0 {
		ring := 4 * int64(max(history, 1))
		return ring + ring/8
	}
	open := int64(min(history, chunkSlots))
	rest := int64(history) - open
	return 4*open*(m.series+m.wide)/m.series + (rest*m.sealed+m.sealedSlots-1)/m.sealedSlots
}

// seriesIn is how many series of cost bytes a budget of left bytes holds,
// the margin kept back (budgetMargin).
func seriesIn(left, cost int64) int {
	left = max(left-left/budgetMargin, 0)
	return int(min(left/cost, math.MaxInt32))
}

// FixedConfig is cfg with its defaults taken and, when its total cap
// follows a budget, that cap fixed where an empty store of cfg starts
// (the budget over SeriesBytes, never below one target's cap): stores
// that must keep the same series however they are filled share it. A
// store of appended scrapes measures its chunks and raises its cap; one
// filled by Load measures nothing, so a replay's seeks could not load
// what its index held; analyze's series would depend on how a recording
// is streamed. At the defaults (512 MiB, 900 scrapes) the cap is 73,046.
func FixedConfig(cfg StoreConfig) StoreConfig {
	st := NewStore(cfg)
	out := st.cfg
	out.MaxSeries = st.maxSeries
	return out
}

// updateCap sets the total cap of a store with a budget to what the
// budget holds at what a series costs now, never below one target's cap.
// The cap may fall below the series held (values that compress less than
// they did): none is dropped, new ones are refused.
func (s *Store) updateCap() {
	if s.budget <= 0 {
		return
	}
	left := s.budget - int64(len(s.targets))*targetBytes(s.cfg.History) - int64(s.dropped)*refusedBytes
	s.maxSeries = max(seriesIn(left, s.seriesCost()), s.cfg.MaxSeriesPerTarget)
}

// seriesCost is what a series costs as the cap takes it: its values by
// the store's measure, and the held series' identities as measured,
// seriesIdentityBytes at least.
func (s *Store) seriesCost() int64 {
	ident := int64(seriesIdentityBytes)
	if s.total > 0 {
		ident = max(ident, s.ident/int64(s.total))
	}
	return ident + valuesCost(s.cfg.History, s.mem)
}

// targetBytes is what a target costs besides its series: its ring of
// scrape times, its maps' and tiles' headers.
func targetBytes(history int) int64 { return 8*int64(history) + 1024 }

// memMeasure is what a target's sealed chunks hold on the heap (the
// slices' capacities) and how many values they hold (a tile chunk the
// values present when it was sealed, a wide ring's chunk its slots), with
// the series it held then, wide ones apart (their open chunks are
// float64). Absent values are not counted: the many columns a new tile
// set holds for series not yet taken, or the slots before a series came,
// would make a value look nearly free; their bytes are, so a value costs
// a little more than it does.
type memMeasure struct {
	series, wide        int64
	sealed, sealedSlots int64
}

func (m *memMeasure) addTiles(t *ringTiles) {
	for c, v := range t.v {
		if v == nil && t.packed != nil && t.packed[c] != nil {
			m.sealed += int64(cap(t.packed[c]))
			m.sealedSlots += int64(t.present[c])
		}
	}
}

func (m *memMeasure) addWide(w *wideRing) {
	m.wide++
	// Its struct and chunk lists, beside its values.
	m.sealed += int64(unsafe.Sizeof(*w)) + int64(len(w.v))*2*24
	for c, v := range w.v {
		if v == nil && w.packed != nil && w.packed[c] != nil {
			m.sealed += int64(cap(w.packed[c]))
			m.sealedSlots += int64(chunkLen(c, w.slots))
		}
	}
}

// add adds now and takes was away: a target measured again.
func (m *memMeasure) add(now, was memMeasure) {
	m.series += now.series - was.series
	m.wide += now.wide - was.wide
	m.sealed += now.sealed - was.sealed
	m.sealedSlots += now.sealedSlots - was.sealedSlots
}

// identBytes is what the series' identity holds: the struct, its key,
// its labels' slice, the strings made for it (a histogram's or summary's
// flat name with its suffix, a bucket's le or a quantile, a share of its
// sample's identity), its entries in the series map (a slot and its share
// of the table's slack), byName and the series cache (with their slack),
// each string rounded up to a size class of 16 bytes. Label strings a
// parser interns are shared and not counted. It reads only what never
// changes once the series is made, so that taking it back on removal
// takes back what was added.
func (ss *storedSeries) identBytes() int64 {
	str := func(n int) int64 { return (int64(n) + 15) &^ 15 }
	n := int64(unsafe.Sizeof(*ss)) + str(len(ss.key)) + int64(cap(ss.labels))*int64(unsafe.Sizeof(Label{}))
	if t := MetricType(ss.typ); t == Histogram || t == Summary {
		n += str(len(ss.name)) + 16 + 16
	}
	return n + 40 + 12 + int64(unsafe.Sizeof(cacheSlot{}))*4/3
}
