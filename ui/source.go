package ui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// Source is where the dashboard's data comes from: the collector's store
// and target health, and a channel that receives a value whenever either
// changed (scrape.Scraper live, replay.Player). Updates may be closed
// when the source ends; a nil channel never fires. Store is never one
// its owner retired (model.Store.Retire): a replay retires a store once
// it has replaced it.
type Source interface {
	Store() *model.Store
	Statuses() []model.TargetStatus
	Updates() <-chan struct{}
}

// maxFindingLines caps the findings strip so the table keeps the screen.
const maxFindingLines = 3

// buildFrame is the dashboard's one call into analysis: the frame and the
// findings over its window. It runs inside a tea.Cmd, never in Update.
func buildFrame(src Source, req frameRequest) (model.Frame, derived) {
	st := holdStore(src)
	if st == nil {
		return model.Frame{Window: req.Window, Bin: req.Bin, Targets: src.Statuses()}, derived{}
	}
	defer st.Release()
	if req.Bin <= 0 {
		req.Bin, req.Bins, _ = chartBins(st, req.EndMs, req.Range, req.Bins)
	}
	f := analysis.BuildFrame(st, src.Statuses(), analysis.FrameOptions{
		Window: req.Window,
		Bin:    req.Bin,
		EndMs:  req.EndMs,
		Bins:   req.Bins,
		// Bins on fixed edges, so each refresh evaluates only the newest
		// ones and copies the rest from the frame before.
		Align: true,
		Prev:  req.Prev,
		Cache: req.Cache,
	})
	th := analysis.DefaultThresholds()
	// Chains and findings by service (replicas folded, dependencies linked
	// to the services they name); the rows on screen stay per target.
	byService, _, ids := analysis.ServiceFrame(st, f, req.Links)
	f.Targets = byService.Targets
	chains := analysis.EvaluateChains(byService.Rows, analysis.ResolveChains(nil, req.Chains, byService.Rows), th.Gap)
	d := derived{chains: chains, groups: deriveGroups(&f)}
	if !f.Time.IsZero() {
		// Service signals share the frame's window and its end, so a
		// paused frame and its services describe the same moment.
		end := f.Time.UnixMilli()
		start := end - f.Window.Milliseconds()
		for _, t := range analysis.Services(st) {
			if req.Cache != nil {
				// The live view: the service series kept between frames.
				d.services = append(d.services, req.Cache.ServiceSignalsFor(st, t, start, end))
			} else {
				d.services = append(d.services, analysis.ServiceSignalsFor(st, t, start, end))
			}
		}
	}
	analysis.AttachProviders(chains, byService.Rows, analysis.ServicesByName(d.services, ids))
	byService.Targets = f.Targets
	d.found = withTargetsDown(analysis.Evaluate(byService, chains, th), byService.Targets)
	d.findings = findingLines(byService, d.found)
	d.capLines = len(seriesCapLines(byService.Targets)) // findingLines puts these first
	d.worst, d.hasWorst = worstRow(&f, d.found)
	if f.Time.IsZero() {
		return f, d
	}
	end := f.Time.UnixMilli()
	if req.Service != "" {
		bins := req.Bins
		if bins <= 0 {
			bins = analysis.DefaultBins
		}
		d.svcTarget = req.Service
		// The same bin edges as the frame's timelines.
		d.svcTimeline = analysis.ServiceTimeline(st, req.Service, f.Bin, analysis.TimelineStart(end, f.Bin, bins, true), end)
	}
	return f, d
}

// holdStore is the source's store, held for the frame (model.Store.Hold):
// a replay retires the store a seek replaced, unless a frame holds it.
// One retired between Store and Hold is replaced already: the source's
// newest is taken instead. nil when the source has none.
func holdStore(src Source) *model.Store {
	for {
		st := src.Store()
		if st == nil || st.Hold() {
			return st
		}
	}
}

// withTargetsDown adds a TARGET_DOWN finding for every target whose
// scrapes failed (one not tried yet is connecting, not down) to found,
// most severe first: with every target down the findings say why.
func withTargetsDown(found []analysis.Finding, targets []model.TargetStatus) []analysis.Finding {
	var down []model.TargetStatus
	for _, t := range targets {
		if !t.Up && tried(&t) {
			down = append(down, t)
		}
	}
	if len(down) == 0 {
		return found
	}
	for _, fd := range analysis.EvaluateTargets(down, nil, nil) {
		if fd.Code == analysis.CodeTargetDown {
			found = append(found, fd)
		}
	}
	slices.SortStableFunc(found, func(a, b analysis.Finding) int { return cmp.Compare(b.Severity, a.Severity) })
	return found
}

// tried reports whether a target's first scrape has ended (it
// succeeded or failed); before, it is connecting.
func tried(t *model.TargetStatus) bool {
	return t.Up || t.Scrapes > 0 || !t.LastScrape.IsZero() || t.LastError != ""
}

// seriesCapLines are the series-cap banner: per target what its own cap
// refused and what the store kept of it, then one line for the store's
// total cap across targets naming the targets it refused series of, and
// one for the bodies --memory-limit refused (memoryCapLines).
// Series is what the scrape held, never what the store kept.
// At most four lines: more than two targets over their own cap fold
// into one line, so the strip keeps room for the table.
func seriesCapLines(targets []model.TargetStatus) []string {
	var out, own, byTotal []string
	ownRefused, refused, storeKept, total := 0, 0, 0, 0
	for _, t := range targets {
		if t.DroppedSeries <= 0 {
			continue
		}
		c := t.SeriesCap
		switch {
		case c == nil: // the source does not say which cap
			out = append(out, safetext.Terminal(fmt.Sprintf("WARNING SERIES_CAP %s: %d of the %d series it exports refused by the store's series caps; its signals may be incomplete",
				t.Name, t.DroppedSeries, t.Series)))
			own, ownRefused = append(own, t.Name), ownRefused+t.DroppedSeries
			continue
		case c.ByTarget > 0:
			out = append(out, safetext.Terminal(fmt.Sprintf("WARNING SERIES_CAP %s: %d of the %d series it exports refused by the per-target cap of %d (%d kept); its signals may be incomplete",
				t.Name, c.ByTarget, t.Series, c.PerTarget, c.Kept)))
			own, ownRefused = append(own, t.Name), ownRefused+c.ByTarget
		}
		if c.ByTotal > 0 {
			byTotal = append(byTotal, t.Name)
			refused += c.ByTotal
			storeKept, total = max(storeKept, c.StoreKept), c.Total
		}
	}
	if len(own) > 2 {
		out = []string{safetext.Terminal(fmt.Sprintf("WARNING SERIES_CAP %d targets over their series cap: %d series of %s refused; their signals may be incomplete (retrytop analyze: targets[].series_cap)",
			len(own), ownRefused, someNames(own)))}
	}
	if len(byTotal) > 0 {
		out = append(out, safetext.Terminal(fmt.Sprintf("WARNING SERIES_CAP store: its total cap of %d series across targets is full (%d kept): %d series of %s refused; their signals may be incomplete (--memory-limit sizes it)",
			total, storeKept, refused, someNames(byTotal))))
	}
	return append(out, memoryCapLines(targets)...)
}

// someNames lists the first three names and how many more there are.
func someNames(names []string) string {
	s := strings.Join(names[:min(len(names), 3)], ", ")
	if len(names) > 3 {
		s += fmt.Sprintf(" +%d more", len(names)-3)
	}
	return s
}

// findingLines renders the frame's current findings, most severe first, one
// line each: "CRITICAL RETRY_AMPLIFICATION app→client: message".
func findingLines(f model.Frame, fs []analysis.Finding) []string {
	// A target over the store's series caps loses data silently unless the
	// screen says so.
	out := seriesCapLines(f.Targets)
	for i, fd := range fs {
		if len(out) >= maxFindingLines {
			out[len(out)-1] += fmt.Sprintf("  (+%d more: retrytop analyze lists them all)", len(fs)-i)
			break
		}
		where := fd.Target + "→" + fd.Dependency
		switch {
		case fd.Chain != "":
			where = "chain " + fd.Chain
		case fd.Dependency == "":
			where = fd.Target // about the target itself (TARGET_DOWN)
		}
		// What to do first: the message is one f away, whole.
		what := findingMessage(&fd)
		if a := adviceFor(fd.Code); a != "" {
			what = a + "; " + what
		}
		out = append(out, safetext.Terminal(fmt.Sprintf("%s %s %s: %s", strings.ToUpper(fd.Severity.String()), fd.Code, where, what)))
	}
	return out
}
