package ui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/x/ansi"
	"github.com/retrytop/retrytop/internal/safetext"
)

// headerModel renders the status line: mode, window, target health, data
// age and the wall clock. It is cheap and re-rendered on every change.
type headerModel struct {
	c            *common
	right, short [64]byte // the right side's scratch (clock)
}

func (h *headerModel) view(dst []line, m *Model) []line {
	l := &m.lw
	h.mode(l, m)
	h.badges(l, m)
	h.window(l, m)
	r, rs := h.clock(m)
	r = h.targets(l, m, r, rs)
	if len(r) > 0 {
		if h.c.width-l.w-len(r) < 2 {
			r = rs
		}
		if pad := h.c.width - l.w - len(r); pad >= 2 {
			l.pad(pad)
			l.bytes(r, h.c.st.dim)
		}
	}
	return append(dst, trimSpaceRight(l.line()))
}

// mode writes the mode badge: live, replay, or paused with how far behind.
func (h *headerModel) mode(l *lineWriter, m *Model) {
	c, st, g := h.c, &h.c.st, h.c.g
	switch {
	case m.paused:
		b := append(l.num[:0], g.pause...)
		if c.opts.Mode == ModeReplay {
			b = append(b, " REPLAY"...)
		}
		b = append(b, " PAUSED "...)
		if d := m.behind(); d > 0 {
			b = appendAge(b, d)
		} else {
			b = append(b, "0s"...)
		}
		b = append(b, " behind"...)
		l.num = b
		l.bytes(b, st.paused)
	case m.player() != nil && !m.player().Playing():
		// The player is paused: say so as loudly as a paused live view.
		l.text(g.pause+" REPLAY PAUSED", st.paused)
	case c.opts.Mode == ModeReplay:
		l.text(g.replay+" REPLAY", st.replay)
	default:
		l.text(g.live+" LIVE", st.live)
	}
}

// badges writes the command's badges and status, the source's end and the
// last save.
func (h *headerModel) badges(l *lineWriter, m *Model) {
	c, st := h.c, &h.c.st
	for _, b := range c.opts.Badges {
		l.pad(1)
		l.text(safetext.Terminal(b), st.badge)
	}
	if p := m.player(); p != nil && (p.Seeking() || m.liveSeeking) {
		// What the rows show is of the moment before the seek.
		l.pad(1)
		l.text("seeking…", st.badge)
	}
	if c.opts.Status != nil {
		if b := c.opts.Status(); b != "" {
			l.pad(1)
			l.text(safetext.Terminal(b), st.badge)
		}
	}
	if m.closed {
		l.pad(1)
		l.text("(source ended)", st.dim)
	}
	if m.saved != "" {
		l.pad(2)
		l.text(safetext.Terminal(m.saved), st.accent)
	}
}

// window writes the window (an ellipsis while frames for a new window are
// being built) and the row the charts follow, when they do; on narrow
// screens that is left to the cursor (the down target and the clock need
// the room).
func (h *headerModel) window(l *lineWriter, m *Model) {
	c, st, g := h.c, &h.c.st, h.c.g
	l.plain("  window ")
	l.text(windowLabel(c.window), st.bold)
	if m.shown != nil && m.shown.Window != c.window {
		l.text("…", st.dim)
	}
	if k, ok := m.followed(); ok && c.width >= wideWidth {
		l.plain("  following ")
		l.text(safetext.Terminal(k.Target)+" "+g.to+" "+safetext.Terminal(k.Dependency), st.accent)
	}
}

// clock is the right side: the newest data's age and the clock, and a
// compact form of it for when a down target needs the room.
func (h *headerModel) clock(m *Model) (r, rs []byte) {
	r, rs = h.right[:0], h.short[:0]
	if m.live != nil && !m.live.Time.IsZero() {
		age := max(m.now.Sub(m.live.Time), 0)
		r = append(r, "newest scrape "...)
		r = appendAge(r, age)
		r = append(r, " ago  "...)
		rs = append(rs, "age "...)
		rs = appendAge(rs, age)
		rs = append(rs, "  "...)
	} else {
		r = append(r, "no data yet  "...)
		rs = append(rs, "no data  "...)
	}
	now := m.now.In(h.c.opts.Location)
	return now.AppendFormat(r, "15:04:05"), now.AppendFormat(rs, "15:04:05")
}

// targets writes up/total and the first down target with its last error,
// in the room the right side r (or its compact form rs, or nothing) leaves;
// it returns the right side that still fits. Until a target's first
// scrape ends it is connecting, not down: before any has ended the
// header says "connecting to N targets".
func (h *headerModel) targets(l *lineWriter, m *Model, r, rs []byte) []byte {
	st, g, width := &h.c.st, h.c.g, h.c.width
	up, total, firstDown, nDown, waiting := 0, 0, -1, 0, 0
	if m.live != nil {
		for i := range m.live.Targets {
			t := &m.live.Targets[i]
			total++
			switch {
			case t.Up:
				up++
			case !tried(t) && m.c.opts.Mode == ModeLive:
				waiting++
			default:
				nDown++
				if firstDown < 0 {
					firstDown = i
				}
			}
		}
	}
	if m.live == nil || (waiting > 0 && waiting == total) {
		l.plain("  ")
		l.num = append(l.num[:0], "connecting to "...)
		l.num = strconv.AppendInt(l.num, int64(total), 10)
		l.num = append(l.num, " target"...)
		if total != 1 {
			l.num = append(l.num, 's')
		}
		l.num = append(l.num, "…"...)
		if m.live == nil {
			l.num = append(l.num[:0], "connecting…"...)
		}
		l.bytes(l.num, st.dim)
		return r
	}
	l.plain("  targets ")
	l.num = strconv.AppendInt(l.num[:0], int64(up), 10)
	l.num = append(l.num, '/')
	l.num = strconv.AppendInt(l.num, int64(total), 10)
	l.num = append(l.num, " up"...)
	if nDown > 0 {
		l.bytes(l.num, st.down)
	} else {
		l.bytes(l.num, st.text)
	}
	if waiting > 0 {
		l.num = append(l.num[:0], ", "...)
		l.num = strconv.AppendInt(l.num, int64(waiting), 10)
		l.num = append(l.num, " connecting"...)
		l.bytes(l.num, st.dim)
	}
	if firstDown < 0 {
		return r
	}
	t := &m.live.Targets[firstDown]
	var b strings.Builder
	b.WriteString(safetext.Terminal(t.Name))
	b.WriteString(" down: ")
	if e := safetext.Terminal(t.LastError); e != "" {
		b.WriteString(e)
	} else {
		b.WriteString("no successful scrape")
	}
	if nDown > 1 {
		b.WriteString(" (+")
		b.WriteString(strconv.Itoa(nDown - 1))
		b.WriteString(" more)")
	}
	l.plain(" ")
	room := width - l.w - 2 - len(r) - 2
	if room < 40 {
		r = rs
		room = width - l.w - 2 - len(r) - 2
	}
	if room < 12 {
		// No room for the clock: the down target matters more.
		r = r[:0]
		room = width - l.w - 2
	}
	l.text(g.down, st.down)
	l.pad(1)
	l.cell(b.String(), max(room, 1), false, st.down)
	return r
}

// footer is the key help line, or the filter input while it is open.
func (m *Model) footer() line {
	l := &m.lw
	w := m.c.width
	if m.view == viewOverview && m.overview.filtering {
		l.text("filter", m.c.st.title)
		l.pad(1)
		s := m.overview.filter.View()
		l.buf = append(l.buf, s...)
		l.w += ansi.StringWidth(s)
		k := &m.c.keys
		l.plain("  " + k.AcceptFilter.Help().Key + " apply · " + k.CancelFilter.Help().Key + " clear")
		return l.line()
	}
	if m.hint != "" {
		// Why the last key did nothing, until the next key.
		l.cell(safetext.Terminal(m.hint), w, false, m.c.st.accent)
		return trimSpaceRight(l.line())
	}
	if m.player() != nil {
		return m.replayFooter()
	}
	groups := m.view == viewOverview && m.overview.groupable
	fk := [4]int{w, int(m.view), 0, 0}
	if groups {
		fk[2] = 1
	}
	if m.paused {
		fk[3] = 1
	}
	if m.footerKey != fk || m.footerLine.s == "" {
		var keys help.KeyMap = viewKeys{k: &m.c.keys, view: m.view, groups: groups, paused: m.paused}
		bs := keys.ShortHelp()
		s := m.help.ShortHelpView(bs)
		// help adds an item that does not fit when its ellipsis would not
		// fit either: drop items until the line fits, then mark the cut.
		for len(bs) > 1 && ansi.StringWidth(s) > w {
			bs = bs[:len(bs)-1]
			s = m.help.ShortHelpView(bs)
			if ansi.StringWidth(s)+2 <= w {
				s += " " + m.help.Styles.Ellipsis.Inline(true).Render(m.help.Ellipsis)
			}
		}
		m.footerLine, m.footerKey = line{s: s, w: ansi.StringWidth(s)}, fk
	}
	return m.footerLine
}

// helpLines is the help screen: the full key map, then what the columns
// and glyphs mean, appended to out (it scrolls when taller than the
// screen).
func (m *Model) helpLines(out []line) []line {
	g, st := m.c.g, &m.c.st
	l := &m.lw
	out = append(out, (&painter{c: m.c, l: lineWriter{}}).title(nil, "KEYS", "esc or ? closes · j/k scroll", m.c.width)...)
	for _, s := range strings.Split(m.help.FullHelpView(m.c.keys.FullHelp()), "\n") {
		out = append(out, line{s: s, w: ansi.StringWidth(s)})
	}
	if m.player() != nil {
		// A replay's own keys (they replace pause and g/G there).
		out = append(out, line{})
		out = append(out, (&painter{c: m.c}).title(nil, "REPLAY", "the player's keys", m.c.width)...)
		groups := m.c.keys.ReplayHelp(m.c.opts.WhatIf != nil)
		for _, s := range strings.Split(m.help.FullHelpView(groups), "\n") {
			out = append(out, line{s: s, w: ansi.StringWidth(s)})
		}
	}
	out = append(out, line{})
	out = append(out, (&painter{c: m.c}).title(nil, "COLUMNS", "absent values show as "+absentText+", never 0", m.c.width)...)
	gloss := [][2]string{
		{"ORIG/s ATT/s", "originals (caller requests) and attempts (incl. retries) per second"},
		{"AMP", "amplification: attempts / originals"},
		{"EFF% ATT%", "effective success (originals) vs attempt success (every attempt)"},
		{"RETR/s " + g.outcome[outRescued] + "RSC/s", "retries, and originals rescued by a retry"},
		{g.outcome[outBudget] + "BDG/s", "retries denied by the retry budget (protection, not a provider error)"},
		{g.outcome[outAdmission] + "ADM/s", "calls rejected by admission control (protection, not a provider error)"},
		{g.outcome[outProvider] + "ERR/s " + g.outcome[outTimeout] + "TMO/s", "attempts the provider failed, and attempts that timed out"},
		{"ACT/LIM POOL99", "active calls / concurrency limit, pool wait p99"},
		{"OK p99 FF p99", "latency p99 of successes and of fast failures"},
		{"RECV/s INFL/SLOT", "SERVICES: requests received; in flight / execution slots"},
		{"QUEUE/LIM Q OLD", "queue depth / limit (" + g.inf + " unbounded), the oldest waiting request's age; QW p99 queue wait"},
		{g.resp[resp503] + "503/s(RA)", "503s, in parentheses those carrying Retry-After; " + g.resp[resp429] + "429/s rate limited, " + g.resp[resp5xx] + "5xx/s other 5xx"},
		{"WAC/s CNCL/s", "work finished after the caller cancelled; requests abandoned when it did"},
		{"layer " + g.times + "N", "N replicas (targets sharing a layer) folded into one row: enter lists them, " + m.c.keys.Group.Help().Key + " unfolds"},
	}
	for _, e := range gloss {
		l.cell(e[0], 16, false, st.accent)
		l.pad(1)
		l.cell(e[1], m.c.width-17, false, st.text)
		out = append(out, trimSpaceRight(l.line()))
	}
	out = append(out, line{})
	// The outcome legend wraps rather than being cut.
	l.text("outcomes:", st.dim)
	for o := outcome(0); o < numOutcomes; o++ {
		if l.w+3+textWidth(outcomeNames[o]) > m.c.width {
			out = append(out, l.line())
			l.pad(len("outcomes:"))
		}
		l.pad(2)
		l.text(g.outcome[o], st.outcome[o])
		l.pad(1)
		l.plain(outcomeNames[o])
	}
	return append(out, l.line())
}

func newHelp(c *common, t Theme) help.Model {
	h := help.New()
	r := c.opts.Renderer
	key, desc, sep := r.NewStyle(), r.NewStyle(), r.NewStyle()
	if !c.opts.NoColor {
		if t.Accent != nil {
			key = key.Foreground(t.Accent)
		}
		if t.Dim != nil {
			sep = sep.Foreground(t.Dim)
		}
	}
	h.Styles = help.Styles{
		Ellipsis:       sep,
		ShortKey:       key,
		ShortDesc:      desc,
		ShortSeparator: sep,
		FullKey:        key,
		FullDesc:       desc,
		FullSeparator:  sep,
	}
	return h
}
