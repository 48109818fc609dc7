package ui

import (
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// termScreen draws the dashboard on the terminal when its view changes, and
// only then. bubbletea v1's standard renderer flushes on a ticker (FPS
// times a second, whatever happens), which kept an idle dashboard's
// scheduler and sysmon busy (docs/performance.md, "watch idle CPU, round
// 4"); its renderer interface is unexported, so Run turns it off
// (tea.WithoutRenderer) and draws with this instead.
//
// post hands over the newest view without blocking; a goroutine of its
// own writes it, so a slow terminal never blocks Update. Views posted
// while a write is under way, or sooner than minGap after the last one,
// fold into one: a key held down draws at most 1/minGap frames a second,
// and with nothing posted nothing wakes up.
type termScreen struct {
	out    io.Writer
	minGap time.Duration
	clock  screenClock

	mu      sync.Mutex
	next    string // the newest view not drawn yet
	pending bool
	full    bool // the next draw repaints every line (after a resize)
	width   int

	kick    chan struct{} // one buffered wake-up
	done    chan struct{}
	stopped chan struct{}

	last []string // the lines on the terminal
	buf  []byte
}

// screenClock is the time the screen folds views by: the time now, and a
// channel that fires after a while (Run: the real ones).
type screenClock struct {
	now   func() time.Time
	after func(time.Duration) <-chan time.Time
}

func newTermScreen(out io.Writer, minGap time.Duration, clock screenClock) *termScreen {
	return &termScreen{
		out:     out,
		minGap:  minGap,
		clock:   clock,
		full:    true,
		kick:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
}

// The terminal modes the dashboard runs in, as bubbletea's renderer sets
// them with tea.WithAltScreen and tea.WithMouseCellMotion: the alternate
// screen, no cursor, bracketed paste, and (unless mouse is false) clicks,
// drags and the wheel in SGR encoding.
func screenEnter(mouse bool) string {
	s := ansi.SetAltScreenSaveCursorMode + ansi.EraseEntireScreen + ansi.CursorHomePosition +
		ansi.HideCursor + ansi.SetBracketedPasteMode
	if mouse {
		s += ansi.SetButtonEventMouseMode + ansi.SetSgrExtMouseMode
	}
	return s
}

func screenLeave(mouse bool) string {
	s := ansi.ResetBracketedPasteMode + ansi.ShowCursor
	if mouse {
		s = ansi.ResetButtonEventMouseMode + ansi.ResetSgrExtMouseMode + s
	}
	return s + ansi.ResetAltScreenSaveCursorMode
}

// resize records the terminal's width and asks for a full repaint: the
// terminal may have reflowed or cleared what it showed.
func (s *termScreen) resize(width int) {
	s.mu.Lock()
	s.width = width
	s.full = true
	s.mu.Unlock()
}

// post hands the newest view over; it never blocks.
func (s *termScreen) post(view string) {
	s.mu.Lock()
	s.next, s.pending = view, true
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default: // a wake-up is already queued; it will take the newest view
	}
}

// run draws posted views until stop; start it in a goroutine.
func (s *termScreen) run() {
	defer close(s.stopped)
	var lastDraw time.Time
	for {
		select {
		case <-s.kick:
		case <-s.done:
			return
		}
		if wait := s.minGap - s.clock.now().Sub(lastDraw); wait > 0 && !lastDraw.IsZero() {
			// Too soon after the last frame: let the views fold. The
			// timer exists only while views keep coming.
			select {
			case <-s.clock.after(wait):
			case <-s.done:
				return
			}
		}
		s.mu.Lock()
		view, ok, full, width := s.next, s.pending, s.full, s.width
		s.pending, s.full = false, false
		s.next = ""
		s.mu.Unlock()
		if !ok {
			continue
		}
		if b := s.frame(view, full, width); len(b) > 0 {
			_, _ = s.out.Write(b)
		}
		lastDraw = s.clock.now()
	}
}

// stop ends run and waits for a write under way to finish.
func (s *termScreen) stop() {
	close(s.done)
	<-s.stopped
}

// frame is what to write to turn the lines on the terminal into view:
// only the lines that changed, each addressed by its row, so nothing
// depends on where the cursor was left; all of them after a resize.
func (s *termScreen) frame(view string, full bool, width int) []byte {
	lines := strings.Split(view, "\n")
	b := s.buf[:0]
	if full {
		b = append(b, ansi.EraseEntireScreen...)
		s.last = s.last[:0]
	}
	for i, ln := range lines {
		if i < len(s.last) && s.last[i] == ln {
			continue
		}
		b = moveTo(b, i)
		b = append(b, ln...)
		// A line as wide as the terminal leaves the cursor on its last
		// cell: erasing from there would erase that cell.
		if width <= 0 || ansi.StringWidth(ln) < width {
			b = append(b, ansi.EraseLineRight...)
		}
	}
	for i := len(lines); i < len(s.last); i++ {
		b = moveTo(b, i)
		b = append(b, ansi.EraseLineRight...)
	}
	s.last = append(s.last[:0], lines...)
	s.buf = b
	return b
}

// moveTo appends the sequence putting the cursor at the start of row i
// (0-based).
func moveTo(b []byte, i int) []byte {
	b = append(b, "\x1b["...)
	b = strconv.AppendInt(b, int64(i+1), 10)
	return append(b, ";1H"...)
}
