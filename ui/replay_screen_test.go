package ui

import (
	"io"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/retrytop/retrytop/dump"
	"github.com/retrytop/retrytop/internal/testdump"
	"github.com/retrytop/retrytop/replay"
)

// replayScreen is the dashboard on a replay of rec, driven as the
// program drives it: the player's position is the clock, and every frame
// is built by the dashboard's own buildFrame over the player's store,
// reusing the frame before (what a refresh after an update does).
type replayScreen struct {
	m *Model
	p *replay.Player
}

func newReplayScreen(t *testing.T, rec dump.Recording, from time.Time, w, h int) *replayScreen {
	t.Helper()
	clock := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	p := replay.New(rec, replay.Options{
		From: from, Now: func() time.Time { return clock }, IndexMemory: -1,
		Lookback: 5 * time.Minute, QuickLookback: 30 * time.Second,
	})
	p.Tick()
	p.Settle()
	m := NewModel(p, Options{
		Mode: ModeReplay, Player: p, Location: time.UTC, StaleAfter: -1, Window: 30 * time.Second,
		Renderer: lipgloss.NewRenderer(io.Discard),
		Now: func() time.Time {
			pos, _, _ := p.Position()
			return pos
		},
	})
	done := make(chan struct{})
	m.done = done
	t.Cleanup(func() { close(done) })
	send(m, tea.WindowSizeMsg{Width: w, Height: h})
	r := &replayScreen{m: m, p: p}
	r.refresh()
	return r
}

// refresh builds the frame of the player's newest data, as a live
// update does.
func (r *replayScreen) refresh() {
	req := r.m.request(0)
	f, d := r.m.build(r.m.src, req)
	send(r.m, frameMsg{frame: f, derived: d, req: req, kind: frameLive})
}

// The screen at a moment of a replay renders the same, byte for byte,
// whether the replay started there (--from) or stepped there scrape by
// scrape from the start: the charts hold the same history, the bins the
// same numbers, the header the same clock.
func TestReplayFromRendersAsStepping(t *testing.T) {
	rec, err := dump.OpenRecording(testdump.Write(t, 150, "client"), dump.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	at := testdump.T0.Add(100 * time.Second) // inside the incident (scrapes 60 to 120)
	for _, sz := range []struct{ w, h int }{{80, 24}, {200, 60}} {
		stepped := newReplayScreen(t, rec, time.Time{}, sz.w, sz.h)
		for pos, _, _ := stepped.p.Position(); pos.Before(at); pos, _, _ = stepped.p.Position() {
			stepped.p.Step(1)
			stepped.p.Tick()
			stepped.refresh()
		}
		from := newReplayScreen(t, rec, at, sz.w, sz.h)
		if pos, _, _ := from.p.Position(); !pos.Equal(at) {
			t.Fatalf("--from %v is at %v", at, pos)
		}
		want, got := screen(t, stepped.m), screen(t, from.m)
		if testing.Verbose() {
			t.Logf("%dx%d at %v:\n%s", sz.w, sz.h, at, got)
		}
		if got != want {
			t.Errorf("%dx%d: --from renders\n%s\nstepping renders\n%s", sz.w, sz.h, got, want)
		}
		// And the detail view of the one row, charts and all.
		send(stepped.m, keyMsg("enter"))
		send(from.m, keyMsg("enter"))
		if want, got := screen(t, stepped.m), screen(t, from.m); got != want {
			t.Errorf("%dx%d detail: --from renders\n%s\nstepping renders\n%s", sz.w, sz.h, got, want)
		}
	}
}
