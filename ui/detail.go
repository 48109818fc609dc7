package ui

import (
	"strconv"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// scroller shows a panel's rendered lines from a scroll position, with a
// "more lines" note at the bottom when they do not fit. The detail views
// embed it.
type scroller struct {
	c      *common
	scroll int
	bodyH  int // lines on screen at the last render
	// hint says how to scroll, after the "more lines" note ("" : j/k).
	hint string

	pane     painter
	cacheKey [3]uint64
	cache    []line
}

func (s *scroller) update(msg tea.KeyMsg) {
	k := &s.c.keys
	page := max(s.bodyH-1, 1)
	switch {
	case key.Matches(msg, k.Up):
		s.scroll--
	case key.Matches(msg, k.Down):
		s.scroll++
	case key.Matches(msg, k.PageUp):
		s.scroll -= page
	case key.Matches(msg, k.PageDown):
		s.scroll += page
	case key.Matches(msg, k.Top):
		s.scroll = 0
	case key.Matches(msg, k.Bottom):
		s.scroll = len(s.cache)
	}
	s.scroll = max(s.scroll, 0)
}

// stale reports whether the cache must be rendered again for this frame
// (seq), width and window, and records the new key.
func (s *scroller) stale(seq uint64, width int) bool {
	ck := [3]uint64{seq, uint64(width), uint64(s.c.window)}
	if s.cache != nil && ck == s.cacheKey {
		return false
	}
	s.cacheKey = ck
	return true
}

// show appends the part of the cache that fits height from the scroll
// position.
func (s *scroller) show(dst []line, height int) []line {
	s.bodyH = height
	all := s.cache
	maxScroll := max(len(all)-height+1, 0) // the last line shows above the note
	s.scroll = min(s.scroll, maxScroll)
	if len(all) <= height {
		return append(dst, all...)
	}
	dst = append(dst, all[s.scroll:s.scroll+height-1]...)
	l := &s.pane.l
	more := len(all) - s.scroll - (height - 1)
	arrow := s.c.g.arrowDown
	if more <= 0 {
		arrow = s.c.g.arrowUp // at the end: only up
	}
	b := append(l.num[:0], arrow...)
	b = append(b, ' ')
	if more > 0 {
		b = strconv.AppendInt(b, int64(more), 10)
		b = append(b, " more lines · "...)
	}
	if s.hint != "" {
		b = append(b, s.hint...)
	} else {
		b = append(b, "j/k scroll"...)
	}
	l.num = b
	l.bytes(b, s.c.st.dim)
	return append(dst, l.line())
}

// detailModel shows everything about one row: traffic, outcomes,
// capacity, split latency and the full list of signals. It scrolls when
// the content is taller than the screen.
type detailModel struct {
	scroller
	key model.Key
	// group names the group the row was opened from ("" none): esc goes
	// back to its detail.
	group string
}

func (d *detailModel) open(k model.Key, group string) {
	if k != d.key {
		d.scroll = 0
	}
	d.key, d.group = k, group
	d.cacheKey = [3]uint64{}
}

// view renders the content for width (cached per frame, row and width)
// and shows the part that fits height from the scroll position.
func (d *detailModel) view(dst []line, f *model.Frame, seq uint64, width, height int) []line {
	if d.stale(seq, width) {
		d.cache = d.render(d.cache[:0], f, width)
	}
	return d.show(dst, height)
}

func (d *detailModel) render(dst []line, f *model.Frame, width int) []line {
	p := &d.pane
	l, st, g := &p.l, &d.c.st, d.c.g
	var row *model.Signals
	if f != nil {
		for i := range f.Rows {
			if f.Rows[i].Key() == d.key {
				row = &f.Rows[i]
				break
			}
		}
	}

	// Title: which row, its dialect, its target's health.
	l.text("DETAIL", st.title)
	l.pad(2)
	l.text(safetext.Terminal(d.key.Target), st.bold)
	l.plain(" " + g.to + " ")
	l.text(safetext.Terminal(d.key.Dependency), st.bold)
	if row != nil && row.Dialect != "" {
		l.plain("  dialect ")
		l.text(safetext.Terminal(row.Dialect), st.text)
	}
	if d.group != "" {
		l.plain("  replica of ")
		l.text(d.group, st.text)
	}
	dst = p.endTitle(dst, f, d.key.Target, width)

	if row == nil {
		l.text("this row is not in the current data (esc: back to the overview)", st.dim)
		return append(dst, l.line())
	}
	return p.detailBody(dst, row, binsNoHist(f.Timelines[d.key]), f, width, nil)
}

// detailBody renders a row's detail sections under its title. extra, when
// set, adds a section after the charts (a group's REPLICAS).
func (p *painter) detailBody(dst []line, row *model.Signals, tl []model.Signals, f *model.Frame, width int, extra func([]line) []line) []line {
	if width >= wideWidth {
		leftW := (width - 3) / 2
		rightW := width - leftW - 3
		left := p.trafficSection(nil, row, tl, f, "", leftW, 8)
		right := p.outcomeSection(nil, row, tl, f, rightW, 1)
		right = append(right, line{})
		right = p.capacitySection(right, row, tl, f, rightW)
		dst = append(dst, joinColumns([][]line{left, right}, []int{leftW, 0}, "   ")...)
		if extra != nil {
			dst = append(dst, line{})
			dst = extra(dst)
		}
		dst = append(dst, line{})
		dst = p.latencySection(dst, row, width, true)
		dst = append(dst, line{})
		return p.breakerSection(p.detailBudget(p.fatesSection(p.signalsSection(dst, row, width), row, width), row, tl, f, width), row, tl, f, width)
	}
	dst = p.trafficSection(dst, row, tl, f, "", width, 6)
	if extra != nil {
		dst = append(dst, line{})
		dst = extra(dst)
	}
	dst = append(dst, line{})
	dst = p.outcomeSection(dst, row, tl, f, width, 1)
	dst = append(dst, line{})
	dst = p.capacitySection(dst, row, tl, f, width)
	dst = append(dst, line{})
	dst = p.latencySection(dst, row, width, false)
	dst = append(dst, line{})
	return p.breakerSection(p.detailBudget(p.fatesSection(p.signalsSection(dst, row, width), row, width), row, tl, f, width), row, tl, f, width)
}

// endTitle finishes a detail view's title line: the target's health when
// it is down, cut to width.
func (p *painter) endTitle(dst []line, f *model.Frame, target string, width int) []line {
	l, st, g := &p.l, &p.c.st, p.c.g
	if f != nil {
		for i := range f.Targets {
			t := &f.Targets[i]
			if t.Name == target && !t.Up {
				l.pad(2)
				l.text(g.down+" target down: "+safetext.Terminal(t.LastError), st.down)
			}
		}
	}
	title := l.line()
	if title.w > width {
		title = line{s: ansi.Truncate(title.s, width, "…"), w: width}
	}
	return append(dst, title)
}
