package analysis

import (
	"fmt"
	"iter"
	"sort"
	"time"

	"github.com/retrytop/retrytop/model"
)

// Kinds of Span.
const (
	// SpanIncident: the phases of an incident the timelines tell
	// (IncidentSpan).
	SpanIncident = "incident"
	// SpanRecording: a whole recording that holds no incident.
	SpanRecording = "recording"
	// SpanWindow: the window ending at the newest scrape (a live view, or
	// a span asked for).
	SpanWindow = "window"
)

// Span is the time a report's rows cover, and why that time.
type Span struct {
	Kind      string  `json:"kind"`
	StartUnix float64 `json:"start_unix"`
	EndUnix   float64 `json:"end_unix"`
}

// StartMs and EndMs are the span's edges in Unix milliseconds.
func (s Span) StartMs() int64 { return int64(s.StartUnix*1000 + 0.5) }
func (s Span) EndMs() int64   { return int64(s.EndUnix*1000 + 0.5) }

func spanOf(kind string, startMs, endMs int64) Span {
	return Span{Kind: kind, StartUnix: float64(startMs) / 1000, EndUnix: float64(endMs) / 1000}
}

// IncidentSpan is the span a report of a recording should cover by
// default: its incident, from the first to the last bin of the phases
// its rows tell (degraded, overloaded, recovering) padded by one bin each
// side and kept inside the recording, over every row whose phases show
// an overload or the trigger; the whole recording (kind "recording")
// when no row does. rep is a report of the whole recording (its
// timelines and phases).
func IncidentSpan(rep *Report) Span {
	startMs, endMs := int64(rep.StartUnix*1000+0.5), int64(rep.EndUnix*1000+0.5)
	binMs := int64(rep.BinSeconds*1000 + 0.5)
	return incidentSpan(startMs, endMs, binMs, func(yield func([]Phase) bool) {
		for i := range rep.Dependencies {
			if !yield(rep.Dependencies[i].Phases) {
				return
			}
		}
	})
}

// incidentSpan is IncidentSpan of a recording from startMs to endMs in
// bins of binMs whose rows tell the phases rows yields.
func incidentSpan(startMs, endMs, binMs int64, rows iter.Seq[[]Phase]) Span {
	var from, to time.Time
	for ps := range rows {
		storm := false
		for _, p := range ps {
			storm = storm || p.Kind == PhaseOverloaded || p.Trigger
		}
		if !storm {
			continue
		}
		for _, p := range ps {
			if p.Kind == PhaseHealthy || p.Kind == PhaseNoData {
				continue
			}
			if from.IsZero() || p.Start.Before(from) {
				from = p.Start
			}
			if to.IsZero() || p.End.After(to) {
				to = p.End
			}
		}
	}
	if from.IsZero() {
		return spanOf(SpanRecording, startMs, endMs)
	}
	lo, hi := padBins(newReportGrid(binMs, startMs).edges(endMs), from.UnixMilli(), to.UnixMilli())
	return spanOf(SpanIncident, max(lo, startMs), min(hi, endMs))
}

// padBins widens [from, to] by one bin each side as the timeline lays
// its bins out (edges): from the start of the bin before the one holding
// from to the end of the bin after the one holding to. The span's edges
// are then bins' edges, so a whole recording's report, which reads a span
// as the sum of its bins, counts nothing outside it; the first and last
// bins may be shorter or longer than the width (the first runs from the
// first scrape, a remainder under half a bin is merged into the last).
// Without edges, [from, to].
func padBins(edges []binEdge, from, to int64) (int64, int64) {
	if len(edges) == 0 {
		return from, to
	}
	i := sort.Search(len(edges), func(k int) bool { return edges[k].end > from }) // the bin holding from
	j := sort.Search(len(edges), func(k int) bool { return edges[k].end >= to })  // the bin holding to
	i, j = max(min(i, len(edges)-1)-1, 0), min(j+1, len(edges)-1)
	return edges[i].start, edges[j].end
}

// rowSpan is the span a report's rows cover: opts.Span when given, else
// the window ending at end.
func rowSpan(opts ReportOptions, end int64) Span {
	if opts.Span != nil {
		return *opts.Span
	}
	return spanOf(SpanWindow, end-opts.Window.Milliseconds(), end)
}

// CodeRecordingEnded is a target of a recording that was down when the
// recording ended, along with every other target: the run it recorded
// was over (docs/findings.md).
const CodeRecordingEnded = "RECORDING_ENDED"

// recordingEnded turns the TARGET_DOWN findings of a recording that ended
// at endedAt into RECORDING_ENDED (info) when no target answered at its
// end: every one had stopped, as when a recording outlives the run it
// records. A target down while others still answered stays TARGET_DOWN;
// one that never answered too. A zero endedAt (live data) changes nothing.
func recordingEnded(fs []Finding, targets []model.TargetStatus, endedAt time.Time) []Finding {
	if endedAt.IsZero() {
		return fs
	}
	for _, t := range targets {
		if t.Up {
			return fs
		}
	}
	last := make(map[string]time.Time, len(targets))
	for _, t := range targets {
		last[t.Name] = t.LastSuccess
	}
	for i := range fs {
		f := &fs[i]
		if f.Code != CodeTargetDown || last[f.Target].IsZero() {
			continue
		}
		f.Code, f.Severity = CodeRecordingEnded, SeverityInfo
		f.Message = fmt.Sprintf("%s stopped answering %s before the recording ended (%s), as every target did: the run it recorded was over",
			f.Target, secs(endedAt.Sub(last[f.Target]).Seconds()), endedAt.UTC().Format(time.RFC3339))
		f.Start, f.End = last[f.Target], endedAt
	}
	return fs
}

// spanRow evaluates a row over the rows' span (start, end): the samples
// inside the window by default; a span asked for is read as one bin,
// interpolated at its edges, from the reduced bins (rr) in a whole
// recording whose store no longer holds it. With the span on the
// timeline's edges, its counts are the sum of the bins'.
func spanRow(r, rr *row, wb *WholeBuilder, span bool, start, end int64) model.Signals {
	switch {
	case !span:
		return r.eval(rangeWindow(r.times, start, end))
	case wb != nil && rr != nil:
		return rr.eval(wb.spanWindow(r.target, start, end))
	}
	return r.eval(binWindow(r.times, start, end))
}

// spanService is target t's service signals over the rows' span, as
// spanRow reads a row; nil when t exports no service shape.
func spanService(st *model.Store, t string, wb *WholeBuilder, span bool, start, end int64) *model.ServiceSignals {
	if span && wb != nil {
		svc := wb.service(t)
		if svc == nil {
			return nil
		}
		s := svc.eval(wb.spanWindow(t, start, end))
		return &s
	}
	times := st.TimesSince(t, start)
	svc := selectService(st, t, times, start)
	if svc == nil {
		return nil
	}
	w := rangeWindow(times, start, end)
	if span {
		w = binWindow(times, start, end)
	}
	s := svc.eval(w)
	return &s
}

// ServicePeak is a service's worst queue over a report's span: the
// highest queue depth and age of the oldest queued request of the
// timeline bins the span overlaps, each bin's gauge read at the target's
// newest scrape in it as every timeline gauge is. Absent when no bin
// has the gauge. A span's own gauges are read at its end, after a storm
// has drained: these say how deep it got.
type ServicePeak struct {
	Target     string      `json:"target"`
	QueueDepth model.Value `json:"queue_depth"`
	// QueueDepthUnix is the start of the bin with the highest queue.
	QueueDepthUnix model.Value `json:"queue_depth_unix"`
	QueueOldestAge model.Value `json:"queue_oldest_age_s"`
}

// spanPeak is target t's ServicePeak over the bins of grid that overlap
// [start, end]; nil when t exports no service shape.
func spanPeak(st *model.Store, t string, wb *WholeBuilder, grid []binEdge, timelineStart, start, end int64) *ServicePeak {
	var eval func(e binEdge) model.ServiceSignals
	if wb != nil {
		svc := wb.service(t)
		if svc == nil {
			return nil
		}
		wt := wb.target(t)
		eval = func(e binEdge) model.ServiceSignals { return svc.eval(wt.cover(e.start, e.end).window(e.start, e.end)) }
	} else {
		times := st.TimesSince(t, timelineStart)
		svc := selectService(st, t, times, timelineStart)
		if svc == nil {
			return nil
		}
		eval = func(e binEdge) model.ServiceSignals { return svc.eval(binWindow(times, e.start, e.end)) }
	}
	p := &ServicePeak{Target: t}
	for _, e := range grid {
		if e.end <= start || e.start >= end {
			continue
		}
		s := eval(e)
		if q, ok := s.QueueDepth.Get(); ok && (!p.QueueDepth.OK() || q > p.QueueDepth.V()) {
			p.QueueDepth, p.QueueDepthUnix = s.QueueDepth, model.Some(float64(e.start)/1000)
		}
		if a, ok := s.QueueOldestAge.Get(); ok && (!p.QueueOldestAge.OK() || a > p.QueueOldestAge.V()) {
			p.QueueOldestAge = s.QueueOldestAge
		}
	}
	return p
}
