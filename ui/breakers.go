package ui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// settingHints say, per emitter setting that switched a row's retry data
// off (model.Signals.SettingsOff), what to turn on; analyze's
// EMITTER_DATA_OFF finding says it at length (docs/findings.md).
var settingHints = map[string]string{
	model.SettingIstioProxyStats: "retry stats off: add upstream_rq_retry.* to proxyStatsMatcher.inclusionRegexps",
	model.SettingEnvoyUsedOnly:   "zero stats hidden: scrape /stats/prometheus without usedonly",
	model.SettingTraefikRouters:  "originals unknown: set metrics.prometheus.addRoutersLabels=true",
	model.SettingTraefikServices: "attempts unknown: set metrics.prometheus.addServicesLabels=true",
}

// hasBreakerSignals reports whether a row has anything the BREAKER ·
// QUOTA section shows beyond the budget: a breaker, methods, a mesh edge
// or a setting that hides data. Rows without any skip the section.
func hasBreakerSignals(row *model.Signals, tl []model.Signals) bool {
	return row.UnsafeOriginalsPerS.OK() || row.UnsafeAttemptsPerS.OK() || row.EdgeAmplification.OK() || row.EdgeReceivedPerS.OK() ||
		len(row.SettingsOff) > 0 || hasBreaker(row, tl)
}

// hasBreaker reports whether the row or a bin tells a breaker's state or
// refusals.
func hasBreaker(row *model.Signals, tl []model.Signals) bool {
	if row.BreakerState.OK() || row.BreakerRejectedPerS.OK() {
		return true
	}
	for i := range tl {
		if tl[i].BreakerState.OK() || tl[i].BreakerRejectedPerS.OK() {
			return true
		}
	}
	return false
}

// rowBudget is a row's retry budget over its timeline: the exported
// balance, or the one its target's dialects' model rebuilds; nil when
// neither is known.
func rowBudget(row *model.Signals, tl []model.Signals, f *model.Frame) *analysis.Budget {
	var dialects []string
	for i := range f.Targets {
		if f.Targets[i].Name == row.Target {
			dialects = analysis.TargetDialects(f.Targets[i])
		}
	}
	return analysis.BudgetFor(dialects, *row, tl)
}

// breakerName names a breaker state in a value cell's eight columns:
// closed, half (half-open), open, "-".
func breakerName(v model.Value) string {
	s, ok := v.Get()
	switch {
	case !ok:
		return absentText
	case s >= model.BreakerOpen:
		return "open"
	case s >= model.BreakerHalfOpen:
		return "half"
	}
	return "closed"
}

// breakerGlyph is a bin's cell in the breaker strip: closed a dim dot,
// half-open a shaded cell, open a full one, absent a gap.
func (p *painter) breakerGlyph(v model.Value) (string, span) {
	st, g := &p.c.st, p.c.g
	s, ok := v.Get()
	switch {
	case !ok:
		return g.gap, span{}
	case s >= model.BreakerOpen:
		return g.bar, st.down
	case s >= model.BreakerHalfOpen:
		return g.levels[3], st.warn
	}
	return g.zero, st.dim
}

// breakerSection is the detail view's BREAKER · QUOTA section, after the
// signals, for a row with a breaker, methods, a mesh edge or a setting
// that hides data: the breaker's state per bin as a strip over the
// charts' time axis with the calls it refused, the retry budget (quota)
// left per bin, exported or rebuilt, then the non-idempotent attempts
// against their originals, the edge's derived amplification and the
// settings to turn on. Every absent figure reads "-".
func (p *painter) breakerSection(dst []line, row *model.Signals, tl []model.Signals, f *model.Frame, width int) []line {
	if f == nil || !hasBreakerSignals(row, tl) {
		return dst
	}
	l, st, g := &p.l, &p.c.st, p.c.g
	area := width - gutterW - valueW
	fit, nb, cols := fitTimeline(tl, area)
	half, _ := p.breakerGlyph(model.Some(model.BreakerHalfOpen))
	legend := g.zero + " closed " + half + " half-open " + g.bar + " open"
	if note := p.binNote(f.Bin, nb); note != "" {
		legend += " " + g.dot + " " + note
	}
	dst = append(dst, line{})
	dst = p.title(dst, "BREAKER "+g.dot+" QUOTA", legend, width)

	if !hasBreaker(row, tl) {
		p.gutter("", span{}, "breaker")
		l.text(absentText, st.dim)
		l.pad(2)
		l.text("no breaker state exported", st.dim)
		dst = append(dst, l.line())
		return p.quotaTail(dst, row, tl, f, fit, nb, cols, width)
	}
	p.gutter("", span{}, "breaker")
	for i := range fit {
		glyph, sp := p.breakerGlyph(fit[i].BreakerState)
		for range cols {
			l.glyph(glyph, sp)
		}
	}
	l.padTo(gutterW + len(fit)*cols)
	state := breakerName(row.BreakerState)
	sp := st.text
	if state == absentText {
		sp = st.dim
	} else if row.BreakerState.V() >= model.BreakerHalfOpen {
		sp = st.down
	}
	p.valueCell(append(l.num[:0], state...), sp)
	dst = append(dst, trimSpaceRight(l.line()))

	p.a = seriesOf(p.a, fit, func(s *model.Signals) model.Value { return s.BreakerRejectedPerS })
	l.num = perSecondValue(l.num[:0], row.BreakerRejectedPerS)
	dst = p.sparkRow(dst, "", st.down, "  refused", p.a, maxValue(p.a), len(fit), cols, l.num, rateSpan(st, row.BreakerRejectedPerS, st.down))

	return p.quotaTail(dst, row, tl, f, fit, nb, cols, width)
}

// quotaTail is the section after the breaker: the quota row, the time
// axis under both, and the method, edge and setting lines.
func (p *painter) quotaTail(dst []line, row *model.Signals, tl []model.Signals, f *model.Frame, fit []model.Signals, nb, cols, width int) []line {
	quota := rowBudget(row, tl, f)
	dst = p.quotaRow(dst, quota, width-gutterW-valueW)
	if len(fit) > 0 && (quota != nil || hasBreaker(row, tl)) {
		dst = p.timeAxis(dst, fit[0].StartMs, f.Time, f.Bin, nb, len(fit)*cols)
	}
	dst = p.unsafeLine(dst, row, width)
	dst = p.edgeLine(dst, row, width)
	for _, s := range row.SettingsOff {
		hint, ok := settingHints[s]
		if !ok {
			hint = "hides retry data: turn it on"
		}
		dst = p.settingLines(dst, safetext.Terminal(s), hint, width)
	}
	return dst
}

// settingLines: a setting that hides data and what to turn on, wrapped
// under the gutter so that a narrow screen still says all of it.
func (p *painter) settingLines(dst []line, name, hint string, width int) []line {
	l, st := &p.l, &p.c.st
	p.gutter("", span{}, "setting off")
	l.cell(name, min(textWidth(name), 32), false, st.warn)
	l.plain(": ")
	for text := hint; text != ""; {
		cut := len(text)
		if textWidth(text) > width-l.w {
			cut = wrapAt(text, max(width-l.w, 1))
		}
		l.cell(strings.TrimRight(text[:cut], " "), width-l.w, false, st.text)
		dst = append(dst, trimSpaceRight(l.line()))
		text = strings.TrimLeft(text[cut:], " ")
		if text != "" {
			l.pad(gutterW)
		}
	}
	return dst
}

// quotaRow is the retry budget left per bin (the timeline's own bins,
// fitted to area like the rows above) and at the window's end; "-" when
// the emitter exports none and no model rebuilds one.
func (p *painter) quotaRow(dst []line, b *analysis.Budget, area int) []line {
	l, st := &p.l, &p.c.st
	if b == nil {
		p.gutter("", span{}, "quota left")
		l.text(absentText, st.dim)
		l.pad(2)
		l.text("not exported, no model for the dialect", st.dim)
		return append(dst, l.line())
	}
	name := "quota left"
	if b.Reconstructed {
		name = "quota, rebuilt"
	}
	vals, nb, cols := fitTimeline(b.Timeline, area)
	l.num = appendGauge(l.num[:0], b.Balance)
	return p.sparkRow(dst, "", st.accent, name, vals, max(maxValue(vals), b.Capacity.Or(0)), nb, cols, l.num, rateSpan(st, b.Balance, st.bold))
}

// unsafeLine: attempts of non-idempotent requests (POST, PATCH) against
// their originals, and how many were re-sent; nothing when the emitter
// does not label methods.
func (p *painter) unsafeLine(dst []line, row *model.Signals, width int) []line {
	orig, att := row.UnsafeOriginalsPerS, row.UnsafeAttemptsPerS
	if !orig.OK() && !att.OK() {
		return dst
	}
	l, st := &p.l, &p.c.st
	p.gutter("", span{}, "POST/PATCH")
	l.plain("originals ")
	l.num = perSecondValue(l.num[:0], orig)
	l.bytes(l.num, st.bold)
	l.plain("  attempts ")
	l.num = perSecondValue(l.num[:0], att)
	resent := model.Absent
	if orig.OK() && att.OK() {
		resent = model.Some(max(att.V()-orig.V(), 0))
	}
	sp := st.bold
	if resent.OK() && resent.V() > 0 {
		sp = st.warn
	}
	l.bytes(l.num, sp)
	l.plain("  re-sent ")
	l.num = perSecondValue(l.num[:0], resent)
	l.bytes(l.num, sp)
	return append(dst, p.cut(l.line(), width))
}

// edgeLine: what the dependency received from this row's workload and the
// edge's amplification, derived from both ends of a mesh edge.
func (p *painter) edgeLine(dst []line, row *model.Signals, width int) []line {
	if !row.EdgeAmplification.OK() && !row.EdgeReceivedPerS.OK() {
		return dst
	}
	l, st := &p.l, &p.c.st
	p.gutter("", span{}, "mesh edge")
	l.plain("received ")
	l.num = perSecondValue(l.num[:0], row.EdgeReceivedPerS)
	l.bytes(l.num, st.bold)
	l.plain("  amplification ")
	l.num = appendAmp(l.num[:0], row.EdgeAmplification)
	l.bytes(l.num, ampSpan(st, row.EdgeAmplification))
	l.pad(1)
	l.text("derived", st.dim)
	l.text(" (source vs destination requests)", st.dim)
	return append(dst, p.cut(l.line(), width))
}

// cut shortens a line to width.
func (p *painter) cut(ln line, width int) line {
	if ln.w <= width {
		return ln
	}
	return line{s: ansi.Truncate(ln.s, width, "…"), w: width}
}
