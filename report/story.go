package report

import (
	"fmt"
	"math"
	"sort"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/whatif"
)

// Meta says where a report came from, for the page's footer.
type Meta struct {
	// Source is what was read: recording file names, or the live targets.
	Source string
	// Command reproduces the report (the command line, quoted for a shell).
	Command string
	// Version is retrytop's version and commit.
	Version string
	// WhatIf, when set, adds the what-if table and the fate ledger: the
	// same recording replayed under other policies (retrytop whatif).
	WhatIf *whatif.Report
}

// headline is the incident in a few numbers, each taken from the report
// with the JSON path it sits at.
type headline struct {
	// incident: some row left the healthy phase, or a finding is at
	// warning or worse.
	incident bool
	// lead is the row whose phases tell the story (index into
	// rep.Dependencies, -1 when none): the first hop of the first chain,
	// where users' operations enter, when it had unhealthy bins; else the
	// row with the most unhealthy bins; else the chain's first hop.
	lead int
	// worst is the row that cost the most over the span (rowOrder's
	// first, -1 when none): its phases are the headline's table.
	worst int
	// peak is the highest amplification of a phase of any row inside
	// the span, at peakPath.
	peak     model.Value
	peakPath string
	peakRow  int
	// lost is the originals that did not succeed over the lead's
	// unhealthy phases: the sum of (originals_per_s - goodput_per_s) x
	// (end - start) over its phases that are not healthy (docs/report.md).
	lost model.Value
	// recovery is the first phase with recovery_s (the worst row's
	// first, then the lead's),
	// at recoveryPath.
	recovery     model.Value
	recoveryPath string
	recoveryRow  int
	// metastable is the index of the METASTABLE finding, -1 when none.
	metastable int
}

func unhealthy(k analysis.PhaseKind) bool {
	return k == analysis.PhaseDegraded || k == analysis.PhaseOverloaded || k == analysis.PhaseRecovering
}

func rowIndex(rep *analysis.Report, target, dep string) int {
	for i, d := range rep.Dependencies {
		if d.Target == target && d.Dependency == dep {
			return i
		}
	}
	return -1
}

func buildHeadline(rep *analysis.Report) headline {
	h := headline{lead: -1, worst: -1, peakRow: -1, recoveryRow: -1, metastable: -1}
	order := rowOrder(rep)
	if len(order) > 0 {
		h.worst = order[0]
	}
	for i, f := range rep.Findings {
		if f.Severity >= analysis.SeverityWarning {
			h.incident = true
		}
		if f.Code == analysis.CodeMetastable && h.metastable < 0 {
			h.metastable = i
		}
	}
	bad := make([]int, len(rep.Dependencies))
	for i, d := range rep.Dependencies {
		for j, p := range d.Phases {
			if unhealthy(p.Kind) {
				bad[i] += p.Bins
				h.incident = true
			}
			if pa := p.PeakAmplification; pa.OK() && inSpan(rep, p) && (!h.peak.OK() || pa.V() > h.peak.V()) {
				h.peak, h.peakRow = pa, i
				h.peakPath = fmt.Sprintf("/dependencies/%d/phases/%d/peak_amplification", i, j)
			}
		}
	}
	// The chain's entry leads when it saw the incident; when users saw
	// nothing there, the row that was unhealthy longest tells it.
	entry := -1
	for _, c := range rep.Chains {
		if len(c.Hops) > 0 {
			if i := rowIndex(rep, c.Hops[0].Target, c.Hops[0].Dependency); i >= 0 {
				entry = i
				break
			}
		}
	}
	if entry >= 0 && bad[entry] > 0 {
		h.lead = entry
	}
	if h.lead < 0 {
		for i := range bad {
			if bad[i] > 0 && (h.lead < 0 || bad[i] > bad[h.lead]) {
				h.lead = i
			}
		}
	}
	if h.lead < 0 {
		h.lead = entry
	}
	if h.lead < 0 && len(rep.Dependencies) > 0 {
		h.lead = 0
	}
	if h.lead >= 0 {
		sum, any := 0.0, false
		for _, p := range rep.Dependencies[h.lead].Phases {
			if !unhealthy(p.Kind) {
				continue
			}
			if !p.OriginalsPerS.OK() || !p.GoodputPerS.OK() {
				any = false
				sum = 0
				break // one unknown phase makes the total unknown, not smaller
			}
			sum += (p.OriginalsPerS.V() - p.GoodputPerS.V()) * p.End.Sub(p.Start).Seconds()
			any = true
		}
		if any {
			h.lost = model.Some(sum)
		}
	}
	first := []int{}
	for _, i := range []int{h.worst, h.lead} {
		if i >= 0 {
			first = append(first, i)
		}
	}
	for _, i := range append(first, order...) {
		for j, p := range rep.Dependencies[i].Phases {
			if p.RecoveryS.OK() && !h.recovery.OK() {
				h.recovery, h.recoveryRow = p.RecoveryS, i
				h.recoveryPath = fmt.Sprintf("/dependencies/%d/phases/%d/recovery_s", i, j)
			}
		}
	}
	return h
}

// phaseName says what a phase was in the incident's words.
func phaseName(p analysis.Phase) string {
	name := string(p.Kind)
	switch p.Kind {
	case analysis.PhaseOverloaded:
		name = "overloaded (storm)"
	case analysis.PhaseNoData:
		name = "no data"
	}
	if p.Trigger {
		name += ", trigger on"
	}
	return name
}

// inSpan reports whether phase p overlaps the rows' span.
func inSpan(rep *analysis.Report, p analysis.Phase) bool {
	from, to := spanEdges(rep)
	if to <= from {
		return true
	}
	return p.End.After(unixTime(from)) && p.Start.Before(unixTime(to))
}

// spanEdges are the rows' span in Unix seconds: Report.Span, or the
// window ending at the report's end when the report names none.
func spanEdges(rep *analysis.Report) (from, to float64) {
	if rep.Span.EndUnix > 0 {
		return rep.Span.StartUnix, rep.Span.EndUnix
	}
	return rep.EndUnix - rep.WindowSeconds, rep.EndUnix
}

// spanPhases are the indices of row d's phases that overlap the span.
func spanPhases(rep *analysis.Report, d analysis.DependencyReport) []int {
	var out []int
	for j, p := range d.Phases {
		if inSpan(rep, p) {
			out = append(out, j)
		}
	}
	return out
}

// rowLost is the originals of row d that did not succeed over the span:
// (originals_per_s - successes_per_s) x window_seconds, absent when
// either rate is.
func rowLost(rep *analysis.Report, d analysis.DependencyReport) model.Value {
	o, ok1 := d.OriginalsPerS.Get()
	s, ok2 := d.SuccessesPerS.Get()
	if !ok1 || !ok2 {
		return model.Absent
	}
	return model.Some(max(o-s, 0) * rep.WindowSeconds)
}

// sameLoss is how close two rows' losses must be to count as the same
// loss seen at two layers (a user's failed operation fails at every hop
// under it): then amplification orders them.
const sameLoss = 0.02

// rowOrder is the order the rows tell the story in: the worst first, by
// what each cost over the span (rowLost; losses within sameLoss of each
// other are equal), then by amplification over the span, then in chain
// order (the hops of each chain from the user-facing layer down, then
// every other row as the JSON sorts them). Unknown costs sort after
// known ones. Indices stay those of rep.Dependencies.
func rowOrder(rep *analysis.Report) []int {
	out := chainOrder(rep)
	lost := make([]model.Value, len(rep.Dependencies))
	for i := range rep.Dependencies {
		lost[i] = rowLost(rep, rep.Dependencies[i])
	}
	sort.SliceStable(out, func(a, b int) bool {
		la, lb := lost[out[a]], lost[out[b]]
		if la.OK() != lb.OK() {
			return la.OK()
		}
		if la.OK() && math.Abs(la.V()-lb.V()) > sameLoss*max(la.V(), lb.V()) {
			return la.V() > lb.V()
		}
		aa, ab := rep.Dependencies[out[a]].Amplification, rep.Dependencies[out[b]].Amplification
		if aa.OK() != ab.OK() {
			return aa.OK()
		}
		return aa.OK() && aa.V() > ab.V()
	})
	return out
}

// chainOrder is the hops of each chain from the user-facing layer down,
// then every other row as the JSON sorts them.
func chainOrder(rep *analysis.Report) []int {
	seen := make([]bool, len(rep.Dependencies))
	var out []int
	for _, c := range rep.Chains {
		for _, h := range c.Hops {
			if i := rowIndex(rep, h.Target, h.Dependency); i >= 0 && !seen[i] {
				seen[i] = true
				out = append(out, i)
			}
		}
	}
	for i := range rep.Dependencies {
		if !seen[i] {
			out = append(out, i)
		}
	}
	return out
}

// spanWords says which span the rows' numbers cover, for a section's
// header: "the incident span 10:00:00–10:00:40 UTC (40s)", "the whole
// recording (...)" or "the last 30s".
func spanWords(rep *analysis.Report) string {
	from, to := spanEdges(rep)
	edges := clock(unixTime(from)) + "–" + clock(unixTime(to)) + " UTC (" + fmtSec(rep.WindowSeconds) + ")"
	switch rep.Span.Kind {
	case analysis.SpanIncident:
		return "the incident span " + edges
	case analysis.SpanRecording:
		return "the whole recording " + edges
	}
	return "the last " + fmtSec(rep.WindowSeconds)
}

// fate is one column of the fates section: how an original ended, and
// its field of analysis.FateLedger.
type fate struct {
	name, key string
	get       func(f *analysis.FateLedger) model.Value
}

var fates = []fate{
	{"succeeded at the first try", "succeeded_first_try_per_s", func(f *analysis.FateLedger) model.Value { return f.SucceededFirstTry }},
	{"succeeded after retry", "succeeded_after_retry_per_s", func(f *analysis.FateLedger) model.Value { return f.SucceededAfterRetry }},
	{"failed after its attempts", "failed_after_attempts_per_s", func(f *analysis.FateLedger) model.Value { return f.FailedAfterAttempts }},
	{"not retried: budget", "not_retried_budget_per_s", func(f *analysis.FateLedger) model.Value { return f.NotRetriedBudget }},
	{"not retried: limiter", "not_retried_limiter_per_s", func(f *analysis.FateLedger) model.Value { return f.NotRetriedLimiter }},
	{"not retried: deadline", "not_retried_deadline_per_s", func(f *analysis.FateLedger) model.Value { return f.NotRetriedDeadline }},
	{"not retried: non-retryable", "not_retried_non_retryable_per_s", func(f *analysis.FateLedger) model.Value { return f.NotRetriedNonRetry }},
	{"not retried: unsafe", "not_retried_unsafe_per_s", func(f *analysis.FateLedger) model.Value { return f.NotRetriedUnsafe }},
	{"not retried: breaker", "not_retried_breaker_per_s", func(f *analysis.FateLedger) model.Value { return f.NotRetriedBreaker }},
	{"cancelled", "cancelled_per_s", func(f *analysis.FateLedger) model.Value { return f.Cancelled }},
}

// servicePeak is the ServicePeak of target t, nil when none.
func servicePeak(rep *analysis.Report, t string) (int, *analysis.ServicePeak) {
	for i := range rep.ServicePeaks {
		if rep.ServicePeaks[i].Target == t {
			return i, &rep.ServicePeaks[i]
		}
	}
	return -1, nil
}

// spanKindName names the span in a table's total row.
func spanKindName(rep *analysis.Report) string {
	switch rep.Span.Kind {
	case analysis.SpanIncident:
		return "whole incident span"
	case analysis.SpanRecording:
		return "whole recording"
	}
	return "last " + fmtSec(rep.WindowSeconds)
}
