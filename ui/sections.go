package ui

import (
	"math"
	"slices"
	"time"

	"github.com/retrytop/retrytop/internal/safetext"
	"github.com/retrytop/retrytop/model"
)

// painter renders the panels of one row (detail view, overview preview)
// into lines, reusing its scratch buffers across frames.
type painter struct {
	c      *common
	l      lineWriter
	a, b   []model.Value
	bounds []float64
	counts [3][]float64
	kv     kvList
	latBuf []line       // the overview preview's latency section, measured first
	sc     [3][]float64 // chart scratch: values in chart steps
}

const (
	gutterW = 16 // label column of timeline rows
	valueW  = 9  // value column right of timeline rows
)

// title writes a section title: bold text, then a dim rule to width.
func (p *painter) title(dst []line, text string, note string, width int) []line {
	l, st, g := &p.l, &p.c.st, p.c.g
	l.text(text, st.title)
	if note != "" && width-l.w-1 > 0 {
		// A narrow column cuts the note, never the line.
		l.pad(1)
		l.cell(note, min(textWidth(note), width-l.w), false, st.dim)
	}
	if rest := width - l.w - 1; rest > 0 {
		l.pad(1)
		l.repeat(g.rule, rest, st.dim)
	}
	return append(dst, l.line())
}

// binLayout fits n bins into area columns: the first bin shown and the
// columns per bin. Bins that do not fit are dropped from the old end.
func binLayout(n, area int) (first, cols int) {
	if n <= 0 || area <= 0 {
		return 0, 1
	}
	if area >= n {
		return 0, area / n
	}
	return n - area, 1
}

// fitTimeline fits the bins of tl into area columns, the newest first:
// whole columns a bin when they fill nine tenths of the area, else each
// bin is repeated over its share of the area (the result then has area
// entries of one column each, some bins a column wider than others). nb
// is how many bins it shows, cols the columns of each entry.
func fitTimeline[T any](tl []T, area int) (out []T, nb, cols int) {
	first, cols := binLayout(len(tl), area)
	tl = tl[first:]
	nb = len(tl)
	if nb == 0 || nb*cols*10 >= area*9 {
		return tl, nb, cols
	}
	out = make([]T, area)
	for c := range out {
		out[c] = tl[c*nb/area]
	}
	return out, nb, 1
}

// fitCols is the columns of each entry fitTimeline makes of n bins.
func fitCols(n, area int) int {
	if _, cols := binLayout(n, area); n*cols*10 >= area*9 {
		return cols
	}
	return 1
}

// binNote says what the timeline spans in the charts' range (z, Z):
// "range 5m: last 1m, 2s bins" while less is held, "range 5m, 10s bins"
// once the bins span it.
func (p *painter) binNote(bin time.Duration, bins int) string {
	if bin <= 0 || bins <= 0 {
		return ""
	}
	rng, span := p.c.chartRange, bin*time.Duration(bins)
	if rng > 0 && span >= rng {
		return "range " + rangeLabel(rng) + ", " + windowLabel(bin) + " bins"
	}
	return "range " + rangeLabel(rng) + ": last " + spanLabel(span) + ", " + windowLabel(bin) + " bins"
}

// spanLabel names a time span: 5m, 30s, 3m50s.
func spanLabel(d time.Duration) string {
	if d >= time.Minute && d%time.Minute != 0 {
		return string(appendAge(nil, d))
	}
	return windowLabel(d)
}

// gutter writes a row label: glyph (may be ""), name, fitted to gutterW.
func (p *painter) gutter(glyph string, gsp span, name string) {
	l := &p.l
	start := l.w
	if glyph != "" {
		l.text(glyph, gsp)
		l.pad(1)
	}
	l.cell(name, gutterW-1-(l.w-start), false, p.c.st.text)
	l.pad(1)
}

// valueCell writes the right-hand value of a timeline row.
func (p *painter) valueCell(b []byte, sp span) {
	p.l.pad(1)
	p.l.cellBytes(b, valueW-1, true, sp)
}

func rateSpan(st *styles, v model.Value, hot span) span {
	if !v.OK() || v.V() <= 0 {
		return st.dim
	}
	return hot
}

// trafficFixed is how many lines trafficSection draws besides its chart
// rows (title, legend, amplification, per-bin labels when the bins are
// too narrow for numbers, time axis), for nb bins in width columns.
func trafficFixed(nb, width int) int {
	if nb == 0 {
		return 3 // title, legend, "no timeline yet"
	}
	if fitCols(nb, width-gutterW-valueW) < 4 {
		return 5
	}
	return 4
}

// trafficSection: originals vs attempts per bin with each bin's
// amplification below; name, when set, says whose they are in the title
// (the overview's preview follows a row the title must name).
func (p *painter) trafficSection(dst []line, row *model.Signals, tl []model.Signals, f *model.Frame, name string, width, height int) []line {
	l, st, g := &p.l, &p.c.st, p.c.g
	tl, nb, cols := fitTimeline(tl, width-gutterW-valueW)
	const title = "ORIGINALS vs ATTEMPTS"
	note := p.binNote(f.Bin, nb)
	if name != "" {
		note = name + " " + g.dot + " " + note
		if textWidth(note) > width-len(title)-2 {
			// Narrow: whose chart and its range; the bins are in the axis.
			note = name + " " + g.dot + " range " + rangeLabel(p.c.chartRange)
		}
	}
	dst = p.title(dst, title, note, width)

	// Legend with the window's values: the glyphs name the series.
	names := [3]string{" originals ", " attempts ", "/s  amplification "}
	if width < 60 {
		names = [3]string{" orig ", " att ", "/s  amp "}
	}
	l.text(g.fill[g.sub], st.originals)
	l.plain(names[0])
	l.num = appendRate(l.num[:0], row.OriginalsPerS)
	l.bytes(l.num, st.bold)
	l.plain("/s  ")
	l.text(g.above, st.attempts)
	l.plain(names[1])
	l.num = appendRate(l.num[:0], row.AttemptsPerS)
	l.bytes(l.num, st.bold)
	l.plain(names[2])
	l.num = appendAmp(l.num[:0], row.Amplification)
	l.bytes(l.num, ampSpan(st, row.Amplification))
	dst = append(dst, l.line())

	if len(tl) == 0 {
		l.text("no timeline yet", st.dim)
		return append(dst, l.line())
	}
	p.a = seriesOf(p.a, tl, func(s *model.Signals) model.Value { return s.OriginalsPerS })
	p.b = seriesOf(p.b, tl, func(s *model.Signals) model.Value { return s.AttemptsPerS })
	dst = twoSeries(dst, l, &p.sc, p.a, p.b, height, cols, gutterW, perSecond, g, st)

	// Amplification of each bin: numbers when they fit, else a sparkline.
	p.gutter("", span{}, "amplification")
	p.a = seriesOf(p.a, tl, func(s *model.Signals) model.Value { return s.Amplification })
	if cols >= 4 {
		for _, v := range p.a {
			l.num = appendAmpShort(l.num[:0], v)
			l.cellBytes(l.num, cols, true, ampSpan(st, v))
		}
	} else {
		l.spark(p.a, maxValue(p.a), cols, g, st.warn, st.dim)
	}
	l.padTo(gutterW + len(tl)*cols)
	l.num = appendAmp(l.num[:0], row.Amplification)
	p.valueCell(l.num, ampSpan(st, row.Amplification))
	dst = append(dst, l.line())
	if cols < 4 {
		// Too narrow for a number per bin: label every bin that has room,
		// right-aligned under its bin.
		// Newest first, so the latest bins are always labelled.
		p.gutter("", span{}, "  x per bin")
		var picked [256]int
		np := 0
		limit := len(tl) * cols
		for i := len(p.a) - 1; i >= 0 && np < len(picked); i-- {
			v := p.a[i]
			if !v.OK() {
				continue
			}
			l.num = appendAmpShort(l.num[:0], v)
			end := (i + 1) * cols
			if end > limit || end-len(l.num) < 0 {
				continue
			}
			picked[np] = i
			np++
			limit = end - len(l.num) - 1
		}
		for j := np - 1; j >= 0; j-- {
			v := p.a[picked[j]]
			l.num = appendAmpShort(l.num[:0], v)
			l.padTo(gutterW + (picked[j]+1)*cols - len(l.num))
			l.bytes(l.num, ampSpan(st, v))
		}
		dst = append(dst, trimSpaceRight(l.line()))
	}

	return p.timeAxis(dst, tl[0].StartMs, f.Time, f.Bin, nb, len(tl)*cols)
}

// timeAxis labels the bins under a chart with wall-clock times you can
// quote, at even steps of the clock (every 10s, 30s, 1m, ... as room
// allows), each at its time's column: startMs is the first bin's
// start (0: end less the bins), over spanW columns. Times are in the dashboard's location
// (local, or UTC with --utc); a replay's end is the recording's time.
// Without a time it says how long ago the first bin starts, and "now".
func (p *painter) timeAxis(dst []line, startMs int64, end time.Time, bin time.Duration, bins, spanW int) []line {
	l, st := &p.l, &p.c.st
	l.pad(gutterW)
	switch {
	case bin <= 0 || spanW < 12:
	case end.IsZero():
		ago := "-" + spanLabel(bin*time.Duration(bins))
		l.text(ago, st.dim)
		l.padTo(gutterW + spanW - 3)
		l.text("now", st.dim)
	default:
		start := end.Add(-bin * time.Duration(bins))
		if startMs != 0 {
			start = time.UnixMilli(startMs)
		}
		// Minutes when the step is whole minutes, else seconds.
		layout, step := "15:04", axisStep(bin, bins, spanW, 5)
		if step%time.Minute != 0 {
			layout, step = "15:04:05", axisStep(bin, bins, spanW, 8)
			if step%time.Minute == 0 {
				layout = "15:04" // the wider labels' step is whole minutes
			}
		}
		lw := len(layout)
		loc := p.c.opts.Location
		t := start.Truncate(step)
		if t.Before(start) {
			t = t.Add(step)
		}
		for ; ; t = t.Add(step) {
			at := gutterW + int(int64(t.Sub(start))*int64(spanW)/(int64(bin)*int64(bins)))
			if at+lw > gutterW+spanW {
				break
			}
			if at < l.w+1 && l.w > gutterW {
				continue // no room after the label before
			}
			l.padTo(at)
			l.num = t.In(loc).AppendFormat(l.num[:0], layout)
			l.bytes(l.num, st.dim)
		}
	}
	return append(dst, trimSpaceRight(l.line()))
}

// sparkRow is one labelled timeline row: glyph and name in the gutter, a
// sparkline of vals (nb bins, cols columns each) scaled to maxV, and the
// window's value on the right when value is not nil.
func (p *painter) sparkRow(dst []line, glyph string, sp span, name string, vals []model.Value, maxV float64, nb, cols int, value []byte, vsp span) []line {
	l, st, g := &p.l, &p.c.st, p.c.g
	p.gutter(glyph, sp, name)
	l.spark(vals, maxV, cols, g, sp, st.dim)
	if value != nil {
		l.padTo(gutterW + nb*cols)
		p.valueCell(value, vsp)
	}
	return append(dst, l.line())
}

// perSecondValue is a rate for a value cell: 12.0/s, or "-".
func perSecondValue(dst []byte, v model.Value) []byte {
	dst = appendRate(dst, v)
	if v.OK() {
		dst = append(dst, "/s"...)
	}
	return dst
}

func ampSpan(st *styles, v model.Value) span {
	switch {
	case !v.OK():
		return st.dim
	case v.V() >= 1.5:
		return st.warn
	}
	return st.text
}

// outcomeSection: one row per outcome at a fixed position, each with its
// own glyph, colour and scale, and the window's rate on the right; each
// outcome is rows lines tall (a sparkline at 1, columns above).
func (p *painter) outcomeSection(dst []line, row *model.Signals, tl []model.Signals, f *model.Frame, width, rows int) []line {
	l, st, g := &p.l, &p.c.st, p.c.g
	tl, _, cols := fitTimeline(tl, width-gutterW-valueW)
	dst = p.title(dst, "OUTCOMES", "per bin, each row to its own peak", width)
	for o := outcome(0); o < numOutcomes; o++ {
		sp := st.outcome[o]
		p.a = seriesOf(p.a, tl, func(s *model.Signals) model.Value { return o.value(s) })
		v := o.value(row)
		l.num = perSecondValue(l.num[:0], v)
		if rows <= 1 {
			dst = p.sparkRow(dst, g.outcome[o], sp, outcomeNames[o], p.a, maxValue(p.a), len(tl), cols, l.num, rateSpan(st, v, sp))
			continue
		}
		dst = p.columnRows(dst, g.outcome[o], sp, outcomeNames[o], p.a, rows, cols, rateSpan(st, v, sp))
	}
	return dst
}

// columnRows is a labelled series drawn as columns rows lines tall, to
// its own peak: the label and the window's value (in l.num) sit on the
// top line, the columns grow up from the bottom line, which also carries
// the zeros, so a series' bars sit on and under its own label, never
// under the label of the series above; absent bins are gaps.
func (p *painter) columnRows(dst []line, glyph string, sp span, name string, vals []model.Value, rows, cols int, vsp span) []line {
	l, st, g := &p.l, &p.c.st, p.c.g
	value := append(p.kv.buf[:0], l.num...) // l.num is reused below
	p.kv.buf = value
	maxV := maxValue(vals)
	steps := float64(rows * g.sub)
	ss := p.sc[0][:0]
	for _, v := range vals {
		ss = append(ss, scaled(v, maxV, steps))
	}
	p.sc[0] = ss
	for r := rows - 1; r >= 0; r-- {
		top := r == rows-1
		if top {
			p.gutter(glyph, sp, name)
		} else {
			l.pad(gutterW)
		}
		lo := r * g.sub
		for _, s := range ss {
			glyph, gsp := g.gap, span{}
			k := int(math.Round(s)) - lo
			if r == 0 && s > 0 && k <= 0 {
				k = 1 // a little is never drawn as nothing
			}
			switch {
			case k >= g.sub:
				glyph, gsp = g.fill[g.sub], sp
			case k > 0:
				glyph, gsp = g.fill[k], sp
			case r == 0 && s == 0:
				glyph, gsp = g.zero, st.dim
			}
			for c := 0; c < cols; c++ {
				l.glyph(glyph, gsp)
			}
		}
		if top {
			l.padTo(gutterW + len(vals)*cols)
			p.valueCell(value, vsp)
			dst = append(dst, l.line())
		} else {
			dst = append(dst, trimSpaceRight(l.line()))
		}
	}
	return dst
}

// capacitySection: active calls against the limit as a gauge with its
// history, and pool wait p50/p99 with theirs.
func (p *painter) capacitySection(dst []line, row *model.Signals, tl []model.Signals, f *model.Frame, width int) []line {
	l, st, g := &p.l, &p.c.st, p.c.g
	tl, _, cols := fitTimeline(tl, width-gutterW-valueW)
	dst = p.title(dst, "CAPACITY", "", width)

	dst = p.gaugeLine(dst, "active / limit", row.ActiveCalls, row.ConcurrencyLimit, width)
	if len(tl) > 0 {
		p.a = seriesOf(p.a, tl, func(s *model.Signals) model.Value { return s.ActiveCalls })
		p.b = seriesOf(p.b, tl, func(s *model.Signals) model.Value { return s.ConcurrencyLimit })
		dst = p.sparkRow(dst, "", st.accent, "  active hist", p.a, max(maxValue(p.a), maxValue(p.b)), len(tl), cols, nil, span{})
	}

	p.gutter("", span{}, "pool wait")
	l.plain("p50 ")
	l.num = appendSeconds(l.num[:0], row.PoolWaitP50, g.micro)
	l.bytes(l.num, st.bold)
	l.plain("  p99 ")
	l.num = appendSeconds(l.num[:0], row.PoolWaitP99, g.micro)
	l.bytes(l.num, st.bold)
	dst = append(dst, l.line())
	if len(tl) > 0 {
		p.a = seriesOf(p.a, tl, func(s *model.Signals) model.Value { return s.PoolWaitP99 })
		p.b = seriesOf(p.b, tl, func(s *model.Signals) model.Value { return s.PoolWaitP50 })
		m := max(maxValue(p.a), maxValue(p.b))
		dst = p.sparkRow(dst, "", st.warn, "  p99 hist", p.a, m, len(tl), cols, nil, span{})
		dst = p.sparkRow(dst, "", st.accent, "  p50 hist", p.b, m, len(tl), cols, nil, span{})
	}
	return dst
}

// gaugeLine: a use against its limit as a bar, the share and "12/50";
// "no limit exposed" when either is absent.
func (p *painter) gaugeLine(dst []line, name string, v, limit model.Value, width int) []line {
	l, st, g := &p.l, &p.c.st, p.c.g
	p.gutter("", span{}, name)
	barW := min(max(width-gutterW-2-8-12, 4), 40)
	if limit.OK() && v.OK() {
		sp := gaugeSpan(st, v, limit)
		l.text("[", st.dim)
		l.gauge(v.V(), limit.V(), barW, g, sp, st.dim)
		l.text("]", st.dim)
		if limit.V() > 0 {
			l.pad(1)
			l.num = strconvPct(l.num[:0], v.V()/limit.V())
			l.bytes(l.num, sp)
		}
	} else {
		l.text("no limit exposed", st.dim)
	}
	l.pad(2)
	l.num = appendActive(l.num[:0], v, limit)
	l.bytes(l.num, st.bold)
	return append(dst, l.line())
}

// gaugeSpan warns from 90% of the limit.
func gaugeSpan(st *styles, v, limit model.Value) span {
	if nearLimit(v, limit) {
		return st.warn
	}
	return st.accent
}

func nearLimit(v, limit model.Value) bool {
	return v.OK() && limit.OK() && limit.V() > 0 && v.V() >= 0.9*limit.V()
}

func strconvPct(dst []byte, ratio float64) []byte {
	return appendPct(dst, model.Some(math.Min(ratio, 1)))
}

// appendActive writes active/limit: 12/50, 12/-, -.
func appendActive(dst []byte, active, limit model.Value) []byte {
	if !active.OK() && !limit.OK() {
		return append(dst, absentText...)
	}
	dst = appendGauge(dst, active)
	dst = append(dst, '/')
	return appendGauge(dst, limit)
}

// kv is one labelled value of the signals section.
type kv struct {
	label string
	val   []byte
	sp    span
}

// kvList collects labelled values for kvLines, formatted into one buffer
// that the painter reuses from frame to frame.
type kvList struct {
	buf   []byte
	items []kv
	micro string
}

func (k *kvList) reset(micro string) {
	k.buf, k.items, k.micro = k.buf[:0], k.items[:0], micro
}

// add formats a value with f and files it under label.
func (k *kvList) add(label string, sp span, f func([]byte) []byte) {
	start := len(k.buf)
	k.buf = f(k.buf)
	// Earlier values keep pointing into the old array if buf grows.
	k.items = append(k.items, kv{label: label, val: k.buf[start:len(k.buf):len(k.buf)], sp: sp})
}

func (k *kvList) rate(label string, sp span, v model.Value) {
	k.add(label, sp, func(d []byte) []byte { return perSecondValue(d, v) })
}

func (k *kvList) secs(label string, sp span, v model.Value) {
	k.add(label, sp, func(d []byte) []byte { return appendSeconds(d, v, k.micro) })
}

func (k *kvList) gauge(label string, sp span, v model.Value) {
	k.add(label, sp, func(d []byte) []byte { return appendGauge(d, v) })
}

func (k *kvList) pct(label string, sp span, v model.Value) {
	k.add(label, sp, func(d []byte) []byte { return appendPct(d, v) })
}

// signalsSection lists every signal of the row, in two columns when wide.
func (p *painter) signalsSection(dst []line, row *model.Signals, width int) []line {
	st, g := &p.c.st, p.c.g
	dst = p.title(dst, "SIGNALS", "window "+windowLabel(p.c.window), width)
	k := &p.kv
	k.reset(g.micro)
	k.rate("originals", st.bold, row.OriginalsPerS)
	k.rate("attempts", st.bold, row.AttemptsPerS)
	k.add(ampLabel(row), ampSpan(st, row.Amplification), func(d []byte) []byte { return appendAmp(d, row.Amplification) })
	k.add("attempts / original", st.text, func(d []byte) []byte { return appendAmp(d, row.AttemptsPerOriginal) })
	k.rate("retries", st.text, row.RetriesPerS)
	k.rate("  of them hedges", st.text, row.HedgesPerS)
	if row.HedgesWonPerS.OK() || row.HedgesAbandonedPerS.OK() {
		k.rate("    hedges won", st.text, row.HedgesWonPerS)
		k.rate("    hedges abandoned", st.text, row.HedgesAbandonedPerS)
	}
	k.rate(g.outcome[outRescued]+" rescued", rateSpan(st, row.RescuedPerS, st.outcome[outRescued]), row.RescuedPerS)
	k.pct("effective success", st.text, row.EffectiveSuccess)
	k.pct("attempt success", st.text, row.AttemptSuccess)
	k.rate(g.outcome[outProvider]+" provider errors", rateSpan(st, row.ProviderErrorsPerS, st.outcome[outProvider]), row.ProviderErrorsPerS)
	k.rate("  temporary", rateSpan(st, row.TemporaryErrorsPerS, st.outcome[outProvider]), row.TemporaryErrorsPerS)
	k.rate("  permanent", rateSpan(st, row.PermanentErrorsPerS, st.outcome[outProvider]), row.PermanentErrorsPerS)
	k.rate(g.outcome[outTimeout]+" timeouts", rateSpan(st, row.TimeoutsPerS, st.outcome[outTimeout]), row.TimeoutsPerS)
	k.rate(g.outcome[outDeadline]+" deadline exhausted", rateSpan(st, row.DeadlineExhaustedPerS, st.outcome[outDeadline]), row.DeadlineExhaustedPerS)
	k.rate("cancelled attempts", st.text, row.CancelledAttemptsPerS)
	k.rate("late successes", rateSpan(st, row.LateSuccessesPerS, st.warn), row.LateSuccessesPerS)
	split := len(k.items) // protection, capacity, policy and latency go right
	k.rate(g.outcome[outAdmission]+" admission rejected", rateSpan(st, row.AdmissionRejectedPerS, st.outcome[outAdmission]), row.AdmissionRejectedPerS)
	// A breakdown's keys come from the target: show a bounded number.
	for i := range row.AdmissionRejectedBy[:min(len(row.AdmissionRejectedBy), maxBreakdownLines)] {
		br := &row.AdmissionRejectedBy[i]
		k.rate("  "+safetext.Terminal(br.Key), rateSpan(st, model.Some(br.PerS), st.outcome[outAdmission]), model.Some(br.PerS))
	}
	k.rate(g.outcome[outBudget]+" budget denied", rateSpan(st, row.BudgetDeniedPerS, st.outcome[outBudget]), row.BudgetDeniedPerS)
	k.gauge("budget balance", st.text, row.BudgetBalance)
	k.add("active / limit", st.text, func(d []byte) []byte { return appendActive(d, row.ActiveCalls, row.ConcurrencyLimit) })
	k.secs("pool wait p50", st.text, row.PoolWaitP50)
	k.secs("pool wait p99", st.text, row.PoolWaitP99)
	k.secs("backoff p50", st.text, row.BackoffP50)
	k.secs("backoff p99", st.text, row.BackoffP99)
	k.gauge("max attempts", st.text, row.MaxAttempts)
	k.secs("deadline", st.text, row.DeadlineSeconds)
	for ci, class := range model.LatencyClasses {
		k.secs(g.classGlyph[ci]+" "+classLabel(class)+" p99", st.class[ci], row.Latency.At(class).P99)
	}
	k.secs("mixed p99", st.text, row.MixedLatency.P99)
	k.rate("dep. received", st.text, row.DependencyReceivedPerS)
	k.secs("dep. service p50", st.text, row.DependencyServiceTimeP50)
	k.rate("dep. work after cancel", rateSpan(st, row.DependencyWorkAfterCancelPerS, st.warn), row.DependencyWorkAfterCancelPerS)
	k.rate("dep. no deadline", rateSpan(st, row.DependencyDeadlineMissingPerS, st.warn), row.DependencyDeadlineMissingPerS)
	// Present only when this owner ran inside another's attempts.
	for i := range row.NestedIn[:min(len(row.NestedIn), maxBreakdownLines)] {
		br := &row.NestedIn[i]
		k.rate("nested in "+safetext.Terminal(br.Key), rateSpan(st, model.Some(br.PerS), st.warn), model.Some(br.PerS))
	}

	return p.kvLines(dst, k.items, split, width)
}

// ampLabel names amplification with its basis when that is not the exact
// one: "amplification ~started" warns that originals and attempts were
// counted at different moments (docs/metrics.md, "Counting moments").
func ampLabel(row *model.Signals) string {
	switch row.AmplificationBasis {
	case model.AmplificationCompleted:
		return "amplification ~completed"
	case model.AmplificationStarted:
		return "amplification ~started"
	}
	return "amplification"
}

// maxBreakdownLines caps the admission-rejection breakdown in SIGNALS.
const maxBreakdownLines = 12

// kvLines lays labelled values out: one column under 64 columns, else two
// with items[:split] on the left.
func (p *painter) kvLines(dst []line, items []kv, split, width int) []line {
	l, st := &p.l, &p.c.st
	n := len(items)
	colW := width
	labelW := min(24, colW-10)
	if width < 64 {
		for i := 0; i < n; i++ {
			l.cell(items[i].label, labelW, false, st.dim)
			l.pad(1)
			l.cellBytes(items[i].val, colW-labelW-1, false, items[i].sp)
			dst = append(dst, trimSpaceRight(l.line()))
		}
		return dst
	}
	colW = (width - 2) / 2
	labelW = min(24, colW-10)
	for r := 0; r < max(split, n-split); r++ {
		for c, i := range [2]int{r, split + r} {
			if (c == 0 && i >= split) || i >= n {
				continue
			}
			l.padTo(c * (colW + 2))
			l.cell(items[i].label, labelW, false, st.dim)
			l.pad(1)
			l.cellBytes(items[i].val, colW-labelW-1, false, items[i].sp)
		}
		dst = append(dst, trimSpaceRight(l.line()))
	}
	return dst
}

func classLabel(class string) string {
	switch class {
	case model.ClassFastFailure:
		return "fast failure"
	case model.ClassFailure:
		return "failure"
	}
	return "success"
}

// latencySection: the split latency histograms, side by side when wide,
// and the warning when the mixed p99 misleads.
func (p *painter) latencySection(dst []line, row *model.Signals, width int, side bool) []line {
	l, st, g := &p.l, &p.c.st, p.c.g
	l.num = append(l.num[:0], "mixed p99 "...)
	l.num = appendSeconds(l.num, row.MixedLatency.P99, g.micro)
	dst = p.title(dst, "LATENCY by result", string(l.num), width)
	if w := mixedWarning(row); w.show {
		b := append(l.num[:0], g.warn...)
		b = append(b, " mixed p99 "...)
		b = appendSeconds(b, row.MixedLatency.P99, g.micro)
		b = append(b, " misleads: "...)
		b = appendPct(b, model.Some(w.fastShare))
		b = append(b, " of calls are fast failures; success p99 is "...)
		b = appendSeconds(b, row.Latency.At(model.ClassSuccess).P99, g.micro)
		l.num = b
		l.cell(string(b), width, false, st.warn)
		dst = append(dst, trimSpaceRight(l.line()))
	}

	// Shared bucket rows: the union of bounds, from the first to the last
	// bucket with observations in any class.
	p.bounds = p.bounds[:0]
	for _, class := range model.LatencyClasses {
		for _, b := range row.LatencyHist.At(class).Buckets {
			p.bounds = append(p.bounds, b.UpperBound)
		}
	}
	slices.Sort(p.bounds)
	p.bounds = slices.Compact(p.bounds)
	lo, hi := len(p.bounds), -1
	for ci, class := range model.LatencyClasses {
		p.counts[ci] = perBucket(p.counts[ci][:0], row.LatencyHist.At(class).Buckets, p.bounds)
		for i, n := range p.counts[ci] {
			if n > 0 {
				lo, hi = min(lo, i), max(hi, i)
			}
		}
	}
	if hi < 0 {
		msg := "no latency observations in the window"
		if len(row.LatencyHist) == 0 {
			msg = "no latency histogram: the target does not expose " + model.MetricRequestDuration
		}
		l.text(msg, st.dim)
		return append(dst, l.line())
	}
	// Keep the table short: at most 16 bucket rows, dropping the emptiest
	// edge first.
	for hi-lo+1 > 16 {
		lo++
	}

	if side {
		colW := (width - 4) / 3
		var cols [3][]line
		for ci := range model.LatencyClasses {
			cols[ci] = p.histColumn(nil, row, ci, lo, hi, colW)
		}
		return append(dst, joinColumns(cols[:], []int{colW, colW, colW}, "  ")...)
	}
	for ci := range model.LatencyClasses {
		dst = p.histColumn(dst, row, ci, lo, hi, width)
	}
	return dst
}

type warning struct {
	show      bool
	fastShare float64
}

// mixedWarning says whether the mixed p99 misleads: fast failures are at
// least half of the observations and the mixed p99 is under half the
// success p99, so a latency dashboard would call a melting dependency fast.
func mixedWarning(row *model.Signals) warning {
	succ := row.Latency.At(model.ClassSuccess).P99
	mixed := row.MixedLatency.P99
	if !succ.OK() || !mixed.OK() || succ.V() <= 0 {
		return warning{}
	}
	var total float64
	for _, e := range row.LatencyHist {
		total += e.V.Count
	}
	if total <= 0 {
		return warning{}
	}
	share := row.LatencyHist.At(model.ClassFastFailure).Count / total
	if share >= 0.5 && mixed.V() < succ.V()/2 {
		return warning{show: true, fastShare: share}
	}
	return warning{}
}

// perBucket turns cumulative buckets into per-bucket counts over bounds.
func perBucket(dst []float64, buckets []model.Bucket, bounds []float64) []float64 {
	prev := 0.0
	j := 0
	cum := 0.0
	for _, b := range bounds {
		for j < len(buckets) && buckets[j].UpperBound <= b {
			cum = math.Max(cum, buckets[j].Count)
			j++
		}
		dst = append(dst, math.Max(cum-prev, 0))
		prev = cum
	}
	return dst
}

// histColumn renders one class: title, quantiles, then one bar per bucket
// (vegeta hist style) with p50/p90/p99 marked at their buckets.
func (p *painter) histColumn(dst []line, row *model.Signals, ci, lo, hi, width int) []line {
	l, st, g := &p.l, &p.c.st, p.c.g
	class := model.LatencyClasses[ci]
	h, has := row.LatencyHist.Get(class)
	q := row.Latency.At(class)
	sp := st.class[ci]

	l.text(g.classGlyph[ci], sp)
	l.pad(1)
	l.text(classLabel(class), st.bold)
	l.plain(" n=")
	if has {
		l.num = appendCount(l.num[:0], h.Count)
	} else {
		l.num = append(l.num[:0], absentText...)
	}
	l.bytes(l.num, st.text)
	dst = append(dst, l.line())

	qs := [3]model.Value{q.P50, q.P90, q.P99}
	names := [3]string{"p50 ", "  p90 ", "  p99 "}
	for i := range qs {
		l.plain(names[i])
		l.num = appendSeconds(l.num[:0], qs[i], g.micro)
		l.bytes(l.num, st.bold)
	}
	dst = append(dst, trimSpaceRight(l.line()))

	const boundW, countW, markW = 6, 5, 13
	barW := max(width-boundW-countW-markW-3, 3)
	counts := p.counts[ci]
	peak := 0.0
	for i := lo; i <= hi; i++ {
		peak = math.Max(peak, counts[i])
	}
	var marks [3]int
	for i := range qs {
		marks[i] = -1
		if qs[i].OK() {
			marks[i] = sort64(p.bounds, qs[i].V())
		}
	}
	for i := lo; i <= hi; i++ {
		l.num = appendBound(l.num[:0], p.bounds[i], g.micro)
		l.cellBytes(l.num, boundW, true, st.dim)
		l.pad(1)
		n := 0
		if peak > 0 {
			n = int(math.Round(counts[i] / peak * float64(barW)))
			if counts[i] > 0 && n == 0 {
				n = 1
			}
		}
		if has {
			l.repeat(g.classBar[ci], n, sp)
			l.pad(barW - n)
			l.pad(1)
			l.num = appendCount(l.num[:0], counts[i])
			l.cellBytes(l.num, countW, true, rateSpan(st, model.Some(counts[i]), st.text))
		} else {
			l.pad(barW + 1)
			l.cell(absentText, countW, true, st.dim)
		}
		first := true
		for k, m := range marks {
			if m != i {
				continue
			}
			if first {
				l.pad(1)
				l.text(g.mark, st.warn)
				first = false
			} else {
				l.plain(",")
			}
			l.text(names[k][len(names[k])-4:len(names[k])-1], st.warn)
		}
		dst = append(dst, trimSpaceRight(l.line()))
	}
	return dst
}

// sort64 is the index of the first bound >= v (the bucket holding v).
func sort64(bounds []float64, v float64) int {
	i, _ := slices.BinarySearch(bounds, v)
	if i >= len(bounds) {
		return len(bounds) - 1
	}
	return i
}
