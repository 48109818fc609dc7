package ui

import (
	"strconv"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// Player controls a replay: the dashboard in ModeReplay with
// Options.Player set shows a timeline bar and routes the replay keys here
// (replay.Player implements it). Every method must return at
// once; the data follows through the Source's updates.
type Player interface {
	Playing() bool
	Toggle()
	// Step moves n scrapes forward (back when negative) and pauses.
	Step(n int)
	// Jump moves the playhead by d.
	Jump(d time.Duration)
	Speed() float64
	SetSpeed(x float64)
	SeekStart()
	SeekEnd()
	// Position is the playhead and the recording's first and last times.
	Position() (pos, start, end time.Time)
	// Spikes are bins over [start, end], oldest first: 0 none, 1 warning
	// (amplification or provider errors over their thresholds), 2
	// critical, 3 not known yet.
	Spikes() []uint8
	// Seeking: a control moved the playhead away from what the store
	// holds, which is still being loaded for it.
	Seeking() bool
}

// ReplaySpeeds are the speeds + and - step through.
var ReplaySpeeds = []float64{0.25, 0.5, 1, 2, 4, 8, 16, 32, 64}

// ReplayJump is how far shift+left and shift+right jump.
const ReplayJump = time.Minute

func (m *Model) player() Player {
	if m.c.opts.Mode != ModeReplay {
		return nil
	}
	return m.c.opts.Player
}

// replayKey handles a replay key; ok is false for other keys.
func (m *Model) replayKey(msg tea.KeyMsg) (cmd tea.Cmd, ok bool) {
	p := m.player()
	if p == nil {
		return nil, false
	}
	k := &m.c.keys
	switch {
	case key.Matches(msg, k.Play):
		p.Toggle()
	case key.Matches(msg, k.StepBack):
		p.Step(-1)
	case key.Matches(msg, k.StepForward):
		p.Step(+1)
	case key.Matches(msg, k.JumpBack):
		p.Jump(-ReplayJump)
	case key.Matches(msg, k.JumpForward):
		p.Jump(ReplayJump)
	case key.Matches(msg, k.Slower):
		p.SetSpeed(nextSpeed(p.Speed(), -1))
	case key.Matches(msg, k.Faster):
		p.SetSpeed(nextSpeed(p.Speed(), +1))
	case key.Matches(msg, k.Start):
		p.SeekStart()
	case key.Matches(msg, k.End):
		p.SeekEnd()
	default:
		return nil, false
	}
	return nil, true
}

// nextSpeed is the next speed of ReplaySpeeds up (dir > 0) or down.
func nextSpeed(cur float64, dir int) float64 {
	if dir > 0 {
		for _, s := range ReplaySpeeds {
			if s > cur+1e-9 {
				return s
			}
		}
		return ReplaySpeeds[len(ReplaySpeeds)-1]
	}
	for i := len(ReplaySpeeds) - 1; i >= 0; i-- {
		if ReplaySpeeds[i] < cur-1e-9 {
			return ReplaySpeeds[i]
		}
	}
	return ReplaySpeeds[0]
}

// replayBar is the line under the header in a replay: play state and
// speed, the playhead's offset and the length, the bar with its spike
// bins and the playhead, and the playhead's clock time.
func (m *Model) replayBar(dst []line) []line {
	p := m.player()
	if p == nil {
		return dst
	}
	c, st, g := m.c, &m.c.st, m.c.g
	l := &m.lw
	pos, start, end := p.Position()
	length := end.Sub(start)
	if p.Playing() {
		l.text(g.replay, st.replay)
	} else {
		l.text(g.pause, st.paused)
	}
	l.pad(1)
	l.num = appendSpeed(l.num[:0], p.Speed())
	l.bytes(l.num, st.bold)
	l.pad(2)
	l.num = appendClock(l.num[:0], pos.Sub(start))
	l.num = append(l.num, " / "...)
	l.num = appendClock(l.num, length)
	l.bytes(l.num, st.text)
	l.pad(2)
	right := pos.In(c.opts.Location).Format("2006-01-02 15:04:05")
	barW := c.width - l.w - 2 - len(right) - 2
	if barW < 10 {
		right = ""
		barW = c.width - l.w - 2
	}
	cells := barCells(p.Spikes(), barW)
	at := 0
	if length > 0 && barW > 1 {
		at = int(float64(pos.Sub(start)) / float64(length) * float64(barW-1))
		at = min(max(at, 0), barW-1)
	}
	ascii := c.opts.Charset == CharsetASCII
	l.text(barEdge(ascii, true), st.dim)
	for i, lvl := range cells {
		if i == at {
			if ascii {
				l.glyph("O", st.bold)
			} else {
				l.glyph("●", st.bold)
			}
			continue
		}
		s, sp := spikeGlyph(lvl, ascii), st.dim
		switch lvl {
		case 1:
			sp = st.warn
		case 2:
			sp = st.down
		}
		l.glyph(s, sp)
	}
	l.text(barEdge(ascii, false), st.dim)
	if right != "" {
		l.pad(2)
		l.text(right, st.dim)
	}
	return append(dst, trimSpaceRight(l.line()))
}

// barCells maps the spike bins onto w cells: each cell is the highest
// known level of the bins it covers.
func barCells(spikes []uint8, w int) []uint8 {
	if w <= 0 {
		return nil
	}
	out := make([]uint8, w)
	if len(spikes) == 0 {
		for i := range out {
			out[i] = 3
		}
		return out
	}
	for i := range out {
		lo := i * len(spikes) / w
		hi := max((i+1)*len(spikes)/w, lo+1)
		lvl := uint8(3)
		for _, s := range spikes[lo:min(hi, len(spikes))] {
			if s == 3 {
				continue
			}
			if lvl == 3 || s > lvl {
				lvl = s
			}
		}
		out[i] = lvl
	}
	return out
}

func spikeGlyph(lvl uint8, ascii bool) string {
	if ascii {
		switch lvl {
		case 1:
			return "+"
		case 2:
			return "#"
		case 3:
			return "."
		}
		return "-"
	}
	switch lvl {
	case 1:
		return "▄"
	case 2:
		return "█"
	case 3:
		return "·"
	}
	return "─"
}

func barEdge(ascii, left bool) string {
	switch {
	case ascii && left:
		return "["
	case ascii:
		return "]"
	}
	return "│"
}

// appendSpeed writes "0.25x", "1x", "64x".
func appendSpeed(b []byte, x float64) []byte {
	b = strconv.AppendFloat(b, x, 'f', -1, 64)
	return append(b, 'x')
}

// appendClock writes d as m:ss, or h:mm:ss from an hour on.
func appendClock(b []byte, d time.Duration) []byte {
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	h, mnt, sec := s/3600, s/60%60, s%60
	if h > 0 {
		b = strconv.AppendInt(b, h, 10)
		b = append(b, ':')
		if mnt < 10 {
			b = append(b, '0')
		}
	}
	b = strconv.AppendInt(b, mnt, 10)
	b = append(b, ':')
	if sec < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, sec, 10)
}

// replayFooter is the key help line of a replay.
func (m *Model) replayFooter() line {
	s := m.help.ShortHelpView(m.c.keys.replayShortHelp())
	return line{s: s, w: ansi.StringWidth(s)}
}
