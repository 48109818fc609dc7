package ui

import (
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/retrytop/retrytop/internal/watchrig"
)

// watching is what `retrytop watch` runs on the rig's targets without the
// terminal: after every scrape, the live frame the dashboard's own model
// asks for (request), built as its Cmd builds it (buildFrame) and taken
// as its Update takes it (onFrame), the model keeping what it keeps.
type watching struct {
	rig *watchrig.Rig
	m   *Model
}

func newWatching(t *testing.T, targets int) *watching {
	rig := watchrig.New(t, targets, 2000)
	m := NewModel(rig, Options{Links: rig.Links(), Renderer: lipgloss.NewRenderer(io.Discard), StaleAfter: -1})
	done := make(chan struct{})
	m.done = done
	t.Cleanup(func() { close(done) })
	send(m, tea.WindowSizeMsg{Width: 200, Height: 60})
	return &watching{rig: rig, m: m}
}

// scrape scrapes every target once and hands the model its next frame.
func (w *watching) scrape(t *testing.T) {
	w.rig.Scrape(t)
	req := w.m.request(0)
	f, d := w.m.build(w.rig, req)
	send(w.m, frameMsg{frame: f, derived: d, req: req, kind: frameLive})
}

// TestWatchHeapFlat holds what watch's memory grows by once the frames'
// timelines are full: only the store's history, at most what its encoding
// costs. The generator's counters grow by increases that jitter by
// hundreds, two-byte tokens once sealed (model.TestStoreHeapPerSeries),
// and each sealed chunk of chunkScrapes adds its first value raw and its
// column offset: 2 + 16/64 B per stored sample. The marks are chunk
// boundaries after the charts filled (the 5-minute range in 30 bins, 10 s
// each once full, and the 30 s window: by about 330 scrapes), so the
// chunks written and left between them are whole. What the model keeps
// (frames, derived, the frame cache) must not grow with the history:
// keeping every frame's rows reads 65 B and fails.
func TestWatchHeapFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("scrapes two targets 640 times")
	}
	const (
		chunkScrapes = 64 // model's chunkSlots
		from, to     = 6 * chunkScrapes, 10 * chunkScrapes
		perSample    = 2 + 16.0/chunkScrapes
	)
	base := watchrig.LiveHeap()
	w := newWatching(t, 2)
	var at [2]uint64
	for done := 0; done < to; done++ {
		w.scrape(t)
		switch done + 1 {
		case from:
			at[0] = watchrig.LiveHeap() - base
		case to:
			at[1] = watchrig.LiveHeap() - base
		}
	}
	stored := w.rig.Store().Totals().Series
	per := (float64(at[1]) - float64(at[0])) / float64(stored*(to-from))
	t.Logf("%d series scraped, %d stored: %.0f B per scraped series at %d scrapes, %.0f at %d; %.2f B per stored sample between",
		w.rig.Series, stored, float64(at[0])/float64(w.rig.Series), from, float64(at[1])/float64(w.rig.Series), to, per)
	if per > perSample {
		t.Errorf("the heap grew %.2f B per stored sample between %d and %d scrapes, want at most the encoding's %.3f", per, from, to, perSample)
	}
	runtime.KeepAlive(w)
}

// TestWatchHeapProfile drives the dashboard on RETRYTOP_WATCH_TARGETS
// targets (10 by default) for RETRYTOP_WATCH_SCRAPES scrapes (300) and
// reports its live heap per series and per sample at three lengths of
// history, and the store's part of it; it writes the heap profile to
// RETRYTOP_WATCH_PROFILE (docs/performance.md, "Watch heap"):
//
//	RETRYTOP_WATCH_PROFILE=/tmp/watch.heap go test ./ui -run WatchHeapProfile -v
//	go tool pprof -sample_index=inuse_space -top /tmp/watch.heap
func TestWatchHeapProfile(t *testing.T) {
	out := os.Getenv("RETRYTOP_WATCH_PROFILE")
	if out == "" {
		t.Skip("RETRYTOP_WATCH_PROFILE=FILE runs it")
	}
	targets, _ := strconv.Atoi(os.Getenv("RETRYTOP_WATCH_TARGETS"))
	if targets <= 0 {
		targets = 10
	}
	base := watchrig.LiveHeap()
	w := newWatching(t, targets)
	series := float64(w.rig.Series)
	last, _ := strconv.Atoi(os.Getenv("RETRYTOP_WATCH_SCRAPES"))
	last = max(last, 300)
	marks := []int{60, last * 3 / 5, last}
	var heaps []uint64
	done := 0
	for _, m := range marks {
		for ; done < m; done++ {
			w.scrape(t)
		}
		heaps = append(heaps, watchrig.LiveHeap()-base)
		h := float64(heaps[len(heaps)-1])
		t.Logf("%d scrapes: %.0f B per series, %.1f B per sample", m, h/series, h/(series*float64(m)))
	}
	// scripts/bench-ratios.sh -r prints it against its goal.
	t.Logf("figure watch-heap-per-series %.0f at %d scrapes", float64(heaps[2])/series, marks[2])
	slope := float64(heaps[2]-heaps[1]) / (series * float64(marks[2]-marks[1]))
	held := w.rig.Store().Totals().Series
	t.Logf("%.0f series scraped, %d stored; slope %.2f B per sample between %d and %d scrapes", series, held, slope, marks[1], marks[2])
	runtime.GC()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
	t.Logf("the store: %.0f B per stored series", float64(w.rig.StoreShare())/float64(held))
	runtime.KeepAlive(w)
}
