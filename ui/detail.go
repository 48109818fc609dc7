package ui

import (
	"strconv"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/retrytop/retrytop/model"
)

// detailModel shows everything about one row: traffic, outcomes,
// capacity, split latency and the full list of signals. It scrolls when
// the content is taller than the screen.
type detailModel struct {
	c      *common
	key    model.Key
	scroll int
	bodyH  int // lines on screen at the last render

	pane     painter
	cacheKey [3]uint64
	cache    []line
}

func (d *detailModel) open(k model.Key) {
	if k != d.key {
		d.scroll = 0
	}
	d.key = k
	d.cacheKey = [3]uint64{}
}

func (d *detailModel) update(msg tea.KeyMsg) {
	k := &d.c.keys
	page := max(d.bodyH-1, 1)
	switch {
	case key.Matches(msg, k.Up):
		d.scroll--
	case key.Matches(msg, k.Down):
		d.scroll++
	case key.Matches(msg, k.PageUp):
		d.scroll -= page
	case key.Matches(msg, k.PageDown):
		d.scroll += page
	case key.Matches(msg, k.Top):
		d.scroll = 0
	case key.Matches(msg, k.Bottom):
		d.scroll = len(d.cache)
	}
	d.scroll = max(d.scroll, 0)
}

// view renders the content for width (cached per frame, row and width)
// and shows the part that fits height from the scroll position.
func (d *detailModel) view(dst []line, f *model.Frame, seq uint64, width, height int) []line {
	d.bodyH = height
	ck := [3]uint64{seq, uint64(width), uint64(d.c.window)}
	if d.cache == nil || ck != d.cacheKey {
		d.cache = d.render(d.cache[:0], f, width)
		d.cacheKey = ck
	}
	all := d.cache
	maxScroll := max(len(all)-height, 0)
	d.scroll = min(d.scroll, maxScroll)
	if len(all) <= height {
		return append(dst, all...)
	}
	view := all[d.scroll : d.scroll+height]
	dst = append(dst, view[:height-1]...)
	l := &d.pane.l
	more := len(all) - d.scroll - (height - 1)
	b := append(l.num[:0], d.c.g.arrowDown...)
	b = append(b, ' ')
	if more > 0 {
		b = strconv.AppendInt(b, int64(more), 10)
		b = append(b, " more lines · "...)
	}
	b = append(b, "j/k scroll"...)
	l.num = b
	l.bytes(b, d.c.st.dim)
	return append(dst, l.line())
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
	l.text(Sanitize(d.key.Target), st.bold)
	l.plain(" " + g.to + " ")
	l.text(Sanitize(d.key.Dependency), st.bold)
	if row != nil && row.Dialect != "" {
		l.plain("  dialect ")
		l.text(Sanitize(row.Dialect), st.text)
	}
	if f != nil {
		for i := range f.Targets {
			t := &f.Targets[i]
			if t.Name == d.key.Target && !t.Up {
				l.pad(2)
				l.text(g.down+" target down: "+Sanitize(t.LastError), st.down)
			}
		}
	}
	title := l.line()
	if title.w > width {
		title = line{s: ansi.Truncate(title.s, width, "…"), w: width}
	}
	dst = append(dst, title)

	if row == nil {
		l.text("this row is not in the current data (esc: back to the overview)", st.dim)
		return append(dst, l.line())
	}
	tl := f.Timelines[d.key]

	if width >= wideWidth {
		leftW := (width - 3) / 2
		rightW := width - leftW - 3
		left := p.trafficSection(nil, row, tl, f, leftW, 8)
		right := p.outcomeSection(nil, row, tl, f, rightW)
		right = append(right, line{})
		right = p.capacitySection(right, row, tl, f, rightW)
		dst = append(dst, joinColumns([][]line{left, right}, []int{leftW, 0}, "   ")...)
		dst = append(dst, line{})
		dst = p.latencySection(dst, row, width, true)
		dst = append(dst, line{})
		return p.signalsSection(dst, row, width)
	}
	dst = p.trafficSection(dst, row, tl, f, width, 6)
	dst = append(dst, line{})
	dst = p.outcomeSection(dst, row, tl, f, width)
	dst = append(dst, line{})
	dst = p.capacitySection(dst, row, tl, f, width)
	dst = append(dst, line{})
	dst = p.latencySection(dst, row, width, false)
	dst = append(dst, line{})
	return p.signalsSection(dst, row, width)
}
