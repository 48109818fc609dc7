// Package watchrig is for tests only: the scraping side of `retrytop
// watch` on generated Envoy targets. The scraper sources.Spec builds
// (expo's parser, the dialects' filter and translation, model.Store at the
// default config) on a clock that advances a second a scrape; the Rig is a
// dashboard source (ui.Source), so ui's tests drive the dashboard's own
// frames from it (ui/watch_heap_test.go).
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
	updates chan struct{}
	// Series is how many flat series a scrape of every target reads.
	Series int
}

// New starts the targets' server (closed with tb) and the scraper: targets
// targets of at least perTarget series each, the store without a series
// cap.
func New(tb testing.TB, targets, perTarget int) *Rig {
	w := &Rig{updates: make(chan struct{})}
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

// Statuses are the targets' scrape statuses.
func (w *Rig) Statuses() []model.TargetStatus { return w.scraper.Statuses() }

// Updates never fires: the test builds a frame after each Scrape.
func (w *Rig) Updates() <-chan struct{} { return w.updates }

// Links are the links the sources resolved (none from bare targets).
func (w *Rig) Links() []analysis.LinkRule { return w.links }

// Scrape scrapes every target once; the next scrape's counters are one
// step further and its clock a second later.
func (w *Rig) Scrape(tb testing.TB) {
	for _, st := range w.scraper.ScrapeOnce(tb.Context()) {
		if !st.Up {
			tb.Fatalf("scrape: %+v", st)
		}
	}
	w.step.Add(1)
}

// StoreShare is the live heap the store's targets hold: what forgetting
// them all frees (frames keep their labels). It empties the store.
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
