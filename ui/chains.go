package ui

import (
	"strconv"

	"github.com/charmbracelet/x/ansi"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// boxGlyphs draw the chain view's hop boxes.
type boxGlyphs struct {
	tl, tr, bl, br, h, v, arrow string
}

var (
	unicodeBox = boxGlyphs{"┌", "┐", "└", "┘", "─", "│", "►"}
	asciiBox   = boxGlyphs{"+", "+", "+", "+", "-", "|", ">"}
)

const (
	chainArrowW  = 11 // " ─2.92x──► "
	chainBoxMinW = 12
	chainBoxRows = 6 // top, name, in, out, max, bottom
)

// chainsView renders amplification chains: each hop a box (target, what
// arrives, what it sends, its attempt cap) joined by arrows labelled with
// the hop's amplification, then the chain's end-to-end, product and
// worst-case amplification and its gaps.
type chainsView struct {
	c *common
	l lineWriter
}

func (v *chainsView) box() boxGlyphs {
	if v.c.opts.Charset == CharsetASCII {
		return asciiBox
	}
	return unicodeBox
}

func (v *chainsView) view(dst []line, chains []analysis.ChainResult, width, height int) []line {
	p := painter{c: v.c}
	note := strconv.Itoa(len(chains)) + " chain"
	if len(chains) != 1 {
		note += "s"
	}
	dst = p.title(dst, "CHAINS", note, width)
	if len(chains) == 0 {
		v.l.cell("no chain: no dependency names another target yet (declare one with --chain or --config)", width, false, v.c.st.dim)
		return append(dst, trimSpaceRight(v.l.line()))
	}
	for _, c := range chains {
		if len(dst) >= height {
			break
		}
		dst = v.chain(dst, c, width)
		dst = append(dst, line{})
	}
	if len(dst) > height {
		dst = dst[:height]
	}
	return dst
}

// hopBox is one box's text, line by line: name, in, out, max.
type hopBox [4]string

// providerBox is the chain's last dependency: what its callers sent, what
// it says arrived (when it reports it) and how old its queue is.
func (v *chainsView) providerBox(last analysis.HopResult, p *analysis.ChainProvider) hopBox {
	b := hopBox{safetext.Terminal(last.Dependency), "in  " + string(appendRate(nil, last.AttemptsPerS)) + "/s"}
	if p == nil || !p.ArrivedPerS.OK() {
		return b
	}
	b[1] = "sent    " + string(appendRate(nil, p.SentPerS)) + "/s"
	b[2] = "arrived " + string(appendRate(nil, p.ArrivedPerS)) + "/s"
	if p.QueueOldestAge.OK() {
		b[3] = "queue age " + string(appendSeconds(nil, p.QueueOldestAge, v.c.g.micro))
	}
	return b
}

func (v *chainsView) boxes(c analysis.ChainResult) ([]hopBox, []model.Value) {
	var boxes []hopBox
	var arrows []model.Value
	for i, h := range c.Hops {
		b := hopBox{safetext.Terminal(h.Target),
			"in  " + string(appendRate(nil, h.OriginalsPerS)) + "/s",
			"out " + string(appendRate(nil, h.AttemptsPerS)) + "/s",
			"max attempts " + string(appendGauge(nil, h.MaxAttempts))}
		boxes = append(boxes, b)
		arrows = append(arrows, h.Amplification)
		if i == len(c.Hops)-1 {
			boxes = append(boxes, v.providerBox(h, c.Provider))
		}
	}
	return boxes, arrows
}

func (v *chainsView) chain(dst []line, c analysis.ChainResult, width int) []line {
	st, g := &v.c.st, v.box()
	l := &v.l
	boxes, arrows := v.boxes(c)
	gapAt := map[int]analysis.Gap{}
	for _, gp := range c.Gaps {
		for i, h := range c.Hops {
			if h.Target == gp.From.Target && h.Dependency == gp.From.Dependency {
				gapAt[i] = gp
			}
		}
	}

	l.text(safetext.Terminal(c.Name), st.title)
	l.text("  end-to-end ", st.dim)
	l.bytes(appendAmp(nil, c.EndToEndAmplification), ampSpan(st, c.EndToEndAmplification))
	l.text("  product ", st.dim)
	l.bytes(appendAmp(nil, c.ProductAmplification), st.text)
	l.text("  worst case ", st.dim)
	l.bytes(appendAmp(nil, c.WorstCaseAmplification), ampSpan(st, c.WorstCaseAmplification))
	if width-l.w >= 27 {
		l.text(" (product of max attempts)", st.dim)
	}
	head := l.line()
	if head.w > width {
		// Cut, and say so (a chain header cut silently).
		head = line{s: ansi.Truncate(head.s, width, v.c.g.ellipsis), w: width}
	}
	dst = append(dst, head)

	boxW := chainBoxMinW
	for _, b := range boxes {
		for _, s := range b {
			boxW = max(boxW, textWidth(s)+4)
		}
	}
	if len(boxes)*boxW+(len(boxes)-1)*chainArrowW <= width {
		dst = v.horizontal(dst, boxes, arrows, gapAt, boxW, g)
	} else {
		dst = v.vertical(dst, boxes, arrows, gapAt, width)
	}
	if p := c.Provider; p != nil && (p.WorkAfterCancelPerS.OK() || p.QueueOldestAge.OK() || p.InFlight.OK()) {
		l.text(safetext.Terminal(p.Target), st.text)
		l.text(": ", st.dim)
		var b []byte
		if p.WorkAfterCancelPerS.OK() {
			b = append(b, gaveUpText(p)...)
		}
		if p.QueueDepth.OK() || p.QueueOldestAge.OK() {
			if len(b) > 0 {
				b = append(b, " · "...)
			}
			b = append(b, "queue "...)
			b = appendGauge(b, p.QueueDepth)
			b = append(b, ", oldest "...)
			b = appendSeconds(b, p.QueueOldestAge, v.c.g.micro)
		}
		if p.InFlight.OK() {
			if len(b) > 0 {
				b = append(b, " · "...)
			}
			b = append(b, "in flight "...)
			b = appendActive(b, p.InFlight, p.Slots)
		}
		l.cell(string(b), width-l.w, false, st.text)
		dst = append(dst, trimSpaceRight(l.line()))
	}
	for _, gp := range c.Gaps {
		l.text(v.c.g.warn, st.warn)
		l.pad(1)
		l.text(gp.Code, st.warn)
		l.pad(1)
		msg := safetext.Terminal(gp.From.Target) + " sent " + string(appendNum(nil, gp.SentPerS)) + "/s to " + safetext.Terminal(gp.To) +
			", " + string(appendNum(nil, gp.ArrivedPerS)) + "/s arrived"
		if gp.Factor.OK() {
			msg += " (x" + strconv.FormatFloat(gp.Factor.V(), 'f', 2, 64) + ")"
		}
		l.cell(msg, width-l.w, false, st.text)
		dst = append(dst, trimSpaceRight(l.line()))
	}
	return dst
}

func (v *chainsView) horizontal(dst []line, boxes []hopBox, arrows []model.Value, gapAt map[int]analysis.Gap, boxW int, g boxGlyphs) []line {
	st := &v.c.st
	l := &v.l
	for row := 0; row < chainBoxRows; row++ {
		for i, b := range boxes {
			switch row {
			case 0:
				l.text(g.tl, st.dim)
				l.repeat(g.h, boxW-2, st.dim)
				l.text(g.tr, st.dim)
			case chainBoxRows - 1:
				l.text(g.bl, st.dim)
				l.repeat(g.h, boxW-2, st.dim)
				l.text(g.br, st.dim)
			default:
				sp := st.text
				if row == 1 {
					sp = st.bold
				}
				l.text(g.v, st.dim)
				l.pad(1)
				l.cell(b[row-1], boxW-4, false, sp)
				l.pad(1)
				l.text(g.v, st.dim)
			}
			if i == len(arrows) {
				continue
			}
			if row != 2 {
				l.pad(chainArrowW)
				continue
			}
			sp := ampSpan(st, arrows[i])
			if _, gap := gapAt[i]; gap {
				sp = st.warn
			}
			l.pad(1)
			l.repeat(g.h, 1, st.dim)
			l.cellBytes(appendAmp(nil, arrows[i]), chainArrowW-5, true, sp)
			l.repeat(g.h, 1, st.dim)
			l.text(g.arrow, st.dim)
			l.pad(1)
		}
		dst = append(dst, trimSpaceRight(l.line()))
	}
	return dst
}

// vertical lists hops one per line when the boxes do not fit the width.
func (v *chainsView) vertical(dst []line, boxes []hopBox, arrows []model.Value, gapAt map[int]analysis.Gap, width int) []line {
	st := &v.c.st
	l := &v.l
	for i, b := range boxes {
		l.pad(2)
		l.cell(b[0], min(20, width/4), false, st.bold)
		for _, s := range b[1:] {
			l.pad(1)
			l.cell(s, min(18, width/4-1), false, st.text)
		}
		dst = append(dst, trimSpaceRight(l.line()))
		if i < len(arrows) {
			sp := ampSpan(st, arrows[i])
			if _, gap := gapAt[i]; gap {
				sp = st.warn
			}
			l.pad(4)
			l.text(v.c.g.arrowDown, st.dim)
			l.pad(1)
			l.bytes(appendAmp(nil, arrows[i]), sp)
			dst = append(dst, trimSpaceRight(l.line()))
		}
	}
	return dst
}
