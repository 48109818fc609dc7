package watchrig

import (
	"runtime"
	"testing"
)

// TestWatchHeapFlat holds what watch's memory grows by once the frames'
// timelines are full: only the store's history, at most what its encoding
// costs. The generator's counters grow by increases that jitter by
// hundreds, two-byte tokens once sealed (model.TestStoreHeapPerSeries),
// and each sealed chunk of chunkScrapes adds its first value raw and its
// column offset: 2 + 16/128 B per stored sample. The marks are chunk
// boundaries after the timelines filled (30 bins of 10 s and the 30 s
// window, aligned: 340 scrapes), so the chunks written and left between
// them are whole. Frames, services and the frame cache must not grow with
// the history.
func TestWatchHeapFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("scrapes two targets 640 times")
	}
	const (
		chunkScrapes = 128
		from, to     = 3 * chunkScrapes, 5 * chunkScrapes
		perSample    = 2 + 16.0/chunkScrapes
	)
	base := LiveHeap()
	w := New(t, 2, 2000)
	var at [2]uint64
	for done := 0; done < to; done++ {
		w.Scrape(t)
		switch done + 1 {
		case from:
			at[0] = LiveHeap() - base
		case to:
			at[1] = LiveHeap() - base
		}
	}
	stored := w.Store().Totals().Series
	per := (float64(at[1]) - float64(at[0])) / float64(stored*(to-from))
	t.Logf("%d series scraped, %d stored: %.0f B per scraped series at %d scrapes, %.0f at %d; %.2f B per stored sample between",
		w.Series, stored, float64(at[0])/float64(w.Series), from, float64(at[1])/float64(w.Series), to, per)
	if per > perSample {
		t.Errorf("the heap grew %.2f B per stored sample between %d and %d scrapes, want at most the encoding's %.3f", per, from, to, perSample)
	}
	runtime.KeepAlive(w)
}
