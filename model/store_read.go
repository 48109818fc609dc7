package model

import "math"

// SinceReader reads series' points the way SelectSince copies them, into
// buffers it keeps from call to call: a reader that folds each series into
// results of its own (analysis.WholeBuilder, a batch of bins at a time)
// then allocates nothing per series. The zero value is ready; it is not
// safe for concurrent use.
type SinceReader struct {
	vals []float64
	pts  []Point
}

// EachSince calls fn for every series of target named name with the points
// SelectSince(target, name, nil, sinceMs) gives it, its key (the store's
// identity: name, 0xff and Labels.AppendKey of its labels) and its labels,
// in no particular order. pts is the reader's and valid only until fn
// returns; labels are the store's, never to be written. fn runs under the
// store's read lock: it must not call the store, and Append waits for it,
// so it is for a store nobody appends to meanwhile (analyze's loading,
// which appends and reduces on one goroutine) or for short folds; a live
// reader copies with SelectSince.
func (s *Store) EachSince(rd *SinceReader, target, name string, sinceMs int64, fn func(key string, labels Labels, pts []Point)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	th := s.targets[target]
	if th == nil {
		return
	}
	list := th.byName[name]
	if len(list) == 0 {
		return
	}
	hist := len(th.times)
	from, n := th.rangeSince(sinceMs)
	oldest := th.next - int64(th.retained())
	fromSlot := int(from % int64(hist))
	if cap(rd.vals) < n {
		rd.vals = make([]float64, n)
	}
	vals := rd.vals[:n]
	for _, ss := range list {
		pts := rd.pts[:0]
		// The range's values read a run at a time (ring.read), then the
		// absent ones left out.
		ss.ring.read(vals, fromSlot, hist)
		// As SelectSince: a series absent at the range's first scrape
		// starts with its newest earlier sample, walked back from its last.
		if n == 0 || math.IsNaN(vals[0]) {
			start := min(from-1, ss.seen())
			for i := start; i >= oldest; i-- {
				slot := i % int64(hist)
				if v := ss.ring.get(int(slot)); !math.IsNaN(v) {
					pts = append(pts, Point{T: th.times[slot], V: v})
					break
				}
			}
		}
		slot := fromSlot
		for _, v := range vals {
			if !math.IsNaN(v) {
				pts = append(pts, Point{T: th.times[slot], V: v})
			}
			if slot++; slot == hist {
				slot = 0
			}
		}
		rd.pts = pts
		fn(ss.key, ss.labels, pts)
	}
}
