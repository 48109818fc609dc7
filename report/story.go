package report

import (
	"fmt"

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
	// peak is the highest phase amplification of any row, at peakPath.
	peak     model.Value
	peakPath string
	peakRow  int
	// lost is the originals that did not succeed over the lead's
	// unhealthy phases: the sum of (originals_per_s - goodput_per_s) x
	// (end - start) over its phases that are not healthy (docs/report.md).
	lost model.Value
	// recovery is the first phase with recovery_s (the lead's first),
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
	h := headline{lead: -1, peakRow: -1, recoveryRow: -1, metastable: -1}
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
			if pa := p.PeakAmplification; pa.OK && (!h.peak.OK || pa.V > h.peak.V) {
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
			if !p.OriginalsPerS.OK || !p.GoodputPerS.OK {
				any = false
				sum = 0
				break // one unknown phase makes the total unknown, not smaller
			}
			sum += (p.OriginalsPerS.V - p.GoodputPerS.V) * p.End.Sub(p.Start).Seconds()
			any = true
		}
		if any {
			h.lost = model.Some(sum)
		}
	}
	order := []int{}
	if h.lead >= 0 {
		order = append(order, h.lead)
	}
	for i := range rep.Dependencies {
		if i != h.lead {
			order = append(order, i)
		}
	}
	for _, i := range order {
		for j, p := range rep.Dependencies[i].Phases {
			if p.RecoveryS.OK && !h.recovery.OK {
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

// rowOrder is the order the rows tell the story in: the hops of each
// chain from the user-facing layer down, then every other row as the
// JSON sorts them. Indices stay those of rep.Dependencies.
func rowOrder(rep *analysis.Report) []int {
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
