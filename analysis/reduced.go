package analysis

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/retrytop/retrytop/model"
)

// A whole recording's report (analyze FILE) needs every timeline bin of
// every row, but each bin reads only its own samples and the one before
// it. WholeBuilder reduces the store's series to per-bin results while the
// recording is loaded, a batch of bins at a time, so that the store keeps
// only the last few minutes (a bounded history) instead of every scrape.
//
// Each flat series is reduced per bin to what the row's evaluation reads
// of it: a counter's increase over the bin (increase of the window's span)
// or a gauge's value at the target's newest scrape in it, and whether it
// had one. At the end the rows are selected as BuildReport selects them,
// from the same series in the same order, with the per-bin results as
// their points (reducedMark, window.span and window.gauge), so the rows'
// structure (which series, result keys, latency classes) is that of the
// whole recording and every bin is evaluated by the same code on the same
// numbers: the report equals BuildReport's on a store holding everything
// (TestAnalyzeWholeSameAsSequential in cmd/retrytop).

// reducedMark is the time of the first point of a reduced series: no
// scrape is at the smallest int64 milliseconds.
const reducedMark = math.MinInt64

// reduced returns the reduced points of the bins starting in [start,
// end): for each bin where the series had a value, the pair {bin start,
// 0}, {bin start, value}. increase of them is the sum of the values (each
// pair's 0 after a value is a reset, which counts the value before it in
// full), so one bin's window reads its value and a span of bins their
// sum; nil when none had one.
func (p points) reduced(start, end int64) []model.Point {
	i := searchAfter(p.pts, start-1)
	j := searchAfter(p.pts, end-1)
	if j <= i+1 {
		return nil
	}
	return p.pts[i:j]
}

// wholeBatch is how many bins of DefaultBin or narrower WholeBuilder
// reduces at a time: each batch copies the store's series since its first
// bin once. Wider bins are reduced in batches of the same span at most
// (batchBins), so that the store's history does not grow with the bin.
const wholeBatch = 30

// batchBins is how many bins of binMs a batch reduces: wholeBatch, or for
// bins wider than DefaultBin as many as wholeBatch of DefaultBin span, at
// least one.
func batchBins(binMs int64) int {
	if binMs <= DefaultBin.Milliseconds() {
		return wholeBatch
	}
	return max(1, int(wholeBatch*DefaultBin.Milliseconds()/binMs))
}

// WholeBuilder builds the Report of a whole recording loaded into a store
// with a bounded history (see WholeHistory): call Observe after every
// entry is applied, in entry order, then Report.
type WholeBuilder struct {
	finishedMs int64 // the end finish reduced the bins up to (0: not yet)
	st         *model.Store
	opts       ReportOptions
	binMs      int64
	started    bool
	startMs    int64 // the first stored scrape: the timeline's start
	newest     int64 // the newest stored scrape
	done       int   // bins reduced
	bins       int   // the bins the recording's end implies (ReportOptions.RecordingEnd; 0: not known)
	targets    map[string]*wholeTarget
	edges      []binEdge // the final bins, set by finish
	// scratch holds a series' points with the sample before them while
	// reduce reads them (a fresh copy a series and batch was half of
	// what reducing allocated).
	scratch []model.Point
	rd      model.SinceReader // the store's points, read into buffers reused a series at a time
	// stepsOn: some target exports a service time, so rows keep their
	// goodput steps (scrapeSteps.gather).
	stepsOn bool
	// released: an Incident report let the per-bin results go.
	released bool
	// series counts the reduced series; err is set once they and the
	// bins would take more than opts.MaxBinBytes.
	series int
	err    *BinBudgetError
}

// WholeBytesPerSeriesBin is what a whole recording's report holds per
// reduced series and bin, measured: on the 1-hour dump the live heap
// grows by about 131 MB over 15,200 reduced series × 360 bins of 10 s
// (each series' per-bin result, 8 bytes, and the rows' timelines and
// points made of them).
const WholeBytesPerSeriesBin = 24

// BinBudgetError is a whole recording's report whose per-bin results
// would take more than ReportOptions.MaxBinBytes: Series reduced series
// (so far) × Bins bins of Bin.
type BinBudgetError struct {
	Series, Bins int
	Bin          time.Duration
	Limit        int64
}

func (e *BinBudgetError) Error() string {
	return fmt.Sprintf("the report would hold %d series x %d bins of %v (about %d MB at %d bytes a series and bin), over its budget of %d MB",
		e.Series, e.Bins, e.Bin, int64(e.Series)*int64(e.Bins)*WholeBytesPerSeriesBin>>20, WholeBytesPerSeriesBin, e.Limit>>20)
}

// WiderBin is the narrowest bin of niceBins, wider than Bin, at which
// the bins of the same span fit the budget with the series counted so
// far (0 when none does).
func (e *BinBudgetError) WiderBin() time.Duration {
	fit := e.Limit / (int64(max(e.Series, 1)) * WholeBytesPerSeriesBin) // bins that fit
	span := time.Duration(e.Bins) * e.Bin
	for _, b := range niceBins {
		if b > e.Bin && fit > 0 && int64((span+b-1)/b) <= fit {
			return b
		}
	}
	return 0
}

// AutoBin is the width a report of the same span gets without a bin
// asked for (AutoBin), when it fits the budget; 0 when it does not.
func (e *BinBudgetError) AutoBin() time.Duration {
	wider := e.WiderBin()
	auto := AutoBin(0, (time.Duration(e.Bins) * e.Bin).Milliseconds())
	if wider == 0 || auto < wider {
		return 0
	}
	return auto
}

// niceBins are the bin widths WiderBin proposes.
var niceBins = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 20 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour}

// MaxAutoBins is how many bins a recording's timeline holds at most when
// no bin width is asked for (AutoBin): an hour of DefaultBin. Past an
// hour the bins widen instead of growing in number, so what the report
// holds per series stops growing with the recording's length.
const MaxAutoBins = 360

// AutoBin is the bin width of a timeline from startMs to endMs when none
// is asked for: DefaultBin, or the narrowest of niceBins wider than it
// that lays the span out in at most MaxAutoBins bins (the widest when none
// does), as Grafana and the Prometheus UI widen a graph's step with its
// range.
func AutoBin(startMs, endMs int64) time.Duration {
	for _, b := range niceBins {
		ms := b.Milliseconds()
		if b < DefaultBin || (endMs-startMs)/ms > MaxAutoBins+2 {
			continue // laying out its bins to count them would be a waste
		}
		if len(newReportGrid(ms, startMs).edges(endMs)) <= MaxAutoBins {
			return b
		}
	}
	return niceBins[len(niceBins)-1]
}

// Err is the builder's *BinBudgetError once its series and bins exceed
// ReportOptions.MaxBinBytes (nil before): the loading may stop there,
// the report will fail with it.
func (b *WholeBuilder) Err() error {
	if b.err == nil {
		return nil
	}
	return b.err
}

// fits reports whether series reduced series of bins bins stay within
// opts.MaxBinBytes, and notes the error when not.
func (b *WholeBuilder) fits(series, bins int) bool {
	if b.err != nil {
		return false
	}
	lim := b.opts.MaxBinBytes
	if lim <= 0 || int64(series)*int64(bins)*WholeBytesPerSeriesBin <= lim {
		return true
	}
	b.err = &BinBudgetError{Series: series, Bins: bins, Bin: b.opts.Bin, Limit: lim}
	return false
}

type wholeTarget struct {
	// first and last are the target's first and newest scrape seen;
	// seen is false until it has one.
	first, last int64
	seen        bool
	series      map[string]*wholeSeries
	steps       scrapeSteps // every scrape's goodput and service time (recovery)
}

// binInfo is the part of a bin a target's scrapes cover (coverage).
type binInfo struct {
	from, to int64
}

// target is target t's reduction (nil when it has none).
func (b *WholeBuilder) target(t string) *wholeTarget { return b.targets[t] }

// spanWindow is the window over target t's reduced points of the bins
// in [start, end]: their values summed over the time the scrapes cover.
func (b *WholeBuilder) spanWindow(t string, start, end int64) window {
	return b.target(t).cover(start, end).window(start, end)
}

// cover is the part of the bin [start, end] the target's scrapes cover.
func (wt *wholeTarget) cover(start, end int64) binInfo {
	if wt == nil || !wt.seen {
		return binInfo{}
	}
	from, to := coverage([]int64{wt.first, wt.last}, start, end)
	return binInfo{from: from, to: to}
}

// window is the bin (or span of bins) [start, end] over reduced points,
// with the rate denominator binWindow gives it.
func (bi binInfo) window(start, end int64) window {
	w := window{start: start, end: end, back: true, from: bi.from, to: bi.to}
	w.seconds = w.spanSeconds()
	return w
}

type wholeSeries struct {
	// vals are the per-bin results and ok (a bit a bin) says which bins
	// had one. vals is allocated once for the bins the recording's end
	// implies (WholeBuilder.bins): grown by append it held up to twice
	// them, a quarter of analyze's live heap on the 1-hour dump.
	vals []float64
	ok   []uint64
	// rem is the newest sample seen so far: the sample at or before a
	// later bin's start when the store no longer holds it.
	rem    model.Point
	hasRem bool
	// cur is how far a counter's increase has been distributed into the
	// bins (distribute); started is false before the first call.
	cur     int64
	started bool
}

// has reports whether bin k had a result.
func (acc *wholeSeries) has(k int) bool {
	return k>>6 < len(acc.ok) && acc.ok[k>>6]&(1<<(k&63)) != 0
}

// set sets bin k's result to v (none when !ok).
func (acc *wholeSeries) set(k int, v float64, ok bool) {
	acc.vals[k] = v
	if ok {
		acc.ok[k>>6] |= 1 << (k & 63)
	} else {
		acc.ok[k>>6] &^= 1 << (k & 63)
	}
}

// grow makes room for n bins, at least want when it has to allocate.
func (acc *wholeSeries) grow(n, want int) {
	if n <= len(acc.vals) {
		return
	}
	if n > cap(acc.vals) {
		v := make([]float64, len(acc.vals), max(n, want))
		copy(v, acc.vals)
		acc.vals = v
	}
	acc.vals = acc.vals[:n]
	if w := (n + 63) >> 6; w > len(acc.ok) {
		acc.ok = append(acc.ok, make([]uint64, w-len(acc.ok))...)
	}
}

// NewWholeBuilder returns a builder over st (empty, with a history of at
// least WholeHistory scrapes and KeepSeries) for a report with opts.
func NewWholeBuilder(st *model.Store, opts ReportOptions) *WholeBuilder {
	opts = reportDefaults(opts)
	return &WholeBuilder{st: st, opts: opts, binMs: opts.Bin.Milliseconds(), targets: map[string]*wholeTarget{}}
}

// reportDefaults fills BuildReport's defaults.
func reportDefaults(opts ReportOptions) ReportOptions {
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.Bin < time.Millisecond {
		opts.Bin = DefaultBin
	}
	return opts
}

// WholeHistory is the store history (scrapes per target) a WholeBuilder
// needs: the most scrapes of one target within any span of a batch of
// bins and a half (reduced together with the sample before them) or of
// the report's window, with a margin. times are each target's scrape
// times, oldest first.
func WholeHistory(times [][]int64, opts ReportOptions) int {
	opts = reportDefaults(opts)
	binMs := opts.Bin.Milliseconds()
	span := max(int64(batchBins(binMs)+3)*binMs, opts.Window.Milliseconds())
	most := 0
	for _, ts := range times {
		j := 0
		for i := range ts {
			for ts[i]-ts[j] > span {
				j++
			}
			most = max(most, i-j+1)
		}
	}
	return most + 3
}

// Observe is called after each entry of the recording is applied to the
// store, with its time and whether its scrape was stored (a failed one is
// not). Bins that can no longer change are reduced a batch at a time.
func (b *WholeBuilder) Observe(at time.Time, stored bool) {
	if !stored {
		return
	}
	ms := at.UnixMilli()
	if !b.started {
		b.started, b.startMs = true, ms
		if end := b.opts.RecordingEnd; !end.IsZero() && end.UnixMilli() >= ms {
			b.bins = len(newReportGrid(b.binMs, ms).edges(end.UnixMilli()))
		}
	}
	b.newest = max(b.newest, ms)
	// Bin k is final, with the full width, once a scrape later than its
	// end plus half a bin is stored: every entry up to its end is in (they
	// come in time order), and the recording's end is far enough that the
	// last bin's cut or merge (binEdges) cannot reach it.
	grid := newReportGrid(b.binMs, b.startMs)
	complete := grid.endingBy(b.newest - b.binMs/2 - 1)
	if complete-b.done < batchBins(b.binMs) {
		return
	}
	edges := make([]binEdge, complete)
	for k := range edges {
		edges[k] = grid.bin(k)
	}
	b.reduce(edges, b.done)
	b.done = complete
}

// wholeNames are the flat series the report's bins read, each once: the
// rows', the servers' and the services' (a span's service signals).
var wholeNames = func() []string {
	var ns []string
	for _, group := range [][]string{selectNames, serverNames, serviceNames} {
		for _, n := range group {
			if !slices.Contains(ns, n) {
				ns = append(ns, n)
			}
		}
	}
	return ns
}()

// serviceGaugeNames are the gauges among serviceNames.
var serviceGaugeNames = []string{model.MetricServiceInFlight, model.MetricServiceSlots, model.MetricServiceQueueDepth,
	model.MetricServiceQueueLimit, model.MetricServiceQueueOldestAge, model.MetricPromHTTPInFlight, model.MetricOTelServerActive}

func isGaugeName(name string) bool {
	return slices.Contains(gaugeNames[:], name) || slices.Contains(serviceGaugeNames, name)
}

func seriesKey(name string, ls model.Labels) string {
	return string(ls.AppendKey(append([]byte(name), 0xff)))
}

// reduce reduces the bins edges[from:] of every target's series: a
// gauge's value in each of them, and a counter's increase distributed
// into every bin up to the last one's end (a sample pair that runs back
// into bins reduced before adds its share there).
func (b *WholeBuilder) reduce(edges []binEdge, from int) {
	if len(edges) == 0 {
		return
	}
	bins := max(len(edges), b.bins)
	if !b.fits(b.series, bins) {
		return
	}
	since := edges[min(from, len(edges)-1)].start
	upTo := edges[len(edges)-1].end
	b.stepsOn = b.stepsOn || anyServiceTime(b.st)
	for _, t := range b.st.Targets() {
		times := b.st.TimesSince(t, since)
		wt := b.targets[t]
		if wt == nil {
			wt = &wholeTarget{series: map[string]*wholeSeries{}}
			b.targets[t] = wt
		}
		if n := len(times); n > 0 {
			if !wt.seen {
				wt.first, wt.seen = times[0], true
			}
			wt.last = max(wt.last, times[n-1])
		}
		wt.steps.gather(b.st, t, b.stepsOn)
		ws := make([]window, max(len(edges)-from, 0))
		for k := range ws {
			e := edges[from+k]
			ws[k] = binWindow(times, e.start, e.end)
		}
		for _, name := range wholeNames {
			gauge := isGaugeName(name)
			b.st.EachSince(&b.rd, t, name, since, func(key string, _ model.Labels, spts []model.Point) {
				acc := wt.series[key] // the store's key is seriesKey's: no key built
				if acc == nil {
					// Counted even past the budget, so that the error
					// says how many series this batch found.
					b.series++
					if !b.fits(b.series, bins) {
						return // bounded: the report fails with b.err
					}
					acc = &wholeSeries{}
					wt.series[key] = acc
				}
				acc.grow(len(edges), b.bins)
				pts := spts
				if acc.hasRem && (len(pts) == 0 || acc.rem.T < pts[0].T) {
					// In b's scratch: the points are read only below.
					b.scratch = append(append(b.scratch[:0], acc.rem), pts...)
					pts = b.scratch
				}
				if gauge {
					p := newPoints(times, pts)
					for k := range ws {
						v, ok := ws[k].gauge(p)
						acc.set(from+k, v, ok)
					}
				} else {
					acc.distribute(pts, edges, upTo)
				}
				if n := len(spts); n > 0 {
					acc.rem, acc.hasRem = spts[n-1], true
				}
			})
		}
	}
	if b.err != nil {
		b.err.Series = b.series
	}
}

// finish reduces the bins left once the recording's start and end are
// known; false when the bins reduced so far are not those of the final
// layout (which Observe's rule prevents).
func (b *WholeBuilder) finish(startMs, endMs int64) bool {
	if !b.started || startMs != b.startMs {
		return false
	}
	if b.finishedMs != 0 {
		return endMs == b.finishedMs // a second report (ReportSpan after Report) reads the same bins
	}
	b.finishedMs = endMs
	grid := newReportGrid(b.binMs, startMs)
	b.edges = grid.edges(endMs)
	if len(b.edges) < b.done {
		return false
	}
	for k := 0; k < b.done; k++ {
		if b.edges[k] != grid.bin(k) {
			return false
		}
	}
	b.reduce(b.edges, b.done)
	b.done = len(b.edges)
	return true
}

// reducedSeries returns target's series named name, as the store lists
// them, with their per-bin results as points.
func (b *WholeBuilder) reducedSeries(t, name string, match func(model.Labels) bool) []model.Series {
	ss := b.st.SelectSince(t, name, match, math.MaxInt64) // identities and order; no history copied
	wt := b.targets[t]
	for i := range ss {
		var acc *wholeSeries
		if wt != nil {
			acc = wt.series[seriesKey(name, ss[i].Labels)]
		}
		n := 0
		if acc != nil {
			for k := range b.edges {
				if acc.has(k) {
					n++
				}
			}
		}
		pts := make([]model.Point, 1, 1+2*n) // sized once: grown pair by pair they were much of the report's garbage
		pts[0] = model.Point{T: reducedMark}
		if acc != nil {
			for k, e := range b.edges {
				if acc.has(k) {
					pts = append(pts, model.Point{T: e.start}, model.Point{T: e.start, V: acc.vals[k]})
				}
			}
		}
		ss[i].Points = pts
	}
	return ss
}

// rows are target's rows with per-bin results, by dependency.
func (b *WholeBuilder) rows(t string) map[string]*row {
	sel := &selection{target: t, series: make(map[string][]model.Series, len(selectNames))}
	for _, n := range selectNames {
		if ss := b.reducedSeries(t, n, nil); len(ss) > 0 {
			sel.series[n] = ss
		}
	}
	return sel.rows()
}

// service is selectService over the per-bin results (the same lists);
// nil when t exports no service shape.
func (b *WholeBuilder) service(t string) *service {
	wt := b.target(t)
	if wt == nil || !wt.seen {
		return nil
	}
	// Reduced points stand for bins: the times only say there were
	// scrapes (serviceFrom wants some).
	return serviceFrom(t, []int64{wt.first, wt.last}, func(name string) []model.Series {
		return b.reducedSeries(t, name, noDependency)
	})
}

// server is selectServer over the per-bin results (the same lists).
func (b *WholeBuilder) server(t string) *server {
	if len(b.st.TimesSince(t, math.MaxInt64)) == 0 {
		return nil
	}
	series := make(map[string][]model.Series, len(serverNames))
	for _, n := range serverNames {
		series[n] = b.reducedSeries(t, n, noDependency)
	}
	// Reduced points stand for bins, not scrapes: no scrape times, but
	// each bin's own window.
	sv := serverFrom(nil, series)
	if sv != nil {
		sv.reduced = b.target(t)
	}
	return sv
}

// timeline evaluates a reduced row over the final bins, each with the
// part the target's scrapes cover, as binWindow makes it, into dst's
// array when it has room.
func (b *WholeBuilder) timeline(dst []model.Signals, r *row) []model.Signals {
	wt := b.targets[r.target]
	out := slices.Grow(dst[:0], len(b.edges))[:len(b.edges)]
	for k, e := range b.edges {
		out[k] = r.eval(wt.cover(e.start, e.end).window(e.start, e.end))
	}
	return out
}

// release lets every series' per-bin results go, once an Incident
// report's rows are evaluated: on the 1-hour dump they are 69 MB of the
// report's live heap while its findings are evaluated.
func (b *WholeBuilder) release() {
	for _, wt := range b.targets {
		wt.series = nil
	}
	b.released = true
}

// Report is BuildReport of the whole recording the store was loaded with.
func (b *WholeBuilder) Report(targets []model.TargetStatus) (Report, error) {
	return buildReport(b.st, targets, b.opts, b)
}

// ReportIncident is Report with the rows, services and current findings
// over the incident the timeline tells (ReportOptions.Incident): the
// same report as ReportSpan over IncidentSpan of Report's, with the bins
// evaluated once. It lets the per-bin results go: the builder makes no
// further report.
func (b *WholeBuilder) ReportIncident(targets []model.TargetStatus) (Report, error) {
	opts := b.opts
	opts.Incident = true
	return buildReport(b.st, targets, opts, b)
}

// ReportSpan is Report with the rows, services and current findings over
// span (ReportOptions.Span), such as IncidentSpan of Report's: read from
// the reduced bins, after Report or instead of it. A bin is read whole,
// so span's edges are to be the timeline's bins' edges, as IncidentSpan's
// are.
func (b *WholeBuilder) ReportSpan(targets []model.TargetStatus, span Span) (Report, error) {
	opts := b.opts
	opts.Span = &span
	return buildReport(b.st, targets, opts, b)
}
