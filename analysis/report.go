package analysis

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/retrytop/retrytop/model"
)

// Report is what `retrytop analyze` prints: the signals of every
// (target, dependency) over the window ending at the newest scrape, and a
// timeline of consecutive bins over everything retained. Its JSON shape is
// the documented schema of docs/analyze-json.md.
type Report struct {
	WindowSeconds float64 `json:"window_seconds"`
	StartUnix     float64 `json:"start_unix"`
	EndUnix       float64 `json:"end_unix"`
	BinSeconds    float64 `json:"bin_seconds"`
	// Span is the time the rows cover and why (SpanWindow by default).
	Span         Span                 `json:"span"`
	Targets      []model.TargetStatus `json:"targets"`
	Dependencies []DependencyReport   `json:"dependencies"`
	// Chains are the declared amplification chains, or those inferred
	// where a dependency names another target, over the window.
	Chains []ChainResult `json:"chains"`
	// Links say how each (service, dependency) was tied to a service of
	// the targets, or why not (ambiguous), sorted.
	Links []Link `json:"links"`
	// Services are the service-side signals of every target exporting a
	// service shape (model.ServiceFamilies) over the window, by target.
	Services []model.ServiceSignals `json:"services"`
	// ServicePeaks are each service's worst queue over the span
	// (ServicePeak), by target.
	ServicePeaks []ServicePeak `json:"service_peaks"`
	// Findings are what happened over the whole recording (EvaluateHistory)
	// and what holds over the window at its end (Evaluate), each once.
	Findings []Finding `json:"findings"`
	// Detection is when the rules would have shown the incident live
	// (Detect over the timelines).
	Detection Detection `json:"detection"`
}

// DependencyReport is one row of a Report.
type DependencyReport struct {
	model.Signals
	// LatencyP99 is the p99 of the whole-operation latency per result
	// class (success, fast_failure, failure), in seconds.
	LatencyP99 map[string]model.Value `json:"latency_p99_s"`
	Timeline   []BinReport            `json:"timeline"`
	// Phases tell the row's timeline as an incident story.
	Phases []Phase `json:"phases"`
	// Derived names the signals of the row that a custom mapping derives
	// from others rather than reads (docs/dialects.md, "Derived
	// signals"): short family name -> expression; absent when none.
	Derived map[string]string `json:"derived,omitempty"`
	// Fates says how the window's originals ended: at the first try,
	// after retries, with every attempt used, or not retried and why
	// (Fates).
	Fates FateLedger `json:"fates"`
	// bins are the timeline's bins held compactly, without their latency
	// histograms, when Timeline is left empty (CompactTimelines).
	bins *model.Timeline
}

// TimelineBins are the row's timeline bins: Timeline, or those it holds
// compactly (ReportOptions.CompactTimelines), made afresh.
func (d *DependencyReport) TimelineBins() []BinReport {
	if len(d.Timeline) > 0 || d.bins == nil {
		return d.Timeline
	}
	out := make([]BinReport, d.bins.Len())
	for j := range out {
		out[j] = binReport(d.bins.AtNoHist(j))
	}
	return out
}

// binReport is a timeline bin as the report shows it.
func binReport(bin model.Signals) BinReport {
	return BinReport{StartUnix: float64(bin.StartMs) / 1000, EndUnix: float64(bin.EndMs) / 1000,
		SampledSeconds: sampledSeconds(&bin), Signals: bin}
}

// BinReport is one timeline bin: the same per-second signals over
// [StartUnix, EndUnix]. Its rates are means over SampledSeconds, the part
// of the bin between the target's first and last scrapes (see Timeline);
// absent when the scrapes do not reach it.
type BinReport struct {
	StartUnix      float64     `json:"start_unix"`
	EndUnix        float64     `json:"end_unix"`
	SampledSeconds model.Value `json:"sampled_seconds"`
	model.Signals
}

// ReportOptions shape a Report; zero fields take the defaults.
type ReportOptions struct {
	Window time.Duration // default DefaultWindow
	Bin    time.Duration // default DefaultBin
	EndMs  int64         // 0 = the newest scrape of any target
	// Chains and ChainSpecs are declared chains; none means infer them.
	Chains     []Chain
	ChainSpecs []ChainSpec
	// Links are the config's links: entries (LinkRule).
	Links []LinkRule
	// Thresholds for findings and phases; nil means DefaultThresholds.
	Thresholds *Thresholds
	// Derived is, per dialect name, what its custom mapping derives
	// (short family name -> expression): rows of targets that dialect
	// reads are marked (DependencyReport.Derived).
	Derived map[string]map[string]string
	// Span, when set, is the time the rows (and the findings and services
	// of the current window) cover instead of the Window ending at the
	// end, e.g. IncidentSpan of a first report; read as one bin
	// (interpolated at its edges), from the reduced bins of a whole
	// recording (WholeBuilder), whose store keeps only its end.
	Span *Span
	// Incident, when set, makes the rows (and the findings and services
	// of the current window) cover IncidentSpan of the report without it:
	// the timeline and its phases are evaluated once, then the span they
	// tell; Span is ignored. A WholeBuilder lets its per-bin results go
	// once the rows are evaluated and builds no further report.
	Incident bool
	// CompactTimelines leaves each row's Timeline empty and keeps its
	// bins as the findings read them, without their latency histograms:
	// WriteJSON makes and writes them one row at a time, TimelineBins
	// makes a row's. For a report only written (report's writers read
	// TimelineBins): on the 1-hour dump the rows' BinReports (720 rows x
	// 360 bins of 680 bytes) were 176 MB held at once.
	CompactTimelines bool
	// RecordingEnd is when the recording the store was loaded from ended
	// (zero: live data): targets down at its end with every other are
	// RECORDING_ENDED, not TARGET_DOWN.
	RecordingEnd time.Time
	// MaxBinBytes bounds what a WholeBuilder's report holds per bin (0:
	// no bound), at WholeBytesPerSeriesBin a reduced series and bin: past
	// it the builder reduces no further series and its report fails with
	// a *BinBudgetError (WholeBuilder.Err says so while loading).
	MaxBinBytes int64
}

// BuildReport computes a Report from the store. The rows cover
// [end-Window, end]; the timeline covers [oldest retained scrape, end] in
// Bin-wide bins whose edges sit on multiples of Bin in Unix time (the
// first and last may be partial: reportGrid), and summing a rate times its
// bin's SampledSeconds over the timeline gives the increase over the whole
// recording.
func BuildReport(st *model.Store, targets []model.TargetStatus, opts ReportOptions) Report {
	rep, _ := buildReport(st, targets, opts, nil)
	return rep
}

// buildReport is BuildReport; with wb, the timeline's start and bins are
// the WholeBuilder's (the store holds only the end of the recording).
func buildReport(st *model.Store, targets []model.TargetStatus, opts ReportOptions, wb *WholeBuilder) (Report, error) {
	opts = reportDefaults(opts)
	b := &reportBuild{st: st, opts: opts, wb: wb, targets: targets, rep: newReport(opts, targets), th: DefaultThresholds()}
	if opts.Thresholds != nil {
		b.th = *opts.Thresholds
	}
	b.storeSpan()
	if b.end == 0 || b.start >= b.end {
		b.rep.Findings = append(b.rep.Findings, recordingEnded(EvaluateTargets(b.rep.Targets, nil, nil), b.rep.Targets, opts.RecordingEnd)...)
		sortFindings(b.rep.Findings)
		return b.rep, nil
	}
	if wb != nil && wb.err != nil {
		return b.rep, wb.err
	}
	if wb != nil && wb.released {
		return b.rep, errors.New("analysis: the recording's per-bin results were let go by its incident report")
	}
	if wb != nil && !wb.finish(b.start, b.end) {
		return b.rep, fmt.Errorf("analysis: the timeline's bins from %d to %d ms are not those reduced while loading", b.start, b.end)
	}
	b.rep.StartUnix, b.rep.EndUnix = float64(b.start)/1000, float64(b.end)/1000
	b.grid = newReportGrid(opts.Bin.Milliseconds(), b.start).edges(b.end)
	b.history = model.Frame{Time: time.UnixMilli(b.end), Window: opts.Window, Bin: opts.Bin, Targets: targets, Timelines: map[model.Key]*model.Timeline{}}
	b.selectServers()
	b.phases = make(map[model.Key][]Phase)
	var perTarget [][]DependencyReport // joined once at the end: grown row by row, they were copied over and over
	if opts.Incident {
		// The timeline's phases first, then the rows over the span they tell.
		for _, t := range b.st.Targets() {
			rows, reduced, err := b.selectRows(t)
			if err != nil {
				return b.rep, err
			}
			b.timelines(t, rows, reduced)
		}
		span := incidentSpan(b.start, b.end, opts.Bin.Milliseconds(), maps.Values(b.phases))
		b.opts.Span = &span
	}
	b.setSpan()
	b.spanServices()
	for _, t := range b.st.Targets() {
		rows, reduced, err := b.selectRows(t)
		if err != nil {
			return b.rep, err
		}
		if !opts.Incident {
			b.timelines(t, rows, reduced)
		}
		perTarget = append(perTarget, b.spanRows(t, rows, reduced))
	}
	if opts.Incident && wb != nil {
		wb.release()
	}
	b.joinRows(perTarget)
	b.evaluateFindings()
	b.makeTimelines()
	return b.rep, nil
}

// setSpan sets the rows' span: opts.Span, or the window ending at the end.
func (b *reportBuild) setSpan() {
	b.rep.Span = rowSpan(b.opts, b.end)
	b.winStart, b.winEnd = b.rep.Span.StartMs(), b.rep.Span.EndMs()
	b.rep.WindowSeconds = float64(b.winEnd-b.winStart) / 1000
}

// reportBuild is buildReport's state, shared by its phases.
type reportBuild struct {
	st      *model.Store
	opts    ReportOptions
	wb      *WholeBuilder
	targets []model.TargetStatus
	th      Thresholds
	rep     Report
	// start and end are the timeline's span (ms), winStart and winEnd
	// the rows' (Report.Span), grid the timeline's bins.
	start, end, winStart, winEnd int64
	grid                         []binEdge
	history                      model.Frame
	// phases are each row's phases, told by its timeline's bins (kept in
	// history.Timelines).
	phases map[model.Key][]Phase
	// servers are each target's server-side metrics, reducedServers the
	// WholeBuilder's, by target and its aliases.
	servers, reducedServers map[string]*server
	dialects                map[string][]string // the budget's model (BudgetFor), by target
}

// newReport returns the report's empty lists and its targets, each with
// its dialects.
func newReport(opts ReportOptions, targets []model.TargetStatus) Report {
	rep := Report{
		WindowSeconds: opts.Window.Seconds(),
		BinSeconds:    opts.Bin.Seconds(),
		Dependencies:  []DependencyReport{},
		Chains:        []ChainResult{},
		Links:         []Link{},
		Services:      []model.ServiceSignals{},
		ServicePeaks:  []ServicePeak{},
		Findings:      []Finding{},
	}
	rep.Targets = append([]model.TargetStatus{}, targets...)
	for i := range rep.Targets {
		rep.Targets[i].Dialects = TargetDialects(rep.Targets[i])
	}
	return rep
}

// storeSpan sets the timeline's span: from the oldest retained scrape (the
// WholeBuilder's start with one) to EndMs, or to the newest scrape.
func (b *reportBuild) storeSpan() {
	b.start, b.end = 0, b.opts.EndMs
	for _, t := range b.st.Targets() {
		ts := b.st.Times(t)
		if len(ts) == 0 {
			continue
		}
		if b.start == 0 || ts[0] < b.start {
			b.start = ts[0]
		}
		if b.opts.EndMs == 0 && ts[len(ts)-1] > b.end {
			b.end = ts[len(ts)-1]
		}
	}
	if b.wb != nil && b.wb.started {
		b.start = b.wb.startMs
	}
}

// selectServers selects each target's server-side metrics and service
// signals (these over the window), and names the history's targets.
func (b *reportBuild) selectServers() {
	st := b.st
	b.servers = make(map[string]*server)
	for _, t := range st.Targets() {
		if sv := selectServer(st, t, st.Times(t), b.start); sv != nil {
			b.servers[t] = sv
		}
	}
	b.dialects = make(map[string][]string, len(b.targets))
	for _, t := range b.targets {
		b.dialects[t.Name] = TargetDialects(t)
	}
	ids := Identities(st, b.targets)
	b.history.Targets = named(b.rep.Targets, ids) // ServiceFrame reads them from there (rep's carry Dialects)
	aliasServers(ids, b.servers)
	if b.wb != nil {
		b.reducedServers = make(map[string]*server)
		for _, t := range st.Targets() {
			if sv := b.wb.server(t); sv != nil {
				b.reducedServers[t] = sv
			}
		}
		aliasServers(ids, b.reducedServers)
	}
}

// spanServices sets the service signals and peaks of every target over
// the rows' span.
func (b *reportBuild) spanServices() {
	st := b.st
	for _, t := range st.Targets() {
		if svc := spanService(st, t, b.wb, b.opts.Span != nil, b.winStart, b.winEnd); svc != nil {
			b.rep.Services = append(b.rep.Services, *svc)
			if pk := spanPeak(st, t, b.wb, b.grid, b.start, b.winStart, b.winEnd); pk != nil {
				b.rep.ServicePeaks = append(b.rep.ServicePeaks, *pk)
			}
		}
	}
	sort.Slice(b.rep.Services, func(i, j int) bool { return b.rep.Services[i].Target < b.rep.Services[j].Target })
	sort.Slice(b.rep.ServicePeaks, func(i, j int) bool { return b.rep.ServicePeaks[i].Target < b.rep.ServicePeaks[j].Target })
}

// selectRows selects target t's rows, in the order of their
// dependencies, each with its dependency's server-side metrics, and with
// a WholeBuilder their reduced rows, by dependency.
func (b *reportBuild) selectRows(t string) (rows []*row, reduced map[string]*row, err error) {
	if b.wb != nil {
		reduced = b.wb.rows(t)
	}
	byDep := selectTarget(b.st, t, b.st.Times(t), nil, b.start).rows()
	rows = make([]*row, 0, len(byDep))
	for _, dep := range slices.Sorted(maps.Keys(byDep)) {
		rows = append(rows, byDep[dep])
	}
	for _, r := range rows {
		r.server = b.servers[r.dep] // the dependency's own server-side metrics
		if rr := reduced[r.dep]; rr != nil {
			rr.server = b.reducedServers[r.dep]
		} else if b.wb != nil {
			return nil, nil, fmt.Errorf("analysis: row %s -> %s has no reduced timeline", t, r.dep)
		}
	}
	return rows, reduced, nil
}

// timelines evaluates the bins of target t's rows, kept in the history,
// and the phases these tell. Rows are evaluated on up to GOMAXPROCS
// goroutines (a row reads only its own series and its dependency's
// server, which no evaluation changes), one target at a time so that
// only its rows' series are held. A row's bins are made in its
// goroutine's array and held compactly at once: a target's rows' bins
// held together until the last was made were 17 MB of the 1-hour dump's
// peak, grown by each of its 10 targets.
func (b *reportBuild) timelines(t string, rows []*row, reduced map[string]*row) {
	tls := make([]*model.Timeline, len(rows))
	phases := make([][]Phase, len(rows))
	parallelFor(len(rows), 4, func() func(i int) {
		var bins []model.Signals
		return func(i int) {
			r := rows[i]
			if rr := reduced[r.dep]; rr != nil {
				bins = b.wb.timeline(bins, rr)
			} else {
				bins = r.timelineInto(bins, b.grid)
			}
			phases[i] = Phases(bins, b.th)
			if phases[i] == nil {
				phases[i] = []Phase{}
			}
			b.fineRecovery(phases[i], r, bins)
			tls[i] = model.NewTimeline(bins) // keeps what the bins point to, not the bins
		}
	})
	for i, r := range rows {
		key := model.Key{Target: t, Dependency: r.dep}
		b.history.Timelines[key], b.phases[key] = tls[i], phases[i]
	}
}

// spanRows are target t's rows over the span, with the phases and the
// budget their kept timelines tell (timelines), on goroutines as
// timelines evaluates them.
func (b *reportBuild) spanRows(t string, rows []*row, reduced map[string]*row) []DependencyReport {
	deps := make([]DependencyReport, len(rows))
	parallelFor(len(rows), 4, func() func(i int) {
		var bins []model.Signals // the goroutine's, a row at a time: the budget keeps none
		return func(i int) {
			r := rows[i]
			key := model.Key{Target: t, Dependency: r.dep}
			dr := b.rowSignals(r, reduced[r.dep])
			tl := b.history.Timelines[key]
			bins = tl.AppendRangeNoHist(slices.Grow(bins[:0], tl.Len()), 0, tl.Len())
			b.rowBudget(&dr, t, bins)
			dr.Phases = b.phases[key]
			deps[i] = dr
		}
	})
	return deps
}

// rowSignals is the report of row r (rr its reduced row, if any) over the
// report's span, without its timeline.
func (b *reportBuild) rowSignals(r, rr *row) DependencyReport {
	dr := DependencyReport{Signals: spanRow(r, rr, b.wb, b.opts.Span != nil, b.winStart, b.winEnd), Timeline: []BinReport{}}
	dr.Fates = Fates(dr.Signals)
	dr.LatencyP99 = make(map[string]model.Value, len(model.LatencyClasses))
	for _, c := range model.LatencyClasses {
		dr.LatencyP99[c] = dr.Latency.At(c).P99
	}
	return dr
}

// rowBudget sets the budget and derived families of a row of target t,
// whose timeline's bins are bins.
func (b *reportBuild) rowBudget(dr *DependencyReport, t string, bins []model.Signals) {
	dr.Fates.Budget = BudgetFor(b.dialects[t], dr.Signals, bins)
	dr.Derived = derivedOf(b.dialects[t], b.opts.Derived)
}

// joinRows makes the targets' rows the report's dependencies and the
// history's rows.
func (b *reportBuild) joinRows(perTarget [][]DependencyReport) {
	n := 0
	for _, deps := range perTarget {
		n += len(deps)
	}
	b.rep.Dependencies = make([]DependencyReport, 0, n) // [] in JSON when empty
	for _, deps := range perTarget {
		b.rep.Dependencies = append(b.rep.Dependencies, deps...)
	}
	b.history.Rows = make([]model.Signals, 0, len(b.rep.Dependencies))
	for i := range b.rep.Dependencies {
		b.history.Rows = append(b.history.Rows, b.rep.Dependencies[i].Signals)
	}
	sortReport(b.rep.Dependencies)
}

// evaluateFindings resolves the chains and evaluates the findings by
// service: replicas fold into one hop, and a dependency links to the
// service it names however it names it.
func (b *reportBuild) evaluateFindings() {
	rep, opts := &b.rep, b.opts
	byService, links, ids := ServiceFrame(b.st, b.history, opts.Links)
	rep.Targets, rep.Links = byService.Targets, links
	chains := ResolveChains(opts.Chains, opts.ChainSpecs, byService.Rows)
	if cs := EvaluateChains(byService.Rows, chains, b.th.Gap); cs != nil {
		AttachProviders(cs, byService.Rows, ServicesByName(rep.Services, ids))
		rep.Chains = cs
	}
	rep.Findings = mergeFindings(EvaluateHistory(byService, chains, b.th), Evaluate(byService, rep.Chains, b.th))
	rep.Detection = Detect(byService, chains, b.th)
	rep.Findings = append(rep.Findings, recordingEnded(EvaluateTargets(rep.Targets, b.history.Rows, rep.Services), rep.Targets, opts.RecordingEnd)...)
	sortFindings(rep.Findings)
	for i := range rep.Findings {
		rep.Findings[i].Advice = AdviceFor(rep.Findings[i].Code).Long
	}
}

// makeTimelines makes the rows' timelines from the history's bins once
// the findings no longer need those, each row's bins let go as its own
// are made: both at once were twice the bins (720 rows x 360 bins on the
// 1-hour dump). Their latency histograms served the findings (replicas
// and gap spans merge them); no output reads them (JSON leaves them out,
// the text, markdown and HTML reports draw the quantiles), and they were
// a third of the report's live heap (20 minutes of the 1-hour dump: 214
// MiB, 144 without). The rows' own, over the window, stay.
//
// With CompactTimelines each row keeps its timeline without the
// histograms instead (DependencyReport.TimelineBins).
func (b *reportBuild) makeTimelines() {
	for i := range b.rep.Dependencies {
		d := &b.rep.Dependencies[i]
		bins := b.history.Timelines[d.Key()]
		delete(b.history.Timelines, d.Key())
		if b.opts.CompactTimelines {
			d.bins = bins.WithoutHist()
			continue
		}
		d.Timeline = make([]BinReport, bins.Len())
		for j := range d.Timeline {
			d.Timeline[j] = binReport(bins.AtNoHist(j))
		}
	}
}

func sortReport(deps []DependencyReport) {
	sort.Slice(deps, func(i, j int) bool {
		if deps[i].Target != deps[j].Target {
			return deps[i].Target < deps[j].Target
		}
		return deps[i].Dependency < deps[j].Dependency
	})
}

// mergeFindings adds to the history's findings those of the final window
// that the history does not already report (a recording shorter than
// Thresholds.HistoryMinBins bins still says what is wrong now).
func mergeFindings(history, now []Finding) []Finding {
	type id struct{ code, target, dep, chain string }
	seen := map[id]bool{}
	out := append([]Finding{}, history...)
	for _, f := range history {
		seen[id{f.Code, f.Target, f.Dependency, f.Chain}] = true
	}
	for _, f := range now {
		if !seen[id{f.Code, f.Target, f.Dependency, f.Chain}] {
			out = append(out, f)
		}
	}
	sortFindings(out)
	return out
}

// derivedOf merges what the dialects that read a target derive; nil when
// none derives anything.
func derivedOf(dialects []string, derived map[string]map[string]string) map[string]string {
	var out map[string]string
	for _, d := range dialects {
		for f, expr := range derived[d] {
			if out == nil {
				out = map[string]string{}
			}
			out[f] = expr
		}
	}
	return out
}
