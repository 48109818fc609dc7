package ui

import (
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/retrytop/retrytop/model"
)

// The demo's storm as its client sees it, scraped every second: 50
// originals/s, each answered at once while healthy; from stormAt on every
// original also takes two attempts that time out (3 attempts per
// original, as the baseline scenario's client).
const (
	stormOrig = 50.0
	stormAt   = 36 // seconds: the 3-minute demo's healthy phase
)

func stormSnapshot(t0 time.Time, i int) *model.Snapshot {
	n, storm := float64(i), float64(max(i-stormAt, 0))
	lbl := func(pairs ...string) model.Labels {
		return model.LabelsFromPairs(append([]string{model.LabelDependency, "provider"}, pairs...)...)
	}
	return &model.Snapshot{Target: "client", Time: t0.Add(time.Duration(i) * time.Second), Families: []model.Family{
		{Name: model.MetricOriginals, Type: model.Counter, Samples: []model.Sample{{Labels: lbl(), Value: stormOrig * n}}},
		{Name: model.MetricAttempts, Type: model.Counter, Samples: []model.Sample{
			{Labels: lbl(model.LabelOutcome, model.OutcomeSuccess), Value: stormOrig * n},
			{Labels: lbl(model.LabelOutcome, model.OutcomeTimeout), Value: 2 * stormOrig * storm},
		}},
	}}
}

var stormT0 = time.Date(2025, 3, 4, 3, 0, 0, 0, time.UTC)

// stormStore holds the storm's first secs seconds, a scrape a second.
func stormStore(secs int) *model.Store {
	st := model.NewStore(model.StoreConfig{})
	for i := 0; i <= secs; i++ {
		st.Append(stormSnapshot(stormT0, i))
	}
	return st
}

// stormModel is a dashboard over a real store holding secs seconds of the
// storm, with the frame its own request builds.
func stormModel(t *testing.T, secs, w, h int) *Model {
	t.Helper()
	st := stormStore(secs)
	last := stormT0.Add(time.Duration(secs) * time.Second)
	src := &storeSource{st: st, statuses: []model.TargetStatus{{Name: "client", Up: true, Scrapes: secs + 1, LastScrape: last, LastSuccess: last}}}
	m := NewModel(src, Options{Now: func() time.Time { return last }, Location: time.UTC, StaleAfter: -1, Renderer: lipgloss.NewRenderer(io.Discard)})
	send(m, tea.WindowSizeMsg{Width: w, Height: h})
	req := m.request(0)
	f, d := buildFrame(src, req)
	send(m, frameMsg{frame: f, derived: d, req: req, kind: frameRebuild})
	return m
}

// chartFill measures the ORIGINALS vs ATTEMPTS chart on screen: its area
// (the columns its bins may take), the columns that hold data (the
// bottom row is never blank where a bin has a value) and the columns
// where attempts stand above originals (the storm).
func chartFill(t *testing.T, scr string, width int) (area, data, storm int) {
	t.Helper()
	lines := strings.Split(scr, "\n")
	top := firstIndex(lines, func(ln string) bool { return strings.HasPrefix(ln, "ORIGINALS vs ATTEMPTS") })
	if top < 0 {
		t.Fatalf("no ORIGINALS vs ATTEMPTS chart:\n%s", scr)
	}
	secW := width
	if width >= wideWidth {
		secW = (width - 3) / 2
	}
	area = secW - gutterW - valueW
	var chart [][]rune
	for _, ln := range lines[top+2:] {
		if strings.HasPrefix(ln, "amplification") {
			break
		}
		r := []rune(ln)
		chart = append(chart, r[min(gutterW, len(r)):min(gutterW+area, len(r))])
	}
	if len(chart) < 2 {
		t.Fatalf("chart of %d rows:\n%s", len(chart), scr)
	}
	for c := 0; c < area; c++ {
		hasData, hasStorm := false, false
		for r, row := range chart {
			if c >= len(row) {
				continue
			}
			if r == len(chart)-1 && row[c] != ' ' {
				hasData = true
			}
			if row[c] == '░' {
				hasStorm = true
			}
		}
		if hasData {
			data++
		}
		if hasStorm {
			storm++
		}
	}
	return area, data, storm
}

// firstIndex is the index of the first line that holds, -1 when none.
func firstIndex(lines []string, holds func(string) bool) int {
	for i, ln := range lines {
		if holds(ln) {
			return i
		}
	}
	return -1
}

// The charts span the data held: 60 s into the demo the data fills the
// chart, the storm its last 24 s of 60; 60 s into the storm (96 s held)
// the storm fills more than half of it, at 80x24 and 200x60 alike.
func TestChartsSpanTheDataHeld(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{80, 24}, {200, 60}} {
		m := stormModel(t, 60, sz.w, sz.h)
		scr := ansi.Strip(m.View())
		area, data, storm := chartFill(t, scr, sz.w)
		if data*10 < area*9 {
			t.Errorf("%dx%d at 60s: data in %d of %d columns, want 90%%:\n%s", sz.w, sz.h, data, area, scr)
		}
		// The truth: 24 s of 60 (0.40), give or take a 2 s bin (0.033)
		// and a column of rounding.
		if frac := float64(storm) / float64(area); frac < 0.35 || frac > 0.45 {
			t.Errorf("%dx%d at 60s: storm in %d of %d columns (%.2f), want 24/60 = 0.40 ± 0.05:\n%s", sz.w, sz.h, storm, area, frac, scr)
		}
		if !strings.Contains(scr, "range 5m: last 1m, 2s bins") {
			t.Errorf("%dx%d: the chart title does not say what it spans:\n%s", sz.w, sz.h, scr)
		}

		m = stormModel(t, stormAt+60, sz.w, sz.h)
		scr = ansi.Strip(m.View())
		area, _, storm = chartFill(t, scr, sz.w)
		if storm*2 < area {
			t.Errorf("%dx%d 60s into the storm: storm in %d of %d columns, want at least half:\n%s", sz.w, sz.h, storm, area, scr)
		}
	}
}

// z and Z step the charts' range through 1m, 5m, 15m and all; the title
// says which, the frames are built for it, and past either end the
// footer says so.
func TestZoomRange(t *testing.T) {
	m := stormModel(t, 200, 200, 60)
	src := m.src.(*storeSource)
	rebuild := func() string {
		req := m.request(0)
		f, d := buildFrame(src, req)
		send(m, frameMsg{frame: f, derived: d, req: req, kind: frameRebuild})
		return ansi.Strip(m.View())
	}
	if scr := rebuild(); !strings.Contains(scr, "range 5m: last 3m20s, 10s bins") {
		t.Fatalf("start: want range 5m over the 200 s held:\n%s", scr)
	}
	keys(m, "z")
	if scr := rebuild(); !strings.Contains(scr, "range 1m, 2s bins") || m.request(0).Range != time.Minute {
		t.Errorf("z: want range 1m in 2s bins:\n%s", scr)
	}
	keys(m, "z")
	if got := lastLine(ansi.Strip(m.View())); !strings.Contains(got, "z: range 1m is the narrowest already") {
		t.Errorf("z at 1m: footer %q", got)
	}
	keys(m, "Z", "Z", "Z")
	if scr := rebuild(); !strings.Contains(scr, "range all: last 3m20s, 10s bins") || m.request(0).Range != 0 {
		t.Errorf("Z Z Z: want all 200 s:\n%s", scr)
	}
	keys(m, "Z")
	if got := lastLine(ansi.Strip(m.View())); !strings.Contains(got, "Z: range all is the widest already") {
		t.Errorf("Z at all: footer %q", got)
	}
}

// chartBins: about Bins bins of a nice width over the span held, never
// narrower than two scrape intervals, the range capping the span.
func TestChartBins(t *testing.T) {
	st := stormStore(800)
	tests := []struct {
		rng  time.Duration
		bin  time.Duration
		bins int
		held time.Duration
	}{
		{time.Minute, 2 * time.Second, 30, time.Minute},
		{5 * time.Minute, 10 * time.Second, 30, 5 * time.Minute},
		{15 * time.Minute, 30 * time.Second, 27, 800 * time.Second},
		{0, 30 * time.Second, 27, 800 * time.Second},
	}
	for _, tt := range tests {
		bin, bins, held := chartBins(st, 0, tt.rng, 30)
		if bin != tt.bin || bins != tt.bins || held != tt.held {
			t.Errorf("range %v: %v x %d over %v, want %v x %d over %v", tt.rng, bin, bins, held, tt.bin, tt.bins, tt.held)
		}
	}
	// Ten seconds held, scraped every second: 2 s bins, not 1 s.
	small := stormStore(10)
	if bin, bins, _ := chartBins(small, 0, 5*time.Minute, 30); bin != 2*time.Second || bins != 5 {
		t.Errorf("10 s held: %v x %d, want 2s x 5", bin, bins)
	}
}
