package analysis

import (
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
		Timelines: make(map[model.Key][]model.Signals),
	}
	names := st.Targets()
	times := make([][]int64, len(names))
	end := opts.EndMs
	for i, t := range names {
		times[i] = st.Times(t)
		if n := len(times[i]); opts.EndMs == 0 && n > 0 && times[i][n-1] > end {
			end = times[i][n-1]
		}
	}
	if end == 0 {
		return f
	}
	f.Time = time.UnixMilli(end)
	winStart := end - opts.Window.Milliseconds()
	binMs := opts.Bin.Milliseconds()
	tlStart := end - int64(opts.Bins)*binMs
	since := min(winStart, tlStart)
	servers := make(map[string]*server)
	for i, t := range names {
		// Keep the scrapes the window and the timeline need, plus the one
		// just before them (the same range SelectSince copies).
		if k := sort.Search(len(times[i]), func(j int) bool { return times[i][j] > since }); k > 0 {
			times[i] = times[i][k-1:]
		}
		if sv := selectServer(st, t, times[i], since); sv != nil {
			servers[t] = sv
		}
	}
	for i, t := range names {
		ts := times[i]
		rows := selectTarget(st, t, ts, nil, since).rows()
		deps := make([]string, 0, len(rows))
		for d := range rows {
			deps = append(deps, d)
		}
		sort.Strings(deps)
		for _, d := range deps {
			r := rows[d]
			r.server = servers[d]
			f.Rows = append(f.Rows, r.eval(rangeWindow(r.times, winStart, end)))
			f.Timelines[model.Key{Target: t, Dependency: d}] = r.timeline(binMs, tlStart, end)
		}
	}
	return f
}
