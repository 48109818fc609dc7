// Package watchrig is for tests and benchmarks only: what `retrytop watch`
// runs on generated Envoy targets, without the terminal. The scraper
// sources.Spec builds (expo's parser, the dialects' filter and
// translation, model.Store at the default config) and, after every
// scrape, the frame, services and service signals the dashboard builds
// (ui's buildFrame, through the exported analysis calls it makes).
package watchrig

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrytop/retrytop/analysis"
	"github.com/retrytop/retrytop/internal/expotest"
	"github.com/retrytop/retrytop/model"
	"github.com/retrytop/retrytop/scrape"
	"github.com/retrytop/retrytop/sources"
)

// Rig scrapes targets Envoy-shaped bodies whose counters grow every
// scrape, on a clock that advances a second a scrape.
type Rig struct {
	srv     *httptest.Server
	step    atomic.Int64
	scraper *scrape.Scraper
	store   *model.Store
	links   []analysis.LinkRule
	cache   *analysis.FrameCache
	prev    *model.Frame
	// Series is how many flat series a scrape of every target reads.
	Series int
}

// New starts the targets' server (closed with tb) and the scraper: targets
// targets of at least perTarget series each, the store without a series
// cap.
func New(tb testing.TB, targets, perTarget int) *Rig {
	w := &Rig{cache: analysis.NewFrameCache()}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		body, _ := expotest.EnvoyAt(perTarget, int(w.step.Load()))
		_, _ = rw.Write(body)
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
	start := time.Unix(1_700_000_000, 0)
	w.scraper = srcs.Scraper(w.store, scrape.Options{Clock: func() time.Time {
		return start.Add(time.Duration(w.step.Load()) * time.Second)
	}})
	_, flat := expotest.EnvoyAt(perTarget, 0)
	w.Series = targets * flat
	return w
}

// Store is the rig's store.
func (w *Rig) Store() *model.Store { return w.store }

// Scrape scrapes every target once and builds the dashboard's frame.
func (w *Rig) Scrape(tb testing.TB) {
	for _, st := range w.scraper.ScrapeOnce(tb.Context()) {
		if !st.Up {
			tb.Fatalf("scrape: %+v", st)
		}
	}
	w.step.Add(1)
	w.frame()
}

func (w *Rig) frame() {
	st := w.store
	f := analysis.BuildFrame(st, w.scraper.Statuses(), analysis.FrameOptions{
		Window: 30 * time.Second, Align: true, Prev: w.prev, Cache: w.cache,
	})
	_, _, _ = analysis.ServiceFrame(st, f, w.links)
	if !f.Time.IsZero() {
		end := f.Time.UnixMilli()
		for _, t := range analysis.Services(st) {
			w.cache.ServiceSignalsFor(st, t, end-30_000, end)
		}
	}
	w.prev = &f
}

// StoreShare is the live heap the store's targets hold: what forgetting
// them all frees (the frames keep their labels). It empties the store.
func (w *Rig) StoreShare() uint64 {
	before := LiveHeap()
	for _, t := range w.store.Targets() {
		w.store.Forget(t)
	}
	return before - LiveHeap()
}

// LiveHeap is the heap in use after two full collections.
func LiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
