package report

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/whatif"
)

// val turns whatif's nil-or-number into a Value (absent stays absent).
func val(p *float64) model.Value {
	if p == nil {
		return model.Value{}
	}
	return model.Some(*p)
}

// whatifRun is one row of the what-if table: the recording's own numbers
// or a policy's run, with the JSON path of its summary.
type whatifRun struct {
	name, model, path string
	s                 whatif.Summary
	fates             map[string]int64
}

func whatifRuns(w *whatif.Report) []whatifRun {
	runs := []whatifRun{{name: "the recording itself", model: "-", path: "/recording/", s: w.Recording}}
	for i, p := range w.Policies {
		name := p.Policy
		if name == "recorded" {
			name = "recorded (replayed by the model)"
		}
		runs = append(runs, whatifRun{name: name, model: p.Model, path: fmt.Sprintf("/policies/%d/", i), s: p.Summary, fates: p.Fates})
	}
	return runs
}

// fateKeys are every fate any policy counted, sorted, success first.
func fateKeys(w *whatif.Report) []string {
	seen := map[string]bool{}
	var keys []string
	for _, p := range w.Policies {
		for k := range p.Fates {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if (keys[i] == "success") != (keys[j] == "success") {
			return keys[i] == "success"
		}
		return keys[i] < keys[j]
	})
	return keys
}

// wn is a what-if number: data-whatif names its path in
// `retrytop whatif --format json` on the same recording.
func wn(path string, v model.Value, f func(float64) string) string {
	return fmt.Sprintf(`<span class="n" data-whatif="%s" data-v="%s">%s</span>`, safetext.HTMLAttr(path), jsonNum(v), safetext.HTML(fmtVal(v, f)))
}

func fmtYesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// whatIf writes the what-if section: per policy the summary of its
// replay, then the fate ledger (how the provider caller's operations
// ended), then the fit's assumptions.
func (p *page) whatIf(w *whatif.Report) {
	if w == nil {
		return
	}
	p.w("<section id=\"whatif\">\n<h2>What if: the same incident under other policies</h2>\n")
	p.w("<p class=\"legend\">A model fitted from the recording (bins of %s, chain %s) replays the incident once per policy on the hop that calls the provider. The first row is the recording's own numbers, the second the recorded policy replayed by the model: how far to trust the rest. Numbers of <code>retrytop whatif</code>; docs/whatif.md has the model.</p>\n",
		safetext.HTML(fmtSec(w.BinS)), safetext.HTML(strings.Join(w.Chain, " → ")))
	p.w("<table class=\"whatif fit\"><tr><th>policy</th><th>model</th><th>success ratio</th><th>goodput</th><th>peak amp</th><th>mean amp</th><th>peak provider load</th><th>recovery</th><th>metastable</th></tr>\n")
	for _, r := range whatifRuns(w) {
		p.w("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			safetext.HTML(r.name), safetext.HTML(r.model),
			wn(r.path+"success_ratio", val(r.s.SuccessRatio), fmtPct), wn(r.path+"goodput_per_s", val(r.s.GoodputPerS), fmtRate),
			wn(r.path+"peak_amplification", val(r.s.PeakAmplification), fmtAmp), wn(r.path+"mean_amplification", val(r.s.MeanAmplification), fmtAmp),
			wn(r.path+"peak_provider_load", val(r.s.PeakProviderLoad), fmtSig), wn(r.path+"recovery_s", val(r.s.RecoveryS), fmtSec),
			fmtYesNo(r.s.Metastable))
	}
	p.w("</table>\n")
	if keys := fateKeys(w); len(keys) > 0 {
		p.w("<h3>Fate ledger</h3>\n<p class=\"legend\">The provider caller's operations in each replay by how they ended: success, or why the last failure was not retried.</p>\n")
		p.w("<table class=\"fates fit\"><tr><th>policy</th>")
		for _, k := range keys {
			p.w("<th>%s</th>", safetext.HTML(k))
		}
		p.w("</tr>\n")
		for i, pr := range w.Policies {
			p.w("<tr><td>%s</td>", safetext.HTML(pr.Policy))
			for _, k := range keys {
				n, ok := pr.Fates[k]
				switch {
				case pr.Fates == nil: // no ledger for this run: unknown
					p.w("<td>%s</td>", absent)
				case !ok: // the ledger counts every operation: a fate it lacks ended none
					p.w("<td>0</td>")
				default:
					p.w("<td>%s</td>", wn(fmt.Sprintf("/policies/%d/fates/%s", i, pointerToken(k)), model.Some(float64(n)), func(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) }))
				}
			}
			p.w("</tr>\n")
		}
		p.w("</table>\n")
	}
	p.policyCurve(w.Curve)
	if len(w.Undetermined) > 0 {
		p.w("<p class=\"advice\">The recording cannot determine %s; the predictions rest on a bound for it (see the assumptions).</p>\n", safetext.HTML(strings.Join(w.Undetermined, "; ")))
	}
	if len(w.Assumptions) > 0 {
		p.w("<details><summary>Assumptions of the fit (%d)</summary><table class=\"assume fit\">\n", len(w.Assumptions))
		p.w("<tr><th>what</th><th>value</th><th>how known</th><th>from</th></tr>\n")
		for _, a := range w.Assumptions {
			conf := a.Confidence
			if conf == "" {
				conf = absent
			}
			p.w("<tr><td>%s</td><td>%s</td><td>%s</td><td class=\"ref\">%s</td></tr>\n", safetext.HTML(a.What), safetext.HTML(a.Value), safetext.HTML(conf), safetext.HTML(a.Source))
		}
		p.w("</table></details>\n")
	}
	p.w("</section>\n")
}

// whatIfMarkdown is the what-if section for the markdown story.
func whatIfMarkdown(b *strings.Builder, w *whatif.Report) {
	if w == nil {
		return
	}
	fmt.Fprintf(b, "### What if\n\nA model fitted from the recording (bins of %s) replays the incident per policy; the first row is the recording, the second the recorded policy replayed (how far to trust the rest).\n\n", fmtSec(w.BinS))
	b.WriteString("| policy | success ratio | goodput | peak amp | mean amp | peak provider load | recovery | metastable |\n|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range whatifRuns(w) {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", safetext.Markdown(r.name),
			fmtVal(val(r.s.SuccessRatio), fmtPct), fmtVal(val(r.s.GoodputPerS), fmtRate), fmtVal(val(r.s.PeakAmplification), fmtAmp),
			fmtVal(val(r.s.MeanAmplification), fmtAmp), fmtVal(val(r.s.PeakProviderLoad), fmtSig), fmtVal(val(r.s.RecoveryS), fmtSec), fmtYesNo(r.s.Metastable))
	}
	b.WriteString("\n")
	if len(w.Undetermined) > 0 {
		fmt.Fprintf(b, "The recording cannot determine %s; the predictions rest on a bound for it.\n\n", safetext.Markdown(strings.Join(w.Undetermined, "; ")))
	}
	policyCurveMarkdown(b, w.Curve)
	if keys := fateKeys(w); len(keys) > 0 {
		b.WriteString("Fate ledger (the provider caller's operations by how they ended):\n\n| policy |")
		for _, k := range keys {
			fmt.Fprintf(b, " %s |", safetext.Markdown(k))
		}
		b.WriteString("\n|---|" + strings.Repeat("---:|", len(keys)) + "\n")
		for _, pr := range w.Policies {
			fmt.Fprintf(b, "| %s |", safetext.Markdown(pr.Policy))
			for _, k := range keys {
				if pr.Fates == nil {
					b.WriteString(" - |")
				} else {
					fmt.Fprintf(b, " %d |", pr.Fates[k]) // a fate the ledger lacks ended none
				}
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
}

// policyCurve draws the recorded policy's check (`retrytop policy check`
// of each fitted hop): attempts at the provider per user original against
// the provider's failure fraction, steady and worst, with the incident's
// point, so a reader sees whether the storm was what the policy allows.
func (p *page) policyCurve(c *whatif.Curve) {
	if c == nil || len(c.Points) == 0 {
		return
	}
	specs := make([]string, len(c.Layers))
	for i, l := range c.Layers {
		specs[i] = fmt.Sprintf("%s (%d attempts; %s)", l.Spec, l.MaxAttempts, l.Budget)
	}
	p.w("<h3>The recorded policy, checked</h3>\n<p class=\"legend\">What the recorded chain allows as the provider fails more (<code>retrytop policy check</code>, docs/whatif.md): attempts reaching the provider per user original, in steady state and in the worst case (budgets full), over the share p of the provider's attempts that fail. The dot is the incident's trigger. Layers: %s.</p>\n",
		safetext.HTML(strings.Join(specs, " → ")))
	ch := chart{id: "policy-curve", title: "attempts at the provider per user original over the provider's failure fraction", unit: func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) + "x" }, t0: 0, t1: 100, attr: "data-whatif"}
	steady := series{name: "steady", class: "s1"}
	worst := series{name: "worst case", class: "s2", dashed: true}
	for i, pt := range c.Points {
		path := fmt.Sprintf("/policy_curve/points/%d/", i)
		steady.pts = append(steady.pts, point{t: pt.P * 100, v: val(pt.SteadyLoad).V(), ok: pt.SteadyLoad != nil, path: path + "steady_load"})
		worst.pts = append(worst.pts, point{t: pt.P * 100, v: val(pt.WorstLoad).V(), ok: pt.WorstLoad != nil, path: path + "worst_load"})
	}
	ch.series = []series{steady, worst}
	if inc := c.Incident; inc != nil {
		ch.series = append(ch.series, series{name: "incident", class: "s4", mark: true, pts: []point{{t: inc.P * 100, v: inc.Amplification, ok: true, path: "/policy_curve/incident/amplification"}}})
	}
	var b bytes.Buffer
	ch.write(&b, func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) + "%" })
	p.w("<div class=\"charts\"><figure class=\"panel\"><figcaption>Attempts at the provider per user original, over p</figcaption>\n%s", b.String())
	p.w("<ul class=\"keys\"><li><i class=\"sw ln s1\"></i>steady</li><li><i class=\"sw ln s2\"></i>worst case (dashed)</li>")
	if inc := c.Incident; inc != nil {
		p.w("<li><i class=\"sw ln s4\"></i>the incident: p %s, %s</li>", wn("/policy_curve/incident/p", model.Some(inc.P), fmtPct), wn("/policy_curve/incident/amplification", model.Some(inc.Amplification), fmtAmp))
	} else {
		p.w("<li class=\"absent\">the incident: %s (no trigger, or no attempt outcomes)</li>", absent)
	}
	p.w("</ul></figure></div>\n")
}

// policyCurveMarkdown is the recorded policy's check at every quarter of
// p, and the incident's point.
func policyCurveMarkdown(b *strings.Builder, c *whatif.Curve) {
	if c == nil || len(c.Points) == 0 {
		return
	}
	b.WriteString("The recorded policy, checked (`retrytop policy check`): attempts at the provider per user original.\n\n| provider failing | steady | worst case |\n|---:|---:|---:|\n")
	for _, pt := range c.Points {
		if q := pt.P * 4; q != float64(int(q)) {
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", fmtPct(pt.P), fmtVal(val(pt.SteadyLoad), fmtAmp), fmtVal(val(pt.WorstLoad), fmtAmp))
	}
	if inc := c.Incident; inc != nil {
		fmt.Fprintf(b, "| **the incident: %s** | %s measured | |\n", fmtPct(inc.P), fmtAmp(inc.Amplification))
	}
	b.WriteString("\n")
}
