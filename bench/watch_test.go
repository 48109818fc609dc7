package bench

import (
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"

	"github.com/retrytop/retrytop/internal/watchrig"
)

// heapProfile writes the heap profile after a full collection to path
// (nothing when path is empty).
func heapProfile(tb testing.TB, path string) {
	if path == "" {
		return
	}
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		tb.Fatal(err)
	}
}

// TestWatchHeapProfile drives watchrig's rig (RETRYTOP_WATCH_TARGETS
// targets, 10 by default, for RETRYTOP_WATCH_SCRAPES scrapes, 300) and
// reports its live heap per series and per sample at three lengths of
// history, and the store's part of it; with
// RETRYTOP_WATCH_PROFILE=FILE it writes the heap profile at the end
// (go tool pprof -sample_index=inuse_space -top FILE).
//
//	cd bench && RETRYTOP_WATCH_PROFILE=/tmp/watch.heap go test -run WatchHeapProfile -v
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
	w := watchrig.New(t, targets, 2000)
	var heaps []uint64
	last, _ := strconv.Atoi(os.Getenv("RETRYTOP_WATCH_SCRAPES"))
	last = max(last, 300)
	marks := []int{60, last * 3 / 5, last}
	done := 0
	for _, m := range marks {
		for ; done < m; done++ {
			w.Scrape(t)
		}
		heaps = append(heaps, watchrig.LiveHeap()-base)
		t.Logf("%d scrapes: %.0f B per series, %.1f B per sample", m, float64(heaps[len(heaps)-1])/float64(w.Series),
			float64(heaps[len(heaps)-1])/float64(w.Series*m))
	}
	slope := float64(heaps[2]-heaps[1]) / float64(w.Series*(marks[2]-marks[1]))
	held := w.Store().Totals().Series
	t.Logf("%d series scraped, %d stored; slope %.2f B per sample between %d and %d scrapes", w.Series, held, slope, marks[1], marks[2])
	heapProfile(t, out)
	store := w.StoreShare()
	t.Logf("the store: %.0f B per stored series", float64(store)/float64(held))
	runtime.KeepAlive(w)
}
