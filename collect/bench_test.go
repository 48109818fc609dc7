package collect

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// The benchmarks use expositions shaped like Envoy's cluster stats (see
// genEnvoy). Besides ns/op and -benchmem's B/op they report MB/s of body,
// series/s and bytes allocated per series. docs/performance.md records the
// numbers and the command.

var benchSizes = []int{2000, 100000}

// rqCounters selects the request counters only: what a rate view of an
// Envoy dialect needs, and a quarter of the families by count but a small
// share of the bytes (the histogram dominates).
var rqCounters = only("envoy_cluster_upstream_rq_total", "envoy_cluster_upstream_rq_retry_total", "envoy_cluster_upstream_rq_retry_success_total")

var benchFilters = []struct {
	name   string
	filter func(string) bool
}{
	{"all", nil},
	{"rq_counters", rqCounters},
}

// reportPerSeries adds series/s and B/series (from the heap's total
// allocation since before) to b's results.
func reportPerSeries(b *testing.B, series int, before *runtime.MemStats) {
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	n := float64(b.N) * float64(series)
	b.ReportMetric(n/b.Elapsed().Seconds(), "series/s")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/series")
}

// BenchmarkScrape measures one target's scrape, parse and store over
// loopback HTTP, as ScrapeOnce does it, in steady state (the store's rings
// are allocated by a warm-up scrape).
func BenchmarkScrape(b *testing.B) {
	for _, size := range benchSizes {
		body, series := genEnvoy(size, false)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctText)
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			_, _ = w.Write(body)
		}))
		for _, f := range benchFilters {
			b.Run(fmt.Sprintf("series=%d/families=%s", series, f.name), func(b *testing.B) {
				store := model.NewStore(model.StoreConfig{MaxSeriesPerTarget: 2 * series})
				s := NewScraper([]Target{target("envoy", srv.URL)}, store, Options{Clock: stepClock(), Filter: f.filter})
				if st := s.ScrapeOnce(b.Context())[0]; !st.Up || st.DroppedSeries != 0 {
					b.Fatalf("warm-up scrape: %+v", st)
				}
				kept := s.Statuses()[0].Series
				b.SetBytes(int64(len(body)))
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				for b.Loop() {
					s.ScrapeOnce(b.Context())
				}
				reportPerSeries(b, series, &before)
				if st := s.Statuses()[0]; !st.Up || st.Series != kept {
					b.Fatalf("status after the loop: %+v", st)
				}
			})
		}
		srv.Close()
	}
}

// BenchmarkParse measures ExpfmtParser alone on the same bodies.
func BenchmarkParse(b *testing.B) {
	for _, size := range benchSizes {
		body, series := genEnvoy(size, false)
		for _, f := range benchFilters {
			b.Run(fmt.Sprintf("series=%d/families=%s", series, f.name), func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				for b.Loop() {
					if _, err := (ExpfmtParser{}).Parse("envoy", body, ctText, f.filter); err != nil {
						b.Fatal(err)
					}
				}
				reportPerSeries(b, series, &before)
			})
		}
	}
}

// BenchmarkStoreAppend measures model.Store.Append of an already parsed
// snapshot, the store's share of BenchmarkScrape.
func BenchmarkStoreAppend(b *testing.B) {
	for _, size := range benchSizes {
		body, series := genEnvoy(size, false)
		fams, err := ExpfmtParser{}.Parse("envoy", body, ctText, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("series=%d", series), func(b *testing.B) {
			store := model.NewStore(model.StoreConfig{MaxSeriesPerTarget: 2 * series})
			snap := model.Snapshot{Target: "envoy", Time: t0, Families: fams}
			store.Append(&snap)
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			i := 0
			for b.Loop() {
				i++
				snap.Time = t0.Add(time.Duration(i) * time.Second)
				store.Append(&snap)
			}
			reportPerSeries(b, series, &before)
		})
	}
}

// BenchmarkStoreMemoryPerSeriesHour fills a store holding one hour at 1 s
// (3,600 scrapes) of an Envoy-shaped target and reports the live heap it
// takes per series. Run it with -benchtime=1x: one iteration is the whole
// hour.
func BenchmarkStoreMemoryPerSeriesHour(b *testing.B) {
	const history = 3600
	body, series := genEnvoy(1000, false)
	fams, err := ExpfmtParser{}.Parse("envoy", body, ctText, nil)
	if err != nil {
		b.Fatal(err)
	}
	var perSeries float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		store := model.NewStore(model.StoreConfig{History: history, MaxSeriesPerTarget: series})
		snap := model.Snapshot{Target: "envoy", Families: fams}
		for i := 0; i < history; i++ {
			snap.Time = t0.Add(time.Duration(i) * time.Second)
			if res := store.Append(&snap); res.Series != series {
				b.Fatalf("append stored %d series, want %d", res.Series, series)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perSeries = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(series)
		runtime.KeepAlive(store)
	}
	b.ReportMetric(perSeries, "B/series/h")
	b.ReportMetric(float64(series), "series")
}
