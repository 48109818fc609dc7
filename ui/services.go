package ui

import (
	"strconv"
	"strings"

	"github.com/retrytop/retrytop/internal/celltext"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// The service side: the overview's SERVICES section (one row per target
// that exports service families, model.ServiceSignals) and the service
// detail view. Every field of ServiceSignals may be absent and then reads
// "-", never 0.

// svcColID is a numeric column of the SERVICES table, in display order.
type svcColID int

const (
	svcRecv svcColID = iota
	svcInFlight
	svcQueue
	svcQueueAge
	svcQueueWait
	svcP50
	svcP99
	svc2xx
	svc429
	svc503
	svc5xx
	svcAfterCancel
	svcCancelled
	numSvcCols
)

// svcColSpecs: the 503 column carries the Retry-After part in parentheses;
// work after cancel outlives only the narrowest tables because it is the
// waste a retry storm leaves behind.
var svcColSpecs = [numSvcCols]colSpec{
	svcRecv:        {"RECV/s", -1, 6, 0},
	svcInFlight:    {"INFL/SLOT", -1, 9, 1},
	svcQueue:       {"QUEUE/LIM", -1, 9, 2},
	svcQueueAge:    {"Q OLD", -1, 6, 7},
	svcQueueWait:   {"QW p99", -1, 6, 11},
	svcP50:         {"SVC p50", -1, 7, 12},
	svcP99:         {"SVC p99", -1, 7, 5},
	svc2xx:         {"2xx/s", int(resp2xx), 6, 4},
	svc429:         {"429/s", int(resp429), 6, 9},
	svc503:         {"503/s(RA)", int(resp503), 11, 3},
	svc5xx:         {"5xx/s", int(resp5xx), 6, 10},
	svcAfterCancel: {"WAC/s", -1, 6, 6},
	svcCancelled:   {"CNCL/s", -1, 6, 8},
}

// svcLayout is which service columns fit a width and how wide the names are.
type svcLayout struct {
	show        [numSvcCols]bool
	nameW       int
	hidden      int
	width, natN int
}

func computeSvcLayout(width, natN int) svcLayout {
	lay := svcLayout{width: width, natN: natN}
	nat := max(natN, len("SERVICE"))
	lay.nameW = min(nat, minNameW)
	used := markerW + lay.nameW
	used, lay.hidden = fitColumns(svcColSpecs[:], lay.show[:], used, width)
	if grow := min(width-used, min(nat, 32)-lay.nameW); grow > 0 {
		lay.nameW += grow
	}
	return lay
}

func (o *overviewModel) svcNamesOf(s *model.ServiceSignals) rowNames {
	n, ok := o.svcNames[s.Target]
	if !ok {
		n.target = safetext.Terminal(s.Target)
		n.hay = strings.ToLower(n.target + " " + safetext.Terminal(s.Source))
		o.svcNames[s.Target] = n
	}
	return n
}

func (o *overviewModel) matchesSvc(s *model.ServiceSignals) bool {
	if len(o.terms) == 0 {
		return true
	}
	hay := o.svcNamesOf(s).hay
	for _, t := range o.terms {
		if !strings.Contains(hay, t) {
			return false
		}
	}
	return true
}

// svcTable renders the SERVICES title, the column header and the visible
// service rows; with under three lines, the title and how many are hidden.
func (o *overviewModel) svcTable(dst []line, width, height int) []line {
	st, g := &o.c.st, o.c.g
	l := &o.pane.l
	lay := &o.svcLay
	ns := len(o.svcOrder)
	visible := max(height-2, 1)
	if cur := o.cursor - len(o.order); cur >= 0 && cur < ns {
		if cur < o.svcOffset {
			o.svcOffset = cur
		}
		if cur >= o.svcOffset+visible {
			o.svcOffset = cur - visible + 1
		}
	}
	o.svcOffset = min(max(o.svcOffset, 0), max(ns-visible, 0))

	b := l.num[:0]
	if height >= 3 && ns > visible {
		b = append(b, "services "...)
		b = strconv.AppendInt(b, int64(o.svcOffset+1), 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, int64(min(o.svcOffset+visible, ns)), 10)
		b = append(b, " of "...)
		b = strconv.AppendInt(b, int64(ns), 10)
	} else {
		b = appendCountOf(b, ns, "service")
	}
	b = append(b, " · by name"...)
	if v := o.filter.Value(); v != "" && !o.filtering {
		b = append(b, " · filter \""...)
		b = append(b, v...)
		b = append(b, '"')
	}
	if lay.hidden > 0 && height >= 3 {
		b = append(b, " · +"...)
		b = strconv.AppendInt(b, int64(lay.hidden), 10)
		b = append(b, " cols: widen or enter"...)
	}
	l.num = b
	dst = o.pane.title(dst, "SERVICES", string(b), width)
	if height < 2 {
		return dst
	}

	if ns == 0 {
		l.pad(markerW)
		l.text("no service matches the filter (esc clears it)", st.dim)
		return append(dst, l.line())
	}
	if height < 3 {
		// No room for rows: say what is missing rather than nothing.
		l.pad(markerW)
		b := append(l.num[:0], g.arrowDown...)
		b = append(b, ' ')
		b = appendCountOf(b, ns, "service")
		b = append(b, " hidden: enlarge the terminal, or j/k down to them"...)
		l.num = b
		l.cellBytes(b, width-markerW, false, st.dim)
		return append(dst, trimSpaceRight(l.line()))
	}

	l.pad(markerW)
	l.cell("SERVICE", lay.nameW, false, st.bold)
	o.headCells(svcColSpecs[:], lay.show[:], g.resp[:], st.resp[:])
	dst = append(dst, trimSpaceRight(l.line()))
	end := min(o.svcOffset+visible, ns)
	for i := o.svcOffset; i < end; i++ {
		o.hits = append(o.hits, rowHit{y: len(dst), pos: len(o.order) + i})
		dst = append(dst, o.svcRow(&o.services[o.svcOrder[i]], len(o.order)+i == o.cursor))
	}
	return dst
}

// appendCountOf writes "1 service", "3 services".
func appendCountOf(b []byte, n int, noun string) []byte {
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, ' ')
	b = append(b, noun...)
	if n != 1 {
		b = append(b, 's')
	}
	return b
}

// svcRow renders one service row like a caller row.
func (o *overviewModel) svcRow(s *model.ServiceSignals, selected bool) line {
	l := &o.pane.l
	lay := &o.svcLay
	hl := o.pane.rowStart(selected, o.down[s.Target], o.svcNamesOf(s).target, lay.nameW)
	for id := svcColID(0); id < numSvcCols; id++ {
		if !lay.show[id] {
			continue
		}
		l.pad(1)
		var vs span
		l.num, vs = o.svcCellValue(id, s, l.num[:0])
		l.cellBytes(l.num, svcColSpecs[id].width, true, unlessHL(hl, vs))
	}
	return o.pane.rowEnd(hl)
}

// svcCellValue formats one service cell and picks its span.
func (o *overviewModel) svcCellValue(id svcColID, s *model.ServiceSignals, b []byte) ([]byte, span) {
	st, g := &o.c.st, o.c.g
	rate := func(v model.Value, hot span) ([]byte, span) {
		return appendRate(b, v), rateSpan(st, v, hot)
	}
	switch id {
	case svcRecv:
		return rate(s.ReceivedPerS, st.text)
	case svcInFlight:
		return appendActive(b, s.InFlight, s.Slots), limitSpan(st, s.InFlight, s.Slots)
	case svcQueue:
		return appendQueue(b, s.QueueDepth, s.QueueLimit, g), limitSpan(st, s.QueueDepth, s.QueueLimit)
	case svcQueueAge:
		return secondsCell(b, s.QueueOldestAge, g, st)
	case svcQueueWait:
		return secondsCell(b, s.QueueWaitP99, g, st)
	case svcP50:
		return secondsCell(b, s.ServiceTimeP50, g, st)
	case svcP99:
		return secondsCell(b, s.ServiceTimeP99, g, st)
	case svc2xx:
		return rate(s.Responses2xxPerS, st.text)
	case svc429:
		return rate(s.Responses429PerS, st.resp[resp429])
	case svc503:
		return append503(b, s.Responses503PerS, s.Responses503RetryAfterPerS), rateSpan(st, s.Responses503PerS, st.resp[resp503])
	case svc5xx:
		return rate(other5xx(s), st.resp[resp5xx])
	case svcAfterCancel:
		return rate(s.WorkAfterCancelPerS, st.warn)
	case svcCancelled:
		return rate(s.CancelledPerS, st.text)
	}
	return append(b, absentText...), st.dim
}

// appendQueue writes depth/limit: 3/100, 3/∞ (a limit of 0 is unbounded),
// 3/-, -.
func appendQueue(dst []byte, depth, limit model.Value, g *glyphs) []byte {
	if !depth.OK() && !limit.OK() {
		return append(dst, absentText...)
	}
	dst = appendGauge(dst, depth)
	dst = append(dst, '/')
	if limit.OK() && limit.V() == 0 {
		return append(dst, g.inf...)
	}
	return appendGauge(dst, limit)
}

// append503 writes the 503 rate with its Retry-After part: 12.0(8.00),
// 12.0(-) when the service does not say, "-" when 503s are unknown.
func append503(dst []byte, all, retryAfter model.Value) []byte {
	if !all.OK() {
		return append(dst, absentText...)
	}
	dst = appendRate(dst, all)
	dst = append(dst, '(')
	dst = appendRate(dst, retryAfter)
	return append(dst, ')')
}

// serviceSignalsSection lists every field of a service's signals under
// title, in two columns when wide: load and queue left, responses and
// time right.
func (p *painter) serviceSignalsSection(dst []line, s *model.ServiceSignals, title string, width int) []line {
	st, g := &p.c.st, p.c.g
	dst = p.title(dst, title, "window "+windowLabel(p.c.window), width)
	k := &p.kv
	k.reset(g.micro)
	resp := func(c respClass, label string, v model.Value) {
		k.rate(g.resp[c]+" "+label, rateSpan(st, v, st.resp[c]), v)
	}
	k.add("source", st.text, func(d []byte) []byte {
		if s.Source == "" {
			return append(d, absentText...)
		}
		return append(d, safetext.Terminal(s.Source)...)
	})
	k.rate("received", st.bold, s.ReceivedPerS)
	k.gauge("in flight", limitSpan(st, s.InFlight, s.Slots), s.InFlight)
	k.gauge("slots", st.text, s.Slots)
	k.gauge("queue depth", limitSpan(st, s.QueueDepth, s.QueueLimit), s.QueueDepth)
	k.add("queue limit", st.text, func(d []byte) []byte {
		if s.QueueLimit.OK() && s.QueueLimit.V() == 0 {
			return append(d, "unbounded"...)
		}
		return appendGauge(d, s.QueueLimit)
	})
	k.secs("queue oldest age", st.text, s.QueueOldestAge)
	k.secs("queue wait p99", st.text, s.QueueWaitP99)
	k.secs("queue wait mean", st.text, s.QueueWaitMean)
	k.rate("work after cancel", rateSpan(st, s.WorkAfterCancelPerS, st.warn), s.WorkAfterCancelPerS)
	k.rate("cancelled", st.text, s.CancelledPerS)
	split := len(k.items)
	resp(resp2xx, "2xx", s.Responses2xxPerS)
	resp(resp429, "429", s.Responses429PerS)
	resp(resp503, "503", s.Responses503PerS)
	k.rate("  "+g.resp[resp503RA]+" with Retry-After", rateSpan(st, s.Responses503RetryAfterPerS, st.resp[resp503RA]), s.Responses503RetryAfterPerS)
	resp(resp5xx, "other 5xx", other5xx(s))
	k.secs("service time p50", st.text, s.ServiceTimeP50)
	k.secs("service time p99", st.text, s.ServiceTimeP99)
	k.secs("  success p50", st.text, s.SuccessServiceTimeP50)
	k.secs("  success p99", st.text, s.SuccessServiceTimeP99)
	k.secs("  error p50", st.text, s.ErrorServiceTimeP50)
	k.secs("  error p99", st.text, s.ErrorServiceTimeP99)
	return p.kvLines(dst, k.items, split, width)
}

// other5xx is celltext.Other5xx, the 5xx/s cell's value.
func other5xx(s *model.ServiceSignals) model.Value { return celltext.Other5xx(s) }
