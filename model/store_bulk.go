package model

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// TargetHistory is one target's history in column form, as Export gives it
// and Load takes it: a checkpoint of the store that a replay restores
// without appending (and so without parsing) every scrape again.
type TargetHistory struct {
	// Times are the scrape times, oldest first, of the scrapes with
	// indices [Next-len(Times), Next).
	Times []int64
	// Next is the number of scrapes appended to the target so far: the
	// index of the next one.
	Next int64
	// Series are the series the store holds for the target after scrape
	// Next-1, each with its values at Times.
	Series []SeriesHistory
	// Start is the target's process start time at its newest scrape that
	// had one (0: never seen); it decides restarts at later appends.
	Start float64
	// Dropped and Cap are what the caps refused at the newest scrape.
	Dropped int
	Cap     SeriesCap
}

// SeriesHistory is one flat series of a TargetHistory.
type SeriesHistory struct {
	// Key is the series' identity in the store (opaque: as Export gives it).
	Key    string
	Name   string
	Labels Labels
	Type   MetricType
	// Extra is the le or quantile of a bucket or quantile series.
	Extra float64
	// Values are aligned with TargetHistory.Times; NaN is absent.
	Values []float64
	// Values32, when Values is nil, are the values as float32: for a
	// series whose every value is exact as one (counts, small gauges),
	// which is how the store keeps them, so that a restore neither writes
	// nor converts float64s.
	Values32 []float32
	// LastSeen is the scrape index of the series' newest value (a NaN the
	// exposition gave counts: the series was there).
	LastSeen int64
}

// Export returns target's history from scrape index from on (clamped to
// what is retained), with every series the store holds for it. Series
// come in the order of the target's newest scrape, then the others by key.
// The labels are shared with the store, which never modifies them.
func (s *Store) Export(target string, from int64) TargetHistory {
	return s.ExportReuse(target, from, nil)
}

// ExportBuffer holds the memory of one export for the next: for a caller
// that exports again and again and is done with each export before the
// next (the replay's seek index logs a target's newest scrapes at every
// scrape).
type ExportBuffer struct {
	h    TargetHistory
	slab []float64
}

// ExportReuse is Export into buf's memory (nil: new memory): the result is
// valid until the next call with buf, which overwrites it.
func (s *Store) ExportReuse(target string, from int64, buf *ExportBuffer) TargetHistory {
	s.mu.RLock()
	defer s.mu.RUnlock()
	th := s.targets[target]
	if th == nil {
		return TargetHistory{}
	}
	oldest := th.next - int64(th.retained())
	from = min(max(from, oldest), th.next)
	n := int(th.next - from)
	var out TargetHistory
	var slab []float64
	if buf != nil {
		out.Times, out.Series, slab = buf.h.Times[:0], buf.h.Series[:0], buf.slab
	}
	out.Next, out.Start, out.Dropped, out.Cap = th.next, th.start, th.dropped, th.capped
	out.Times = resize(out.Times, n)
	hist := int64(len(th.times))
	for i := range out.Times {
		out.Times[i] = th.times[(from+int64(i))%hist]
	}
	held := len(th.series)
	if buf == nil || cap(out.Series) < held {
		out.Series = make([]SeriesHistory, 0, held)
	}
	slab = resize(slab, n*held)
	whole := slab
	add := func(ss *storedSeries) {
		vals := slab[:n:n]
		slab = slab[n:]
		ss.ring.read(vals, int(from%hist), int(hist))
		out.Series = append(out.Series, SeriesHistory{Key: ss.key, Name: ss.name, Labels: ss.labels, Type: MetricType(ss.typ),
			Extra: ss.extraVal, Values: vals, LastSeen: ss.seen()})
	}
	if th.orderExact && !s.noExportOrder && th.ordered()+len(th.stale) == held {
		// The newest scrape's series in its order, then the others by
		// key: no map, no key looked up.
		for _, cs := range th.order {
			if ss := cs.ss; ss != nil {
				add(ss)
			}
		}
		if len(th.stale) > 0 {
			rest := append([]*storedSeries(nil), th.stale...)
			slices.SortFunc(rest, func(a, b *storedSeries) int { return strings.Compare(a.key, b.key) })
			for _, ss := range rest {
				add(ss)
			}
		}
	} else {
		th.exportByMap(add)
	}
	if buf != nil {
		clear(out.Series[len(out.Series):cap(out.Series)]) // no series kept alive by a bigger export before
		buf.h.Times, buf.h.Series, buf.slab = out.Times, out.Series, whole
	}
	return out
}

// ordered is how many series the newest scrape's order lists. With the
// stale ones it is every series held when Append kept its facts right;
// Export checks it (a pass over pointers) so that a slip there falls back
// to the map instead of overrunning the slab.
func (th *targetHistory) ordered() int {
	n := 0
	for _, cs := range th.order {
		if cs.ss != nil {
			n++
		}
	}
	return n
}

// exportByMap calls add with every series th holds, those of the newest
// scrape in its order and the others by key, by the series cache and the
// series map: Export's way when the cache may list a series twice or not
// at all (after a Load), and the reference its tests compare against.
func (th *targetHistory) exportByMap(add func(*storedSeries)) {
	// The series cache may list a series twice (a family given twice).
	taken := make(map[*storedSeries]bool, len(th.series))
	newest := th.next - 1
	for _, cs := range th.order {
		if ss := cs.ss; ss != nil && ss.seen() == newest && !taken[ss] && th.series[ss.key] == ss {
			add(ss)
			taken[ss] = true
		}
	}
	if len(taken) < len(th.series) {
		var rest []*storedSeries
		for _, ss := range th.series {
			if !taken[ss] {
				rest = append(rest, ss)
			}
		}
		sort.Slice(rest, func(i, j int) bool { return rest[i].key < rest[j].key })
		for _, ss := range rest {
			add(ss)
		}
	}
}

// resize is s with length n, reusing its array when it is large enough
// (the contents are then stale: the caller overwrites them).
func resize[T any](s []T, n int) []T {
	if s == nil || cap(s) < n { // nil: a new array, as Export always made
		return make([]T, n)
	}
	return s[:n]
}

// Load writes h into target's history without appending scrape by scrape:
// a replay restores a checkpoint with it. Two forms:
//
//   - The target holds nothing: h must hold every scrape a store of this
//     History retains after scrape h.Next-1, min(h.Next, History) of them.
//   - The target holds scrapes: h's oldest scrape must be one the store
//     retains or the one after its newest, and where they overlap the times
//     must agree. The scrapes after the store's newest are added, and h's
//     values overwrite the store's at h's times.
//
// Either way h.Series is the whole set of series after the newest scrape:
// series the store holds for the target that h does not list are
// forgotten, new ones are created (absent before h's times), and their
// values at the store's retained scrapes before h's are kept. The result is
// the store that appending the same scrapes would have built; Load checks
// the shape, never the values, and returns an error (changing nothing)
// when h does not fit.
func (s *Store) Load(target string, h TargetHistory) error {
	// Checked and built under the read lock and none (loads of distinct
	// targets run in parallel), applied under the write lock.
	s.mu.RLock()
	th, next0, series, fresh, err := s.loadPrepare(target, &h)
	s.mu.RUnlock()
	if err != nil {
		return err
	}
	hist := int64(s.cfg.History)
	n := int64(len(h.Times))
	first := h.Next - n
	for _, i := range fresh {
		sh := &h.Series[i]
		ss := series[sh.Key]
		switch {
		case n == hist && sh.Values == nil:
			ss.ring = ringOf32(sh.Values32, first)
		case n == hist:
			ss.ring = ringOf(sh.Values, first)
		default:
			ss.ring = newRing(int(hist))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	held := 0
	if th != nil {
		held = len(th.series)
	}
	if s.targets[target] != th || (th != nil && th.next != next0) || s.total-held+len(h.Series) > s.maxSeries {
		return fmt.Errorf("store load %q: the store changed while loading", target)
	}
	if th == nil {
		th = &targetHistory{times: make([]int64, hist)}
		s.targets[target] = th
		s.updateCap()
	}
	for idx := first; idx < h.Next; idx++ {
		th.times[idx%hist] = h.Times[idx-first]
	}
	th.byName = make(map[string][]*storedSeries, len(th.byName))
	for i := range h.Series {
		sh := &h.Series[i]
		ss := series[sh.Key]
		if n != hist || th.series[sh.Key] != nil {
			for k, v := range sh.Values {
				ss.ring.set(int((first+int64(k))%hist), v)
			}
			if sh.Values == nil {
				for k, v := range sh.Values32 {
					ss.ring.set(int((first+int64(k))%hist), float64(v))
				}
			}
		}
		ss.lastSeen = int32(sh.LastSeen)
		th.byName[ss.name] = append(th.byName[ss.name], ss)
	}
	for _, list := range th.byName {
		slices.SortFunc(list, byStoreKey)
	}
	s.total += len(series) - held
	for key, ss := range th.series {
		if series[key] != ss {
			ss.ring.release() // forgotten: its tile column goes back
			s.ident -= ss.identBytes()
		}
	}
	for key, ss := range series {
		if th.series[key] != ss {
			s.ident += ss.identBytes()
		}
	}
	th.series = series
	th.next = h.Next
	s.dropped += h.Dropped - th.dropped
	th.start, th.dropped, th.capped = h.Start, h.Dropped, h.Cap
	clear(th.order) // the series cache only saves work; it starts afresh
	th.order = th.order[:0]
	th.orderExact = false
	clear(th.stale)
	th.stale = th.stale[:0]
	return nil
}

// loadPrepare checks h against the store (under its read lock) and
// returns the target's history as it is (nil: none) with its scrape count,
// h's series by key (the held ones, and new ones without their ring) and
// the positions in h.Series of the new ones.
func (s *Store) loadPrepare(target string, h *TargetHistory) (*targetHistory, int64, map[string]*storedSeries, []int, error) {
	fail := func(err error) (*targetHistory, int64, map[string]*storedSeries, []int, error) {
		return nil, 0, nil, nil, err
	}
	hist := int64(s.cfg.History)
	n := int64(len(h.Times))
	first := h.Next - n
	if first < 0 || n > hist {
		return fail(fmt.Errorf("store load %q: %d scrapes ending at index %d (history %d)", target, n, h.Next, hist))
	}
	for i := 1; i < len(h.Times); i++ {
		if h.Times[i] <= h.Times[i-1] {
			return fail(fmt.Errorf("store load %q: scrape times not increasing at %d", target, i))
		}
	}
	th := s.targets[target]
	held := 0
	if th == nil || th.next == 0 {
		if n != min(h.Next, hist) {
			return fail(fmt.Errorf("store load %q: %d scrapes, want the %d retained after index %d", target, n, min(h.Next, hist), h.Next-1))
		}
	} else {
		held = len(th.series)
		oldest := th.next - int64(th.retained())
		if first < oldest || first > th.next || h.Next < th.next {
			return fail(fmt.Errorf("store load %q: scrapes [%d, %d) do not follow the held [%d, %d)", target, first, h.Next, oldest, th.next))
		}
		for idx := first; idx < th.next; idx++ {
			if th.times[idx%hist] != h.Times[idx-first] {
				return fail(fmt.Errorf("store load %q: scrape %d at %d, held at %d", target, idx, h.Times[idx-first], th.times[idx%hist]))
			}
		}
		if first == th.next && n > 0 && h.Times[0] <= th.times[(th.next-1)%hist] {
			return fail(fmt.Errorf("store load %q: scrape %d not after the held newest", target, first))
		}
	}
	if len(h.Series) > s.cfg.MaxSeriesPerTarget || s.total-held+len(h.Series) > s.maxSeries {
		return fail(fmt.Errorf("store load %q: %d series over the caps (%d per target, %d in all)", target, len(h.Series), s.cfg.MaxSeriesPerTarget, s.maxSeries))
	}
	var next0 int64
	if th != nil {
		next0 = th.next
	}
	var fresh []int
	series := make(map[string]*storedSeries, len(h.Series))
	for i := range h.Series {
		sh := &h.Series[i]
		nv := len(sh.Values)
		if sh.Values == nil {
			nv = len(sh.Values32)
		}
		if nv != len(h.Times) || sh.LastSeen >= h.Next {
			return fail(fmt.Errorf("store load %q: series %s: %d values for %d scrapes, last seen %d", target, sh.Name, nv, len(h.Times), sh.LastSeen))
		}
		if series[sh.Key] != nil {
			return fail(fmt.Errorf("store load %q: series %s given twice", target, sh.Name))
		}
		// No value after the series' last scrape: appends leave it absent
		// there, and SelectSince's walk back starts at the last scrape.
		for k := max(sh.LastSeen+1-first, 0); k < int64(nv); k++ {
			v := float64(0)
			if sh.Values != nil {
				v = sh.Values[k]
			} else {
				v = float64(sh.Values32[k])
			}
			if !math.IsNaN(v) {
				return fail(fmt.Errorf("store load %q: series %s: a value at scrape %d after its last, %d", target, sh.Name, first+k, sh.LastSeen))
			}
		}
		var ss *storedSeries
		if th != nil {
			ss = th.series[sh.Key]
		}
		if ss != nil && sh.LastSeen < ss.seen() {
			// The held values kept (before h's first scrape) must not be
			// newer than h's last scrape either.
			oldest := th.next - int64(th.retained())
			for idx := max(sh.LastSeen+1, oldest); idx < min(ss.seen()+1, first); idx++ {
				if !math.IsNaN(ss.ring.get(int(idx % hist))) {
					return fail(fmt.Errorf("store load %q: series %s: a held value at scrape %d after its last, %d", target, sh.Name, idx, sh.LastSeen))
				}
			}
		}
		if ss == nil {
			ss = &storedSeries{key: sh.Key, name: sh.Name, labels: sh.Labels, typ: uint8(sh.Type), extraVal: sh.Extra}
			fresh = append(fresh, i)
		}
		series[sh.Key] = ss
	}
	return th, next0, series, fresh, nil
}

// ringOf is a ring holding vals, the value of scrape first at vals[0]:
// what newRing and a set per value build, in one pass (a restore fills
// whole rings).
func ringOf(vals []float64, first int64) ring {
	n := len(vals)
	at := int(first % int64(n)) // vals[k] goes to slot (at+k) mod n
	f32 := ringArrays.take(n)
	head, tail := f32[at:], f32[:at]
	for k, v := range vals[:n-at] {
		f := float32(v)
		if float64(f) != v && v == v { // not exact as float32 (NaN is)
			ringArrays.give(f32)
			return wideOf(vals, at)
		}
		head[k] = f
	}
	for k, v := range vals[n-at:] {
		f := float32(v)
		if float64(f) != v && v == v {
			ringArrays.give(f32)
			return wideOf(vals, at)
		}
		tail[k] = f
	}
	return ownRing(f32)
}

// ringOf32 is ringOf of float32 values: a rotated copy.
func ringOf32(vals []float32, first int64) ring {
	n := len(vals)
	at := int(first % int64(n))
	f32 := ringArrays.take(n)
	copy(f32[at:], vals[:n-at])
	copy(f32[:at], vals[n-at:])
	return ownRing(f32)
}
