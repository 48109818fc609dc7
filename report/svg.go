package report

import (
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/retrytop/retrytop/internal/safetext"
)

// point is one value of a series at a time (Unix seconds); path is where
// the value sits in the JSON report, carried into the page so a reader
// (and the browser test) can tie every dot to its number.
type point struct {
	t    float64
	v    float64
	ok   bool
	path string
}

// series is one line of a chart; class picks its colour from the page's
// CSS (s1..s6), so dark and light mode restyle it.
type series struct {
	name   string
	class  string
	dashed bool
	// mark draws its dots large: a single moment to find on a curve.
	mark bool
	pts  []point
}

// band shades [from, to] on the time axis: a phase (class ph-KIND) or a
// finding's span (class fd-SEVERITY, with a label).
type band struct {
	from, to float64
	class    string
	label    string
	title    string
}

// chart is one small time-series panel on the report's shared time axis.
type chart struct {
	id     string
	title  string
	unit   func(float64) string // formats axis labels
	t0, t1 float64
	series []series
	bands  []band // phases, shaded behind
	marks  []band // findings, drawn as ticks along the top
	// attr names the attribute carrying each dot's JSON path (data-json,
	// the analysis report's; data-whatif for what-if's).
	attr string
}

// Chart geometry in viewBox units; CSS scales the SVG to its box.
const (
	chartW    = 420
	chartH    = 160
	padLeft   = 50
	padRight  = 8
	padTop    = 14
	padBottom = 20
)

// hasData reports whether any series has a present value.
func (c *chart) hasData() bool {
	for _, s := range c.series {
		for _, p := range s.pts {
			if p.ok {
				return true
			}
		}
	}
	return false
}

// niceMax rounds a maximum up to 1, 2 or 5 times a power of ten, so the
// axis reads in round numbers.
func niceMax(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// write renders the chart as an inline <svg>: shaded phases, finding
// ticks, axes with the maximum and the times at both ends, one polyline
// per run of present values (an absent value breaks the line: absent is
// not zero) and a dot per present value carrying its JSON path and value.
func (c *chart) write(b io.Writer, timeLabel func(float64) string) {
	ymax := 0.0
	for _, s := range c.series {
		for _, p := range s.pts {
			if p.ok && !math.IsInf(p.v, 0) && !math.IsNaN(p.v) {
				ymax = max(ymax, p.v)
			}
		}
	}
	ymax = niceMax(ymax)
	span := c.t1 - c.t0
	if span <= 0 {
		span = 1
	}
	x := func(t float64) float64 { return padLeft + (t-c.t0)/span*(chartW-padLeft-padRight) }
	y := func(v float64) float64 { return chartH - padBottom - v/ymax*(chartH-padTop-padBottom) }
	fmt.Fprintf(b, `<svg class="chart" id="%s" viewBox="0 0 %d %d" role="img" aria-label="%s">`, c.id, chartW, chartH, safetext.HTML(c.title))
	for _, bd := range c.bands {
		fmt.Fprintf(b, `<rect class="%s" x="%s" y="%d" width="%s" height="%d"><title>%s</title></rect>`,
			bd.class, num(x(bd.from)), padTop, num(max(x(bd.to)-x(bd.from), 0.5)), chartH-padTop-padBottom, safetext.HTML(bd.title))
	}
	// Axes: the baseline, the top gridline at ymax, and time at both ends.
	fmt.Fprintf(b, `<line class="ax" x1="%d" y1="%s" x2="%d" y2="%s"/>`, padLeft, num(y(0)), chartW-padRight, num(y(0)))
	fmt.Fprintf(b, `<line class="grid" x1="%d" y1="%s" x2="%d" y2="%s"/>`, padLeft, num(y(ymax)), chartW-padRight, num(y(ymax)))
	fmt.Fprintf(b, `<text class="tick" x="%d" y="%s" text-anchor="end">%s</text>`, padLeft-4, num(y(ymax)+4), safetext.HTML(c.unit(ymax)))
	fmt.Fprintf(b, `<text class="tick" x="%d" y="%s" text-anchor="end">0</text>`, padLeft-4, num(y(0)+4))
	fmt.Fprintf(b, `<text class="tick" x="%d" y="%d">%s</text>`, padLeft, chartH-4, safetext.HTML(timeLabel(c.t0)))
	// The middle of the axis too, so a moment can be read off any chart.
	if c.t1 > c.t0 {
		mid := c.t0 + (c.t1-c.t0)/2
		fmt.Fprintf(b, `<line class="ax" x1="%s" y1="%s" x2="%s" y2="%s"/><text class="tick" x="%s" y="%d" text-anchor="middle">%s</text>`,
			num(x(mid)), num(y(0)), num(x(mid)), num(y(0)+3), num(x(mid)), chartH-4, safetext.HTML(timeLabel(mid)))
	}
	fmt.Fprintf(b, `<text class="tick" x="%d" y="%d" text-anchor="end">%s</text>`, chartW-padRight, chartH-4, safetext.HTML(timeLabel(c.t1)))
	for _, m := range c.marks {
		fmt.Fprintf(b, `<a href="#%s"><rect class="%s" x="%s" y="%d" width="%s" height="5"><title>%s</title></rect></a>`,
			m.label, m.class, num(x(m.from)), padTop-8, num(max(x(m.to)-x(m.from), 2)), safetext.HTML(m.title))
	}
	for _, s := range c.series {
		cls := "ln " + s.class
		if s.dashed {
			cls += " dash"
		}
		var line []byte
		flush := func() {
			if len(line) > 0 {
				fmt.Fprintf(b, `<polyline class="%s" points="%s"/>`, cls, line)
				line = line[:0]
			}
		}
		for _, p := range s.pts {
			if !p.ok || math.IsInf(p.v, 0) || math.IsNaN(p.v) {
				flush()
				continue
			}
			if len(line) > 0 {
				line = append(line, ' ')
			}
			line = fmt.Appendf(line, "%s,%s", num(x(p.t)), num(y(p.v)))
		}
		flush()
		fmt.Fprintf(b, `<g class="pts %s" data-series="%s">`, s.class, safetext.HTML(s.name))
		for _, p := range s.pts {
			if !p.ok || math.IsInf(p.v, 0) || math.IsNaN(p.v) {
				continue
			}
			attr := c.attr
			if attr == "" {
				attr = "data-json"
			}
			r := 2
			if s.mark {
				r = 5
			}
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="%d" %s="%s" data-v="%s"><title>%s %s: %s</title></circle>`,
				num(x(p.t)), num(y(p.v)), r, attr, safetext.HTMLAttr(p.path), strconv.FormatFloat(p.v, 'g', -1, 64),
				safetext.HTML(s.name), safetext.HTML(timeLabel(p.t)), safetext.HTML(c.unit(p.v)))
		}
		io.WriteString(b, `</g>`)
	}
	io.WriteString(b, "</svg>")
}
