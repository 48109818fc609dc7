package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// page writes through b to the caller's writer as it goes: held whole,
// the 1-hour dump's page (48 MB, most of it the timelines' SVG) was the
// largest part of analyze --format html's heap at its end.
type page struct {
	b   *bufio.Writer
	rep *analysis.Report
	h   headline
}

// pointerToken escapes a JSON pointer token (RFC 6901): evidence names
// such as "retries_per_s.client" may hold any character.
func pointerToken(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// n is a number on the page: its text, and the JSON path and exact value
// it was printed from (data-json, data-v), so a reader or a test can check
// it against `analyze --format json`.
func (p *page) n(path string, v model.Value, f func(float64) string) string {
	if path == "" { // nothing in the JSON to point at: unknown
		return fmt.Sprintf(`<span class="n" data-v="%s">%s</span>`, jsonNum(v), safetext.HTML(fmtVal(v, f)))
	}
	return fmt.Sprintf(`<span class="n" data-json="%s" data-v="%s">%s</span>`, safetext.HTMLAttr(path), jsonNum(v), safetext.HTML(fmtVal(v, f)))
}

func (p *page) w(format string, args ...any) { fmt.Fprintf(p.b, format, args...) }

// WriteHTML writes rep as one self-contained HTML page: the incident's
// headline, per-hop timelines on a shared time axis with phases and
// findings marked, the chains, every finding with its evidence and what
// to do, the provider's side and where it all came from. It loads
// nothing (a Content-Security-Policy forbids it), runs no script, and
// reads in dark and light mode and on paper. Every string from a target
// is escaped, every number is a field of rep (data-json names it).
func WriteHTML(w io.Writer, rep analysis.Report, meta Meta) error {
	p := &page{b: bufio.NewWriterSize(w, 64<<10), rep: &rep, h: buildHeadline(&rep)}
	title := "retrytop report"
	if p.h.incident {
		title = "Incident report"
	}
	span := ""
	if rep.EndUnix > 0 {
		span = clock(unixTime(rep.StartUnix)) + "–" + clock(unixTime(rep.EndUnix)) + " UTC " + unixTime(rep.StartUnix).Format("2006-01-02")
	}
	p.w("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	p.w("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	// No script, no fetch, no font, no image from anywhere: the file is
	// the whole page, and a hostile label could not load anything either.
	p.w("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n")
	p.w("<meta name=\"color-scheme\" content=\"light dark\">\n")
	p.w("<title>%s %s</title>\n<style>%s</style>\n</head>\n<body>\n", title, safetext.HTML(span), pageCSS)
	p.w("<header><h1>%s</h1><p class=\"sub\">%s · %s</p>", title, safetext.HTML(meta.Source), safetext.HTML(span))
	if rep.EndUnix > 0 {
		p.w("<p class=\"span\" id=\"span\" data-json=\"/span\" data-kind=\"%s\">Every number below covers <b>%s</b>; the timelines show the whole data in %s bins.</p>",
			safetext.HTMLAttr(rep.Span.Kind), safetext.HTML(spanWords(&rep)), safetext.HTML(fmtSec(rep.BinSeconds)))
	}
	p.w("</header>\n<main>\n")
	p.headline()
	p.timelines()
	p.fates()
	p.chains()
	p.findings()
	p.provider()
	p.whatIf(meta.WhatIf)
	p.w("</main>\n")
	p.footer(meta)
	p.w("</body>\n</html>\n")
	return p.b.Flush() // the first error writing, if any
}

func (p *page) headline() {
	rep, h := p.rep, p.h
	p.w("<section id=\"headline\">\n")
	if len(rep.Dependencies) == 0 {
		p.w("<p class=\"verdict ok\">No retry metrics found (docs/metrics.md lists the families retrytop reads).</p>\n</section>\n")
		return
	}
	if !h.incident {
		p.w("<p class=\"verdict ok\" id=\"verdict\">No incident: every row stayed healthy and no finding is at warning or worse.</p>\n")
	} else {
		lead := rep.Dependencies[h.lead]
		from, to := time.Time{}, time.Time{}
		for _, ph := range lead.Phases {
			if unhealthy(ph.Kind) {
				if from.IsZero() {
					from = ph.Start
				}
				to = ph.End
			}
		}
		if from.IsZero() {
			p.w("<p class=\"verdict bad\" id=\"verdict\">Incident: findings at warning or worse (below), while every row's phases stayed healthy.</p>\n")
		} else {
			p.w("<p class=\"verdict bad\" id=\"verdict\">Incident from %s to %s UTC, as seen by <bdi>%s</bdi> → <bdi>%s</bdi>.</p>\n",
				clock(from), clock(to), safetext.HTML(lead.Target), safetext.HTML(lead.Dependency))
		}
	}
	p.detection()
	p.w("<div class=\"kpis\">\n")
	peakWho := ""
	if h.peakRow >= 0 {
		d := rep.Dependencies[h.peakRow]
		peakWho = "<bdi>" + safetext.HTML(d.Target) + "</bdi> → <bdi>" + safetext.HTML(d.Dependency) + "</bdi>, highest bin of the span"
	}
	p.kpi("Peak amplification", p.n(h.peakPath, h.peak, fmtAmp), peakWho)
	// Derived from the lead row's phases (docs/report.md): data-lead
	// names the row so a reader can redo the sum.
	lost := fmt.Sprintf(`<span class="n" data-derived="goodput_lost" data-lead="/dependencies/%d" data-v="%s">%s</span>`, h.lead, jsonNum(h.lost), fmtVal(h.lost, fmtWhole))
	lostWho := "operations that did not succeed in the unhealthy phases"
	if h.lead >= 0 {
		d := rep.Dependencies[h.lead]
		lostWho = "<bdi>" + safetext.HTML(d.Target) + "</bdi> → <bdi>" + safetext.HTML(d.Dependency) + "</bdi>: " + lostWho
	}
	p.kpi("Goodput lost", lost, lostWho)
	recWho := "from the trigger's end to healthy"
	if h.recoveryRow >= 0 {
		d := rep.Dependencies[h.recoveryRow]
		recWho = "<bdi>" + safetext.HTML(d.Target) + "</bdi> → <bdi>" + safetext.HTML(d.Dependency) + "</bdi>, from the trigger's end to healthy"
	}
	p.kpi("Recovery", p.n(h.recoveryPath, h.recovery, fmtSec), recWho)
	meta := "no"
	if h.metastable >= 0 {
		f := rep.Findings[h.metastable]
		meta = fmt.Sprintf(`<a href="#f%d">yes (%s)</a>`, h.metastable, f.Severity)
	}
	p.kpi("Metastable", meta, "overload outliving its trigger")
	p.w("</div>\n")
	p.phaseTable()
	p.w("</section>\n")
}

// detection is when the trigger began and when the rules would have
// shown the first warning and critical finding live (Report.Detection).
func (p *page) detection() {
	d := p.rep.Detection
	if !d.TriggerStartUnix.OK() && !d.FirstWarningUnix.OK() && !d.FirstCriticalUnix.OK() {
		return
	}
	at := func(path string, v model.Value) string {
		return p.n(path, v, func(s float64) string { return clock(unixTime(s)) })
	}
	after := func(path string, v model.Value) string {
		return p.n(path, v, func(s float64) string {
			if s >= 0 {
				return "+" + fmtSec(s)
			}
			return fmtSec(s)
		})
	}
	code := func(c string) string {
		if c == "" {
			return ""
		}
		return ", <code>" + safetext.HTML(c) + "</code>"
	}
	p.w("<p class=\"detect\" id=\"detection\">Trigger began %s UTC · first warning shown live %s (%s after it%s) · first critical %s (%s%s)</p>\n",
		at("/detection/trigger_start_unix", d.TriggerStartUnix),
		at("/detection/first_warning_unix", d.FirstWarningUnix), after("/detection/warning_after_trigger_s", d.WarningAfterTriggerS), code(d.FirstWarningCode),
		at("/detection/first_critical_unix", d.FirstCriticalUnix), after("/detection/critical_after_trigger_s", d.CriticalAfterTriggerS), code(d.FirstCriticalCode))
}

// phaseTable is the worst row's phases inside the span, then the row
// over the whole span: the numbers of its card below.
func (p *page) phaseTable() {
	rep, i := p.rep, p.h.worst
	if i < 0 || len(rep.Dependencies[i].Phases) == 0 {
		return
	}
	d := rep.Dependencies[i]
	p.w("<h2>Phases of <bdi>%s</bdi> → <bdi>%s</bdi>, the costliest hop</h2>\n<table class=\"phases fit\" id=\"phases\" data-row=\"/dependencies/%d\">\n", safetext.HTML(d.Target), safetext.HTML(d.Dependency), i)
	p.w("<tr><th>phase</th><th>from</th><th>to</th><th>amp (peak)</th><th>goodput</th><th>offered</th><th>effective success</th><th>recovery</th></tr>\n")
	for _, j := range spanPhases(rep, d) {
		ph := d.Phases[j]
		base := fmt.Sprintf("/dependencies/%d/phases/%d/", i, j)
		p.w("<tr class=\"ph-%s\"><td><i class=\"sw ph-%s\"></i>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			ph.Kind, ph.Kind, safetext.HTML(phaseName(ph)), clock(ph.Start), clock(ph.End),
			p.n(base+"peak_amplification", ph.PeakAmplification, fmtAmp), p.n(base+"goodput_per_s", ph.GoodputPerS, fmtRate),
			p.n(base+"originals_per_s", ph.OriginalsPerS, fmtRate), p.n(base+"effective_success", ph.EffectiveSuccess, fmtPct),
			p.n(base+"recovery_s", ph.RecoveryS, fmtSec))
	}
	from, to := spanEdges(rep)
	base := fmt.Sprintf("/dependencies/%d/", i)
	p.w("<tr class=\"total\"><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td></td></tr>\n",
		safetext.HTML(spanKindName(rep)), clock(unixTime(from)), clock(unixTime(to)),
		p.n(base+"amplification", d.Amplification, fmtAmp), p.n(base+"successes_per_s", d.SuccessesPerS, fmtRate),
		p.n(base+"originals_per_s", d.OriginalsPerS, fmtRate), p.n(base+"effective_success", d.EffectiveSuccess, fmtPct))
	p.w("</table>\n")
}

func (p *page) kpi(label, value, note string) {
	p.w("<div class=\"kpi\"><div class=\"k\">%s</div><div class=\"v\">%s</div><div class=\"note\">%s</div></div>\n", label, value, note)
}

// metric is one series of a timeline chart: its legend name and how to
// read it from a bin, with its JSON key under the bin.
type metric struct {
	name, key string
	get       func(s *model.Signals) model.Value
	dashed    bool
	class     string // colour class; "" is s1, s2, ... in order
}

func quantile(class, q string) func(s *model.Signals) model.Value {
	return func(s *model.Signals) model.Value {
		qs, ok := s.Latency.Get(class)
		if !ok {
			return model.Value{}
		}
		switch q {
		case "p50":
			return qs.P50
		case "p90":
			return qs.P90
		}
		return qs.P99
	}
}

// panels are the charts of every hop, in the order of the story.
var panels = []struct {
	id, title string
	unit      func(float64) string
	metrics   []metric
}{
	{"load", "Originals vs attempts", fmtRate, []metric{
		{"originals/s", "originals_per_s", func(s *model.Signals) model.Value { return s.OriginalsPerS }, false, ""},
		{"attempts/s", "attempts_per_s", func(s *model.Signals) model.Value { return s.AttemptsPerS }, false, ""},
	}},
	{"outcomes", "Outcomes", fmtRate, []metric{
		{"successes/s", "successes_per_s", func(s *model.Signals) model.Value { return s.SuccessesPerS }, false, "s7"},
		{"rescued/s", "rescued_per_s", func(s *model.Signals) model.Value { return s.RescuedPerS }, false, "s6"},
		{"budget denied/s", "budget_denied_per_s", func(s *model.Signals) model.Value { return s.BudgetDeniedPerS }, false, "s3"},
		{"admission rejected/s", "admission_rejected_per_s", func(s *model.Signals) model.Value { return s.AdmissionRejectedPerS }, false, "s4"},
		{"provider errors/s", "provider_errors_per_s", func(s *model.Signals) model.Value { return s.ProviderErrorsPerS }, false, "s2"},
		{"timeouts/s", "timeouts_per_s", func(s *model.Signals) model.Value { return s.TimeoutsPerS }, false, "s5"},
	}},
	{"capacity", "Active calls vs limit", fmtCount, []metric{
		{"active", "active_calls", func(s *model.Signals) model.Value { return s.ActiveCalls }, false, ""},
		{"limit", "concurrency_limit", func(s *model.Signals) model.Value { return s.ConcurrencyLimit }, true, ""},
		{"queued", "queue_depth", func(s *model.Signals) model.Value { return s.QueueDepth }, false, ""},
	}},
	{"wait", "Pool / queue wait", fmtSec, []metric{
		{"pool wait p50", "pool_wait_p50_s", func(s *model.Signals) model.Value { return s.PoolWaitP50 }, false, ""},
		{"pool wait p99", "pool_wait_p99_s", func(s *model.Signals) model.Value { return s.PoolWaitP99 }, false, ""},
		{"pool wait mean", "pool_wait_mean_s", func(s *model.Signals) model.Value { return s.PoolWaitMean }, true, ""},
	}},
	{"latency", "Latency, split by result", fmtSec, []metric{
		{"success p50", "latency/success/p50", quantile(model.ClassSuccess, "p50"), false, ""},
		{"success p99", "latency/success/p99", quantile(model.ClassSuccess, "p99"), false, ""},
		{"fast failure p99", "latency/fast_failure/p99", quantile(model.ClassFastFailure, "p99"), false, ""},
		{"failure p99", "latency/failure/p99", quantile(model.ClassFailure, "p99"), false, ""},
		{"mixed p99", "mixed_latency/p99", func(s *model.Signals) model.Value { return s.MixedLatency.P99 }, true, ""},
	}},
}

// rowFindings are the findings about row i with a data time span: its
// own, and the chain findings of chains it is a hop of.
func (p *page) rowFindings(i int) []band {
	d := p.rep.Dependencies[i]
	var out []band
	for k, f := range p.rep.Findings {
		if f.Start.IsZero() || f.End.IsZero() {
			continue
		}
		mine := f.Target == d.Target && f.Dependency == d.Dependency
		if !mine && f.Chain != "" {
			for _, c := range p.rep.Chains {
				if c.Name != f.Chain {
					continue
				}
				for _, hop := range c.Hops {
					mine = mine || (hop.Target == d.Target && hop.Dependency == d.Dependency)
				}
			}
		}
		if mine {
			out = append(out, band{
				from: float64(f.Start.UnixMilli()) / 1000, to: float64(f.End.UnixMilli()) / 1000,
				class: "fd-" + f.Severity.String(), label: fmt.Sprintf("f%d", k),
				title: safetext.TerminalN(fmt.Sprintf("%s (%s) %s–%s", f.Code, f.Severity, clock(f.Start), clock(f.End)), 0),
			})
		}
	}
	return out
}

func (p *page) timelines() {
	rep := p.rep
	if len(rep.Dependencies) == 0 {
		return
	}
	p.w("<section id=\"timelines\">\n<h2>Timelines</h2>\n<p class=\"legend\">Bins of %s on one time axis; shading: <i class=\"sw ph-degraded\"></i>degraded <i class=\"sw ph-overloaded\"></i>overloaded <i class=\"sw ph-recovering\"></i>recovering <i class=\"sw ph-no_data\"></i>no data; ticks along the top are findings (they link to them). A gap in a line is a value the source did not give, not zero.</p>\n",
		safetext.HTML(fmtSec(rep.BinSeconds)))
	for _, i := range rowOrder(rep) {
		d := rep.Dependencies[i]
		var phases []band
		for _, ph := range d.Phases {
			if ph.Kind == analysis.PhaseHealthy {
				continue
			}
			phases = append(phases, band{from: float64(ph.Start.UnixMilli()) / 1000, to: float64(ph.End.UnixMilli()) / 1000,
				class: "ph-" + string(ph.Kind), title: phaseName(ph) + " " + clock(ph.Start) + "–" + clock(ph.End)})
		}
		marks := p.rowFindings(i)
		base := fmt.Sprintf("/dependencies/%d/", i)
		p.w("<article class=\"row\" id=\"row%d\">\n<h3><bdi>%s</bdi> → <bdi>%s</bdi></h3>\n", i, safetext.HTML(d.Target), safetext.HTML(d.Dependency))
		lost := rowLost(rep, d)
		p.w("<p class=\"stats\">over %s: amplification %s, effective success %s, originals %s, successes %s, attempts %s, max attempts %s; <span class=\"n\" data-derived=\"row_lost\" data-v=\"%s\">%s</span> originals did not succeed</p>\n",
			safetext.HTML(spanWords(rep)),
			p.n(base+"amplification", d.Amplification, fmtAmp), p.n(base+"effective_success", d.EffectiveSuccess, fmtPct),
			p.n(base+"originals_per_s", d.OriginalsPerS, fmtRate), p.n(base+"successes_per_s", d.SuccessesPerS, fmtRate), p.n(base+"attempts_per_s", d.AttemptsPerS, fmtRate),
			p.n(base+"policy_max_attempts", d.MaxAttempts, fmtSig), jsonNum(lost), fmtVal(lost, fmtWhole))
		p.w("<div class=\"charts\">\n")
		tl := d.TimelineBins() // held compactly by a report written as JSON too
		for _, pn := range panels {
			c := chart{id: fmt.Sprintf("c%d-%s", i, pn.id), title: pn.title, unit: pn.unit, t0: rep.StartUnix, t1: rep.EndUnix, bands: phases, marks: marks}
			for k, m := range pn.metrics {
				s := series{name: m.name, class: fmt.Sprintf("s%d", k+1), dashed: m.dashed}
				if m.class != "" {
					s.class = m.class
				}
				for j := range tl {
					bin := &tl[j]
					v := m.get(&bin.Signals)
					s.pts = append(s.pts, point{t: (bin.StartUnix + bin.EndUnix) / 2, v: v.V(), ok: v.OK(), path: fmt.Sprintf("%stimeline/%d/%s", base, j, m.key)})
				}
				c.series = append(c.series, s)
			}
			p.w("<figure class=\"panel\"><figcaption>%s</figcaption>\n", pn.title)
			if !c.hasData() {
				p.w("<p class=\"none\">- (not exported by this source)</p></figure>\n")
				continue
			}
			c.write(p.b, func(t float64) string { return clock(unixTime(t)) })
			p.w("<ul class=\"keys\">")
			for _, s := range c.series {
				present, unlimited := false, false
				for _, pt := range s.pts {
					present = present || (pt.ok && !math.IsInf(pt.v, 0) && !math.IsNaN(pt.v))
					unlimited = unlimited || (pt.ok && math.IsInf(pt.v, 1))
				}
				switch {
				case present:
					p.w("<li><i class=\"sw ln %s\"></i>%s</li>", s.class, safetext.HTML(s.name))
				case unlimited: // +Inf is a setting (no limit), not a missing value
					p.w("<li class=\"absent\"><i class=\"sw ln %s\"></i>%s: unlimited</li>", s.class, safetext.HTML(s.name))
				default:
					p.w("<li class=\"absent\"><i class=\"sw ln %s\"></i>%s: -</li>", s.class, safetext.HTML(s.name))
				}
			}
			p.w("</ul></figure>\n")
		}
		p.w("</div>\n</article>\n")
	}
	p.w("</section>\n")
}

// Chain diagram geometry (viewBox units).
const (
	nodeW   = 120
	nodeH   = 36
	nodeGap = 70
)

func (p *page) chains() {
	rep := p.rep
	if len(rep.Chains) == 0 {
		return
	}
	p.w("<section id=\"chains\">\n<h2>Chains</h2>\n")
	for ci, c := range rep.Chains {
		base := fmt.Sprintf("/chains/%d/", ci)
		p.w("<article class=\"chain\"><h3><bdi>%s</bdi></h3>\n", safetext.HTML(c.Name))
		names := []string{}
		for _, h := range c.Hops {
			names = append(names, h.Target)
		}
		if len(c.Hops) > 0 {
			names = append(names, c.Hops[len(c.Hops)-1].Dependency)
		}
		width := len(names)*nodeW + (len(names)-1)*nodeGap + 8
		p.w("<div class=\"scroll\"><svg class=\"chaindia\" viewBox=\"0 0 %d 96\" style=\"max-width:%dpx\" role=\"img\" aria-label=\"chain %s\">", width, width, safetext.HTML(c.Name))
		for k, name := range names {
			x := 4 + k*(nodeW+nodeGap)
			label := safetext.TerminalN(name, 0)
			if len([]rune(label)) > 16 {
				label = string([]rune(label)[:15]) + "…"
			}
			p.w("<rect class=\"node\" x=\"%d\" y=\"40\" width=\"%d\" height=\"%d\" rx=\"6\"><title>%s</title></rect>", x, nodeW, nodeH, safetext.HTML(name))
			p.w("<text class=\"nodet\" x=\"%d\" y=\"63\" text-anchor=\"middle\">%s</text>", x+nodeW/2, safetext.HTML(label))
			if k < len(c.Hops) {
				h := c.Hops[k]
				hb := fmt.Sprintf("%shops/%d/", base, k)
				ax := x + nodeW
				p.w("<line class=\"arrow\" x1=\"%d\" y1=\"58\" x2=\"%d\" y2=\"58\"/><path class=\"head\" d=\"M%d 53 L%d 58 L%d 63 Z\"/>", ax+2, ax+nodeGap-4, ax+nodeGap-10, ax+nodeGap-2, ax+nodeGap-10)
				p.w("<text class=\"amp\" x=\"%d\" y=\"30\" text-anchor=\"middle\" data-json=\"%samplification\" data-v=\"%s\">%s</text>", ax+nodeGap/2, safetext.HTMLAttr(hb), jsonNum(h.Amplification), safetext.HTML(fmtVal(h.Amplification, fmtAmp)))
				p.w("<text class=\"tick\" x=\"%d\" y=\"88\" text-anchor=\"middle\" data-json=\"%smax_attempts\" data-v=\"%s\">max %s</text>", ax+nodeGap/2, safetext.HTMLAttr(hb), jsonNum(h.MaxAttempts), safetext.HTML(fmtVal(h.MaxAttempts, fmtSig)))
			}
		}
		p.w("</svg></div>\n")
		p.w("<p class=\"stats\">end-to-end %s (provider calls per admitted user operation) · product of hops %s · worst case %s (every layer exhausting its attempts)</p>\n",
			p.n(base+"end_to_end_amplification", c.EndToEndAmplification, fmtAmp), p.n(base+"product_amplification", c.ProductAmplification, fmtAmp),
			p.n(base+"worst_case_amplification", c.WorstCaseAmplification, fmtAmp))
		for gi, g := range c.Gaps {
			gb := fmt.Sprintf("%sgaps/%d/", base, gi)
			p.w("<p class=\"gap\"><code>%s</code> <bdi>%s</bdi> → <bdi>%s</bdi>: sent %s, arrived %s (factor %s)</p>\n", safetext.HTML(g.Code), safetext.HTML(g.From.Target), safetext.HTML(g.To),
				p.n(gb+"sent_per_s", model.Some(g.SentPerS), fmtRate), p.n(gb+"arrived_per_s", model.Some(g.ArrivedPerS), fmtRate), p.n(gb+"factor", g.Factor, fmtSig))
		}
		p.w("</article>\n")
	}
	p.w("</section>\n")
}

func (p *page) findings() {
	rep := p.rep
	p.w("<section id=\"findings\">\n<h2>Findings</h2>\n")
	if len(rep.Findings) == 0 {
		p.w("<p class=\"none\">None.</p>\n</section>\n")
		return
	}
	for i, f := range rep.Findings {
		p.w("<article class=\"finding sev-%s\" id=\"f%d\">\n<h3><span class=\"sev\">%s</span> <code>%s</code> ", f.Severity, i, f.Severity, safetext.HTML(f.Code))
		if f.Chain != "" {
			p.w("chain <bdi>%s</bdi>", safetext.HTML(f.Chain))
		} else {
			p.w("<bdi>%s</bdi> → <bdi>%s</bdi>", safetext.HTML(f.Target), safetext.HTML(f.Dependency))
		}
		p.w("</h3>\n<p class=\"msg\">%s</p>\n", safetext.HTML(f.Message))
		if !f.Start.IsZero() {
			p.w("<p class=\"when\">data from %s to %s UTC</p>\n", clock(f.Start), clock(f.End))
		}
		if len(f.Evidence) > 0 {
			p.w("<table class=\"ev\">")
			for _, e := range f.Evidence {
				p.w("<tr><th>%s</th><td>%s</td></tr>", safetext.HTML(e.Name), p.n(fmt.Sprintf("/findings/%d/evidence/%s", i, pointerToken(e.Name)), model.Some(e.Value), fmtSig))
			}
			p.w("</table>\n")
		}
		if a := analysis.AdviceFor(f.Code).Long; a != "" {
			p.w("<p class=\"advice\"><b>What to do.</b> %s <span class=\"ref\">(docs/findings.md, %s)</span></p>\n", safetext.HTML(a), safetext.HTML(f.Code))
		}
		p.w("</article>\n")
	}
	p.w("</section>\n")
}

// fates is how each row's originals ended over the span: one column per
// row in the story's order, one line per fate; "-" where the source
// cannot tell (absent is never 0).
func (p *page) fates() {
	rep := p.rep
	if len(rep.Dependencies) == 0 {
		return
	}
	order := rowOrder(rep)
	p.w("<section id=\"fates\">\n<h2>Fates</h2>\n<p class=\"legend\">How each hop's originals ended over %s, per second: at the first try, after retries, with every attempt used, or not retried and why. A dash is a fate the source does not tell.</p>\n", safetext.HTML(spanWords(rep)))
	p.w("<table class=\"fates fit\" id=\"fate-table\"><tr><th>fate</th>")
	for _, i := range order {
		d := rep.Dependencies[i]
		p.w("<th><bdi>%s</bdi> → <bdi>%s</bdi></th>", safetext.HTML(d.Target), safetext.HTML(d.Dependency))
	}
	p.w("</tr>\n")
	for _, f := range fates {
		p.w("<tr><th>%s</th>", f.name)
		for _, i := range order {
			p.w("<td>%s</td>", p.n(fmt.Sprintf("/dependencies/%d/fates/%s", i, f.key), f.get(&rep.Dependencies[i].Fates), fmtRate))
		}
		p.w("</tr>\n")
	}
	p.w("</table>\n</section>\n")
}

func (p *page) provider() {
	rep := p.rep
	var provs []int
	for i, c := range rep.Chains {
		if c.Provider != nil {
			provs = append(provs, i)
		}
	}
	if len(rep.Services) == 0 && len(provs) == 0 {
		return
	}
	p.w("<section id=\"provider\">\n<h2>The provider's side</h2>\n<p class=\"legend\">Over %s. The peak is the highest of the span's %s bins (each read at its last scrape); the rest are rates over the span and gauges at its end.</p>\n",
		safetext.HTML(spanWords(rep)), safetext.HTML(fmtSec(rep.BinSeconds)))
	for _, ci := range provs {
		pr := rep.Chains[ci].Provider
		b := fmt.Sprintf("/chains/%d/provider/", ci)
		p.w("<p class=\"stats\"><bdi>%s</bdi> (end of chain <bdi>%s</bdi>):%s callers sent %s, it received %s; the last hop gave up on %s, the provider still finished %s after cancel; at the span's end queue %s (oldest %s, wait p99 %s), in flight %s of %s slots</p>\n",
			safetext.HTML(pr.Target), safetext.HTML(rep.Chains[ci].Name), p.peakWords(pr.Target), p.n(b+"sent_per_s", pr.SentPerS, fmtRate), p.n(b+"arrived_per_s", pr.ArrivedPerS, fmtRate),
			p.n(b+"caller_timeouts_per_s", pr.CallerTimeoutsPerS, fmtRate), p.n(b+"work_after_cancel_per_s", pr.WorkAfterCancelPerS, fmtRate),
			p.n(b+"queue_depth", pr.QueueDepth, fmtCount), p.n(b+"queue_oldest_age_s", pr.QueueOldestAge, fmtSec), p.n(b+"queue_wait_p99_s", pr.QueueWaitP99, fmtSec),
			p.n(b+"in_flight", pr.InFlight, fmtCount), p.n(b+"slots", pr.Slots, fmtCount))
	}
	if len(rep.Services) == 0 {
		p.w("</section>\n")
		return
	}
	cols := []struct {
		head, key string
		get       func(s *model.ServiceSignals) model.Value
		f         func(float64) string
	}{
		{"received", "received_per_s", func(s *model.ServiceSignals) model.Value { return s.ReceivedPerS }, fmtRate},
		{"in flight", "in_flight", func(s *model.ServiceSignals) model.Value { return s.InFlight }, fmtCount},
		{"slots", "slots", func(s *model.ServiceSignals) model.Value { return s.Slots }, fmtCount},
		{"queue", "queue_depth", func(s *model.ServiceSignals) model.Value { return s.QueueDepth }, fmtCount},
		{"queue limit", "queue_limit", func(s *model.ServiceSignals) model.Value { return s.QueueLimit }, fmtCount},
		{"oldest queued", "queue_oldest_age_s", func(s *model.ServiceSignals) model.Value { return s.QueueOldestAge }, fmtSec},
		{"queue wait p99", "queue_wait_p99_s", func(s *model.ServiceSignals) model.Value { return s.QueueWaitP99 }, fmtSec},
		{"service p50", "service_time_p50_s", func(s *model.ServiceSignals) model.Value { return s.ServiceTimeP50 }, fmtSec},
		{"service p99", "service_time_p99_s", func(s *model.ServiceSignals) model.Value { return s.ServiceTimeP99 }, fmtSec},
		{"5xx", "responses_5xx_per_s", func(s *model.ServiceSignals) model.Value { return s.Responses5xxPerS }, fmtRate},
		{"after cancel", "work_after_cancel_per_s", func(s *model.ServiceSignals) model.Value { return s.WorkAfterCancelPerS }, fmtRate},
		{"cancelled", "cancelled_per_s", func(s *model.ServiceSignals) model.Value { return s.CancelledPerS }, fmtRate},
	}
	// One column per service and one line per signal: a dozen signals
	// side by side would not fit a page.
	p.w("<p class=\"legend\">Each service over the span; a queue limit of 0 is unbounded.</p>\n<table class=\"svc fit\" id=\"services\"><tr><th>signal</th>")
	for i := range rep.Services {
		p.w("<th><bdi>%s</bdi></th>", safetext.HTML(rep.Services[i].Target))
	}
	p.w("</tr>\n")
	for _, pc := range []struct {
		head, key string
		get       func(pk *analysis.ServicePeak) model.Value
		f         func(float64) string
	}{
		{"peak queue", "queue_depth", func(pk *analysis.ServicePeak) model.Value { return pk.QueueDepth }, fmtCount},
		{"peak oldest queued", "queue_oldest_age_s", func(pk *analysis.ServicePeak) model.Value { return pk.QueueOldestAge }, fmtSec},
	} {
		p.w("<tr class=\"peak\"><th>%s</th>", pc.head)
		for i := range rep.Services {
			k, pk := servicePeak(rep, rep.Services[i].Target)
			if pk == nil {
				p.w("<td>%s</td>", absent)
				continue
			}
			p.w("<td>%s</td>", p.n(fmt.Sprintf("/service_peaks/%d/%s", k, pc.key), pc.get(pk), pc.f))
		}
		p.w("</tr>\n")
	}
	for _, c := range cols {
		p.w("<tr><th>%s</th>", c.head)
		for i := range rep.Services {
			p.w("<td>%s</td>", p.n(fmt.Sprintf("/services/%d/%s", i, c.key), c.get(&rep.Services[i]), c.f))
		}
		p.w("</tr>\n")
	}
	p.w("</table>\n</section>\n")
}

// peakWords is target's storm peak for the provider's line: " peak queue
// N (the bin from HH:MM:SS), oldest queued S;", "" when it has no
// ServicePeak.
func (p *page) peakWords(target string) string {
	k, pk := servicePeak(p.rep, target)
	if pk == nil {
		return ""
	}
	b := fmt.Sprintf("/service_peaks/%d/", k)
	return fmt.Sprintf(" <b class=\"peak\">peak queue %s (the %s bin from %s), oldest queued %s</b>;", p.n(b+"queue_depth", pk.QueueDepth, fmtCount),
		safetext.HTML(fmtSec(p.rep.BinSeconds)), p.n(b+"queue_depth_unix", pk.QueueDepthUnix, func(s float64) string { return clock(unixTime(s)) }), p.n(b+"queue_oldest_age_s", pk.QueueOldestAge, fmtSec))
}

func (p *page) footer(meta Meta) {
	rep := p.rep
	p.w("<footer>\n<dl>\n")
	p.w("<dt>Source</dt><dd>%s</dd>\n", safetext.HTML(meta.Source))
	if rep.EndUnix > 0 {
		p.w("<dt>Data</dt><dd>%s to %s UTC; rows over %s, timelines in %s bins</dd>\n",
			unixTime(rep.StartUnix).Format(time.RFC3339), unixTime(rep.EndUnix).Format(time.RFC3339), safetext.HTML(spanWords(rep)), safetext.HTML(fmtSec(rep.BinSeconds)))
	}
	p.w("<dt>Targets</dt><dd>")
	for i, t := range rep.Targets {
		if i > 0 {
			p.w(", ")
		}
		state := "up"
		if !t.Up {
			state = "down"
		}
		if t.Dialect == "" { // a recording does not say which dialect read it
			p.w("<bdi>%s</bdi> (%s)", safetext.HTML(t.Name), state)
		} else {
			p.w("<bdi>%s</bdi> (%s, dialect %s)", safetext.HTML(t.Name), state, safetext.HTML(t.Dialect))
		}
	}
	p.w("</dd>\n<dt>Dialects</dt><dd>%s</dd>\n", safetext.HTML(strings.Join(targetDialects(rep), ", ")))
	p.w("<dt>retrytop</dt><dd>%s</dd>\n", safetext.HTML(meta.Version))
	p.w("<dt>Reproduce</dt><dd><code class=\"cmd\">%s</code></dd>\n", safetext.HTML(meta.Command))
	p.w("</dl>\n</footer>\n")
}

// targetDialects are the dialects the targets were read in, sorted, "-"
// when none was detected.
func targetDialects(rep *analysis.Report) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range rep.Targets {
		if t.Dialect != "" && !seen[t.Dialect] {
			seen[t.Dialect] = true
			out = append(out, t.Dialect)
		}
	}
	if len(out) == 0 {
		return []string{"none (the metric contract as is)"}
	}
	sort.Strings(out)
	return out
}
