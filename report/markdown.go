package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// sparkBlocks are the eight heights of a sparkline; an absent bin is a
// space (absent is not zero) and a zero bin the lowest block.
var sparkBlocks = []rune("▁▂▃▄▅▆▇█")

// sparkline draws one value per bin scaled to the series' maximum.
func sparkline(vals []model.Value) string {
	top := 0.0
	for _, v := range vals {
		if v.OK() && !math.IsInf(v.V(), 0) {
			top = max(top, v.V())
		}
	}
	var b strings.Builder
	for _, v := range vals {
		switch {
		case !v.OK() || math.IsInf(v.V(), 0) || math.IsNaN(v.V()):
			b.WriteRune(' ')
		case top <= 0:
			b.WriteRune(sparkBlocks[0])
		default:
			i := int(math.Round(v.V() / top * float64(len(sparkBlocks)-1)))
			b.WriteRune(sparkBlocks[max(0, min(i, len(sparkBlocks)-1))])
		}
	}
	return b.String()
}

// WriteMarkdown writes the report's story for a ticket or a chat: the
// headline, per hop the timelines as Unicode sparklines (one character
// per bin, scaled to the line's maximum, which is printed), the chains,
// every finding with its evidence and what to do, the provider's side and
// where it came from. Numbers are those of WriteHTML.
func WriteMarkdown(w io.Writer, rep analysis.Report, meta Meta) error {
	var b strings.Builder
	h := buildHeadline(&rep)
	mdHeadline(&b, &rep, h, meta)
	mdPhases(&b, &rep, h)
	mdTimelines(&b, &rep)
	mdFates(&b, &rep)
	mdChains(&b, &rep)
	mdFindings(&b, &rep)
	mdProvider(&b, &rep)
	whatIfMarkdown(&b, meta.WhatIf)
	b.WriteString("---\n\n")
	fmt.Fprintf(&b, "Source: %s · window %s, bins %s · dialects %s · retrytop %s\n\n", safetext.Markdown(meta.Source), fmtSec(rep.WindowSeconds), fmtSec(rep.BinSeconds),
		safetext.Markdown(strings.Join(targetDialects(&rep), ", ")), safetext.Markdown(meta.Version))
	// A fenced block shows the command as typed; a fence inside it cannot
	// close it early because backticks were turned into quotes.
	fmt.Fprintf(&b, "Reproduce:\n\n```sh\n%s\n```\n", strings.ReplaceAll(safetext.TerminalN(meta.Command, 0), "`", "'"))
	_, err := io.WriteString(w, b.String())
	return err
}

// mdHeadline is the title, the span, whether it was an incident and the
// headline figures.
func mdHeadline(b *strings.Builder, rep *analysis.Report, h headline, meta Meta) {
	title := "retrytop report"
	if h.incident {
		title = "Incident report"
	}
	fmt.Fprintf(b, "## %s\n\n", title)
	if rep.EndUnix > 0 {
		fmt.Fprintf(b, "%s · %s–%s UTC %s\n\n", safetext.Markdown(meta.Source), clock(unixTime(rep.StartUnix)), clock(unixTime(rep.EndUnix)), unixTime(rep.StartUnix).Format("2006-01-02"))
		fmt.Fprintf(b, "Every number below covers %s; the timelines show the whole data in %s bins.\n\n", spanWords(rep), fmtSec(rep.BinSeconds))
	}
	switch {
	case len(rep.Dependencies) == 0:
		b.WriteString("No retry metrics found (docs/metrics.md lists the families retrytop reads).\n\n")
	case !h.incident:
		b.WriteString("**No incident**: every row stayed healthy and no finding is at warning or worse.\n\n")
	default:
		lead := rep.Dependencies[h.lead]
		if leadUnhealthy(lead) {
			fmt.Fprintf(b, "**Incident**, as seen by %s → %s.\n\n", safetext.Markdown(lead.Target), safetext.Markdown(lead.Dependency))
		} else {
			b.WriteString("**Incident**: findings at warning or worse (below), while every row's phases stayed healthy.\n\n")
		}
	}
	if len(rep.Dependencies) == 0 {
		return
	}
	peakWho := ""
	if h.peakRow >= 0 {
		peakWho = fmt.Sprintf(" (%s → %s)", safetext.Markdown(rep.Dependencies[h.peakRow].Target), safetext.Markdown(rep.Dependencies[h.peakRow].Dependency))
	}
	metastable := "no"
	if h.metastable >= 0 {
		metastable = "yes (" + rep.Findings[h.metastable].Severity.String() + ")"
	}
	if d := rep.Detection; d.TriggerStartUnix.OK() || d.FirstWarningUnix.OK() || d.FirstCriticalUnix.OK() {
		at := func(v model.Value) string { return fmtVal(v, func(s float64) string { return clock(unixTime(s)) }) }
		fmt.Fprintf(b, "Trigger began %s UTC · first warning shown live %s (%s after it) · first critical %s (%s)\n\n",
			at(d.TriggerStartUnix), at(d.FirstWarningUnix), fmtVal(d.WarningAfterTriggerS, fmtSec), at(d.FirstCriticalUnix), fmtVal(d.CriticalAfterTriggerS, fmtSec))
	}
	fmt.Fprintf(b, "- peak amplification: **%s**%s\n", fmtVal(h.peak, fmtAmp), peakWho)
	fmt.Fprintf(b, "- goodput lost: **%s** operations that did not succeed in the unhealthy phases\n", fmtVal(h.lost, func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }))
	recWho := ""
	if h.recoveryRow >= 0 {
		recWho = fmt.Sprintf(" (%s → %s)", safetext.Markdown(rep.Dependencies[h.recoveryRow].Target), safetext.Markdown(rep.Dependencies[h.recoveryRow].Dependency))
	}
	fmt.Fprintf(b, "- recovery: **%s**%s from the trigger's end to healthy\n", fmtVal(h.recovery, fmtSec), recWho)
	fmt.Fprintf(b, "- metastable: **%s**\n\n", metastable)
}

// mdPhases is the costliest row's phases inside the span as a table,
// then that row over the whole span.
func mdPhases(b *strings.Builder, rep *analysis.Report, h headline) {
	if h.worst < 0 || len(rep.Dependencies[h.worst].Phases) == 0 {
		return
	}
	d := rep.Dependencies[h.worst]
	fmt.Fprintf(b, "### Phases of %s → %s, the costliest hop\n\n| phase | from | to | amp (peak) | goodput | offered | effective success | recovery |\n|---|---|---|---:|---:|---:|---:|---:|\n", safetext.Markdown(d.Target), safetext.Markdown(d.Dependency))
	for _, j := range spanPhases(rep, d) {
		p := d.Phases[j]
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", phaseName(p), clock(p.Start), clock(p.End),
			fmtVal(p.PeakAmplification, fmtAmp), fmtVal(p.GoodputPerS, fmtRate), fmtVal(p.OriginalsPerS, fmtRate),
			fmtVal(p.EffectiveSuccess, fmtPct), fmtVal(p.RecoveryS, fmtSec))
	}
	from, to := spanEdges(rep)
	fmt.Fprintf(b, "| **%s** | %s | %s | %s | %s | %s | %s | |\n\n", spanKindName(rep), clock(unixTime(from)), clock(unixTime(to)),
		fmtVal(d.Amplification, fmtAmp), fmtVal(d.SuccessesPerS, fmtRate), fmtVal(d.OriginalsPerS, fmtRate), fmtVal(d.EffectiveSuccess, fmtPct))
}

// mdFates is how each row's originals ended over the span, one line per
// fate and one column per row in the story's order ("-": unknown).
func mdFates(b *strings.Builder, rep *analysis.Report) {
	if len(rep.Dependencies) == 0 {
		return
	}
	order := rowOrder(rep)
	fmt.Fprintf(b, "### Fates\n\nHow each hop's originals ended over %s, per second.\n\n| fate |", spanWords(rep))
	for _, i := range order {
		fmt.Fprintf(b, " %s → %s |", safetext.Markdown(rep.Dependencies[i].Target), safetext.Markdown(rep.Dependencies[i].Dependency))
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(order)) + "\n")
	for _, f := range fates {
		fmt.Fprintf(b, "| %s |", f.name)
		for _, i := range order {
			fmt.Fprintf(b, " %s |", fmtVal(f.get(&rep.Dependencies[i].Fates), fmtRate))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// mdTimelines is, per row, its phases as a strip of letters and each
// metric it exports as a sparkline, under the same bins.
func mdTimelines(b *strings.Builder, rep *analysis.Report) {
	if len(rep.Dependencies) > 0 {
		fmt.Fprintf(b, "### Timelines\n\nOne character per %s bin, scaled to the line's maximum; a blank is a value the source did not give.\n\n", fmtSec(rep.BinSeconds))
	}
	for _, i := range rowOrder(rep) {
		d := rep.Dependencies[i]
		fmt.Fprintf(b, "**%s → %s**: amplification %s, effective success %s, %s originals did not succeed over %s\n\n```\n", safetext.Markdown(d.Target), safetext.Markdown(d.Dependency),
			fmtVal(d.Amplification, fmtAmp), fmtVal(d.EffectiveSuccess, fmtPct), fmtVal(rowLost(rep, d), fmtWhole), spanWords(rep))
		fmt.Fprintf(b, "%-22s %s  (· healthy d degraded O overloaded r recovering)\n", "phase", phaseStrip(d))
		tl := d.TimelineBins() // held compactly by a report written as JSON too
		for _, pn := range panels {
			for _, m := range pn.metrics {
				vals := make([]model.Value, len(tl))
				top, any := 0.0, false
				for i := range tl {
					vals[i] = m.get(&tl[i].Signals)
					if vals[i].OK() && !math.IsInf(vals[i].V(), 0) {
						top, any = max(top, vals[i].V()), true
					}
				}
				if !any {
					continue // not exported: one line saying so per row would drown the rest
				}
				fmt.Fprintf(b, "%-22s %s  max %s\n", m.name, sparkline(vals), pn.unit(top))
			}
		}
		b.WriteString("```\n\n")
	}
}

// phaseStrip is a row's phases as one letter per timeline bin.
func phaseStrip(d analysis.DependencyReport) string {
	tl := d.TimelineBins()
	strip := make([]rune, len(tl))
	for i := range strip {
		strip[i] = ' '
	}
	for _, p := range d.Phases {
		letter := map[analysis.PhaseKind]rune{analysis.PhaseHealthy: '·', analysis.PhaseDegraded: 'd', analysis.PhaseOverloaded: 'O', analysis.PhaseRecovering: 'r', analysis.PhaseNoData: ' '}[p.Kind]
		for i, bin := range tl {
			if t := unixTime(bin.StartUnix); !t.Before(p.Start) && t.Before(p.End) {
				strip[i] = letter
			}
		}
	}
	return string(strip)
}

// mdChains is each chain with its hops' amplification and its gaps.
func mdChains(b *strings.Builder, rep *analysis.Report) {
	if len(rep.Chains) == 0 {
		return
	}
	b.WriteString("### Chains\n\n")
	for _, c := range rep.Chains {
		var line strings.Builder
		for i, hop := range c.Hops {
			if i == 0 {
				line.WriteString(safetext.Markdown(hop.Target))
			}
			fmt.Fprintf(&line, " —%s (max %s)→ %s", fmtVal(hop.Amplification, fmtAmp), fmtVal(hop.MaxAttempts, fmtSig), safetext.Markdown(hop.Dependency))
		}
		fmt.Fprintf(b, "- %s: end-to-end **%s**, product %s, worst case **%s**\n", line.String(),
			fmtVal(c.EndToEndAmplification, fmtAmp), fmtVal(c.ProductAmplification, fmtAmp), fmtVal(c.WorstCaseAmplification, fmtAmp))
		for _, g := range c.Gaps {
			fmt.Fprintf(b, "  - %s %s → %s: sent %s, arrived %s\n", safetext.Markdown(g.Code), safetext.Markdown(g.From.Target), safetext.Markdown(g.To), fmtRate(g.SentPerS), fmtRate(g.ArrivedPerS))
		}
	}
	b.WriteString("\n")
}

// mdFindings is every finding with its evidence and what to do.
func mdFindings(b *strings.Builder, rep *analysis.Report) {
	b.WriteString("### Findings\n\n")
	if len(rep.Findings) == 0 {
		b.WriteString("None.\n\n")
	}
	for _, f := range rep.Findings {
		who := safetext.Markdown(f.Target) + " → " + safetext.Markdown(f.Dependency)
		if f.Chain != "" {
			who = "chain " + safetext.Markdown(f.Chain)
		}
		fmt.Fprintf(b, "#### %s %s, %s\n\n%s", strings.ToUpper(f.Severity.String()), safetext.Markdown(f.Code), who, safetext.Markdown(f.Message))
		if !f.Start.IsZero() {
			fmt.Fprintf(b, " (%s–%s UTC)", clock(f.Start), clock(f.End))
		}
		b.WriteString("\n\n")
		if len(f.Evidence) > 0 {
			parts := make([]string, len(f.Evidence))
			for i, e := range f.Evidence {
				parts[i] = safetext.Markdown(e.Name) + " = " + fmtSig(e.Value)
			}
			fmt.Fprintf(b, "Evidence: %s\n\n", strings.Join(parts, ", "))
		}
		if a := analysis.AdviceFor(f.Code).Long; a != "" {
			fmt.Fprintf(b, "What to do: %s\n\n", a)
		}
	}
}

// mdProvider is the provider's side: each chain's provider and every
// service's own signals.
func mdProvider(b *strings.Builder, rep *analysis.Report) {
	if len(rep.Services) == 0 && !hasProvider(rep.Chains) {
		return
	}
	fmt.Fprintf(b, "### The provider's side\n\nOver %s; the peak is the highest of the span's bins.\n\n", spanWords(rep))
	for _, c := range rep.Chains {
		if pr := c.Provider; pr != nil {
			peak := ""
			if _, pk := servicePeak(rep, pr.Target); pk != nil {
				peak = fmt.Sprintf(" **peak queue %s, oldest queued %s**;", fmtVal(pk.QueueDepth, fmtCount), fmtVal(pk.QueueOldestAge, fmtSec))
			}
			fmt.Fprintf(b, "- %s:%s callers sent %s, it received %s; the last hop gave up on %s, it still finished %s after cancel; at the span's end queue %s (oldest %s), in flight %s of %s slots\n",
				safetext.Markdown(pr.Target), peak, fmtVal(pr.SentPerS, fmtRate), fmtVal(pr.ArrivedPerS, fmtRate), fmtVal(pr.CallerTimeoutsPerS, fmtRate),
				fmtVal(pr.WorkAfterCancelPerS, fmtRate), fmtVal(pr.QueueDepth, fmtCount), fmtVal(pr.QueueOldestAge, fmtSec),
				fmtVal(pr.InFlight, fmtCount), fmtVal(pr.Slots, fmtCount))
		}
	}
	for _, s := range rep.Services {
		peak := ""
		if _, pk := servicePeak(rep, s.Target); pk != nil {
			peak = fmt.Sprintf("peak queue %s (oldest %s), ", fmtVal(pk.QueueDepth, fmtCount), fmtVal(pk.QueueOldestAge, fmtSec))
		}
		fmt.Fprintf(b, "- service %s: %sreceived %s, queue at the end %s (oldest %s, wait p99 %s), service p99 %s, work after cancel %s, cancelled %s\n",
			safetext.Markdown(s.Target), peak, fmtVal(s.ReceivedPerS, fmtRate), fmtVal(s.QueueDepth, fmtCount), fmtVal(s.QueueOldestAge, fmtSec),
			fmtVal(s.QueueWaitP99, fmtSec), fmtVal(s.ServiceTimeP99, fmtSec), fmtVal(s.WorkAfterCancelPerS, fmtRate), fmtVal(s.CancelledPerS, fmtRate))
	}
	b.WriteString("\n")
}

func hasProvider(cs []analysis.ChainResult) bool {
	for _, c := range cs {
		if c.Provider != nil {
			return true
		}
	}
	return false
}

func leadUnhealthy(d analysis.DependencyReport) bool {
	for _, p := range d.Phases {
		if unhealthy(p.Kind) {
			return true
		}
	}
	return false
}
