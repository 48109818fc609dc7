package ui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
)

// frameRequest is what one frame is built for.
type frameRequest struct {
	Window time.Duration
	Bin    time.Duration
	EndMs  int64 // 0: the newest data
	// Range is the charts' time range (0: all the data held); with Bin 0
	// the build picks the bins from it (chartBins).
	Range time.Duration
	Bins  int
	// Chains are the declared chains (--chain, --config); none means
	// inferred ones.
	Chains []analysis.ChainSpec
	// Links are the config's links: entries.
	Links []analysis.LinkRule
	// Prev is the newest frame already built, whose final timeline bins
	// the new one reuses (analysis.FrameOptions.Prev); nil for frames of a
	// fixed moment. Frames are never modified once built, so the build
	// Cmd may read it while Update runs.
	Prev *model.Frame
	// Seeking: the replay's player was seeking when the frame was asked
	// for, so it may show the moment before the seek.
	Seeking bool
	// Service is the service target whose per-bin timeline is wanted (its
	// detail view is open); "" computes none, which keeps frames cheap.
	Service string
	// Cache keeps the targets' series between live frames
	// (analysis.FrameCache); nil for frames of a fixed moment and in
	// replay, whose store moves back on a seek.
	Cache *analysis.FrameCache
}

// frameKind says why a frame was built, which decides where it goes.
type frameKind int

const (
	// frameLive: the newest data, after an update (the wait loop re-arms).
	frameLive frameKind = iota
	// frameRebuild: the newest data again, after the window changed.
	frameRebuild
	// frameFrozen: the paused moment again, after the window changed
	// while paused.
	frameFrozen
)

// frameMsg carries a frame built in a tea.Cmd.
type frameMsg struct {
	frame model.Frame
	derived
	req  frameRequest
	kind frameKind
}

// derived is what a frame's Cmd concludes from it besides the frame.
type derived struct {
	findings []string // the findings strip
	capLines int      // how many of them, first, are SERIES_CAP warnings
	// found are the findings themselves, most severe first (the
	// overview's FINDINGS section and the findings pane).
	found []analysis.Finding
	// worst is the row the dashboard follows until the cursor moves
	// (worstRow); hasWorst is false when no row stands out.
	worst    model.Key
	hasWorst bool
	chains   []analysis.ChainResult // the chain view
	// services are the signals of every service target over the frame's
	// window, sorted by target (the overview's SERVICES section).
	services []model.ServiceSignals
	// groups are the rows folded by layer (nil when no layer has more
	// than one target).
	groups *groupSet
	// svcTarget names the service whose bins svcTimeline holds ("" none).
	svcTarget   string
	svcTimeline []model.ServiceSignals
}

// sourceClosedMsg: the source's update channel was closed (a replay
// ended, the collector stopped).
type sourceClosedMsg struct{}

// clockMsg advances the header clock while no data arrives (the model's
// quiet timer fired).
type clockMsg struct{}

// FindingsMsg replaces the findings strip under the header. The strip is
// reserved for analysis findings (amplification chains, hidden retries);
// each entry is one line, sanitised before display.
type FindingsMsg []string

// updateMsg: the source has new data (one update or several).
type updateMsg struct{}

// settledMsg: a burst of updates had its time to land (burstSettle after
// the first).
type settledMsg struct{}

// frameGapMsg: MinFrameGap has passed since the last live frame.
type frameGapMsg struct{}

// waitCmd waits for the source's next update (or the end of the
// program). Update builds the frame: no sooner than settle after the
// update, folding the updates that arrive meanwhile into one frame (one
// analysis pass per refresh instead of one per target), nor sooner than
// MinFrameGap after the last live frame. The scraper scrapes small sets
// of targets in one burst per interval (scrape's phaseGroup): settle
// lets the burst land in one frame rather than its first scrape in one
// and the rest a second later.
func waitCmd(src Source, done <-chan struct{}) tea.Cmd {
	return func() tea.Msg {
		select {
		case _, ok := <-src.Updates():
			if !ok {
				return sourceClosedMsg{}
			}
			return updateMsg{}
		case <-done:
			return nil
		}
	}
}

// burstSettle is how long a live frame waits after the first update for
// the rest of a burst of scrapes: loopback scrapes of ten targets land
// within a few milliseconds on an idle machine, within tens on a busy one.
const burstSettle = 50 * time.Millisecond

// buildCmd builds a frame right away.
func buildCmd(src Source, build buildFunc, req frameRequest, kind frameKind) tea.Cmd {
	return func() tea.Msg {
		f, d := build(src, req)
		return frameMsg{frame: f, derived: d, req: req, kind: kind}
	}
}

// buildFunc builds a frame and what is derived from it.
type buildFunc func(Source, frameRequest) (model.Frame, derived)
