package analysis

import (
	"github.com/retrytop/retrytop/model"
)

// Detection says how soon the rules would have told of an incident live:
// replaying them over a recording's bins (each bin as the current window,
// as EvaluateHistory does), when the first warning and the first critical
// finding would have shown, beside when the trigger began. A finding
// shows at the end of the first bin it holds in, when a live view has
// that bin; findings already holding in the first bin with data are
// standing conditions (a chain's retry layers, say), not news of the
// incident, and are left out unless the trigger began there too or they
// grow more severe. Times
// are Unix seconds; each is null when it did not happen.
type Detection struct {
	// TriggerStartUnix is the start of the first bin where the trigger
	// (a dependency's service time above its baseline, Phases) was on.
	TriggerStartUnix model.Value `json:"trigger_start_unix"`
	// FirstWarningUnix is when the first finding of warning severity or
	// above would have shown, FirstWarningCode its code;
	// FirstCriticalUnix and FirstCriticalCode the same for critical.
	FirstWarningUnix  model.Value `json:"first_warning_unix"`
	FirstWarningCode  string      `json:"first_warning_code,omitempty"`
	FirstCriticalUnix model.Value `json:"first_critical_unix"`
	FirstCriticalCode string      `json:"first_critical_code,omitempty"`
	// WarningAfterTriggerS and CriticalAfterTriggerS are those moments
	// less the trigger's start (negative: shown before the trigger).
	WarningAfterTriggerS  model.Value `json:"warning_after_trigger_s"`
	CriticalAfterTriggerS model.Value `json:"critical_after_trigger_s"`
}

// Detect replays the rules over the frame's timelines (see Detection).
// Bins are evaluated in order until both the first warning and the first
// critical finding are found.
func Detect(frame model.Frame, chains []Chain, th Thresholds) Detection {
	var d Detection
	h := newHistoryBins(frame, chains, th)
	trigStart := int64(0)
	var buf []model.Signals
	for _, t := range h.tls {
		tl := t.AppendRangeNoHist(buf[:0], 0, t.Len())
		buf = tl
		trig, _ := triggers(tl, th)
		for i, s := range trig {
			if s == triggerOn {
				if trigStart == 0 || tl[i].StartMs < trigStart {
					trigStart = tl[i].StartMs
				}
				break
			}
		}
	}
	if trigStart != 0 {
		d.TriggerStartUnix = model.Some(float64(trigStart) / 1000)
	}
	standing := map[string]Severity{}
	first := -1 // the first bin with any row data
	sc := h.scratch()
	for i := 0; i < h.n && !(d.FirstWarningUnix.OK() && d.FirstCriticalUnix.OK()); i++ {
		start, end, data := h.binEdges(i)
		if !data {
			continue
		}
		fs := h.findings(i, sc)
		if first < 0 {
			first = i
			if trigStart == 0 || trigStart > start {
				for _, f := range fs {
					standing[findingID(f)] = max(standing[findingID(f)], f.Severity)
				}
				continue
			}
		}
		for _, f := range fs {
			if f.Severity <= standing[findingID(f)] {
				continue
			}
			at := model.Some(float64(end) / 1000)
			if f.Severity >= SeverityWarning && !d.FirstWarningUnix.OK() {
				d.FirstWarningUnix, d.FirstWarningCode = at, f.Code
			}
			if f.Severity >= SeverityCritical && !d.FirstCriticalUnix.OK() {
				d.FirstCriticalUnix, d.FirstCriticalCode = at, f.Code
			}
		}
	}
	if d.TriggerStartUnix.OK() {
		after := func(v model.Value) model.Value {
			if !v.OK() {
				return model.Absent
			}
			return model.Some(float64(int64(v.V()*1000+0.5)-trigStart) / 1000)
		}
		d.WarningAfterTriggerS, d.CriticalAfterTriggerS = after(d.FirstWarningUnix), after(d.FirstCriticalUnix)
	}
	return d
}

// binEdges are bin i's edges (the first timeline that has it) and whether
// any row has traffic data in it.
func (h *historyBins) binEdges(i int) (start, end int64, data bool) {
	found := false
	for _, tl := range h.tls {
		if i >= tl.Len() {
			continue
		}
		b := tl.AtNoHist(i)
		if !found {
			start, end, found = b.StartMs, b.EndMs, true
		}
		data = data || b.OriginalsPerS.OK() || b.AttemptsPerS.OK()
	}
	return start, end, data
}

// findingID is what EvaluateHistory merges findings of several bins by.
func findingID(f Finding) string {
	return f.Code + "\x00" + f.Target + "\x00" + f.Dependency + "\x00" + f.Chain
}
