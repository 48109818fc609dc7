package bench

import (
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
	"github.com/retrytop/retrytop/sources"
)

// watchRig is what `retrytop watch` runs on Envoy-shaped targets, without the terminal: the scraper sources.Spec builds (expo's
// parser, the dialects' filter and translation, model.Store at the
// default config) and, after every scrape, the frame, services and
// service signals the dashboard builds (ui's buildFrame, through the
// exported analysis calls it makes).
type watchRig struct {
	srv     *httptest.Server
	step    atomic.Int64
	scraper *scrape.Scraper
	store   *model.Store
	links   []analysis.LinkRule
	cache   *analysis.FrameCache
	prev    *model.Frame
	at      time.Time
	series  int
	stepFn  func()
}

func newWatchRig(tb testing.TB, targets, perTarget int) *watchRig {
	w := &watchRig{at: time.Unix(1_700_000_000, 0), cache: analysis.NewFrameCache()}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = rw.Write(Envoy(perTarget, int(w.step.Load())))
	}))
	tb.Cleanup(w.srv.Close)
	args := make([]string, targets)
	for i := range args {
		args[i] = "t" + strconv.Itoa(i) + "=" + w.srv.URL + "/" + strconv.Itoa(i)
	}
	spec := sources.Spec{}
	srcs, err := spec.Resolve(args, time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	w.links = srcs.Links
	cfg := model.DefaultStoreConfig
	cfg.MaxSeries = 1 << 30
	w.store = model.NewStore(cfg)
	var n atomic.Int64
	w.scraper = srcs.Scraper(w.store, scrape.Options{Clock: func() time.Time {
		return w.at.Add(time.Duration(n.Load()) * time.Second)
	}})
	w.series = targets * envoySeries(perTarget)
	w.stepFn = func() { n.Add(1) }
	return w
}

// scrape scrapes every target once and builds the dashboard's frame.
func (w *watchRig) scrape(tb testing.TB) {
	for _, st := range w.scraper.ScrapeOnce(tb.Context()) {
		if !st.Up {
			tb.Fatalf("scrape: %+v", st)
		}
	}
	w.step.Add(1)
	w.stepFn()
	w.frame()
}

func (w *watchRig) frame() {
	st := w.store
	f := analysis.BuildFrame(st, w.scraper.Statuses(), analysis.FrameOptions{
		Window: 30 * time.Second, Align: true, Prev: w.prev, Cache: w.cache,
	})
	byService, _, _ := analysis.ServiceFrame(st, f, w.links)
	_ = byService
	if !f.Time.IsZero() {
		end := f.Time.UnixMilli()
		for _, t := range analysis.Services(st) {
			w.cache.ServiceSignalsFor(st, t, end-30_000, end)
		}
	}
	w.prev = &f
}

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

// TestWatchHeapProfile drives the watch rig (RETRYTOP_WATCH_TARGETS
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
	base := liveHeap()
	w := newWatchRig(t, targets, 2000)
	var heaps []uint64
	last, _ := strconv.Atoi(os.Getenv("RETRYTOP_WATCH_SCRAPES"))
	last = max(last, 300)
	marks := []int{60, last * 3 / 5, last}
	done := 0
	for _, m := range marks {
		for ; done < m; done++ {
			w.scrape(t)
		}
		heaps = append(heaps, liveHeap()-base)
		t.Logf("%d scrapes: %.0f B per series, %.1f B per sample", m, float64(heaps[len(heaps)-1])/float64(w.series),
			float64(heaps[len(heaps)-1])/float64(w.series*m))
	}
	slope := float64(heaps[2]-heaps[1]) / float64(w.series*(marks[2]-marks[1]))
	held := w.store.Totals().Series
	t.Logf("%d series scraped, %d stored; slope %.2f B per sample between %d and %d scrapes", w.series, held, slope, marks[1], marks[2])
	heapProfile(t, out)
	store := w.storeShare()
	t.Logf("the store: %.0f B per stored series", float64(store)/float64(held))
	runtime.KeepAlive(w)
}

// storeShare is the live heap the store's targets hold in the rig: what
// forgetting them all frees (the frames keep their labels).
func (w *watchRig) storeShare() uint64 {
	before := liveHeap()
	for _, t := range w.store.Targets() {
		w.store.Forget(t)
	}
	return before - liveHeap()
}
