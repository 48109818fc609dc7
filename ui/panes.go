package ui

import (
	"strconv"
	"strings"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// The findings pane (f) shows every finding of the frame on screen whole:
// its message, its evidence, the bins where it held and what to do. The
// info pane (i) says what is watched: the source, the window, the
// version and every target with its URL and health. Both scroll.

// findingsPane renders the findings pane into s's cache.
func (m *Model) findingsPane(s *scroller, width int) {
	p := &s.pane
	l, st, g := &p.l, &m.c.st, m.c.g
	fs := m.shownDerived.found
	out := s.cache[:0]
	note := strconv.Itoa(len(fs)) + " finding"
	if len(fs) != 1 {
		note += "s"
	}
	note += ", most severe first " + g.dot + " esc back " + g.dot + " docs/findings.md explains each rule"
	out = p.title(out, "FINDINGS", note, width)
	if len(fs) == 0 {
		l.text("no finding in the current window", st.dim)
		out = append(out, l.line())
	}
	for i := range fs {
		fd := &fs[i]
		if i > 0 {
			out = append(out, line{})
		}
		sp := st.warn
		if fd.Severity == analysis.SeverityCritical {
			sp = st.down
		}
		l.text(g.warn, sp)
		l.pad(1)
		l.text(strings.ToUpper(fd.Severity.String()), sp)
		l.pad(1)
		l.text(safetext.Terminal(fd.Code), st.bold)
		l.pad(2)
		l.cell(findingWhere(fd, g), width-l.w, false, st.text)
		out = append(out, trimSpaceRight(l.line()))
		out = p.wrapped(out, "", findingMessage(fd), st.text, width)
		if len(fd.Evidence) > 0 {
			var b strings.Builder
			for j, n := range fd.Evidence {
				if j > 0 {
					b.WriteString("  ")
				}
				b.WriteString(safetext.Terminal(n.Name))
				b.WriteByte('=')
				b.Write(appendNum(nil, n.Value))
			}
			out = p.wrapped(out, "evidence ", b.String(), st.dim, width)
		}
		if !fd.Start.IsZero() && !fd.End.IsZero() {
			loc := m.c.opts.Location
			held := fd.Start.In(loc).Format("15:04:05") + " " + g.to + " " + fd.End.In(loc).Format("15:04:05") +
				" (" + spanLabel(fd.End.Sub(fd.Start).Round(time.Second)) + ")"
			out = p.wrapped(out, "held     ", held, st.dim, width)
		}
		if a := adviceFor(fd.Code); a != "" {
			out = p.wrapped(out, "do       ", a, st.accent, width)
		}
	}
	s.cache = out
}

// wrapped writes text word-wrapped to width under a label, the wrapped
// lines indented to the text's column.
func (p *painter) wrapped(dst []line, label, text string, sp span, width int) []line {
	l, st := &p.l, &p.c.st
	indent := 2 + textWidth(label)
	room := max(width-indent, 10)
	first := true
	for text != "" {
		cut := len(text)
		if textWidth(text) > room {
			cut = wrapAt(text, room)
		}
		l.pad(2)
		if first {
			l.text(label, st.dim)
			first = false
		} else {
			l.pad(textWidth(label))
		}
		l.cell(strings.TrimRight(text[:cut], " "), room, false, sp)
		dst = append(dst, trimSpaceRight(l.line()))
		text = strings.TrimLeft(text[cut:], " ")
	}
	return dst
}

// wrapAt is the byte index to cut text at so the first part fits width
// columns: after the last space that fits, else at width.
func wrapAt(text string, width int) int {
	w, lastSpace := 0, -1
	for i, r := range text {
		rw := textWidth(string(r))
		if w+rw > width {
			if r == ' ' {
				return i // the text up to here fits whole
			}
			if lastSpace > 0 {
				return lastSpace
			}
			return i
		}
		if r == ' ' {
			lastSpace = i
		}
		w += rw
	}
	return len(text)
}

// infoPane renders the info pane into s's cache.
func (m *Model) infoPane(s *scroller, width int) {
	p := &s.pane
	l, st, g := &p.l, &m.c.st, m.c.g
	o := &m.c.opts
	out := p.title(s.cache[:0], "INFO", "what is watched "+g.dot+" esc back", width)
	kv := func(k, v string) {
		l.cell(k, 10, false, st.dim)
		l.pad(1)
		l.cell(v, width-11, false, st.text)
		out = append(out, trimSpaceRight(l.line()))
	}
	mode := "live"
	if o.Mode == ModeReplay {
		mode = "replay"
	}
	src := safetext.Terminal(o.Source)
	if src == "" {
		src = absentText
	}
	kv("source", mode+" "+g.dot+" "+src)
	charts := "charts: range " + rangeLabel(m.c.chartRange)
	if m.shown != nil && m.shown.Bin > 0 {
		charts += ", " + windowLabel(m.shown.Bin) + " bins"
	}
	kv("window", windowLabel(m.c.window)+" (rates), "+charts)
	ver := safetext.Terminal(o.Version)
	if ver == "" {
		ver = absentText
	}
	kv("version", ver)
	var ts []model.TargetStatus
	if m.live != nil {
		ts = m.live.Targets
	}
	out = append(out, line{})
	out = p.title(out, "TARGETS", strconv.Itoa(len(ts))+" "+g.dot+" another terminal can read them: retrytop analyze NAME=URL ...", width)
	nameW := len("NAME")
	for i := range ts {
		nameW = max(nameW, textWidth(safetext.Terminal(ts[i].Name)))
	}
	nameW = min(nameW, 24)
	l.pad(markerW)
	l.cell("NAME", nameW, false, st.bold)
	l.pad(1)
	l.cell("STATE", 6, false, st.bold)
	l.pad(1)
	l.text("URL", st.bold)
	out = append(out, trimSpaceRight(l.line()))
	for i := range ts {
		t := &ts[i]
		l.pad(markerW)
		l.cell(safetext.Terminal(t.Name), nameW, false, st.text)
		l.pad(1)
		state, ssp := "up", st.text
		if !t.Up {
			state, ssp = "down", st.down
		}
		l.cell(state, 6, false, ssp)
		l.pad(1)
		u := safetext.Terminal(t.URL)
		if u == "" {
			u = absentText
		}
		l.cell(u, width-l.w, false, st.text)
		out = append(out, trimSpaceRight(l.line()))
		var b []string
		if t.Dialect != "" {
			b = append(b, "dialect "+safetext.Terminal(t.Dialect))
		}
		for _, why := range t.DialectsSetAside {
			b = append(b, "set aside: "+safetext.Terminal(why))
		}
		if t.Backend != "" {
			b = append(b, "backend "+safetext.Terminal(t.Backend))
		}
		if t.Layer != "" {
			b = append(b, "layer "+safetext.Terminal(t.Layer))
		}
		if t.Service != "" && t.Service != t.Name {
			b = append(b, "service "+safetext.Terminal(t.Service))
		}
		if !t.Up && t.LastError != "" && t.MemoryCap == nil {
			b = append(b, "error: "+safetext.Terminal(t.LastError))
		}
		b = append(b, capNotes(t)...) // a memory refusal says it in its own terms
		if len(b) > 0 {
			l.pad(markerW + nameW + 1 + 6 + 1)
			l.cell(strings.Join(b, "  "), width-l.w, false, st.dim)
			out = append(out, trimSpaceRight(l.line()))
		}
	}
	s.cache = out
}
