package expo

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/retrytop/retrytop/internal/expotest"
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

// BenchmarkParse measures ExpfmtParser alone on the same bodies.
func BenchmarkParse(b *testing.B) {
	for _, size := range benchSizes {
		body, series := expotest.GenEnvoy(size, false)
		for _, f := range benchFilters {
			b.Run(fmt.Sprintf("series=%d/families=%s", series, f.name), func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				p := ExpfmtParser{Lines: NewLineCaches(0)} // a scraper's parser
				for b.Loop() {
					if _, err := p.Parse("envoy", body, ctText, f.filter); err != nil {
						b.Fatal(err)
					}
				}
				expotest.ReportPerSeries(b, series, &before)
			})
		}
	}
}

// BenchmarkStoreAppend measures model.Store.Append of an already parsed
// snapshot, the store's share of BenchmarkScrape.
func BenchmarkStoreAppend(b *testing.B) {
	for _, size := range benchSizes {
		body, series := expotest.GenEnvoy(size, false)
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
			expotest.ReportPerSeries(b, series, &before)
		})
	}
}

// BenchmarkStoreMemoryPerSeriesHour fills a store holding one hour at 1 s
// (3,600 scrapes) of an Envoy-shaped target and reports the live heap it
// takes per series. Run it with -benchtime=1x: one iteration is the whole
// hour.
func BenchmarkStoreMemoryPerSeriesHour(b *testing.B) {
	const history = 3600
	body, series := expotest.GenEnvoy(1000, false)
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

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
