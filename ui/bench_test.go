package ui

import (
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// benchFrames alternates two frames so that every iteration is a cache
// miss: a new frame arrives and the whole screen is rendered again.
func benchModel(b *testing.B, colour bool, detail bool) (*Model, [2]frameMsg) {
	r := lipgloss.NewRenderer(io.Discard)
	if colour {
		r.SetColorProfile(termenv.ANSI)
	}
	m := newTestModel(b, Options{Renderer: r}, nil)
	frames := [2]frameMsg{
		liveFrame(bigFrame(dataTime, 40, 0)),
		liveFrame(bigFrame(dataTime.Add(time.Second), 40, 1)),
	}
	// Eight services under the callers, the first one's bins included as
	// when its detail is open.
	for i := range frames {
		for _, s := range append(fixtureServices(i), fixtureServices(i+2)...) {
			s.Target += "-" + strconv.Itoa(len(frames[i].services))
			frames[i].services = append(frames[i].services, s)
		}
		frames[i].svcTarget = frames[i].services[1].Target
		frames[i].svcTimeline = serviceTimeline(frames[i].services[1], 30)
	}
	send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, frames[0])
	if detail {
		send(m, keyMsg("enter"))
	}
	m.View()
	return m, frames
}

func benchFrame(b *testing.B, colour, detail bool) {
	m, frames := benchModel(b, colour, detail)
	renderFrames(b, m, frames)
}

// BenchmarkFrame: a new frame arrives and the full 200x60 screen renders.
func BenchmarkFrameOverview200x60(b *testing.B)       { benchFrame(b, false, false) }
func BenchmarkFrameOverview200x60Colour(b *testing.B) { benchFrame(b, true, false) }
func BenchmarkFrameDetail200x60(b *testing.B)         { benchFrame(b, false, true) }
func BenchmarkFrameDetail200x60Colour(b *testing.B)   { benchFrame(b, true, true) }

// BenchmarkFrameServiceDetail: a new frame arrives while a service's
// detail is open.
func BenchmarkFrameServiceDetail200x60Colour(b *testing.B) {
	m, frames := benchModel(b, true, false)
	for range m.overview.total() {
		if s, ok := m.overview.selectedService(); ok && s.Target == frames[0].svcTarget {
			break
		}
		m.Update(keyMsg("down"))
	}
	m.Update(keyMsg("enter"))
	if m.view != viewService || m.svcDetail.target != frames[0].svcTarget {
		b.Fatalf("service detail not open: view %v target %q", m.view, m.svcDetail.target)
	}
	renderFrames(b, m, frames)
}

// BenchmarkFrameKeyMove: the cursor moves; the table renders again, the
// header and footer are reused.
func BenchmarkFrameKeyMove200x60Colour(b *testing.B) {
	m, _ := benchModel(b, true, false)
	down, up := keyMsg("down"), keyMsg("up")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			m.Update(down)
		} else {
			m.Update(up)
		}
		m.View()
	}
}

// BenchmarkFrameClockTick: only the header clock changed; every panel
// comes from its cache.
func BenchmarkFrameClockTick200x60Colour(b *testing.B) {
	m, _ := benchModel(b, true, false)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m.Update(clockMsg{})
		m.View()
	}
}

// BenchmarkFrameUnchanged: View with nothing new is the cached string.
func BenchmarkFrameUnchanged(b *testing.B) {
	m, _ := benchModel(b, true, false)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m.View()
	}
}

// groupedBench is a model showing 200 replicas (5 layers of 40, 280 rows)
// folded into 7 group rows, with two alternating frames whose groups were
// derived as the build Cmd derives them.
func groupedBench(b *testing.B) (*Model, [2]frameMsg) {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.ANSI)
	m := newTestModel(b, Options{Renderer: r}, nil)
	frames := [2]frameMsg{fleetMsg(dataTime, 5, 40, 0), fleetMsg(dataTime.Add(time.Second), 5, 40, 1)}
	if n := len(frames[0].groups.frame.Rows); n != 8 {
		b.Fatalf("%d grouped rows, want 7 groups and legacy", n)
	}
	send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, frames[0])
	return m, frames
}

// BenchmarkFrameGrouped: a new frame of 200 grouped replicas arrives and
// the overview renders.
func BenchmarkFrameGrouped200x60Colour(b *testing.B) {
	m, frames := groupedBench(b)
	renderFrames(b, m, frames)
}

// BenchmarkFrameGroupDetail: the same while a group's detail, with its 40
// replicas, is open.
func BenchmarkFrameGroupDetail200x60Colour(b *testing.B) {
	m, frames := groupedBench(b)
	m.Update(keyMsg("enter"))
	if m.view != viewGroup {
		b.Fatalf("group detail not open: view %v", m.view)
	}
	renderFrames(b, m, frames)
}

// BenchmarkDeriveGroups: the build Cmd's share, folding 280 rows of 200
// replicas with their 30-bin timelines into 7 groups.
func BenchmarkDeriveGroups200(b *testing.B) {
	f := fleetFrame(dataTime, 5, 40, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if gs := deriveGroups(&f); len(gs.info) != 7 {
			b.Fatalf("%d groups", len(gs.info))
		}
	}
}

// renderFrames times what a refresh costs: a new frame arrives (two
// alternate, so every panel renders again) and the screen is drawn.
func renderFrames(b *testing.B, m *Model, frames [2]frameMsg) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		m.Update(frames[i%2])
		if len(m.View()) == 0 {
			b.Fatal("empty view")
		}
	}
}

// BenchmarkFrameStory: the tall overview of a real incident (7 rows, the
// chains and findings with their advice, charts grown to fill 200x60)
// renders a new frame, with the cursor following the worst row.
func BenchmarkFrameStory200x60Colour(b *testing.B) {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.ANSI)
	m := newTestModel(b, Options{Renderer: r}, nil)
	var frames [2]frameMsg
	for i := range frames {
		frames[i] = liveFrame(fixtureFrame(dataTime.Add(time.Duration(i)*time.Second), time.Minute, i))
		frames[i].derived = fixtureDerived(frames[i].frame)
	}
	send(m, tea.WindowSizeMsg{Width: 200, Height: 60}, frames[0])
	if v := m.View(); !strings.Contains(v, "FINDINGS") {
		b.Fatalf("no story on screen:\n%s", v)
	}
	renderFrames(b, m, frames)
}
