package analysis

import (
	"slices"
	"sort"
	"sync"
	"unsafe"

	"github.com/retrytop/retrytop/model"
)

// FrameCache is what the frames of a live view (watch's, a replay's)
// keep from one to the next. A target's contract series are selected
// into one buffer (model.SelectBuffer), reused target after target: a
// frame reads a target's rows before it selects the next, so the points
// of every target are never held at once, and nothing is allocated per
// series once the buffer has grown (a cache of every target's points was a
// fifth of watch's heap). The server-side series, which every target's
// rows read during the whole frame, and the service families are kept
// as the last frame selected them, so that the next frame copies from
// the store only the scrapes since then (Store.SelectSince from the
// newest scrape the cache holds). Frames built with it are the frames
// built without it (TestFrameCacheMatchesFresh); anything the cache
// cannot prove unchanged (a series appearing or leaving, a store or a
// target replaced, an older range asked for) is selected from the store
// again.
//
// A FrameCache serves one store at a time (another, a replay's after a
// seek, starts it over but for its buffers); frames that use it are
// built one at a time (BuildFrame holds it). The zero value is not usable: NewFrameCache.
type FrameCache struct {
	mu    sync.Mutex
	store *model.Store
	// buf holds the selection of the target whose rows are being read;
	// more are the other workers' of a frame on every core (workerBuf).
	// Scratch, kept across stores: grown from nothing at every seek's
	// frame, they were a quarter of its CPU on the 1-hour dump.
	buf  model.SelectBuffer
	more []*model.SelectBuffer
	// alone counts the frames on one goroutine since the last on more.
	alone int
	// servers are the targets' server-side series (serverNames),
	// services their service families (serviceNames, ServiceSignalsFor).
	servers, services cacheMap
}

// cacheMap is one kind of series of every target.
type cacheMap struct {
	m map[string]*targetCache
	// fresh and delta count the targets selected from scratch and
	// brought up to date, for tests.
	fresh, delta int
}

// NewFrameCache returns an empty cache.
func NewFrameCache() *FrameCache {
	return &FrameCache{servers: cacheMap{m: make(map[string]*targetCache)}, services: cacheMap{m: make(map[string]*targetCache)}}
}

// targetCache is one target's series as of its newest frame.
type targetCache struct {
	// since is the since they were selected from: they hold every sample
	// from the target's last scrape at or before it on (and for a series
	// absent there, its newest sample before), no range older.
	since int64
	// times are the target's retained scrape times when they were
	// selected; newest is the last of them, the newest scrape every
	// cached series is complete up to (a scrape appended while they were
	// being copied may be in some series and not others).
	times  []int64
	newest int64
	series map[string][]cachedSeries
	// names and match are what was selected: names that match accepts
	// (nil: all).
	names []string
	match func(model.Labels) bool
}

// lock takes the cache for one frame over st; a cache used with another
// store starts over, and lock then returns false.
func (c *FrameCache) lock(st *model.Store) bool {
	c.mu.Lock()
	if c.store != st {
		c.store = st
		c.buf.Reset() // nothing of the old store's read again
		for _, b := range c.more {
			b.Reset()
		}
		clear(c.servers.m)
		clear(c.services.m)
		return false
	}
	return true
}

func (c *FrameCache) unlock() { c.mu.Unlock() }

// workerBuf is the selection buffer of a frame's worker k (0: the
// frame's goroutine, buf), with c locked.
func (c *FrameCache) workerBuf(k int) *model.SelectBuffer {
	if k == 0 {
		return &c.buf
	}
	for len(c.more) < k {
		c.more = append(c.more, new(model.SelectBuffer))
	}
	return c.more[k-1]
}

// keepWorkers notes a frame made by n workers. The other workers'
// buffers are let go after moreKept frames on one goroutine in a row:
// a live frame after another runs on one, so watch holds one buffer,
// not one per core, a minute after its first frame; a replay's seek,
// whose first frame (of the moment before) runs on one, keeps them.
func (c *FrameCache) keepWorkers(n int) {
	if n > 1 {
		c.alone = 0
		return
	}
	if c.alone++; c.alone >= moreKept {
		c.more, c.alone = nil, 0
	}
}

// moreKept is how many frames in a row on one goroutine the other
// workers' buffers outlast.
const moreKept = 64

// forgetExcept drops the targets not in names (gone from the store).
func (c *FrameCache) forgetExcept(names []string) {
	for _, m := range []map[string]*targetCache{c.servers.m, c.services.m} {
		if len(m) <= len(names) {
			continue
		}
		for t := range m {
			if _, ok := slices.BinarySearch(names, t); !ok {
				delete(m, t)
			}
		}
	}
}

// selectTargetInto is selectTarget(st, target, ts, nil, since) with the
// points in buf, which it resets: valid until buf's next selection (a
// frame's first worker uses the cache's, c.buf, with c locked). ts are
// the target's scrape times from the last at or before since on.
func selectTargetInto(buf *model.SelectBuffer, st *model.Store, target string, ts []int64, since int64) *selection {
	buf.Reset()
	sel := &selection{target: target, times: ts, series: make(map[string][]model.Series, len(selectNames))}
	for _, n := range selectNames {
		if ss := st.SelectSinceInto(buf, target, n, nil, since); len(ss) > 0 {
			sel.series[n] = ss
		}
	}
	return sel
}

// selectServer is selectServer(st, target, ts, since) through the cache.
func (c *FrameCache) selectServer(st *model.Store, target string, all, ts []int64, since int64) *server {
	if len(ts) == 0 {
		return nil
	}
	return serverFrom(ts, c.servers.series(st, target, serverNames, noDependency, all, ts, since))
}

// ServiceSignalsFor is ServiceSignalsFor(st, target, startMs, endMs) with
// the target's service series kept from one call to the next: the live
// view asks for every service target's signals over its window every
// frame, and copying their families over the whole window each time was
// 8 % of an idle dashboard's CPU on small targets. The same
// rules as a frame's: anything the cache cannot prove unchanged is
// selected again (TestFrameCacheServiceSignals).
func (c *FrameCache) ServiceSignalsFor(st *model.Store, target string, startMs, endMs int64) model.ServiceSignals {
	c.lock(st)
	defer c.unlock()
	times := st.TimesSince(target, startMs)
	var sv *service
	if len(times) > 0 {
		series := c.services.series(st, target, serviceNames, noDependency, st.Times(target), times, startMs)
		sv = serviceFrom(target, times, func(name string) []model.Series { return series[name] })
	}
	if sv == nil {
		return model.ServiceSignals{Target: target, StartMs: startMs, EndMs: endMs}
	}
	return sv.eval(rangeWindow(times, startMs, endMs))
}

// series returns target's series of names that match accepts (nil: all)
// from since on, as Store.SelectSince returns them, by name (names with
// none left out): from the cache when it can be brought up to date, else
// from the store, and keeps them.
func (c *cacheMap) series(st *model.Store, target string, names []string, match func(model.Labels) bool, all, ts []int64, since int64) map[string][]model.Series {
	tc := c.m[target]
	if tc != nil && tc.usable(all, since) {
		if series, ok := tc.update(st, target, all, ts, since); ok {
			c.delta++
			return series
		}
	}
	c.fresh++
	out := make(map[string][]model.Series, len(names))
	for _, n := range names {
		if ss := st.SelectSince(target, n, match, since); len(ss) > 0 {
			out[n] = ss
		}
	}
	if len(all) == 0 {
		delete(c.m, target)
		return out
	}
	// The cache keeps its own arrays: rows read the selection's, and
	// update appends to the cache's.
	kept := make(map[string][]cachedSeries, len(out))
	for n, ss := range out {
		kept[n] = cloneSeries(ss)
	}
	c.m[target] = &targetCache{names: names, match: match, since: since, times: all, newest: all[len(all)-1], series: kept}
	return out
}

// usable reports whether tc can be brought up to all: it holds the range
// asked for, and the scrapes it saw are still the store's (the target was
// not forgotten and scraped anew in between).
func (tc *targetCache) usable(all []int64, since int64) bool {
	if since < tc.since || len(all) == 0 {
		return false
	}
	// The scrapes both saw must be the same ones: the cached times from
	// the oldest still retained on are a prefix of all.
	k := sort.Search(len(tc.times), func(i int) bool { return tc.times[i] >= all[0] })
	old := tc.times[k:]
	return len(old) > 0 && len(old) <= len(all) && slices.Equal(old, all[:len(old)])
}

// update brings the cached series up to the store: the samples since the
// newest scrape they are complete up to are selected, appended, and every
// series is cut to the range a fresh selection from since holds. It
// reports false, changing nothing the caller can see, when the store's
// series are not the cached ones (then a fresh selection is needed).
func (tc *targetCache) update(st *model.Store, target string, all, ts []int64, since int64) (map[string][]model.Series, bool) {
	news := make(map[string][]model.Series, len(tc.names))
	for _, n := range tc.names {
		d := st.SelectSince(target, n, tc.match, tc.newest)
		if !sameSeries(tc.series[n], d) {
			return nil, false
		}
		if len(d) > 0 {
			news[n] = d
		}
	}
	tFrom, oldest := ts[0], all[0]
	series := make(map[string][]model.Series, len(news))
	for n, d := range news {
		cached := tc.series[n]
		out := make([]model.Series, len(d))
		for i := range d {
			c := &cached[i]
			last := int64(-1 << 63)
			if k := len(c.Points); k > 0 {
				last = c.Points[k-1].T
			}
			add := d[i].Points
			add = add[sort.Search(len(add), func(j int) bool { return add[j].T > last }):]
			c.appendTrim(add, tFrom, oldest)
			c.Stale = d[i].Stale
			out[i] = c.Series
		}
		series[n] = out
	}
	tc.since, tc.times, tc.newest = since, all, all[len(all)-1]
	return series, true
}

// cachedSeries is a series as the cache keeps it: Points are the end of
// buf, the array they live in, whose start the range has left behind.
type cachedSeries struct {
	model.Series
	buf []model.Point
}

// appendTrim appends add (newer than every point) to c's points and cuts
// them to what SelectSince holds for a range starting at the scrape at
// tFrom: the samples from tFrom on and, when there is none at tFrom, the
// newest one before it that the store still retains (oldest is its
// oldest retained scrape). The points are appended in place while buf has
// room; else the kept ones move to a new array of an eighth more than
// they need, so that a series keeps little more than its range (grown by
// append and cut at the front, an array held about half again as much).
// Points before tFrom that the selection no longer returns are never
// written over: a new array takes them only from the kept ones.
func (c *cachedSeries) appendTrim(add []model.Point, tFrom, oldest int64) {
	old := c.Points
	n := len(old) + len(add)
	at := func(i int) model.Point {
		if i < len(old) {
			return old[i]
		}
		return add[i-len(old)]
	}
	k := sort.Search(n, func(i int) bool { return at(i).T >= tFrom })
	if (k == n || at(k).T != tFrom) && k > 0 && at(k-1).T >= oldest {
		k--
	}
	if len(c.buf)+len(add) <= cap(c.buf) {
		c.buf = append(c.buf, add...)
		c.Points = c.buf[len(c.buf)-(n-k):]
		return
	}
	keep := n - k
	nb := make([]model.Point, 0, keep+keep/8+2)
	if k < len(old) {
		nb = append(nb, old[k:]...)
		nb = append(nb, add...)
	} else {
		nb = append(nb, add[k-len(old):]...)
	}
	c.buf, c.Points = nb, nb
}

// sameSeries reports whether the store's series d are the cached ones, in
// the same order. The store hands out each series' own labels, so the same
// series has the same label array; a series created again (forgotten,
// then back) gets a new one.
func sameSeries(cached []cachedSeries, d []model.Series) bool {
	if len(cached) != len(d) {
		return false
	}
	for i := range d {
		a, b := cached[i].Labels, d[i].Labels
		if len(a) != len(b) || unsafe.SliceData(a) != unsafe.SliceData(b) ||
			cached[i].Type != d[i].Type || cached[i].Name != d[i].Name {
			return false
		}
	}
	return true
}

func cloneSeries(ss []model.Series) []cachedSeries {
	out := make([]cachedSeries, len(ss))
	for i, s := range ss {
		s.Points = slices.Clone(s.Points)
		out[i] = cachedSeries{Series: s, buf: s.Points}
	}
	return out
}
