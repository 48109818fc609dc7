package ui

import (
	"time"

	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// serviceDetailModel shows one service target: its queue, responses by
// class, capacity and cancellations per bin, its service time, and every
// signal. The bins (analysis.ServiceTimeline) are computed by the build
// Cmd only while this view is open (frameRequest.Service).
type serviceDetailModel struct {
	scroller
	target string
}

func (d *serviceDetailModel) open(target string) {
	if target != d.target {
		d.scroll = 0
	}
	d.target = target
	d.cacheKey = [3]uint64{}
}

func (d *serviceDetailModel) view(dst []line, f *model.Frame, dv *derived, seq uint64, width, height int) []line {
	if d.stale(seq, width) {
		d.cache = d.render(d.cache[:0], f, dv, width)
	}
	return d.show(dst, height)
}

func (d *serviceDetailModel) render(dst []line, f *model.Frame, dv *derived, width int) []line {
	p := &d.pane
	l, st := &p.l, &d.c.st
	var s *model.ServiceSignals
	for i := range dv.services {
		if dv.services[i].Target == d.target {
			s = &dv.services[i]
			break
		}
	}
	l.text("SERVICE", st.title)
	l.pad(2)
	l.text(safetext.Terminal(d.target), st.bold)
	if s != nil && s.Source != "" {
		l.plain("  source ")
		l.text(safetext.Terminal(s.Source), st.text)
	}
	dst = p.endTitle(dst, f, d.target, width)
	if s == nil {
		l.text("this service is not in the current data (esc: back to the overview)", st.dim)
		return append(dst, l.line())
	}
	var tl []model.ServiceSignals
	if dv.svcTarget == d.target {
		tl = dv.svcTimeline
	}
	var bin time.Duration
	var end time.Time
	if f != nil {
		bin, end = f.Bin, f.Time
	}

	if width >= wideWidth {
		leftW := (width - 3) / 2
		rightW := width - leftW - 3
		left := p.queueSection(nil, s, tl, end, bin, leftW)
		right := p.responseSection(nil, s, tl, rightW)
		right = append(right, line{})
		right = p.svcCapacitySection(right, s, tl, rightW)
		right = append(right, line{})
		right = p.cancelSection(right, s, tl, rightW)
		dst = append(dst, joinColumns([][]line{left, right}, []int{leftW, 0}, "   ")...)
	} else {
		dst = p.queueSection(dst, s, tl, end, bin, width)
		dst = append(dst, line{})
		dst = p.responseSection(dst, s, tl, width)
		dst = append(dst, line{})
		dst = p.svcCapacitySection(dst, s, tl, width)
		dst = append(dst, line{})
		dst = p.cancelSection(dst, s, tl, width)
	}
	dst = append(dst, line{})
	dst = p.serviceTimeSection(dst, s, tl, width)
	dst = append(dst, line{})
	return p.serviceSignalsSection(dst, s, "SIGNALS", width)
}

// svcChartH is the height of each queue chart.
const svcChartH = 4

// queueSection: queue depth and the oldest waiting request's age as
// column charts per bin, the queue wait p99 as a sparkline.
func (p *painter) queueSection(dst []line, s *model.ServiceSignals, tl []model.ServiceSignals, end time.Time, bin time.Duration, width int) []line {
	l, st, g := &p.l, &p.c.st, p.c.g
	tl, nb, cols := fitTimeline(tl, width-gutterW-valueW)
	dst = p.title(dst, "QUEUE", p.binNote(bin, nb), width)

	l.text(g.fill[g.sub], st.originals)
	l.plain(" depth ")
	l.num = appendQueue(l.num[:0], s.QueueDepth, s.QueueLimit, g)
	l.bytes(l.num, limitSpan(st, s.QueueDepth, s.QueueLimit))
	l.plain("  oldest ")
	l.num = appendSeconds(l.num[:0], s.QueueOldestAge, g.micro)
	l.bytes(l.num, st.bold)
	l.plain("  wait p99 ")
	l.num = appendSeconds(l.num[:0], s.QueueWaitP99, g.micro)
	l.bytes(l.num, st.bold)
	dst = append(dst, trimSpaceRight(l.line()))
	if len(tl) == 0 {
		l.text("no timeline yet", st.dim)
		return append(dst, l.line())
	}

	p.a = seriesOf(p.a, tl, func(s *model.ServiceSignals) model.Value { return s.QueueDepth })
	dst = p.columnChart(dst, "depth", p.a, cols, gaugeScale)
	p.a = seriesOf(p.a, tl, func(s *model.ServiceSignals) model.Value { return s.QueueOldestAge })
	secs := func(d []byte, v float64) []byte { return appendSeconds(d, model.Some(v), g.micro) }
	dst = p.columnChart(dst, "oldest age", p.a, cols, secs)
	p.a = seriesOf(p.a, tl, func(s *model.ServiceSignals) model.Value { return s.QueueWaitP99 })
	l.num = appendSeconds(l.num[:0], s.QueueWaitP99, g.micro)
	dst = p.sparkRow(dst, "", st.warn, "wait p99", p.a, maxValue(p.a), len(tl), cols, l.num, st.bold)
	return p.timeAxis(dst, tl[0].StartMs, end, bin, nb, len(tl)*cols)
}

// columnChart is a labelled column chart of one series per bin; a series
// with no value at all is one line saying so instead of a chart of
// nothing over a scale of 0.
func (p *painter) columnChart(dst []line, name string, vals []model.Value, cols int, scale func([]byte, float64) []byte) []line {
	l, st, g := &p.l, &p.c.st, p.c.g
	p.gutter("", span{}, name)
	if !anyPresent(vals) {
		l.text(absentText+"  no value in any bin", st.dim)
		return append(dst, l.line())
	}
	dst = append(dst, trimSpaceRight(l.line()))
	return twoSeries(dst, l, &p.sc, vals, nil, svcChartH, cols, gutterW, scale, g, st)
}

// gaugeScale is twoSeries' scale for counts: 12, 4.50.
func gaugeScale(dst []byte, v float64) []byte { return appendGauge(dst, model.Some(v)) }

// respNames label the response rows; without Retry-After information the
// 503 row holds every 503.
var respNames = [numResp]string{"2xx", "429", "503 w/ RA", "503 w/o RA", "other 5xx"}

// respValue is a response class's rate in s. raKnown: the service says
// which 503s carried Retry-After, so the plain 503 row is the rest.
func respValue(c respClass, s *model.ServiceSignals, raKnown bool) model.Value {
	switch c {
	case resp2xx:
		return s.Responses2xxPerS
	case resp429:
		return s.Responses429PerS
	case resp503RA:
		return s.Responses503RetryAfterPerS
	case resp503:
		if !raKnown {
			return s.Responses503PerS
		}
		if !s.Responses503PerS.OK() || !s.Responses503RetryAfterPerS.OK() {
			return model.Absent
		}
		return model.Some(max(s.Responses503PerS.V()-s.Responses503RetryAfterPerS.V(), 0))
	case resp5xx:
		return other5xx(s)
	}
	return model.Absent
}

// responseSection: one row per response class at a fixed position, each
// with its own glyph and scale, and the window's rate on the right.
func (p *painter) responseSection(dst []line, s *model.ServiceSignals, tl []model.ServiceSignals, width int) []line {
	st, g := &p.c.st, p.c.g
	l := &p.l
	tl, _, cols := fitTimeline(tl, width-gutterW-valueW)
	dst = p.title(dst, "RESPONSES", "per bin, each to its own peak; RA: Retry-After", width)
	raKnown := s.Responses503RetryAfterPerS.OK()
	for i := range tl {
		raKnown = raKnown || tl[i].Responses503RetryAfterPerS.OK()
	}
	for c := respClass(0); c < numResp; c++ {
		name := respNames[c]
		if c == resp503 && !raKnown {
			name = "503 all"
		}
		sp := st.resp[c]
		p.a = seriesOf(p.a, tl, func(b *model.ServiceSignals) model.Value { return respValue(c, b, raKnown) })
		v := respValue(c, s, raKnown)
		l.num = perSecondValue(l.num[:0], v)
		dst = p.sparkRow(dst, g.resp[c], sp, name, p.a, maxValue(p.a), len(tl), cols, l.num, rateSpan(st, v, sp))
	}
	return dst
}

// svcCapacitySection: requests in flight against the execution slots as
// a gauge with its history.
func (p *painter) svcCapacitySection(dst []line, s *model.ServiceSignals, tl []model.ServiceSignals, width int) []line {
	st := &p.c.st
	tl, _, cols := fitTimeline(tl, width-gutterW-valueW)
	dst = p.title(dst, "CAPACITY", "", width)
	dst = p.gaugeLine(dst, "in flight/slots", s.InFlight, s.Slots, width)
	p.a = seriesOf(p.a, tl, func(s *model.ServiceSignals) model.Value { return s.InFlight })
	p.b = seriesOf(p.b, tl, func(s *model.ServiceSignals) model.Value { return s.Slots })
	if anyPresent(p.a) {
		dst = p.sparkRow(dst, "", st.accent, "  history", p.a, max(maxValue(p.a), maxValue(p.b)), len(tl), cols, nil, span{})
	}
	return dst
}

// cancelSection: work finished after the caller had gone vs requests
// abandoned when it went, on one scale per bin.
func (p *painter) cancelSection(dst []line, s *model.ServiceSignals, tl []model.ServiceSignals, width int) []line {
	st := &p.c.st
	l := &p.l
	tl, _, cols := fitTimeline(tl, width-gutterW-valueW)
	dst = p.title(dst, "CANCELLATION", "work done for gone callers vs work dropped", width)
	p.a = seriesOf(p.a, tl, func(s *model.ServiceSignals) model.Value { return s.WorkAfterCancelPerS })
	p.b = seriesOf(p.b, tl, func(s *model.ServiceSignals) model.Value { return s.CancelledPerS })
	m := max(maxValue(p.a), maxValue(p.b))
	l.num = perSecondValue(l.num[:0], s.WorkAfterCancelPerS)
	dst = p.sparkRow(dst, "", st.warn, "after cancel", p.a, m, len(tl), cols, l.num, rateSpan(st, s.WorkAfterCancelPerS, st.warn))
	l.num = perSecondValue(l.num[:0], s.CancelledPerS)
	return p.sparkRow(dst, "", st.accent, "cancelled", p.b, m, len(tl), cols, l.num, rateSpan(st, s.CancelledPerS, st.text))
}

// serviceTimeSection: p50/p99 of all requests, of successes and of
// errors, and their history.
func (p *painter) serviceTimeSection(dst []line, s *model.ServiceSignals, tl []model.ServiceSignals, width int) []line {
	l, st, g := &p.l, &p.c.st, p.c.g
	tl, _, cols := fitTimeline(tl, width-gutterW-valueW)
	dst = p.title(dst, "SERVICE TIME", "success vs error where the service labels it", width)
	rows := [3]struct {
		name     string
		p50, p99 model.Value
	}{
		{"all", s.ServiceTimeP50, s.ServiceTimeP99},
		{"success", s.SuccessServiceTimeP50, s.SuccessServiceTimeP99},
		{"error", s.ErrorServiceTimeP50, s.ErrorServiceTimeP99},
	}
	for _, r := range rows {
		p.gutter("", span{}, r.name)
		l.plain("p50 ")
		l.num = appendSeconds(l.num[:0], r.p50, g.micro)
		l.cellBytes(l.num, 6, false, st.bold)
		l.plain("  p99 ")
		l.num = appendSeconds(l.num[:0], r.p99, g.micro)
		l.bytes(l.num, st.bold)
		dst = append(dst, trimSpaceRight(l.line()))
	}
	if len(tl) == 0 {
		return dst
	}
	// History only where some bin has a value: rows of gaps say nothing
	// the "-" above does not.
	p.a = seriesOf(p.a, tl, func(s *model.ServiceSignals) model.Value { return s.ServiceTimeP99 })
	p.b = seriesOf(p.b, tl, func(s *model.ServiceSignals) model.Value { return s.ServiceTimeP50 })
	m := max(maxValue(p.a), maxValue(p.b))
	if anyPresent(p.a) || anyPresent(p.b) {
		dst = p.sparkRow(dst, "", st.warn, "  p99 hist", p.a, m, len(tl), cols, nil, span{})
		dst = p.sparkRow(dst, "", st.accent, "  p50 hist", p.b, m, len(tl), cols, nil, span{})
	}
	p.a = seriesOf(p.a, tl, func(s *model.ServiceSignals) model.Value { return s.SuccessServiceTimeP99 })
	p.b = seriesOf(p.b, tl, func(s *model.ServiceSignals) model.Value { return s.ErrorServiceTimeP99 })
	if anyPresent(p.a) || anyPresent(p.b) {
		m = max(maxValue(p.a), maxValue(p.b))
		dst = p.sparkRow(dst, g.classGlyph[0], st.class[0], "ok p99", p.a, m, len(tl), cols, nil, span{})
		dst = p.sparkRow(dst, g.classGlyph[2], st.class[2], "err p99", p.b, m, len(tl), cols, nil, span{})
	}
	return dst
}

func anyPresent(vs []model.Value) bool {
	for _, v := range vs {
		if v.OK() {
			return true
		}
	}
	return false
}
