package ui

import (
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// TestScreenFrameWritesOnlyChanges: the first frame and a repaint write
// every line, each at its row; later frames only the lines that changed;
// lines a shorter view no longer has are erased; a line as wide as the
// terminal is not followed by an erase (it would erase its last cell).
func TestScreenFrameWritesOnlyChanges(t *testing.T) {
	s := newTermScreen(nil, 0, stillClock())
	cases := []struct {
		name  string
		view  string
		full  bool
		width int
		want  string
	}{
		{"first", "ab\ncd\nef", true, 10, "\x1b[2J\x1b[1;1Hab\x1b[K\x1b[2;1Hcd\x1b[K\x1b[3;1Hef\x1b[K"},
		{"same", "ab\ncd\nef", false, 10, ""},
		{"middle line", "ab\nCD\nef", false, 10, "\x1b[2;1HCD\x1b[K"},
		{"shorter", "ab\nCD", false, 10, "\x1b[3;1H\x1b[K"},
		{"full width, no erase", "0123456789\nCD", false, 10, "\x1b[1;1H0123456789"},
		{"repaint after a resize", "0123456789\nCD", true, 12, "\x1b[2J\x1b[1;1H0123456789\x1b[K\x1b[2;1HCD\x1b[K"},
	}
	for _, c := range cases {
		if got := string(s.frame(c.view, c.full, c.width)); got != c.want {
			t.Errorf("%s: wrote %q, want %q", c.name, got, c.want)
		}
	}
}

// stillClock is a screen clock whose time stands still and whose waits
// never end: with a minGap of 0 the screen never waits.
func stillClock() screenClock {
	return screenClock{
		now:   func() time.Time { return fixedNow },
		after: func(time.Duration) <-chan time.Time { return nil },
	}
}

// TestScreenFoldsViewsWithinMinGap: a view posted sooner than minGap
// after the last draw waits for the rest of the gap, and the views posted
// meanwhile fold into the newest (virtual time: the test fires the wait).
func TestScreenFoldsViewsWithinMinGap(t *testing.T) {
	fire := make(chan time.Time)
	waits := make(chan time.Duration, 4)
	clock := screenClock{
		now:   func() time.Time { return fixedNow },
		after: func(d time.Duration) <-chan time.Time { waits <- d; return fire },
	}
	w := make(chanWriter, 16)
	s := newTermScreen(w, time.Second, clock)
	go s.run()
	t.Cleanup(s.stop)
	s.resize(80)
	s.post("first")
	if got := drawnWithin(t, w, "the first view"); !strings.Contains(got, "first") {
		t.Fatalf("first draw: %q", got)
	}
	s.post("second")
	select {
	case d := <-waits:
		if d != time.Second {
			t.Errorf("waited %v, want the whole gap of 1s (the clock stood still)", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the screen did not wait for the gap")
	}
	s.post("third")
	fire <- fixedNow
	if got := drawnWithin(t, w, "the folded views"); !strings.Contains(got, "third") || strings.Contains(got, "second") {
		t.Errorf("after the gap drew %q, want only the newest view", got)
	}
}

// chanWriter hands every write to the test.
type chanWriter chan string

func (w chanWriter) Write(b []byte) (int, error) {
	w <- string(b)
	return len(b), nil
}

// drawnWithin is the first write, or a failure after deadline (a bound
// for a busy machine: a draw is a goroutine wake-up and one write).
func drawnWithin(t *testing.T, w chanWriter, what string) string {
	t.Helper()
	const deadline = 10 * time.Second
	select {
	case s := <-w:
		return s
	case <-time.After(deadline):
		t.Fatalf("%s: nothing drawn within %v", what, deadline)
		return ""
	}
}

// TestDashboardRedrawsOnChange drives the model as Run does (Update, then
// View, with the screen's goroutine drawing): a new frame, a key and a
// resize each reach the terminal, and a message that changes nothing
// draws nothing.
func TestDashboardRedrawsOnChange(t *testing.T) {
	w := make(chanWriter, 16)
	scr := newTermScreen(w, 0, stillClock())
	go scr.run()
	t.Cleanup(scr.stop)
	p := &program{Model: newTestModel(t, Options{}, nil), scr: scr, force: true}
	step := func(msg tea.Msg) {
		p.Update(msg)
		p.View()
	}

	step(tea.WindowSizeMsg{Width: 120, Height: 40})
	if got := drawnWithin(t, w, "first size"); !strings.HasPrefix(got, ansi.EraseEntireScreen) {
		t.Errorf("first draw is not a full repaint: %q", got)
	}
	step(liveFrame(fixtureFrame(dataTime, time.Minute, 0)))
	if got := ansi.Strip(drawnWithin(t, w, "a new frame")); !strings.Contains(got, "payments") {
		t.Errorf("the frame's rows were not drawn: %q", got)
	}
	step(liveFrame(fixtureFrame(dataTime.Add(time.Second), time.Minute, 1)))
	if got := ansi.Strip(drawnWithin(t, w, "a second frame")); !strings.Contains(got, "03:12") {
		t.Errorf("the second frame did not redraw its clock: %q", got)
	}
	step(keyMsg("?"))
	if got := ansi.Strip(drawnWithin(t, w, "the help key")); !strings.Contains(got, "quit") {
		t.Errorf("the help was not drawn: %q", got)
	}
	step(keyMsg("esc"))
	drawnWithin(t, w, "closing the help")
	// The same size again still repaints: the terminal may have cleared.
	step(tea.WindowSizeMsg{Width: 120, Height: 40})
	if got := drawnWithin(t, w, "a resize"); !strings.HasPrefix(got, ansi.EraseEntireScreen) {
		t.Errorf("a resize did not repaint: %q", got)
	}
	step(tea.WindowSizeMsg{Width: 100, Height: 30})
	if got := drawnWithin(t, w, "a smaller terminal"); strings.Count(got, ";1H") != 30 {
		t.Errorf("a resize to 30 lines drew %d lines", strings.Count(got, ";1H"))
	}

	// Nothing changed: nothing is handed to the screen, so its goroutine
	// does not even wake up.
	step(tea.MouseMsg{Action: tea.MouseActionMotion})
	p.View()
	scr.mu.Lock()
	pending := scr.pending
	scr.mu.Unlock()
	if pending || len(scr.kick) != 0 {
		t.Error("an unchanged view was posted")
	}
}

// lockedBuffer is a buffer the screen's goroutine and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestPanicGivesTheTerminalBack: a panic in a command (here one of a
// batch, as the frame builds run) leaves the alternate screen, mouse
// and raw mode before it goes on to bubbletea, which prints it: on the
// alternate screen it would vanish with it.
func TestPanicGivesTheTerminalBack(t *testing.T) {
	out := &lockedBuffer{}
	restored := 0
	term := &terminal{scr: newTermScreen(out, 0, stillClock()), out: out, mouse: true, restore: func() { restored++ }}
	go term.scr.run()
	p := &program{Model: newTestModel(t, Options{}, nil), scr: term.scr, term: term}
	batch := p.guard(tea.Batch(func() tea.Msg { return nil }, func() tea.Msg { panic("boom") }))
	msgs, ok := batch().(tea.BatchMsg)
	if !ok || len(msgs) != 2 {
		t.Fatalf("the batch: %#v", msgs)
	}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the command's panic", r)
			}
		}()
		msgs[1]()
	}()
	if got := out.String(); !strings.HasSuffix(got, screenLeave(true)) || restored != 1 {
		t.Errorf("terminal not given back: wrote %q, tty restored %d times", got, restored)
	}
	term.leave() // Run's own, later: once is enough
	if restored != 1 || strings.Count(out.String(), screenLeave(true)) != 1 {
		t.Error("the terminal was given back twice")
	}
}
