package analysis

import (
	"math"
	"sort"
	"time"

	"github.com/retrytop/retrytop/model"
)

// Frame defaults.
const (
	DefaultWindow = 30 * time.Second
	DefaultBin    = 10 * time.Second
	DefaultBins   = 30
)

// FrameOptions shape a Frame. Zero fields take the defaults.
type FrameOptions struct {
	// Window is the range the rows' signals are computed over, ending at
	// EndMs (default 30 s).
	Window time.Duration
	// Bin is the width of one timeline bin (default 10 s).
	Bin time.Duration
	// EndMs is the data time the frame ends at, Unix milliseconds; 0 means
	// the newest scrape of any target.
	EndMs int64
	// Bins is the number of timeline bins per row (default 30), the last
	// one ending at EndMs.
	Bins int
	// Align puts the timeline's bin edges on multiples of Bin (Unix time)
	// instead of counting them back from EndMs; the newest bin then runs
	// from the last edge to EndMs (merged into the one before while shorter
	// than half a bin). Bins that ended keep their edges from one frame to
	// the next, which is what lets Prev supply them.
	Align bool
	// Prev is an earlier frame of the same store built with the same Bin
	// and Align. Its bins that were final (Frame.FinalMs) are reused
	// instead of evaluated again: a live view rebuilding every second then
	// evaluates one or two bins per row instead of all of them. nil: none.
	Prev *model.Frame
	// Cache, when set, keeps the targets' series from one frame to the
	// next, so that a live view copies only the scrapes since its last
	// frame out of the store (FrameCache). The frame is the same without
	// it. nil: every frame selects its ranges from the store.
	Cache *FrameCache
}

func (o FrameOptions) withDefaults() FrameOptions {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Bin < time.Millisecond {
		o.Bin = DefaultBin
	}
	if o.Bins <= 0 {
		o.Bins = DefaultBins
	}
	return o
}

// BuildFrame computes everything a view shows at one moment: a row of
// signals over [EndMs-Window, EndMs] for every (target, dependency) in the
// store, sorted by target then dependency, and per row a timeline of Bins
// bins ending at EndMs. targets is passed through as the frame's target
// health. Each target's series are copied out of the store once and every
// window and bin is evaluated on those copies.
func BuildFrame(st *model.Store, targets []model.TargetStatus, opts FrameOptions) model.Frame {
	opts = opts.withDefaults()
	f := model.Frame{
		Window:    opts.Window,
		Bin:       opts.Bin,
		Targets:   targets,
		Timelines: make(map[model.Key]*model.Timeline),
	}
	names := st.Targets()
	times, newest, end := scrapeTimes(st, names, opts.EndMs)
	if end == 0 {
		return f
	}
	f.Time = time.UnixMilli(end)
	winStart := end - opts.Window.Milliseconds()
	binMs := opts.Bin.Milliseconds()
	tlStart := TimelineStart(end, opts.Bin, opts.Bins, opts.Align)
	bins := binEdges(binMs, tlStart, end)
	prev := reusable(opts)
	cache := opts.Cache
	if cache != nil {
		if !cache.lock(st) {
			// Another store (a replay's seek rebuilt it): the previous
			// frame's bins are of another history.
			prev = nil
		}
		defer cache.unlock()
		cache.forgetExcept(names)
	}
	if opts.Align {
		f.FinalMs = make(map[model.Key]int64)
	}

	// Each target's series are copied from the oldest moment a window or a
	// bin still to evaluate needs; a row the previous frame did not have
	// needs its whole timeline, so its target is copied again from the
	// start of the timeline.
	servers := make(map[string]*server)
	selectFrom := func(i int, since int64) []int64 {
		ts := times[i]
		// Keep the scrapes from since on, plus the one just before (the
		// same range SelectSince copies).
		if k := sort.Search(len(ts), func(j int) bool { return ts[j] > since }); k > 0 {
			ts = ts[k-1:]
		}
		return ts
	}
	fullSince := min(winStart, tlStart)
	for i, t := range names {
		ts := selectFrom(i, fullSince)
		var sv *server
		if cache != nil {
			sv = cache.selectServer(st, t, times[i], ts, fullSince)
		} else {
			sv = selectServer(st, t, ts, fullSince)
		}
		if sv != nil {
			servers[t] = sv
		}
	}
	if len(servers) > 0 {
		aliasServers(Identities(st, targets), servers)
	}
	// Each target's rows and timelines, evaluated on every core when the
	// frame evaluates every bin (no previous frame to take them from: the
	// first frame, a seek, a paused moment), each worker with its own
	// selection buffer; a live frame after another, which evaluates a bin
	// or two a row through the cache's one buffer, stays on this goroutine.
	fb := &frameBuild{st: st, names: names, newest: newest, servers: servers, prev: prev,
		bins: bins, winStart: winStart, end: end, fullSince: fullSince, selectFrom: selectFrom}
	out := make([][]frameRow, len(names))
	minEach := 1
	if prev != nil && cache != nil {
		minEach = len(names) + 1 // one goroutine
	}
	workers := 0
	parallelFor(len(names), minEach, func() func(int) {
		w := &frameWorker{frameBuild: fb}
		if cache != nil {
			w.buf = cache.workerBuf(workers)
		}
		workers++
		return func(i int) { out[i] = w.target(i) }
	})
	if cache != nil {
		cache.keepWorkers(workers)
	}
	n := 0
	for i := range out {
		n += len(out[i])
	}
	f.Rows = make([]model.Signals, 0, n)
	for i := range out {
		for _, r := range out[i] {
			f.Rows = append(f.Rows, r.row)
			f.Timelines[r.key] = r.timeline
			if f.FinalMs != nil {
				f.FinalMs[r.key] = r.final
			}
		}
	}
	return f
}

// frameBuild is what BuildFrame's workers share, read only.
type frameBuild struct {
	st                       *model.Store
	names                    []string
	newest                   map[string]int64
	servers                  map[string]*server
	prev                     *prevBins
	bins                     []binEdge
	winStart, end, fullSince int64
	selectFrom               func(i int, since int64) []int64
}

// frameWorker evaluates targets one after the other: its buffers are
// its own (buf nil: each selection allocates).
type frameWorker struct {
	*frameBuild
	tb  model.TimelineBuilder
	buf *model.SelectBuffer
}

// target evaluates names[i]'s rows over the window and their timelines,
// in dependency order.
func (w *frameWorker) target(i int) []frameRow {
	t, prev := w.names[i], w.prev
	selectRows := func(since int64) map[string]*row {
		ts := w.selectFrom(i, since)
		if w.buf != nil {
			return selectTargetInto(w.buf, w.st, t, ts, since).rows()
		}
		return selectTarget(w.st, t, ts, nil, since).rows()
	}
	since := w.fullSince
	if prev != nil {
		since = min(w.winStart, prev.needFrom(t, w.bins))
	}
	rows := selectRows(since)
	if since > w.fullSince && prev.hasNewRow(t, rows) {
		since = w.fullSince
		rows = selectRows(since)
	}
	deps := make([]string, 0, len(rows))
	for d := range rows {
		deps = append(deps, d)
	}
	sort.Strings(deps)
	out := make([]frameRow, len(deps))
	for k, d := range deps {
		r := rows[d]
		r.server = w.servers[d]
		key := model.Key{Target: t, Dependency: d}
		fr := &out[k]
		fr.key, fr.row = key, r.eval(rangeWindow(r.times, w.winStart, w.end))
		w.tb.Reset()
		for _, b := range w.bins {
			if i, ok := prev.index(key, b); ok {
				w.tb.AddFrom(prev.frame.Timelines[key], i)
			} else {
				w.tb.Add(r.eval(binWindow(r.times, b.start, b.end)))
			}
		}
		fr.timeline = w.tb.Timeline()
		fr.final = w.newest[t]
		if r.server != nil {
			fr.final = min(fr.final, w.newest[d])
		}
	}
	return out
}

// frameRow is a row of a frame with its timeline and the newest time its
// bins are final at.
type frameRow struct {
	key      model.Key
	row      model.Signals
	timeline *model.Timeline
	final    int64
}

// scrapeTimes are the scrape times of each of names, each target's
// newest, and the frame's end: endMs, or the newest scrape of all when
// endMs is 0.
func scrapeTimes(st *model.Store, names []string, endMs int64) (times [][]int64, newest map[string]int64, end int64) {
	times = make([][]int64, len(names))
	newest = make(map[string]int64, len(names))
	end = endMs
	for i, t := range names {
		times[i] = st.Times(t)
		if n := len(times[i]); n > 0 {
			newest[t] = times[i][n-1]
			if endMs == 0 && times[i][n-1] > end {
				end = times[i][n-1]
			}
		}
	}
	return times, newest, end
}

// TimelineStart is where a timeline of bins bins ending at endMs starts.
// Unaligned, bins are counted back from endMs. Aligned, edges sit on
// multiples of bin and the newest bin runs from the last edge to endMs,
// or from the edge before when that would be shorter than half a bin (the
// sliver rule of Timeline), so there are always exactly bins bins.
func TimelineStart(endMs int64, bin time.Duration, bins int, align bool) int64 {
	binMs := bin.Milliseconds()
	if !align || binMs <= 0 {
		return endMs - int64(bins)*binMs
	}
	last := floorTo(endMs, binMs)
	if rest := endMs - last; rest == 0 || rest < binMs/2 {
		last -= binMs
	}
	return last - int64(bins-1)*binMs
}

// floorTo rounds t down to a multiple of step (toward minus infinity).
func floorTo(t, step int64) int64 {
	q := t / step
	if t%step != 0 && t < 0 {
		q--
	}
	return q * step
}

type binEdge struct{ start, end int64 }

// reportGrid is the bin layout of a report's timeline (analyze): edges on
// multiples of the bin width in Unix time, as the live frames' aligned
// bins, from the recording's first scrape. The first bin runs from that
// scrape to the first edge after it, merged into the next bin when it
// would be shorter than half a bin (the sliver rule of binEdges, at the
// start); the last is cut or merged at the end by binEdges. Two reports of
// the same span whose readers first scraped at different moments (analyze
// scraping and analyze --prometheus, two recordings of one incident) then
// share every edge after the first, so their bins cover the same time and
// differ only by where each reader's scrapes fall in them (under one
// scrape interval); bins counted from each reader's first scrape were out
// of phase by up to a bin.
type reportGrid struct {
	binMs, startMs int64
	first          int64 // the end of the first bin: an edge on the grid
}

func newReportGrid(binMs, startMs int64) reportGrid {
	g := reportGrid{binMs: binMs, startMs: startMs}
	if binMs > 0 {
		g.first = floorTo(startMs, binMs) + binMs
		if g.first-startMs < binMs/2 {
			g.first += binMs
		}
	}
	return g
}

// bin is the k-th bin of an open-ended layout (before the end's cut).
func (g reportGrid) bin(k int) binEdge {
	if k == 0 {
		return binEdge{g.startMs, g.first}
	}
	return binEdge{g.first + int64(k-1)*g.binMs, g.first + int64(k)*g.binMs}
}

// endingBy is how many bins of the open-ended layout end at or before t.
func (g reportGrid) endingBy(t int64) int {
	if g.binMs <= 0 || t < g.first {
		return 0
	}
	return int((t-g.first)/g.binMs) + 1
}

// edges lays the grid out up to endMs: the bins of the open-ended layout,
// the last cut at endMs, and a remainder shorter than half a bin merged
// into the bin before it.
func (g reportGrid) edges(endMs int64) []binEdge {
	if g.binMs <= 0 || endMs <= g.startMs {
		return nil
	}
	if endMs-g.first < g.binMs/2 {
		return []binEdge{{g.startMs, endMs}} // shorter than the first bin and a half: one bin
	}
	return append([]binEdge{{g.startMs, g.first}}, binEdges(g.binMs, g.first, endMs)...)
}

// binEdges lays out consecutive timeline bins from startMs to endMs. A
// sliver left at the end joins the bin before it: a rate over a few
// milliseconds holding one scrape's increase is a spike of nothing (13 ms of
// a 5 s bin read 22k/s for 50/s of traffic).
func binEdges(binMs, startMs, endMs int64) []binEdge {
	if binMs <= 0 || endMs <= startMs {
		return nil
	}
	out := make([]binEdge, 0, (endMs-startMs+binMs-1)/binMs)
	for a := startMs; a < endMs; a += binMs {
		b := min(a+binMs, endMs)
		if rest := endMs - b; rest > 0 && rest < binMs/2 {
			b = endMs
		}
		out = append(out, binEdge{a, b})
		if b == endMs {
			break
		}
	}
	return out
}

// prevBins is an earlier frame's timelines, indexed for reuse.
type prevBins struct {
	frame *model.Frame
	// byTarget lists the rows each target had.
	byTarget map[string][]model.Key
}

// reusable returns the previous frame when its bins can be reused.
func reusable(opts FrameOptions) *prevBins {
	p := opts.Prev
	if p == nil || !opts.Align || p.Bin != opts.Bin || p.FinalMs == nil {
		return nil
	}
	pb := &prevBins{frame: p, byTarget: make(map[string][]model.Key)}
	for k := range p.Timelines {
		pb.byTarget[k.Target] = append(pb.byTarget[k.Target], k)
	}
	return pb
}

// bin returns the previous frame's bin of key with these edges, when it
// was final.
// index is where the previous frame's timeline of key has the bin with
// these edges, when it was final.
func (p *prevBins) index(key model.Key, b binEdge) (int, bool) {
	if p == nil || b.end > p.frame.FinalMs[key] {
		return 0, false
	}
	tl := p.frame.Timelines[key]
	// Bins are aligned and consecutive: find by start.
	i := sort.Search(tl.Len(), func(i int) bool { s, _ := tl.Edges(i); return s >= b.start })
	if i < tl.Len() {
		if s, e := tl.Edges(i); s == b.start && e == b.end {
			return i, true
		}
	}
	return 0, false
}

// needFrom is the start of the oldest bin of target's rows that cannot be
// reused (the end of the timeline when all can).
func (p *prevBins) needFrom(target string, bins []binEdge) int64 {
	if len(bins) == 0 {
		return math.MaxInt64
	}
	keys := p.byTarget[target]
	if len(keys) == 0 {
		return bins[0].start
	}
	need := bins[len(bins)-1].start
	for _, k := range keys {
		for _, b := range bins {
			if _, ok := p.index(k, b); !ok {
				need = min(need, b.start)
				break
			}
		}
	}
	return need
}

// hasNewRow reports a row the previous frame did not have.
func (p *prevBins) hasNewRow(target string, rows map[string]*row) bool {
	for d := range rows {
		if _, ok := p.frame.Timelines[model.Key{Target: target, Dependency: d}]; !ok {
			return true
		}
	}
	return false
}
